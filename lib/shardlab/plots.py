"""全书统一的图：一种 matplotlib 样式、一组颜色、几个常用的画法

样式
    ``use_style()`` 在笔记本开头调用一次（之后所有图都用它）；只想临时用时写 ``with plots.style(): ...``。
    ``figure()`` 先为手机建图：宽 ``PAGE_WIDTH_IN``（4.5）英寸、``DPI`` 点每英寸，字号 10–12 pt；
    网站上图缩放到正文宽度（手机上 342 px，桌面上最宽约 600 px），字在手机上不小于 10 CSS px。
    多个子图时竖着排（``figure(2, 1)``、``figure(4, 2)``），不要在一行里放三个以上。颜色循环是 Okabe–Ito 色盲友好配色（``COLORS``），
    同一种量在全书用同一种颜色：计算用 ``COLORS["compute"]``，通信用 ``COLORS["comm"]``。

文字
    图里的文字用中文（数学式用 ``$...$``，走 matplotlib 的 mathtext）。``use_style()`` 注册一个 CJK 字体：
    优先用 pip 包 ``noto-cjk-sans-otc``（Noto Sans CJK，SIL OFL；它是 shardlab 的依赖，所以 Colab 上
    ``%pip install`` 课程库时一起装上），其次是系统里已有的 CJK 字体（Debian 的 ``fonts-noto-cjk`` 等）。
    拉丁字母和数字仍用 DejaVu Sans，汉字由 CJK 字体补上（matplotlib 的字体回退）。
    一个 CJK 字体都找不到时 ``use_style()`` 用中文警告一次；想在那种环境里也不出现方框（tofu），
    写 ``zh("延迟受限", "latency-bound")``：有 CJK 字体时是中文，没有时是英文。
    ``LABELS`` 列出这里的画法会写到图上的全部固定文字；``tests/test_plots.py`` 把它们逐个渲染，
    出现 “Glyph ... missing from font” 警告就失败。这里的画法加了固定文字就加进 ``LABELS``；
    别的模块里的画法（如 ``bench.plot``）把自己的固定文字放在模块级的 ``LABELS`` 元组里，测试会自动收集。
    图上的字号不小于 ``MIN_FONT_PT``（10 pt）：手机上图缩放到正文宽度（见 ``book/_static/course.css``），
    4.5 in 宽的图上 10 pt 的字在 390 px 的屏幕上约 10.4 CSS px（网站测试按 ``glue_figure`` 记下的字号检查，
    也检查图不比屏幕宽）。

图与图注一致
    ``glue_figure`` 把图渲染成 PNG 交给正文，并在 PNG 的文字块（tEXt）里记下子图的排列（行 × 列）、
    图里用到的课程颜色（``COLORS`` 的名字）和最小字号。网站测试据此检查图注：写了“（左）/（右）”的图
    要有两列以上，写了“（上）/（下）”的要有两行以上；图注里的颜色词（蓝、橙、朱红……，见 ``COLOR_WORDS``）
    必须是图里真用到的颜色。

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
import functools
import io
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence

from shardlab import notebook

try:  # 课程的 CJK 字体（pip 包 noto-cjk-sans-otc）；没有时找系统字体，见 cjk_font()
    import noto_cjk_sans_otc
except ImportError:  # pragma: no cover - 依赖里有它；只在手工装的环境里缺
    noto_cjk_sans_otc = None

# 先为手机画：390 px 的手机上正文 342 px 宽（两边各留 24 px），图缩放到这个宽度。4.5 in 宽的图
# （PNG 四周只留 PAD_IN 的白边）缩到 342 px 时，10 pt（MIN_FONT_PT）的字是 10 / 72 × 342 / 4.56 ≈ 10.4 CSS px。
# 桌面上图不放大到整个正文宽，最宽按 course.css 的 38rem（约 600 px）显示，字约 18 px。
PAGE_WIDTH_IN = 4.5
PAD_IN = 0.03
DPI = 110
ASPECT = 0.62
# glue_figure 的 PNG 按 DPI × PNG_SCALE 渲染：手机（设备像素比 2–3）和桌面上缩放后都清晰
PNG_SCALE = 2

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
# 图注里的颜色词 → 它可以指的 COLORS 名字（“天蓝”要先于“蓝”匹配；橙色不是红色）
COLOR_WORDS = {
    "天蓝": ("sky",),
    "浅蓝": ("sky",),
    "蓝": ("blue", "sky"),
    "橙": ("orange",),
    "绿": ("green",),
    "朱红": ("vermillion",),
    "红": ("vermillion",),
    "紫": ("purple",),
    "粉": ("purple",),
    "黄": ("yellow",),
    "黑": ("black",),
    "灰": ("grey",),
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
    "font.family": ["DejaVu Sans"],  # use_style() 在后面补上找到的 CJK 字体
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

MIN_FONT_PT = 10

# CJK 字体：先找 pip 包 noto-cjk-sans-otc 里的 Noto Sans CJK，再找系统里已装的这些字族
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Noto Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "PingFang SC",
    "Microsoft YaHei",
    "SimHei",
)


@functools.cache
def cjk_font() -> str | None:
    """注册并返回一个能显示简体中文的字族名；一个都没有时返回 None"""
    from matplotlib import font_manager

    if noto_cjk_sans_otc is not None:
        try:
            font_manager.fontManager.addfont(str(noto_cjk_sans_otc.FONT_PATH))
        except (OSError, RuntimeError):
            pass
    have = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FAMILIES if name in have), None)


def zh(chinese: str, english: str) -> str:
    """图上的文字：有 CJK 字体时用中文，没有时用英文（永远不画方框）"""
    return chinese if cjk_font() else english


# 这里的画法写到图上的全部固定文字（test_plots.py 逐个渲染，检查字体里有这些字形）
REGIME_LABELS = ("延迟受限", "带宽受限", "计算受限", "通信受限")
AXIS_LABELS = ("消息大小（字节）", "时间", "设备", "时间（µs）", "步")
TIMELINE_KINDS = {"compute": "计算", "comm": "通信", "idle": "空闲"}
LABELS = (
    REGIME_LABELS
    + AXIS_LABELS
    + tuple(TIMELINE_KINDS.values())
    + (
        "AllGather",
        "ReduceScatter",
        "AllReduce",
        "AllToAll",
        "单向环",
        "双向环",
        "交点",
        r"$T = \alpha + \frac{(N-1)\,V}{N\,W}$",
        r"$V / W_{\mathrm{ICI}}$",
        r"$N \times$",
        "1 kB 1 MB 1 GB 1 µs 1 ms 1 s",
    )
)


def _rc() -> dict:
    from cycler import cycler

    rc = dict(STYLE)
    font = cjk_font()
    if font is None:
        _warn_no_cjk_font()
    else:
        rc["font.family"] = [*STYLE["font.family"], font]
    rc["axes.prop_cycle"] = cycler(color=CYCLE)  # 颜色循环（STYLE 里只放纯值，方便打印和比较）
    return rc


@functools.cache
def _warn_no_cjk_font() -> None:
    warnings.warn(
        "没有找到 CJK 字体（CJK font），图里的中文会显示成方框："
        "请 pip install noto-cjk-sans-otc，或安装系统字体 fonts-noto-cjk",
        stacklevel=3,
    )


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


def _neutral(rgb) -> str | None:
    """不在 COLORS 里的中性色：灰（#cccccc、lightgray 等）或近于黑；白色不算"""
    hi, lo = max(rgb), min(rgb)
    if hi - lo > 0.06:
        return None
    if hi < 0.2:
        return "black"
    return "grey" if hi < 0.95 else None


PNG_KEYS = ("shardlab:layout", "shardlab:colors", "shardlab:min-font-pt", "shardlab:dpi")


def figure_facts(fig) -> dict[str, str]:
    """图的几个可检查的事实：子图排列 “行x列”、用到的课程颜色名（逗号分隔）、最小字号（pt）、dpi

    只数有 subplotspec 的坐标轴（子图；颜色条、插图不算）；颜色认 ``COLORS`` 里的颜色（忽略透明度），
    另外把中性的灰色（#cccccc 之类）记作 grey、近于黑的记作 black，全透明的不算。
    """
    from matplotlib.colors import to_hex, to_rgba
    from matplotlib.text import Text

    grids = [ax.get_subplotspec().get_gridspec() for ax in fig.axes if ax.get_subplotspec() is not None]
    rows, cols = (grids[0].nrows, grids[0].ncols) if grids else (1, 1)
    by_hex: dict[str, str] = {}
    for key, value in COLORS.items():
        if key not in ("compute", "comm"):
            by_hex.setdefault(value.lower(), key)
    used: set[str] = set()

    def note(color) -> None:
        try:
            for c in color if hasattr(color, "ndim") and color.ndim == 2 else [color]:
                rgba = to_rgba(c)
                name = by_hex.get(to_hex(rgba[:3]).lower()) or _neutral(rgba[:3])
                if name and rgba[3] > 0:
                    used.add(name)
        except (ValueError, TypeError):
            pass

    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_visible() and line.get_linestyle() not in ("None", "none", ""):
                note(line.get_color())
            if line.get_visible() and line.get_marker() not in (None, "None", "none", ""):
                note(line.get_markerfacecolor())
        for patch in ax.patches:
            if patch.get_visible() and patch.get_fill():
                note(patch.get_facecolor())
        for coll in ax.collections:
            if coll.get_visible():
                note(coll.get_facecolor())
                note(coll.get_edgecolor())
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None
    ]
    return {
        "shardlab:layout": f"{rows}x{cols}",
        "shardlab:colors": ",".join(sorted(used)),
        "shardlab:min-font-pt": f"{min(sizes) if sizes else MIN_FONT_PT:g}",
        "shardlab:dpi": f"{fig.dpi:g}",
    }


def figure_png(fig, *, close: bool = False) -> bytes:
    """把图渲染成 PNG（bbox_inches="tight"，dpi 是图的 PNG_SCALE 倍），tEXt 里写上 ``figure_facts``（dpi 是 PNG 的）

    close=True 时渲染完就关掉这张图（免得 Jupyter 在单元下面再显示一次）。
    """
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    dpi = fig.dpi * PNG_SCALE
    facts = figure_facts(fig) | {"shardlab:dpi": f"{dpi:g}"}
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", pad_inches=PAD_IN, metadata=facts)
    if close:
        plt.close(fig)
    return buf.getvalue()


def glue_figure(name: str, fig) -> None:
    """把图交给正文（``{glue:figure}`` 引用，alt 写在那里），并关掉它，免得在代码单元下面再显示一次

    交出去的是带 ``figure_facts`` 的 PNG（网站测试用它核对图注与手机上的字号）；在没有 myst-nb 的环境
    （Colab）里这张 PNG 直接显示出来。
    """
    notebook.glue_png(name, figure_png(fig, close=True))


# ---------- 刻度 ----------


def bytes_label(value: float, _pos=None) -> str:
    """刻度上的字节数：1e6 → '1 MB'（SI 前缀，与 shardlab.units 一致；matplotlib 的 EngFormatter）"""
    from matplotlib.ticker import EngFormatter

    return EngFormatter(unit="B", sep=" ")(value)


def time_label(value: float, _pos=None) -> str:
    """刻度上的时间：2e-6 → '2 µs'"""
    from matplotlib.ticker import EngFormatter

    return EngFormatter(unit="s", sep=" ")(value)


# ---------- 画法 ----------


def loglog_time_vs_bytes(
    ax,
    sizes_bytes: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    xlabel: str = "消息大小（字节）",
    ylabel: str = "时间",
    markers: bool = False,
):
    """双对数坐标下的 “时间 vs 字节数”：curves 是 {图例: 每个大小对应的秒数}；刻度写成 kB / µs"""
    from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter

    sizes = list(sizes_bytes)
    for label, times in curves.items():
        times = list(times)
        if len(times) != len(sizes):
            raise ValueError(f"曲线 {label!r} 有 {len(times)} 个点，而字节数有 {len(sizes)} 个")
        ax.plot(sizes, times, marker="o" if markers else None, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis, unit in ((ax.xaxis, "B"), (ax.yaxis, "s")):
        axis.set_major_locator(LogLocator(base=10, numticks=12))
        axis.set_major_formatter(EngFormatter(unit=unit, sep=" "))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if curves:
        ax.legend()
    return ax


def mark_regimes(
    ax,
    crossover: float,
    left: str = "延迟受限",
    right: str = "带宽受限",
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
    kw = dict(transform=trans, ha="center", va="top", fontsize=MIN_FONT_PT, color="#333333")
    kw["bbox"] = dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.85)
    ax.text(mid(lo, crossover), 0.97, left, **kw)
    ax.text(mid(crossover, hi), 0.97, right, **kw)
    if label_crossover:
        ax.text(
            crossover, 0.02, " 交点", transform=trans, ha="left", va="bottom", fontsize=MIN_FONT_PT, color="#555555"
        )
    return ax


def timeline(
    ax,
    steps: Iterable[Mapping],
    *,
    lanes: Sequence[str] | None = None,
    unit: float = 1e-6,
    lane_labels: str = "left",
):
    """甘特图：steps 里每一项是 {"lane": 行名, "start": 秒, "duration": 秒, "kind": compute/comm/idle, "label": 可选}

    适合画 collective matmul 里计算与通信的重叠。横轴以 unit 为单位（默认 µs）。
    lane_labels="above" 把行名写在每一行的条上方（不占左边的宽度）：行名长、条上的字多时手机上放得下。
    """
    if lane_labels not in ("left", "above"):
        raise ValueError(f"lane_labels 只能是 'left' 或 'above'，而不是 {lane_labels!r}")
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
            label=None if kind in seen else TIMELINE_KINDS[kind],
        )
        seen.add(kind)
        if s.get("label"):
            ax.text(start + dur / 2, y, str(s["label"]), ha="center", va="center", fontsize=MIN_FONT_PT, color="white")
    if lane_labels == "left":
        ax.set_yticks(range(len(lanes)), lanes)
        ax.invert_yaxis()
    else:
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        for i, name in enumerate(lanes):  # 条的上沿在 i - 0.3；y 轴朝下，va="bottom" 让字落在条的上方
            ax.text(
                0.0,
                i - 0.34,
                name,
                transform=ax.get_yaxis_transform(),
                ha="left",
                va="bottom",
                fontsize=MIN_FONT_PT,
                color="#333333",
            )
        ax.set_ylim(len(lanes) - 0.55, -0.95)  # 朝下的 y 轴，第一行上方留出行名的位置
    ax.set_xlabel("时间（µs）" if unit == 1e-6 else "时间")
    ax.grid(axis="y", visible=False)
    if seen:
        ax.legend(loc="upper right", ncols=len(seen))
    return ax


__all__ = [
    "COLORS",
    "COLOR_WORDS",
    "CYCLE",
    "MIN_FONT_PT",
    "cjk_font",
    "figure_facts",
    "figure_png",
    "DPI",
    "LABELS",
    "PAGE_WIDTH_IN",
    "STYLE",
    "bytes_label",
    "figure",
    "glue_figure",
    "loglog_time_vs_bytes",
    "mark_regimes",
    "matmul_cases",
    "style",
    "time_label",
    "timeline",
    "use_style",
    "zh",
]


# 四种基本情形（第 6 章图 6.2）：行标签、A、B、C 各自的切法与名字、右边的说明
MATMUL_CASES = (
    ("情形 1", ("rows", "$A[I_X, J]$"), ("rep", "$B[J, K]$"), ("rows", "$C[I_X, K]$"), "不需要通信"),
    (
        "情形 2",
        ("cols", "$A[I, J_X]$"),
        ("rep", "$B[J, K]$"),
        ("rep", "$C[I, K]$"),
        "先沿 X AllGather(A)，\n或切片 B 再沿 X AllReduce",
    ),
    (
        "情形 3",
        ("cols", "$A[I, J_X]$"),
        ("rows", "$B[J_X, K]$"),
        ("partial", "$C[I, K]\\{U_X\\}$"),
        "之后沿 X AllReduce\n或 ReduceScatter",
    ),
    (
        "情形 4",
        ("rows", "$A[I_X, J]$"),
        ("cols", "$B[J, K_X]$"),
        ("diag", "只有对角块"),
        "输出不合法（X 用了两次）：\n先沿 X AllGather(A 或 B)",
    ),
)
LABELS += tuple(t for case in MATMUL_CASES for t in (case[0], case[1][1], case[2][1], case[3][1], case[4])) + (
    "Case 1",
    "?",
)


def matmul_cases(cases=MATMUL_CASES):
    """长度为 2 的网格轴 X 上的几种矩阵乘法情形：每行“标签 | A · B = C | 说明”，返回 Figure

    每个矩阵是 2×2 格：rows / cols 按行 / 列分给两个设备（蓝、朱红），rep 两个设备各有一份（灰），
    partial 两个设备各有一份部分和（斜线），diag 只有对角块（另两格是问号）。
    行标签单独占左边一栏（“情形 1”，下面一行小字 “Case 1”），不压在矩阵上。
    """
    from matplotlib.patches import Rectangle

    dev, grey = [COLORS["blue"], COLORS["vermillion"]], "#cccccc"
    fills = {
        "rows": [[dev[0], dev[0]], [dev[1], dev[1]]],
        "cols": [[dev[0], dev[1]], [dev[0], dev[1]]],
        "diag": [[dev[0], None], [None, dev[1]]],
    }

    def draw_matrix(ax, x0, kind, name):
        for i in range(2):
            for j in range(2):
                color = fills.get(kind, [[kind] * 2] * 2)[i][j]
                xy = (x0 + j, 1 - i)
                if color == "partial":
                    ax.add_patch(Rectangle(xy, 1, 1, facecolor="white", edgecolor=dev[0], hatch="///"))
                    ax.add_patch(Rectangle(xy, 1, 1, fill=False, edgecolor=dev[1], hatch="\\\\\\"))
                elif color is None:
                    ax.add_patch(Rectangle(xy, 1, 1, facecolor="white", edgecolor="#999999"))
                    ax.text(x0 + j + 0.5, 1.5 - i, "?", ha="center", va="center", fontsize=12)
                else:
                    face = grey if color == "rep" else color
                    ax.add_patch(Rectangle(xy, 1, 1, facecolor=face, alpha=0.75, edgecolor="white", linewidth=1.5))
        ax.text(x0 + 1, 2.15, name, ha="center", va="bottom", fontsize=MIN_FONT_PT)

    fig, axes = figure(len(cases), 1, height=1.0 * len(cases) + 0.2, squeeze=False)
    for k, (ax, (title, (ka, na), (kb, nb), (kc, nc), note)) in enumerate(zip(axes[:, 0], cases), start=1):
        ax.text(0, 1.25, title, ha="left", va="center", fontsize=11)
        ax.text(0, 0.55, f"Case {k}", ha="left", va="center", fontsize=MIN_FONT_PT, color="#555555")
        draw_matrix(ax, 2.2, ka, na)
        ax.text(4.65, 1, r"$\cdot$", ha="center", va="center", fontsize=20)
        draw_matrix(ax, 5.1, kb, nb)
        ax.text(7.55, 1, "=", ha="center", va="center", fontsize=16)
        draw_matrix(ax, 8.0, kc, nc)
        ax.text(10.4, 1, note, ha="left", va="center", fontsize=MIN_FONT_PT)
        ax.set_xlim(0, 15.6)
        ax.set_ylim(-0.1, 2.8)
        ax.set_aspect("equal")
        ax.axis("off")
    return fig
