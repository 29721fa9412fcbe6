"""shardlab.units 与 shardlab.notebook"""

import sys

import pytest

from shardlab import notebook, units


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(377e-6, "377 µs"), (0.0622, "62.2 ms"), (3e-6, "3 µs"), (1.5, "1.5 s"), (2.5e-9, "2.5 ns"), (0, "0 s")],
)
def test_fmt_time(seconds, text):
    assert units.fmt_time(seconds) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [(2048 * 8192 * 2, "33.6 MB"), (256, "256 B"), (45e3, "45 kB"), (14e9, "14 GB"), (2.5e12, "2.5 TB")],
)
def test_fmt_bytes(n, text):
    assert units.fmt_bytes(n) == text


def test_fmt_bw_and_num():
    assert units.fmt_bw(4.5e10) == "45 GB/s"
    assert units.fmt_num(17511) == "17,511"
    assert units.fmt_num(2188.9, 4) == "2189"
    assert units.fmt_num(0.012345) == "0.0123"


def test_bytes_of():
    assert units.bytes_of((1024, 4096), "bf16") == 1024 * 4096 * 2
    assert units.bytes_of((3,), "fp32") == 12
    with pytest.raises(ValueError, match="未知的数据类型"):
        units.bytes_of((3,), "bf17")
    with pytest.raises(ValueError, match="负数"):
        units.bytes_of((3, -1))


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_formatters_reject_bad_values(bad):
    with pytest.raises(ValueError):
        units.fmt_time(bad)
    with pytest.raises(ValueError):
        units.fmt_bytes(bad)


def test_glue_without_myst_nb(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # 模拟 Colab：没有 myst-nb
    assert notebook.glue("answer", 42, display=True) is None  # 不返回值：单元末尾的 glue 不留下输出框
    assert notebook.GLUED["answer"] == 42
    assert "answer = 42" in capsys.readouterr().out


def test_glue_with_myst_nb(monkeypatch):
    calls = []
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: calls.append((name, value, display)))
    notebook.glue("x", 1.5)
    assert calls == [("x", 1.5, False)]


def test_glue_shows_figures_without_myst_nb(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython import display as ipd

    shown = []
    monkeypatch.setitem(sys.modules, "myst_nb", None)
    monkeypatch.setattr(ipd, "display", lambda v: shown.append(v))
    fig, _ = plt.subplots()
    notebook.glue("fig-x", fig)
    plt.close(fig)
    assert shown == [fig]


def test_md_table():
    md = notebook.md_table(["a", "b|c"], [[1, None], ["x\ny", 2.5]])
    assert md.data.splitlines() == ["| a | b\\|c |", "|---|---|", "| 1 | — |", "| x y | 2.5 |"]
    with pytest.raises(ValueError, match="2 列"):
        notebook.md_table(["a", "b"], [[1]])


def test_fmt_flops_one_unit_with_si_prefixes():
    assert units.fmt_flops(8.8e12) == "8.8 TFLOP"
    assert units.fmt_flops(1.72e10) == "17.2 GFLOP"
    assert units.fmt_flops(16_777_216) == "16.8 MFLOP"
    assert units.fmt_flops(2.2e12, "TFLOP") == "2.2 TFLOP"
    assert units.fmt_flops(1.72e10, units.flop_unit(8.8e12)) == "0.0172 TFLOP"
    with pytest.raises(ValueError, match="FLOP"):
        units.fmt_flops(-1)
