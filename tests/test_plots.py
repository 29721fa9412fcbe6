"""shardlab.plots：统一样式、正文宽度下清晰、图上文字没有缺失的字形"""

import importlib
import io
import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from shardlab import plots  # noqa: E402


def _draw_strictly(fig) -> bytes:
    """把图渲染成 PNG；任何警告（包括 “Glyph ... missing from font”）都变成错误"""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()
        fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _width_px(png: bytes) -> int:
    return Image.open(io.BytesIO(png)).size[0]


def _all_labels() -> list[tuple[str, str]]:
    """plots.LABELS，加上 shardlab 里（含子包）其他定义了模块级 LABELS 的画法模块（如 bench.plot）的固定文字"""
    labels = [("plots", t) for t in plots.LABELS]
    root = Path(plots.__file__).parent
    for py in sorted(root.rglob("*.py")):
        name = ".".join(py.relative_to(root).with_suffix("").parts)
        if name != "plots" and re.search(r"^LABELS\s*=", py.read_text(encoding="utf-8"), re.M):
            labels += [(name, t) for t in importlib.import_module(f"shardlab.{name}").LABELS]
    return labels


LABELS = _all_labels()


def test_label_list_is_collected():
    assert len(LABELS) >= len(plots.LABELS) and all(isinstance(t, str) and t for _, t in LABELS)
    assert {"bench.plot"} <= {module for module, _ in LABELS}  # 子包里的画法也收集到了


@pytest.mark.parametrize(("module", "text"), LABELS, ids=[f"{m}:{t[:30]}" for m, t in LABELS])
def test_every_label_renders_without_missing_glyphs(module, text):
    fig, ax = plots.figure()
    ax.set_title(text)
    ax.set_xlabel(text)
    ax.text(0.5, 0.5, text, ha="center")
    ax.legend([ax.plot([0, 1])[0]], [text])
    _draw_strictly(fig)


def test_missing_glyph_check_can_fail():
    """中文不在 DejaVu Sans 里：只用 DejaVu Sans 时同样的渲染必须报错（证明上面的检查是真的）"""
    fig, ax = plots.figure()
    ax.set_title("集合通信", fontfamily="DejaVu Sans")
    with pytest.raises(UserWarning, match="missing from font"):
        _draw_strictly(fig)


def test_chinese_renders_with_the_course_cjk_font():
    """课程的 CJK 字体（pip 包 noto-cjk-sans-otc）必须找得到：没有它图里的中文就是方框"""
    assert plots.cjk_font() is not None, "没有 CJK 字体：pip install noto-cjk-sans-otc"
    assert plots.zh("延迟受限", "latency-bound") == "延迟受限"
    fig, ax = plots.figure()
    ax.set_title("集合通信：环形算法、回绕、规约散射（ReduceScatter）")
    ax.set_xlabel("数组大小 V（字节）")
    ax.legend([ax.plot([0, 1])[0]], ["单向环 µs"])
    _draw_strictly(fig)


def test_zh_falls_back_to_english_without_a_cjk_font(monkeypatch):
    monkeypatch.setattr(plots, "cjk_font", lambda: None)
    assert plots.zh("延迟受限", "latency-bound") == "latency-bound"


def test_figure_fits_the_page_width_with_legible_text():
    with plots.style():
        assert matplotlib.rcParams["font.size"] >= 10
        assert min(matplotlib.rcParams[k] for k in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize")) >= 9
    fig, ax = plots.figure()
    ax.plot([0, 1], [0, 1])
    px = _width_px(_draw_strictly(fig))
    # 先为手机画：缩放到 390 px 手机的正文宽（342 px）时，10 pt 的字仍不小于 10 CSS px
    assert 450 <= px <= 520, f"图宽 {px} px，应约 495 px（4.5 in × 110 dpi）"
    assert plots.MIN_FONT_PT / 72 * plots.DPI * 342 / px >= 10
    fig, axes = plots.figure(2, 2, sharex=True)
    assert axes.shape == (2, 2)
    assert fig.get_size_inches()[1] > plots.PAGE_WIDTH_IN * plots.ASPECT
    plt.close(fig)


def test_use_style_sets_the_course_colour_cycle():
    with matplotlib.rc_context():
        plots.use_style()
        cycle = [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]]
        assert cycle == plots.CYCLE
        assert matplotlib.rcParams["figure.dpi"] == plots.DPI
    with plots.style():
        assert [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]] == plots.CYCLE
    assert plots.COLORS["compute"] != plots.COLORS["comm"]
    assert len(set(plots.CYCLE)) == len(plots.CYCLE)


def test_tick_labels_use_si_units():
    assert plots.bytes_label(1e6) == "1 MB"
    assert plots.bytes_label(2.5e3) == "2.5 kB"
    assert plots.bytes_label(12) == "12 B"
    assert plots.bytes_label(0) == "0 B"
    assert plots.time_label(2e-6) == "2 µs"
    assert plots.time_label(0.062) == "62 ms"
    assert plots.time_label(3.0) == "3 s"
    assert plots.time_label(5e-10) == "500 ps"


def test_loglog_with_regimes_renders_cleanly():
    sizes = np.logspace(2, 9, 30)
    alpha, bw = 2e-6, 45e9
    fig, ax = plots.figure()
    plots.loglog_time_vs_bytes(
        ax,
        sizes,
        {"单向环": alpha * 7 + sizes * 7 / 8 / bw, "双向环": alpha * 4 + sizes * 7 / 16 / bw},
        markers=True,
    )
    plots.mark_regimes(ax, crossover=alpha * bw)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    labels = {t.get_text() for t in ax.texts}
    assert {"延迟受限", "带宽受限"} <= labels
    assert len(ax.get_legend().get_texts()) == 2
    png = _draw_strictly(fig)
    assert _width_px(png) > 450  # 先为手机画：4.5 in × 110 dpi
    with pytest.raises(ValueError, match="个点"):
        plots.loglog_time_vs_bytes(plots.figure()[1], [1, 2], {"x": [1]})
    plt.close("all")


def test_mark_regimes_on_a_linear_axis():
    fig, ax = plots.figure()
    ax.plot([0, 10], [0, 1])
    plots.mark_regimes(ax, 4, "计算受限", "通信受限", label_crossover=False)
    assert {t.get_text() for t in ax.texts} == {"计算受限", "通信受限"}
    _draw_strictly(fig)


def test_timeline_draws_overlap_of_compute_and_comm():
    steps = [
        {"lane": "device 0", "start": 0, "duration": 3e-6, "kind": "compute", "label": "A0 W"},
        {"lane": "device 0", "start": 0, "duration": 2e-6, "kind": "comm"},
        {"lane": "device 1", "start": 1e-6, "duration": 3e-6, "kind": "compute"},
        {"lane": "device 1", "start": 0, "duration": 1e-6, "kind": "idle"},
    ]
    fig, ax = plots.figure(height=2.5)
    plots.timeline(ax, steps)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["device 0", "device 1"]
    assert ax.get_xlabel() == "时间（µs）"
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == sorted(["计算", "通信", "空闲"])
    _draw_strictly(fig)
    with pytest.raises(ValueError, match="kind"):
        plots.timeline(plots.figure()[1], [{"lane": 0, "start": 0, "duration": 1, "kind": "sleep"}])
    fig, ax = plots.figure()
    plots.timeline(ax, steps[:1], lanes=["device 0"], unit=1.0)
    assert ax.get_xlabel() == "时间"
    plt.close("all")


def test_glue_figure_hands_the_figure_over_and_closes_it(monkeypatch):
    from shardlab import notebook

    seen = {}
    monkeypatch.setattr(notebook, "glue", lambda name, value, display=False: seen.update({name: (value, display)}))
    fig, axes = plots.figure(2, 1)
    axes[0].plot([0, 1], color=plots.COLORS["orange"])
    axes[1].bar([0, 1], [1, 2], color=plots.COLORS["blue"])
    assert plots.glue_figure("fig-test", fig) is None
    image, display = seen["fig-test"]
    assert display is False and not plt.fignum_exists(fig.number)
    facts = Image.open(io.BytesIO(image.data)).text
    assert facts["shardlab:layout"] == "2x1"
    assert facts["shardlab:colors"] == "blue,orange"
    assert float(facts["shardlab:min-font-pt"]) >= plots.MIN_FONT_PT
    assert float(facts["shardlab:dpi"]) == plots.DPI * plots.PNG_SCALE  # PNG 的 dpi：手机上按它算字的像素
    assert Image.open(io.BytesIO(image.data)).width <= plots.PAGE_WIDTH_IN * plots.DPI * plots.PNG_SCALE * 1.05


def test_figure_facts_see_small_text_and_columns():
    fig, axes = plots.figure(1, 3)
    axes[2].text(0.5, 0.5, "小字", fontsize=6)
    axes[1].plot([0, 1], color=plots.COLORS["vermillion"], alpha=0.5)
    axes[0].bar([0], [1], color="#cccccc", edgecolor="white")  # 不在 COLORS 里的灰色也算灰色；白色不算
    facts = plots.figure_facts(fig)
    plt.close(fig)
    assert facts["shardlab:layout"] == "1x3"
    assert facts["shardlab:min-font-pt"] == "6"
    assert facts["shardlab:colors"] == "grey,vermillion"


def test_glue_and_glue_text_leave_no_output_value():
    from shardlab import notebook

    assert notebook.glue("t-x", 3, display=False) is None
    assert notebook.glue_text("t-y", 2.5) is None
    assert notebook.GLUED["t-y"] == "2.5"
    with pytest.raises(ValueError, match="名字"):
        notebook.glue_text("", "x")


def test_style_block_restores_only_its_own_settings():
    """style() 退出时只恢复样式里的键：Jupyter inline 后端打开的 interactive 不能被改回去"""
    before = matplotlib.rcParams["font.size"]
    with plots.style():
        assert matplotlib.rcParams["font.size"] == plots.STYLE["font.size"]
        matplotlib.interactive(True)
    try:
        assert matplotlib.is_interactive()
        assert matplotlib.rcParams["font.size"] == before
    finally:
        matplotlib.interactive(False)


def test_matmul_cases_labels_sit_beside_the_matrices():
    """图 6.2：行标签、矩阵名、说明的文字框都不压在任何一个矩阵格上（问号本来就在格子里），也不出图"""
    from matplotlib.patches import Rectangle

    fig = plots.matmul_cases()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    problems = []
    for ax in fig.axes:
        cells = [p.get_window_extent(renderer) for p in ax.patches if isinstance(p, Rectangle)]
        assert len(cells) >= 12
        for text in ax.texts:
            box = text.get_window_extent(renderer)
            if box.x0 < page.x0 - 1 or box.x1 > page.x1 + 1:
                problems.append(f"{text.get_text()!r} 出了图的左右边界")
            for cell in cells:
                inside = cell.x0 <= box.x0 and box.x1 <= cell.x1 and cell.y0 <= box.y0 and box.y1 <= cell.y1
                if box.overlaps(cell) and not inside:
                    problems.append(f"{text.get_text()!r} 压在矩阵格上")
                    break
    assert any(t.get_text() == "情形 1" for ax in fig.axes for t in ax.texts)
    assert problems == [], problems
