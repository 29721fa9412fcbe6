"""网页上两个交互探索器（第 5 章的集合通信、第 6 章的分片矩阵乘法）显示的数字

浏览器里（Pyodide）与笔记本里调用的是同一份代码：探索器把控件的值原样传给这里的函数，
把返回的字典（可以直接 ``json.dumps``）写进元素的 ``data-state``，再画出来。
笔记本里一次调用就得到同样的结果::

    from shardlab import explorer
    explorer.collective_state("v5e", "all_gather", 2**20, axes=["X"], mesh={"X": 16, "Y": 16})
    explorer.sharding_state(65536, 8192, 32768, "v5p", {"Y": 4}, scenario="fsdp")

出错时（芯片与网格不符等）不抛异常，返回 ``{"args": ..., "error": 中文说明}``，探索器把说明显示出来。
网页上显示的每个数字（包括坐标轴的刻度、滑块旁的值）都由这里用 shardlab.units 写成文字，网页只负责画。
本模块只用标准库。
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shardlab import cost, hardware, names, planner, sharding
from shardlab.units import fmt_bw, fmt_bytes, fmt_num, fmt_time

__all__ = [
    "CURVE_DECADES",
    "CURVE_POINTS_PER_DECADE",
    "SCENARIOS",
    "collective_state",
    "curve_sizes",
    "range_labels",
    "sharding_state",
]

CURVE_DECADES = (3, 9)  # 曲线的横轴：10^3 到 10^9 字节
CURVE_POINTS_PER_DECADE = 20  # 共 121 个点；探索器的对数滑块取同样的格点


def curve_sizes() -> list[float]:
    """曲线横轴的字节数：10^(3 + k/20)，k = 0 … 120"""
    lo, hi = CURVE_DECADES
    n = (hi - lo) * CURVE_POINTS_PER_DECADE
    return [10 ** (lo + k / CURVE_POINTS_PER_DECADE) for k in range(n + 1)]


def _mesh_dict(mesh) -> dict[str, int]:
    if isinstance(mesh, str):  # 'X=4,Y=4'
        pairs = [part.split("=") for part in mesh.replace(" ", "").split(",") if part]
        return {name: int(size) for name, size in pairs}
    return {str(name): int(size) for name, size in dict(mesh).items()}


def _axes_list(axes) -> list[str]:
    if isinstance(axes, str):
        return [a for a in axes.replace(" ", "").split(",") if a]
    return [str(a) for a in axes]


def default_slice_shape(chip: str | hardware.Chip, mesh: Mapping[str, int]) -> tuple[int, ...] | None:
    """TPU 的网格轴比 torus 维数少时补齐切片形状：3D torus 补 4（完整的 4×4×4 立方体才有 wraparound），2D 补 1"""
    chip = hardware.get_chip(chip)
    if not isinstance(chip, hardware.TpuChip):
        return None
    shape = tuple(mesh.values())
    pad = 4 if chip.torus_dims == 3 else 1
    return shape + (pad,) * max(0, chip.torus_dims - len(shape))


def _default_mesh(chip: hardware.Chip) -> dict[str, int]:
    if isinstance(chip, hardware.TpuChip):
        return dict(zip("XYZ", (4,) * chip.torus_dims))
    return {"X": 8}


# ---- 给读者看的文字：数字带单位（shardlab.units），英文术语放在括号里 ----

_NUMBER = re.compile(r"(\b[A-Za-z_]+)=([0-9.]+(?:e[+-]?[0-9]+)?) (B/s|B|s)(?=[，,）)]|$)")


def _readable_formula(text: str) -> str:
    """把 cost.estimate 的公式说明改写给读者：``V=1e+06 B`` → ``V = 1 MB``，wraparound → 回绕（wraparound）"""

    def number(m: re.Match) -> str:
        value = float(m.group(2))
        fmt = {"B/s": fmt_bw, "B": fmt_bytes, "s": fmt_time}[m.group(3)]
        return f"{m.group(1)} = {fmt(value)}"

    text = _NUMBER.sub(number, text)
    text = re.sub(r"(\b[A-Za-z]+)=(\d+)\b", r"\1 = \2", text)
    text = text.replace("（有 wraparound）", "，有回绕（wraparound）")
    text = text.replace("（line，无 wraparound）", "（line），无回绕（wraparound）")
    text = text.replace("有 wraparound 的轴", "有回绕（wraparound）的轴")
    text = re.sub(
        r"wraparound \[([^\]]*)\]",
        lambda m: (
            "各轴回绕（wraparound）：" + "、".join("有" if w.strip() == "True" else "无" for w in m.group(1).split(","))
        ),
        text,
    )
    return text


def _case_text(text: str) -> str:
    """``Case 2：…`` → ``情形 2（Case 2）：…``；行文里的 ``Case 2 / 3`` → ``情形 2 / 3``"""
    head = ""
    m = re.match(r"Case (\d)：", text)
    if m:
        head, text = f"情形 {m.group(1)}（Case {m.group(1)}）：", text[m.end() :]
    return head + re.sub(r"Case (\d)", r"情形 \1", text)


def _bound_text(bound: str) -> str:
    return "算力受限（compute-bound）" if bound == "compute-bound" else "通信受限（communication-bound）"


def _regime_text(regime: str) -> str:
    return "延迟受限（latency-bound）" if regime == "latency-bound" else "带宽受限（bandwidth-bound）"


def _flops_text(flops: float) -> str:
    return f"{fmt_num(flops / 1e12)} TFLOP" if flops >= 1e10 else f"{fmt_num(flops)} FLOP"


def range_labels(name: str) -> list[str]:
    """探索器滑块每一格旁边显示的文字（构建时写进网页，启动前也能看到）：nbytes 按字节，B、D、F 是 2 的幂"""
    if name == "nbytes":
        return [fmt_bytes(v) for v in curve_sizes()]
    lo, hi = SLIDERS[name]
    return [fmt_num(2**e) for e in range(lo, hi + 1)]


SLIDERS = {"B": (4, 17), "D": (10, 15), "F": (10, 17)}  # 第 6 章的滑块：2 的幂次的范围


def _log_ticks(lo: float, hi: float, fmt, max_ticks: int = 6) -> list[list]:
    """对数轴上 10 的整数次幂的刻度 [[值, 文字], …]，覆盖 [lo, hi]，至多 max_ticks + 1 个"""
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    e1 = max(e1, e0 + 1)
    step = max(1, math.ceil((e1 - e0) / max_ticks))
    exps = list(range(e0, e1 + 1, step))
    if exps[-1] < e1:
        exps.append(exps[-1] + step)
    return [[10.0**e, fmt(10.0**e)] for e in exps]


def _linear_ticks(hi: float, fmt, max_ticks: int = 4) -> list[list]:
    """线性轴 [0, hi] 上的整齐刻度（1、2、5 × 10^k）[[值, 文字], …]，最后一个不小于 hi"""
    if hi <= 0:
        return [[0.0, fmt(0.0)]]
    raw = hi / max_ticks
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    n = math.ceil(hi / step - 1e-9)
    return [[k * step, "0" if k == 0 else fmt(k * step)] for k in range(n + 1)]


# ---- 第 5 章：集合通信 ----


def _crossover(coll: str, axes, chip, mesh, slice_shape) -> float | None:
    """延迟项等于带宽项时的字节数：带宽项与 V 成正比，延迟项是 V = 0 时的时间"""
    latency = cost.estimate(coll, 0.0, axes, chip, mesh=mesh, slice_shape=slice_shape).time_s
    slope = cost.estimate(coll, 1.0, axes, chip, mesh=mesh, slice_shape=slice_shape).bandwidth_term_s
    return latency / slope if slope > 0 else None


def _where_text(spec: hardware.Chip, axes: Sequence[tuple[str, int]], wraparound) -> str:
    """这次集合通信经过哪里：GPU 是否跨出一个节点（NVLink 域），TPU 各轴有没有回绕"""
    n = math.prod(size for _, size in axes)
    names_ = "、".join(f"{name}（{size}）" for name, size in axes)
    if isinstance(spec, hardware.GpuChip):
        g = spec.gpus_per_node
        if n <= g:
            return (
                f"经过的轴 {names_}共 {n} 个 GPU，都在一个节点的 NVLink 域里（每节点 {g} 个 GPU，由 NVSwitch 相连）。"
            )
        m = n // g
        node_bw = spec.node_scaleout_bw
        bw = f"每节点 {fmt_bw(node_bw)}" if node_bw else "书中未给出带宽"
        return (
            f"经过的轴 {names_}共 {n} 个 GPU，超出一个 NVLink 域（每节点 {g} 个 GPU）：跨 {m} 个节点。"
            f"跨节点的部分走节点出口的网络（InfiniBand，{bw}），每一步的延迟也更大，"
            "所以时间比同样大小的节点内通信明显更长；要留在节点内，就选总共不超过 "
            f"{g} 个 GPU 的轴。"
        )
    if wraparound is not None and isinstance(spec, hardware.TpuChip):
        marks = "、".join(f"{name} {'有' if w else '无'}" for (name, _), w in zip(axes, wraparound))
        return f"经过的轴 {names_}共 {n} 台设备；回绕（wraparound）：{marks}（没有回绕的轴是线形，要多走约一倍的路）。"
    return f"经过的轴 {names_}共 {n} 台设备（模拟设备：名义值）。"


def collective_state(chip, collective, nbytes, axes=None, mesh=None) -> dict:
    """第 5 章探索器：一次集合通信的 cost.estimate，加上四种集合通信的时间曲线与延迟 / 带宽的交点

    axes：经过的网格轴（轴名列表或 'X,Y'；默认网格的全部轴）；mesh：{轴名: 大小} 或 'X=4,Y=4'
    （默认 TPU 每维 4、GPU 与 CPU 8 个设备）。TPU 的切片形状取网格形状，维数不够时按 default_slice_shape 补齐。
    """
    args = {"chip": chip, "collective": collective, "nbytes": nbytes, "axes": axes, "mesh": mesh}
    try:
        spec = hardware.get_chip(chip)
        mesh_d = _default_mesh(spec) if mesh is None else _mesh_dict(mesh)
        axes_l = list(mesh_d) if axes is None else _axes_list(axes)
        slice_shape = default_slice_shape(spec, mesh_d)
        est = cost.estimate(collective, nbytes, axes_l, spec, mesh=mesh_d, slice_shape=slice_shape)
        sizes = curve_sizes()
        curves, crossovers = {}, {}
        for coll in names.COLLECTIVES:
            try:
                curves[coll] = [
                    cost.estimate(coll, v, axes_l, spec, mesh=mesh_d, slice_shape=slice_shape).time_s for v in sizes
                ]
                crossovers[coll] = _crossover(coll, axes_l, spec, mesh_d, slice_shape)
            except ValueError:  # 例如跨节点的 AllToAll 在某些 GPU 上没有公式
                curves[coll], crossovers[coll] = None, None
    except (ValueError, KeyError) as err:
        return {"args": args, "error": str(err)}
    # 曲线完全相同的几种集合通信（例如 AllGather 与 ReduceScatter）：图里是同一条线
    same: dict[tuple, list[str]] = {}
    for coll, times in curves.items():
        if times is not None:
            same.setdefault(tuple(times), []).append(coll)
    coincide = [group for group in same.values() if len(group) > 1]
    positive = [t for times in curves.values() if times for t in times if t > 0]
    cross = crossovers.get(est.collective)
    name = names.display(est.collective)
    if cross is None:
        cross_text = "只有一台设备，不需要通信。"
    else:
        cross_text = (
            f"虚线是交点（crossover）V* ≈ {fmt_bytes(cross)}：{name} 的延迟项（每一步固定的开销，与 V 无关）"
            f"在这里等于带宽项（搬运字节的时间，与 V 成正比）。V 比它小是延迟受限，比它大是带宽受限。"
        )
    return {
        "args": args,
        "chip": est.chip,
        "collective": est.collective,
        "collective_display": name,
        "nbytes": est.nbytes,
        "axes": [[axis, size] for axis, size in est.axes],
        "mesh": mesh_d,
        "slice_shape": None if slice_shape is None else list(slice_shape),
        "time_s": est.time_s,
        "bandwidth_term_s": est.bandwidth_term_s,
        "hop_latency_s": est.hop_latency_s,
        "regime": est.regime,
        "regime_text": _regime_text(est.regime),
        "wraparound": None if est.wraparound is None else list(est.wraparound),
        "formula": est.formula,
        "formula_text": _readable_formula(est.formula),
        "summary": f"{name}，V = {fmt_bytes(est.nbytes)}：约 {fmt_time(est.time_s)}，{_regime_text(est.regime)}",
        "where": _where_text(spec, est.axes, est.wraparound),
        "crosses_nodes": isinstance(spec, hardware.GpuChip)
        and math.prod(size for _, size in est.axes) > spec.gpus_per_node,
        "crossover_text": cross_text,
        "coincide": coincide,
        "coincide_text": [
            "、".join(names.display(c) for c in group) + " 的曲线完全重合（同一条线）" for group in coincide
        ],
        "curve": {"nbytes": sizes, "time_s": curves},
        "crossover_bytes": crossovers,
        "x_ticks": _log_ticks(sizes[0], sizes[-1], fmt_bytes),
        "y_ticks": _log_ticks(min(positive), max(positive), fmt_time) if positive else [],
    }


# ---- 第 6 章：分片矩阵乘法 ----


@dataclass(frozen=True)
class Scenario:
    """探索器的一种分片场景：两个乘数与想要的输出的分片记号，以及给读者看的中文说明"""

    title: str
    a: str
    b: str
    out: str
    layout: str


SCENARIOS: dict[str, Scenario] = {
    "replicated": Scenario(
        "激活值复制、输出也复制（图中蓝线 TP 与灰线的起点）",
        "In[B, D]",
        "W[D_Y, F]",
        "Out[B, F]",
        "输入 In[B, D] 在每台设备上都有完整的一份（复制）；权重 W[D_Y, F] 沿 Y 切开收缩维 D；"
        "输出 Out[B, F] 也要在每台设备上完整（复制）。",
    ),
    "fsdp": Scenario(
        "FSDP：激活值按批量切开（图中绿线）",
        "In[B_Y, D]",
        "W[D_Y, F]",
        "Out[B_Y, F]",
        "输入 In[B_Y, D] 沿 Y 按批量切开，每台设备只有 1/|Y| 的批量；权重 W[D_Y, F] 沿 Y 切开 D（每台只存 1/|Y|）；"
        "输出 Out[B_Y, F] 仍按批量切开，正是下一层要的。",
    ),
    "dp": Scenario(
        "数据并行（data parallel）",
        "In[B_Y, D]",
        "W[D, F]",
        "Out[B_Y, F]",
        "输入 In[B_Y, D] 沿 Y 按批量切开；权重 W[D, F] 在每台设备上复制（每台都存整个权重）；"
        "输出 Out[B_Y, F] 按批量切开。前向不需要通信，代价是权重的显存。",
    ),
    "tp_col": Scenario(
        "张量并行：列并行（Megatron 的第一个矩阵）",
        "In[B, D]",
        "W[D, F_Y]",
        "Out[B, F_Y]",
        "输入 In[B, D] 复制；权重 W[D, F_Y] 沿 Y 切开输出维 F；输出 Out[B, F_Y] 沿 Y 按 F 切开，"
        "直接交给按行切开的下一个矩阵。",
    ),
    "tp_row": Scenario(
        "张量并行：行并行（Megatron 的第二个矩阵）",
        "In[B, D_Y]",
        "W[D_Y, F]",
        "Out[B, F]",
        "输入 In[B, D_Y] 沿 Y 按收缩维 D 切开（上一个列并行矩阵的输出）；权重 W[D_Y, F] 同样沿 Y 切开 D；"
        "输出 Out[B, F] 要复制到每台设备。",
    ),
    "fsdp_tp": Scenario(
        "FSDP + 张量并行（要 X、Y 两条轴）",
        "In[B_X, D]",
        "W[D_X, F_Y]",
        "Out[B_X, F_Y]",
        "输入 In[B_X, D] 沿 X（数据并行轴）按批量切开；权重 W[D_X, F_Y] 沿 X 切开 D、沿 Y 切开 F；"
        "输出 Out[B_X, F_Y] 沿 X 按批量、沿 Y 按 F 切开。",
    ),
}
SHOWN_GROUPS = 8  # 默认每种通信组合只列最快的一种，至多这么多行；其余由“显示全部”展开
CHART_BARS = 6  # 条形图画前几行


def _unused_text(unused: Sequence[str]) -> str:
    if not unused:
        return ""
    axes = "、".join(unused)
    return (
        f"场景没有用到网格轴 {axes}：输入与权重沿它复制；规划器可以沿它免费切开（dynamic-slice）"
        "分摊计算，再把输出收集回来。"
    )


def _mesh_text(mesh: Mapping[str, int]) -> str:
    return "，".join(f"{name}={size}" for name, size in mesh.items())


def _operand_names(a: str, b: str, out: str | None) -> dict[str, str]:
    """规划器用 A、B、C 指第一、第二个乘数与输出；给读者看时换成记号里的名字（In、W、Out）"""
    return {"A": sharding.parse(a).name, "B": sharding.parse(b).name, "C": sharding.parse(out).name if out else "C"}


def _label(o: planner.MatmulOption, roles: Mapping[str, str]) -> str:
    """与 MatmulOption.label 相同，只是乘数写成 In、W、Out 而不是 A、B、C（B 还是批量维的名字）"""
    before = [f"{s.name}({roles[s.operand]})" for s in o.steps if s.operand != "C"]
    after = [f"{s.name}({roles['C']})" for s in o.steps if s.operand == "C"]
    return " → ".join([*before, f"本地 matmul 得 {o.c_local}", *after])


def _pattern(o: planner.MatmulOption) -> str:
    """通信组合（不管经过哪条轴）：``AllToAll → AllGather``；不通信时是“不通信”"""
    return " → ".join(names.display(k) for k in o.kinds) or "不通信"


def _option(o: planner.MatmulOption, roles: Mapping[str, str]) -> dict:
    label = _label(o, roles)
    return {
        "label": label,
        "planner_label": o.label,
        "pattern": _pattern(o),
        "kinds": list(o.kinds),
        "steps": [
            {
                "name": s.name,
                "kind": s.kind,
                "axes": list(s.axes),
                "operand": roles[s.operand],
                "nbytes": s.nbytes,
                "time_s": s.time_s,
                "regime": s.regime,
            }
            for s in o.steps
        ],  # fmt: skip
        "out": str(o.out),
        "flops_per_device": o.flops_per_device,
        "t_math": o.t_math,
        "t_comms": o.t_comms,
        "t_total": o.t_total,
        "t_math_text": fmt_time(o.t_math),
        "t_comms_text": fmt_time(o.t_comms),
        "t_total_text": fmt_time(o.t_total),
        "bound": o.bound,
        "bound_text": _bound_text(o.bound),
        "describe": "\n".join(
            [
                f"{label}：T_math ≈ {fmt_time(o.t_math)}，T_comms ≈ {fmt_time(o.t_comms)}，"
                f"总 ≈ {fmt_time(o.t_total)}（T_math + T_comms），每设备 {_flops_text(o.flops_per_device)}",
                *(f"    {t}" for t in o.trace),
            ]
        ),
    }


def _explain(plan: planner.MatmulPlan, options: list[dict], out: str | None, chosen: int) -> str:
    """规划器的说明，改写给读者：情形写中文、乘数写 In / W / Out、数字带单位"""
    total = math.prod(plan.mesh.values())
    mesh = _mesh_text(plan.mesh)
    lines = [
        f"{plan.a} ·_{plan.contract} {plan.b} → {out or plan.out}，网格 {mesh}（{total} 台设备），{plan.chip}",
        _case_text(planner._CASE_TEXT[plan.case]),
        *(_case_text(n) for n in plan.notes),
        "选中的做法（总时间最短，按 T_math + T_comms，通信与计算不重叠）：",
        "  " + options[chosen]["describe"].replace("\n", "\n  "),
        f"  {_bound_text(plan.bound)}",
    ]
    others = [o for i, o in enumerate(options) if i != chosen]
    if others:
        lines.append("其他做法：")
        lines += ["  " + o["describe"].replace("\n", "\n  ") for o in others]
    return "\n".join(lines)


def sharding_state(
    B: int,
    D: int,
    F: int,
    chip,
    mesh,
    *,
    scenario: str = "replicated",
    a: str | None = None,
    b: str | None = None,
    out: str | None = None,
    slice_shape: Sequence[int] | None = None,
    dtype: str = "bf16",
) -> dict:
    """第 6 章探索器：In ·_D W（形状 [B, D]·[D, F]）在网格上的各种做法，按规划器的顺序（T_math + T_comms 从小到大）

    scenario 选定输入、权重与输出的分片（SCENARIOS：replicated、fsdp、dp、tp_col、tp_row、fsdp_tp）；
    a、b、out 给出时代替场景里的记号。mesh 必须含场景用到的轴。
    每个选项带 T_math、T_comms、总时间与说明；标签里的乘数写成 In、W、Out（规划器自己的标签 planner_label 用 A、B、C）。
    groups 把选项按通信组合分组（每组按总时间排序），shown 是默认显示的行，chart 是条形图的行与刻度。
    """
    args = {"B": B, "D": D, "F": F, "chip": chip, "mesh": mesh, "scenario": scenario, "a": a, "b": b, "out": out,
            "slice_shape": slice_shape, "dtype": dtype}  # fmt: skip
    try:
        if scenario not in SCENARIOS:
            raise ValueError(f"未知的场景 {scenario!r}：可选 {', '.join(SCENARIOS)}")
        sc = SCENARIOS[scenario]
        custom = a is not None or b is not None or out is not None
        a_spec, b_spec = a or sc.a, b or sc.b
        out_spec = out if custom else sc.out
        mesh_d = _mesh_dict(mesh)
        needed = sorted({x for s in (a_spec, b_spec, out_spec) if s for x in sharding.parse(s).axes})
        missing = [x for x in needed if x not in mesh_d]
        if missing:
            raise ValueError(
                f"这个场景用到网格轴 {'、'.join(needed)}，网格 {_mesh_text(mesh_d)} 里没有 {'、'.join(missing)}：请换一个含这些轴的网格"
            )
        shape = tuple(slice_shape) if slice_shape is not None else default_slice_shape(chip, mesh_d)
        plan = planner.plan_matmul(
            a_spec, b_spec, "D", mesh_d, chip, shapes={"B": B, "D": D, "F": F}, out=out_spec, dtype=dtype,
            slice_shape=shape,
        )  # fmt: skip
    except (ValueError, KeyError) as err:
        return {"args": args, "error": str(err)}
    roles = _operand_names(a_spec, b_spec, out_spec)
    options = [_option(o, roles) for o in plan.alternatives]
    chosen = plan.alternatives.index(plan.chosen)
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(options):
        groups.setdefault(o["pattern"], []).append(i)
    shown = [members[0] for members in groups.values()][:SHOWN_GROUPS]
    bars = shown[:CHART_BARS]
    out_name = out_spec or str(plan.out)
    return {
        "args": args,
        "chip": plan.chip,
        "mesh": mesh_d,
        "slice_shape": None if shape is None else list(shape),
        "a": str(plan.a),
        "b": str(plan.b),
        "out_wanted": out_name,
        "layout": sc.layout if not custom else f"{plan.a} ·_D {plan.b} → {out_name}",
        "unused_axes_text": _unused_text([x for x in mesh_d if x not in needed]),
        "case": plan.case,
        "case_text": _case_text(planner._CASE_TEXT[plan.case]),
        "notes": [_case_text(n) for n in plan.notes],
        "chosen": chosen,
        "options": options,
        "groups": [{"pattern": p, "members": m} for p, m in groups.items()],
        "shown": shown,
        "chart": {
            "rows": bars,
            "ticks": _linear_ticks(max(options[i]["t_total"] for i in bars), fmt_time),
        },
        "summary": (
            f"最快：{options[chosen]['label']}，约 {options[chosen]['t_total_text']}"
            f"（T_math {options[chosen]['t_math_text']} + T_comms {options[chosen]['t_comms_text']}），"
            f"{options[chosen]['bound_text']}"
        ),
        "explain": _explain(plan, options, out_spec, chosen),
        "flops": cost.matmul_flops(B, D, F),
    }
