"""参考数据：书中发表的集合通信实测（bench.published、bench.plot.plot_reference）与 GPU 单芯片参考文件（bench.roofline）"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from shardlab import bench, hardware, runtime  # noqa: E402
from shardlab.bench import model, plot, published, roofline  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETS = bench.reference_data()


# ---- 书中发表的数 ----


def _point(ident: str, nbytes: int) -> tuple[published.ReferenceSet, published.ReferencePoint]:
    ref = published.by_id(SETS, ident)
    return ref, next(p for p in ref.points if p.bytes == nbytes)


def test_published_points_are_the_numbers_the_book_states():
    # 数字照书的正文抄在这里（gpus.md「Intra-node collectives」；sharding.md Case 2 Pop Quiz 2；8x16 的 95%）
    ref, p = _point("h100-all-reduce", 10_000_000_000)
    assert (ref.collective, ref.chip, ref.n, ref.quantity, p.value) == ("all_reduce", hardware.H100, 8, "busbw", 370e9)
    _, p = _point("h100-all-reduce", 2 * 8192 * 3584)  # bf16[8192, 3584]，书中写作 58 MB
    assert p.value == 150e9
    ref, p = _point("v5e-all-gather-y4", 2 * 2048 * 8192)  # bf16[2048, 8192] = 34 MB
    assert (ref.chip, ref.axes, ref.slice_shape, p.value, p.theory) == (
        hardware.TPU_V5E,
        {"Y": 4},
        (8, 4),
        680e-6,
        560e-6,
    )
    _, p = _point("v5e-all-gather-y4", 2 * 256 * 256)  # bf16[256, 256]，每片 32 kB
    assert (p.value, p.theory) == (8e-6, 3e-6)
    ref, p = _point("v5e-all-gather-16", 10_000_000)
    assert (ref.n, ref.slice_shape, ref.quantity, p.value) == (16, (8, 16), "fraction_of_peak", 0.95)
    assert all(p.kind == "stated" and p.what for s in SETS for p in s.points)
    assert all(s.source and s.setting and s.label for s in SETS)


def test_cost_model_reproduces_the_books_own_estimates():
    """书给出理论估计的点：本课程的代价模型与书的估计相差不到 2%（独立的核对）"""
    checked = 0
    for s in SETS:
        for p in s.points:
            if p.theory is not None:
                assert s.estimate(p.bytes).time_s == pytest.approx(p.theory, rel=0.02), (s.id, p.bytes)
                checked += 1
    assert checked == 2


def test_reference_table_compares_measured_with_the_model():
    rows = bench.reference_table()
    assert len(rows) == sum(len(s.points) for s in SETS) and all(
        len(r) == len(bench.REFERENCE_TABLE_HEADERS) for r in rows
    )
    h100_10g, h100_58m, v5e_34m, v5e_32k, v5e_16 = rows
    assert (
        h100_10g[2] == "370 GB/s" and h100_10g[4] == "450 GB/s" and h100_10g[5] == "0.82"
    )  # 370 / 450（大消息时模型 → W）
    assert float(h100_58m[5]) < 0.4  # 58 MB 只有约 150 GB/s，远低于模型
    assert v5e_34m[2:5] == ["680 µs", "560 µs", "559 µs"] and v5e_34m[5] == "1.22"
    assert v5e_32k[2:5] == ["8 µs", "3 µs", "3 µs"] and v5e_16[2] == "峰值的 95%"


def test_published_data_rejects_malformed_entries():
    raw = json.loads((Path(published.__file__).parent / "data" / published.DATA_FILE).read_text(encoding="utf-8"))
    assert len(published.parse(raw)) == len(SETS)
    for field, value, msg in [
        ("quantity", "speed", "quantity"),
        ("source", "", "出处"),
        ("n", 5, "axes"),
        ("collective", "broadcast", "未知的集合通信"),
    ]:
        bad = copy.deepcopy(raw)
        bad["datasets"][0][field] = value
        with pytest.raises(ValueError, match=msg):
            published.parse(bad)
    bad = copy.deepcopy(raw)
    bad["datasets"][0]["points"][0]["kind"] = "guessed"
    with pytest.raises(model.BenchError, match="kind"):
        published.parse(bad)


@pytest.fixture(scope="module")
def emulated_run():
    return bench.run_sweep(["all_reduce", "all_gather"], "64k,1M", rt=runtime.setup("cpu"), repeats=2, progress=False)


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def test_plot_reference_without_and_with_an_emulated_run(emulated_run):
    ref = bench.plot_reference()
    assert not ref.overlaid and "没有给出自己的测量" in ref.caption and len(ref.fig.axes) == 2
    assert "上图" in ref.caption and "下图" in ref.caption  # 两张图上下排列
    plt.close(ref.fig)
    ref = bench.plot_reference(emulated_run)
    assert not ref.overlaid and "模拟的 CPU 设备" in ref.caption and "memcpy" in ref.caption
    assert not any(t.startswith(plot.THIS_RUN) for t in _legend_texts(ref.fig))
    plt.close(ref.fig)


def test_result_plot_titles_an_emulated_run_as_not_comparable(emulated_run):
    fig = emulated_run.plot()
    assert fig.axes[0].get_title() == plot.EMULATED_TITLE and fig.axes[1].get_ylabel() == plot.BUSBW
    plt.close(fig)
    real = bench.BenchResult([dataclasses.replace(r, model_valid=True) for r in emulated_run.rows])
    fig = real.plot()
    assert fig.axes[0].get_title() == ""
    plt.close(fig)


def test_plot_reference_overlays_a_run_on_real_hardware(emulated_run):
    rows = [dataclasses.replace(r, model_valid=True, chip="H100") for r in emulated_run.rows]
    ref = bench.plot_reference(bench.BenchResult(rows, emulated_run.metadata))
    assert ref.overlaid and "H100" in ref.caption
    assert _legend_texts(ref.fig).count(f"{plot.THIS_RUN}：H100") == 2  # AllReduce 在上图，AllGather 在下图
    plt.close(ref.fig)
    only_ppermute = [dataclasses.replace(rows[0], collective="ppermute")]
    ref = bench.plot_reference(bench.BenchResult(only_ppermute))
    assert not ref.overlaid and "没有可叠加" in ref.caption
    plt.close(ref.fig)


# ---- GPU 单芯片参考文件 ----


def _h100_file(tmp_path: Path) -> Path:
    """一份手写的 H100 文件（格式测试用的假数据，不提交）"""
    mm = []
    for m, k, n, t in ((8192, 8192, 8192, 1.5e-3), (16, 8192, 8192, 1e-4)):
        nbytes = 2 * (m * k + k * n + m * n)
        mm.append(
            {"m": m, "k": k, "n": n, "dtype": "bfloat16", "flops": 2 * m * k * n, "bytes": nbytes}
            | {"median_s": t, "p10_s": t, "p90_s": t}
        )
    hbm = [{"op": "copy", "dtype": "bfloat16", "array_bytes": 2**30, "bytes": 2**31, "median_s": 1e-3}]
    hbm[0] |= {"p10_s": 1e-3, "p90_s": 1e-3}
    data = {
        "schema": roofline.SCHEMA,
        "dry_run": False,
        "date": "2026-01-01T00:00:00+00:00",
        "device_kind": "NVIDIA H100 80GB HBM3",
        "platform": "gpu",
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "driver_version": "550.00",
        "cuda_version": "cuda 12.4",
        "jax_version": "0.10.2",
        "jaxlib_version": "0.10.2",
        "python": "3.11.7",
        "repeats": 20,
        "warmup": 3,
        "matmul": mm,
        "hbm": hbm,
    }
    path = tmp_path / "gpu_reference_h100.json"
    path.write_text(json.dumps(data))
    return path


def test_gpu_reference_table_predicts_with_the_h100_roofline(tmp_path):
    ref = bench.load_gpu_reference(_h100_file(tmp_path))
    assert ref.chip is hardware.H100 and not ref.nominal
    big, small, copy_row = bench.gpu_reference_table(ref)
    # 手算：8192³ 是计算受限，预测 = 峰值 9.89e14；m = 16 是 HBM 受限，预测 = FLOPs / (字节 / 3.35e12)
    assert big[4] == "989 TFLOP/s" and big[3] == f"{2 * 8192**3 / 1.5e-3 / 1e12:.3g} TFLOP/s"
    small_bytes = 2 * (16 * 8192 + 8192 * 8192 + 16 * 8192)
    assert small[4] == f"{2 * 16 * 8192 * 8192 / (small_bytes / 3.35e12) / 1e12:.3g} TFLOP/s"
    assert small[2] == f"{2 * 16 * 8192 * 8192 / small_bytes:.0f}"  # 算术强度约 16
    assert copy_row[3] == "2.15 TB/s" and copy_row[4] == "3.35 TB/s" and copy_row[5] == f"{2**31 / 1e-3 / 3.35e12:.2f}"
    assert "H100" in bench.describe_gpu_reference(ref) and "演练" not in bench.describe_gpu_reference(ref)
    assert [r.path for r in bench.gpu_references(tmp_path)] == [ref.path]
    assert bench.gpu_reference_table(ref.path) == [big, small, copy_row]  # 也接受文件路径
    assert bench.gpu_references(tmp_path / "nothing") == []


@pytest.mark.parametrize(
    "edit, msg",
    [
        (lambda d: d.pop("driver_version"), "缺少字段"),
        (lambda d: d.update(extra=1), "多出字段"),
        (lambda d: d.update(repeats="20"), "repeats"),
        (lambda d: d.update(repeats=True), "repeats"),
        (lambda d: d.update(schema="other/2"), "格式"),
        (lambda d: d["matmul"][0].update(flops=1), "2·m·k·n"),
        (lambda d: d["matmul"][0].update(median_s=0), "正数"),
        (lambda d: d["hbm"][0].update(op="fill"), "op"),
        (lambda d: d.update(matmul=[], hbm=[]), "没有任何测量"),
        (lambda d: d.update(device_kind="NVIDIA T4"), "未知的设备类型"),
    ],
)
def test_gpu_reference_files_are_checked(tmp_path, edit, msg):
    path = _h100_file(tmp_path)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(model.BenchError, match=msg):
        bench.load_gpu_reference(path)


def test_gpu_reference_script_dry_run_on_cpu(tmp_path):
    env = {**os.environ, "COURSE_PROFILE": "cpu", "JAX_PLATFORMS": "cpu"}
    script = ROOT / "benchmarks" / "gpu_reference.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--dry-run", "--out", str(tmp_path), "--repeats", "2", "--warmup", "0"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = bench.load_gpu_reference(tmp_path / "gpu_reference_cpu-dry-run.json")  # 格式检查在读取时
    data = ref.data
    assert data["dry_run"] and data["device_kind"] == "cpu" and ref.nominal and data["repeats"] == 2
    assert data["jax_version"] and data["jaxlib_version"] and data["cuda_version"] is None
    assert {r["op"] for r in data["hbm"]} == {"copy", "sum"} and len(data["matmul"]) >= 3
    assert all(r["flops"] == 2 * r["m"] * r["k"] * r["n"] for r in data["matmul"])  # 一次乘加算 2 FLOP
    rows = bench.gpu_reference_table(ref)
    assert len(rows) == len(data["matmul"]) + len(data["hbm"]) and "演练" in bench.describe_gpu_reference(ref)
    # 不带 --dry-run、没有 GPU 时：报错退出，不写任何文件（参考数据只能来自真实硬件）
    out = tmp_path / "real"
    proc = subprocess.run(
        [sys.executable, str(script), "--out", str(out)], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode != 0 and "没有 GPU" in proc.stderr and not out.exists()


def test_fraction_of_peak_point_is_not_drawn_as_a_measurement():
    # 书中 v5e 的那一点只说“约为峰值的 95%”：时间是换算的，图例不能叫它“书中实测”
    ref = plot.plot_reference()
    labels = [t.get_text() for ax in ref.fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    labels += [ln.get_label() for ax in ref.fig.axes for ln in ax.get_lines()]
    assert any(lab.startswith(plot.DERIVED) for lab in labels)
    assert not any(lab.startswith(plot.PUBLISHED) and "v5e 8x16" in lab for lab in labels)


def test_reference_figure_legend_clears_the_lower_panel_title():
    # 上图的图例放在图下面：它的最后一行不能压到下图的标题（“书中实测：8×H100” 曾与 “TPU v5e 上的 AllGather” 重叠）
    ref = plot.plot_reference()
    fig = ref.fig
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax_gpu, ax_tpu = fig.axes[:2]
    legend = ax_gpu.get_legend().get_window_extent(renderer)
    title = ax_tpu.title.get_window_extent(renderer)
    gap_pt = (legend.y0 - title.y1) * 72 / fig.dpi
    plt.close(fig)
    assert gap_pt >= 4, f"上图图例与下图标题之间只有 {gap_pt:.1f} pt"
