"""`BenchResult.plot` 的画法：时间与 busbw 随大小变化（双对数），标出预测的延迟 / 带宽分界

图上的文字只用英文（课程样式的字体没有中文字形），样式与刻度来自 `shardlab.plots`。
这里只读结果的行（名字与 DISPLAY 来自 `model`），不导入 `result`：``result → plot → model`` 单向。
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from shardlab import plots
from shardlab.bench.model import DISPLAY

# 本画法写到图上的固定文字（tests/test_plots.py 自动收集并检查字形）
LABELS = ("predicted", "ppermute", "1 GB/s", "busbw (nccl-tests)", "emulated devices: model comparison not meaningful")


def _figure(nrows: int):
    """唯一与样式模块打交道的地方：以后换样式只改这里"""
    return plots.figure(nrows, 1, height=plots.PAGE_WIDTH_IN * plots.ASPECT * (1 if nrows == 1 else 1.5))


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
            ax.plot([], [], linestyle="--", color="grey", label="predicted")
        ax.legend(fontsize=8, ncols=2, loc="lower right", frameon=True, framealpha=0.85)
        _mark(ax, result)
        if any(not r.model_valid for r in result.rows):
            ax.set_title(LABELS[-1], fontsize=9, color="#777777")
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
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (nccl-tests)")
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
