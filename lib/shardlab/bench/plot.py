"""基准的图：`BenchResult.plot`（时间与 busbw 随大小变化），`plot_reference`（书中发表的实测对代价模型）

图上的文字是中文（字体由 `shardlab.plots` 的样式注册），样式与刻度来自 `shardlab.plots`；
`plot_reference` 同时返回中文图注，说明数据来源以及为什么叠加或没有叠加你的测量。
这里只读结果的行（名字与 DISPLAY 来自 `model`），不导入 `result`：``result → plot → published → model`` 单向。
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator

from shardlab import plots, units
from shardlab.bench.model import DISPLAY
from shardlab.bench.published import ReferenceSet, by_id, reference_data

# 图上的固定文字（tests/test_plots.py 自动收集 LABELS，逐个渲染检查字形）
PREDICTED = "预测"
BUSBW = "总线带宽 busbw（nccl-tests）"
EMULATED_TITLE = "模拟设备：与模型的比较没有意义"
TITLE_GPU = "8×H100 节点内的 AllReduce（关闭 SHARP）"
TITLE_TPU = "TPU v5e 上的 AllGather"
PUBLISHED = "书中实测"
DERIVED = "由书中“约 95% 峰值”换算，不是测得的时间"
ESTIMATE = "书中的估计"
MODEL = "代价模型"
THIS_RUN = "本次测量"
SIZE_V = "数组大小 V（字节）"
LABELS = (
    PREDICTED,
    BUSBW,
    EMULATED_TITLE,
    TITLE_GPU,
    TITLE_TPU,
    PUBLISHED,
    DERIVED,
    ESTIMATE,
    MODEL,
    THIS_RUN,
    SIZE_V,
    "ppermute",
    "1 GB/s",
    *(s.label for s in reference_data()),  # 数据集的图例名
)


def _figure(nrows: int, height: float | None = None):
    """唯一与样式模块打交道的地方：以后换样式只改这里"""
    h = plots.PAGE_WIDTH_IN * plots.ASPECT * (1 if nrows == 1 else 1.5)
    return plots.figure(nrows, 1, height=height or h)


def _wrap_label(label: str, width: int = 22) -> str:
    """图例名长于 width 个字时在第一个“：”后折行（手机宽度的图里图例放在图下面，一行放不下）"""
    return label.replace("：", "：\n", 1) if len(label) > width else label


def _series(result):
    out: dict[str, list] = {}
    for r in result.rows:
        out.setdefault(r.collective, []).append(r)
    return {c: sorted(rs, key=lambda r: r.bytes) for c, rs in out.items()}, DISPLAY


def _crossover(result):
    """第一种集合通信的预测分界（V，字节；测量时已算好）；没有延迟项或无法预测时为 None"""
    if not result.rows or not math.isfinite(result.rows[0].crossover_bytes):
        return None
    return result.rows[0].crossover_bytes


def draw_time(ax, result, *, predicted: bool = True):
    series, display = _series(result)
    curves = {display[c]: [r.median_s for r in rs] for c, rs in series.items()}
    sizes = [r.bytes for r in next(iter(series.values()))] if series else []
    if any(len(rs) != len(sizes) for rs in series.values()):  # 各集合通信的大小不同：逐条画
        curves = {}
    with plots.style():
        plots.loglog_time_vs_bytes(ax, sizes, curves, markers=True)
        colors = {line.get_label(): line.get_color() for line in ax.get_lines()}
        for c, rs in series.items():
            xs = [r.bytes for r in rs]
            if not curves:
                colors[display[c]] = ax.plot(xs, [r.median_s for r in rs], marker="o", label=display[c])[0].get_color()
            ax.fill_between(xs, [r.p10_s for r in rs], [r.p90_s for r in rs], alpha=0.15, color=colors[display[c]])
            pred = [r.predicted_s for r in rs]
            if predicted and all(math.isfinite(p) for p in pred):
                ax.plot(xs, pred, linestyle="--", linewidth=1.2, color=colors[display[c]])
        if predicted:
            ax.plot([], [], linestyle="--", color="grey", label=PREDICTED)
        ax.legend(ncols=2, loc="lower right", frameon=True, framealpha=0.85)
        _mark(ax, result)
        if any(not r.model_valid for r in result.rows):
            ax.set_title(EMULATED_TITLE, color="#555555")
    return ax


def draw_busbw(ax, result):
    series, display = _series(result)
    with plots.style():
        for c, rs in series.items():
            ax.plot([r.bytes for r in rs], [r.busbw for r in rs], marker="o", label=display[c])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(plots.bytes_label))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: plots.bytes_label(v) + "/s"))
        ax.set_xlabel(plots.AXIS_LABELS[0])
        ax.set_ylabel(BUSBW)
        _mark(ax, result)
    return ax


def _mark(ax, result):
    xover = _crossover(result)
    lo, hi = ax.get_xlim()
    if xover and lo < xover < hi:
        plots.mark_regimes(ax, xover)


def plot_result(result, target=None, *, predicted: bool = True):
    """target：None → 返回 fig；路径 → 保存 PNG 并返回路径；一个 ax → 只画时间；两个 ax → 时间与 busbw"""
    if target is None or isinstance(target, (str, Path)):
        fig, axes = _figure(2)
        draw_time(axes[0], result, predicted=predicted)
        draw_busbw(axes[1], result)
        if target is None:
            return fig
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
        plt.close(fig)
        return path
    if hasattr(target, "plot"):
        return draw_time(target, result, predicted=predicted)
    ax_time, ax_bw = target
    draw_time(ax_time, result, predicted=predicted)
    draw_busbw(ax_bw, result)
    return target


# ---- 书中发表的实测对代价模型 ----


@dataclass
class ReferencePlot:
    """`plot_reference` 的结果：图、中文图注（说明数据来源，以及为什么叠加或没有叠加你的测量）、是否叠加了"""

    fig: object
    caption: str
    overlaid: bool


def _draw_reference_set(ax, ref: ReferenceSet, vs, color, *, as_busbw: bool):
    model = [ref.predicted(v) for v in vs] if as_busbw else [ref.estimate(v).time_s for v in vs]
    ax.plot(vs, model, color=color, linewidth=1.6, label=f"{MODEL}：{ref.label}")
    xs = [p.bytes for p in ref.points]
    ys = [p.value if as_busbw else ref.measured_time_s(p) for p in ref.points]
    if ref.quantity == "fraction_of_peak":  # 书中只说“约为峰值的 95%”：时间是换算出来的，画成空心点
        ax.plot(
            xs,
            ys,
            linestyle="none",
            marker="o",
            markersize=7,
            markerfacecolor="white",
            color=color,
            label=f"{DERIVED}：{ref.label}",
        )
    else:
        ax.plot(xs, ys, linestyle="none", marker="o", markersize=7, color=color, label=f"{PUBLISHED}：{ref.label}")
    theory = [(p.bytes, p.theory) for p in ref.points if p.theory is not None]
    if theory:
        ax.plot(*zip(*theory), linestyle="none", marker="x", markersize=7, color=color, label=ESTIMATE)


def _overlay(ax, rows, *, as_busbw: bool) -> bool:
    if not rows:
        return False
    rows = sorted(rows, key=lambda r: r.bytes)
    ys = [r.busbw for r in rows] if as_busbw else [r.median_s for r in rows]
    ax.plot([r.bytes for r in rows], ys, marker="s", color=plots.COLORS["black"], label=f"{THIS_RUN}：{rows[0].chip}")
    return True


def plot_reference(result=None, *, sets=None) -> ReferencePlot:
    """书中发表的 8×H100 AllReduce busbw（上）与 TPU v5e AllGather 时间（下），各配代价模型的曲线

    result：你自己的 `BenchResult`。只有在真实硬件上测得（每行 ``model_valid``）时才叠加：
    AllReduce 的行画在上图（busbw），AllGather 的行画在下图（时间）。模拟 CPU 设备上的计时量的是
    memcpy 与 XLA CPU 的调度，与 ICI / NVLink 无关，放在一起只会误导，所以不叠加，并在图注里说明。
    """
    sets = sets if sets is not None else reference_data()
    h100, y4, x16 = (by_id(sets, i) for i in ("h100-all-reduce", "v5e-all-gather-y4", "v5e-all-gather-16"))
    fig, (ax_gpu, ax_tpu) = _figure(2, height=7.6)
    real = result is not None and bool(result.rows) and all(r.model_valid for r in result.rows)
    overlaid = False
    with plots.style():
        vs = np.logspace(5, 11, 61)
        _draw_reference_set(ax_gpu, h100, vs, plots.COLORS["vermillion"], as_busbw=True)
        ax_gpu.set_xscale("log")
        ax_gpu.set_ylim(0, 1.15 * h100.chip.nvlink_bw_per_direction)
        ax_gpu.xaxis.set_major_formatter(FuncFormatter(plots.bytes_label))
        ax_gpu.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: plots.bytes_label(v) + "/s"))
        ax_gpu.set_xlabel(SIZE_V)
        ax_gpu.set_ylabel(BUSBW)
        ax_gpu.set_title(TITLE_GPU)
        vs_tpu = np.logspace(4, 9, 51)
        plots.loglog_time_vs_bytes(ax_tpu, [], {}, xlabel=SIZE_V)
        _draw_reference_set(ax_tpu, y4, vs_tpu, plots.COLORS["blue"], as_busbw=False)
        _draw_reference_set(ax_tpu, x16, vs_tpu, plots.COLORS["green"], as_busbw=False)
        ax_tpu.set_title(TITLE_TPU)
        if real:
            ar = [r for r in result.rows if r.collective == "all_reduce"]
            ag = [r for r in result.rows if r.collective == "all_gather"]
            overlaid = _overlay(ax_gpu, ar, as_busbw=True) | _overlay(ax_tpu, ag, as_busbw=False)
        for ax in (ax_gpu, ax_tpu):  # 手机宽度的图上每隔两个数量级一个刻度，刻度上的字不挤在一起
            ax.xaxis.set_major_locator(LogLocator(base=100))
        for ax in (ax_gpu, ax_tpu):  # 图例放在每幅图下面：手机宽度的图里放在图内会盖住曲线
            handles, labels = ax.get_legend_handles_labels()
            ax.legend(
                handles,
                [_wrap_label(label) for label in labels],
                loc="upper center",
                bbox_to_anchor=(0.5, -0.3),
                frameon=False,
            )
        # constrained layout 没把上图图例的最后一行完全算进去（与下图标题重叠约 2 px）：两幅图之间多留一点
        fig.get_layout_engine().set(hspace=0.06)
    return ReferencePlot(fig, _reference_caption(result, real, overlaid, (h100, y4, x16)), overlaid)


def _reference_caption(result, real: bool, overlaid: bool, sets) -> str:
    h100, y4, x16 = sets
    lines = [
        f"上图：AllReduce 的总线带宽（busbw），{h100.setting}；红色圆点是书中正文写明的实测，曲线是本课程代价模型的预测"
        f"（出处：How To Scale Your Model，{h100.source}）。",
        f"下图：AllGather 的时间。蓝色：{y4.setting}，圆点为实测，叉为书中的估计；"
        f"绿色：{x16.setting}，书中说总量约 {units.fmt_bytes(x16.points[0].bytes)} 起达到峰值带宽的 "
        f"{x16.points[0].value:.0%}，圆点按模型的带宽项换算成时间（出处：{y4.source}；{x16.source}）。",
    ]
    if result is None:
        lines.append("没有给出自己的测量（BenchResult），图中只有书中的数据与模型。")
    elif not real:
        lines.append(
            "你的测量来自模拟的 CPU 设备（emulated CPU devices）：计时反映的是 memcpy 与 XLA CPU 的调度，"
            f"与 ICI / NVLink 无关，所以没有叠加到图上。在 TPU 或 GPU 上运行 shardlab.bench 后再画，才会出现黑色的“{THIS_RUN}”。"
        )
    elif overlaid:
        chip = result.rows[0].chip
        lines.append(f"黑色方块是这次在 {chip} 上的测量（AllReduce 画在上图，AllGather 画在下图）。")
    else:
        lines.append("这次的测量里没有 AllReduce 或 AllGather 的行，所以没有可叠加的点。")
    return "\n".join(lines)
