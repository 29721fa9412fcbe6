"""全书统一的图：一种 matplotlib 样式、一组颜色、几个常用的画法

样式
    ``use_style()`` 在笔记本开头调用一次（之后所有图都用它）；只想临时用时写 ``with plots.style(): ...``。
    ``figure()`` 按网站正文的宽度（约 800 px）建图：宽 ``PAGE_WIDTH_IN`` 英寸、``DPI`` 点每英寸，
    字号 11 pt 起，缩放到正文宽度时仍然清晰。颜色循环是 Okabe–Ito 色盲友好配色（``COLORS``），
    同一种量在全书用同一种颜色：计算用 ``COLORS["compute"]``，通信用 ``COLORS["comm"]``。

文字
    图里的文字只用英文和数学式（``$...$`` 走 matplotlib 的 mathtext），不用中文：
    默认字体 DejaVu Sans 没有中文字形，中文说明写在图注（caption）和 alt 里。
    ``LABELS`` 列出这里的画法会写到图上的全部固定文字；``tests/test_plots.py`` 把它们逐个渲染，
    出现 “Glyph ... missing from font” 警告就失败。这里的画法加了固定文字就加进 ``LABELS``；
    别的模块里的画法（如 ``bench.plot``）把自己的固定文字放在模块级的 ``LABELS`` 元组里，测试会自动收集。

alt 文字（每张图都要有）
    网站的浏览器测试（``tests/test_site.py``）要求正文里每张图都有说明性的 alt。两种写法：

    1. 图要放在正文某处（推荐）：代码单元里 ``plots.glue_figure("fig-allgather-time", fig)``，
       正文里 ::

           ```{glue:figure} fig-allgather-time
           :alt: AllGather 的时间随字节数变化的双对数图：小消息是一条水平线（延迟主导），大消息是斜率为 1 的直线（带宽主导）
           :name: fig-allgather-time

           图注：……
           ```

    2. 图就在代码单元下面显示：给代码单元加元数据 ::

           ```{code-cell} ipython3
           ---
           mystnb:
             image:
               alt: 环形 AllGather 每一步各设备收发的块
             figure:
               caption: 图注：……
               name: fig-ring-steps
           ---
           ```

    alt 写图里能看到的结论（不是 “图 1”），一两句中文即可。
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence

# 网站正文宽约 800 px：7.5 in × 110 dpi = 825 px，缩放到正文宽度时几乎不缩小
PAGE_WIDTH_IN = 7.5
DPI = 110
ASPECT = 0.56

# Okabe–Ito 色盲友好配色；前几种进入颜色循环
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#999999",
}
COLORS["compute"] = COLORS["blue"]
COLORS["comm"] = COLORS["vermillion"]
CYCLE = [COLORS[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky", "black")]

STYLE = {
    "figure.figsize": (PAGE_WIDTH_IN, PAGE_WIDTH_IN * ASPECT),
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.constrained_layout.use": True,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "lines.linewidth": 2.0,
    "lines.markersize": 5,
    "image.cmap": "viridis",
}

# 这里的画法写到图上的全部固定文字（test_plots.py 逐个渲染，检查字体里有这些字形）
REGIME_LABELS = ("latency-bound", "bandwidth-bound", "compute-bound", "communication-bound")
AXIS_LABELS = ("message size (bytes)", "time", "device", "time (µs)", "step")
TIMELINE_KINDS = ("compute", "comm", "idle")
LABELS = (
    REGIME_LABELS
    + AXIS_LABELS
    + TIMELINE_KINDS
    + (
        "AllGather",
        "ReduceScatter",
        "AllReduce",
        "AllToAll",
        "one-way ring",
        "bidirectional ring",
        "crossover",
        r"$T = \alpha + \frac{(N-1)\,V}{N\,W}$",
        r"$V / W_{\mathrm{ICI}}$",
        r"$N \times$",
        "1 kB 1 MB 1 GB 1 µs 1 ms 1 s",
    )
)


def _rc() -> dict:
    from cycler import cycler

    rc = dict(STYLE)
    rc["axes.prop_cycle"] = cycler(color=CYCLE)  # 颜色循环（STYLE 里只放纯值，方便打印和比较）
    return rc


def use_style() -> None:
    """本笔记本之后的所有图都用课程样式（可重复调用）"""
    import matplotlib as mpl

    mpl.rcParams.update(_rc())


@contextlib.contextmanager
def style():
    """只在 with 块里用课程样式（建图和画图都要在块里）

    只保存、恢复样式里的那些键；不用 ``matplotlib.rc_context``，因为它退出时会把 Jupyter 的 inline 后端
    在块里第一次建图时打开的 ``interactive`` 也恢复成 False，之后的图就不再自动显示。
    """
    import matplotlib as mpl

    rc = _rc()
    saved = {key: mpl.rcParams[key] for key in rc}
    mpl.rcParams.update(rc)
    try:
        yield
    finally:
        mpl.rcParams.update(saved)


def figure(nrows: int = 1, ncols: int = 1, *, height: float | None = None, **kwargs):
    """按正文宽度建图，返回 (fig, ax 或 axes)；height 以英寸计，默认宽度 × ASPECT

    会先调用 ``use_style()``：之后在这个图上写的文字、画的线也都是课程样式。
    """
    import matplotlib.pyplot as plt

    use_style()
    h = height if height is not None else PAGE_WIDTH_IN * ASPECT * (1 if nrows == 1 else 0.75 * nrows)
    return plt.subplots(nrows, ncols, figsize=(PAGE_WIDTH_IN, h), **kwargs)


def glue_figure(name: str, fig) -> None:
    """把图交给正文（``{glue:figure}`` 引用，alt 写在那里），并关掉它，免得在代码单元下面再显示一次"""
    import matplotlib.pyplot as plt

    from shardlab.notebook import glue

    glue(name, fig, display=False)
    plt.close(fig)


# ---------- 刻度 ----------


def _si(value: float, unit: str, prefixes: Sequence[tuple[float, str]]) -> str:
    if value <= 0:
        return f"0 {unit}"
    for scale, prefix in prefixes:
        if value >= scale * 0.999:
            v = value / scale
            return f"{v:.3g} {prefix}{unit}"
    scale, prefix = prefixes[-1]
    return f"{value / scale:.3g} {prefix}{unit}"


_BYTE_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def bytes_label(value: float, _pos=None) -> str:
    """刻度上的字节数：1e6 → '1 MB'（SI 前缀，与 shardlab.units 一致）"""
    return _si(value, "B", _BYTE_PREFIXES)


def time_label(value: float, _pos=None) -> str:
    """刻度上的时间：2e-6 → '2 µs'"""
    return _si(value, "s", _TIME_PREFIXES)


# ---------- 画法 ----------


def loglog_time_vs_bytes(
    ax,
    sizes_bytes: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    xlabel: str = "message size (bytes)",
    ylabel: str = "time",
    markers: bool = False,
):
    """双对数坐标下的 “时间 vs 字节数”：curves 是 {图例: 每个大小对应的秒数}；刻度写成 kB / µs"""
    from matplotlib.ticker import FuncFormatter, LogLocator

    sizes = list(sizes_bytes)
    for label, times in curves.items():
        times = list(times)
        if len(times) != len(sizes):
            raise ValueError(f"曲线 {label!r} 有 {len(times)} 个点，而字节数有 {len(sizes)} 个")
        ax.plot(sizes, times, marker="o" if markers else None, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis, fmt in ((ax.xaxis, bytes_label), (ax.yaxis, time_label)):
        axis.set_major_locator(LogLocator(base=10, numticks=12))
        axis.set_major_formatter(FuncFormatter(fmt))
        axis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if curves:
        ax.legend()
    return ax


def mark_regimes(
    ax,
    crossover: float,
    left: str = "latency-bound",
    right: str = "bandwidth-bound",
    *,
    label_crossover: bool = True,
):
    """在 x = crossover 处画一条竖线，把两边标成两种主导区间（默认：延迟主导 / 带宽主导）"""
    lo, hi = ax.get_xlim()
    log = ax.get_xscale() == "log"
    ax.axvline(crossover, color=COLORS["grey"], linestyle="--", linewidth=1.2, zorder=1)
    ax.axvspan(lo, crossover, color=COLORS["sky"], alpha=0.08, zorder=0)
    ax.axvspan(crossover, hi, color=COLORS["orange"], alpha=0.08, zorder=0)
    ax.set_xlim(lo, hi)

    def mid(a: float, b: float) -> float:
        return math.sqrt(a * b) if log and a > 0 and b > 0 else (a + b) / 2

    trans = ax.get_xaxis_transform()  # x 用数据坐标，y 用轴坐标
    kw = dict(transform=trans, ha="center", va="top", fontsize=10, color="#333333")
    ax.text(mid(lo, crossover), 0.97, left, **kw)
    ax.text(mid(crossover, hi), 0.97, right, **kw)
    if label_crossover:
        ax.text(crossover, 0.02, " crossover", transform=trans, ha="left", va="bottom", fontsize=9, color="#555555")
    return ax


def timeline(ax, steps: Iterable[Mapping], *, lanes: Sequence[str] | None = None, unit: float = 1e-6):
    """甘特图：steps 里每一项是 {"lane": 行名, "start": 秒, "duration": 秒, "kind": compute/comm/idle, "label": 可选}

    适合画 collective matmul 里计算与通信的重叠。横轴以 unit 为单位（默认 µs）。
    """
    steps = list(steps)
    if lanes is None:
        lanes = list(dict.fromkeys(str(s["lane"]) for s in steps))
    row = {name: i for i, name in enumerate(lanes)}
    colors = {"compute": COLORS["compute"], "comm": COLORS["comm"], "idle": COLORS["grey"]}
    seen: set[str] = set()
    for s in steps:
        kind = s.get("kind", "compute")
        if kind not in colors:
            raise ValueError(f"kind 只能是 {sorted(colors)}，而不是 {kind!r}")
        y = row[str(s["lane"])]
        start, dur = s["start"] / unit, s["duration"] / unit
        ax.barh(
            y,
            dur,
            left=start,
            height=0.6,
            color=colors[kind],
            alpha=0.9 if kind != "idle" else 0.35,
            edgecolor="white",
            label=None if kind in seen else kind,
        )
        seen.add(kind)
        if s.get("label"):
            ax.text(start + dur / 2, y, str(s["label"]), ha="center", va="center", fontsize=9, color="white")
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set_xlabel("time (µs)" if unit == 1e-6 else "time")
    ax.grid(axis="y", visible=False)
    if seen:
        ax.legend(loc="upper right", ncols=len(seen))
    return ax


__all__ = [
    "COLORS",
    "CYCLE",
    "DPI",
    "LABELS",
    "PAGE_WIDTH_IN",
    "STYLE",
    "bytes_label",
    "figure",
    "glue_figure",
    "loglog_time_vs_bytes",
    "mark_regimes",
    "style",
    "time_label",
    "timeline",
    "use_style",
]
