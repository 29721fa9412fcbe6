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
from shardlab.units import flop_unit, fmt_bw, fmt_bytes, fmt_flops, fmt_num, fmt_time

__all__ = [
    "CURVE_DECADES",
    "CURVE_POINTS_PER_DECADE",
    "SCENARIOS",
    "axis_placement",
    "collective_state",
    "control_choices",
    "control_reasons",
    "scenario_axes",
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

_MULTI_AXIS_TEXT = "Σ_阶段 max_片 Σ_步 max(t_hop, b/W_单向)（每阶段 k 片各沿一条轴走，阶段时间取各片时间的最大值）"
_B_DEFINED = "b 是这一片在这一步经一条链路、一个方向送出的字节数（块的大小）"
_NUMBER = re.compile(r"(\b[A-Za-z_]+)=([0-9.]+(?:e[+-]?[0-9]+)?) (B/s|B|s)(?=[，,）)]|$)")


def _readable_formula(text: str) -> str:
    """把 cost.estimate 的公式说明改写给读者：``V=1e+06 B`` → ``V = 1 MB``，wraparound → 回绕（wraparound）"""

    def number(m: re.Match) -> str:
        value = float(m.group(2))
        fmt = {"B/s": fmt_bw, "B": fmt_bytes, "s": fmt_time}[m.group(3)]
        return f"{m.group(1)} = {fmt(value)}"

    text = _NUMBER.sub(number, text)
    text = re.sub(r"(\b[A-Za-z]+)=(\d+)\b", r"\1 = \2", text)
    # 记号与正文一致：W_单向、W_双向；多轴公式按阶段写（每阶段取各片时间的最大值）
    text = text.replace("Σ_阶段 Σ_步 max(t_hop, b/W_oneway)", _MULTI_AXIS_TEXT)
    text = text.replace(
        "Σ_阶段 max_片 h·max(t_hop, b/W_oneway)，k 片各占一轴",
        "Σ_阶段 max_片 h·max(t_hop, b/W_单向)（每阶段 k 片各沿一条轴走 h 步，阶段时间取各片时间的最大值）",
    )
    text = text.replace("W_oneway", "W_单向").replace("W_bidir", "W_双向").replace("W_nvlink", "W_NVLink")
    if "b/W_单向" in text and _B_DEFINED not in text:
        text += f"；{_B_DEFINED}"
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


def _error_text(err: Exception) -> str:
    """给读者看的错误说明：英文术语放进括号（2D torus → 二维环面（2D torus）），形状写成 16×16"""
    text = str(err)
    text = re.sub(r" ?([23])D torus", lambda m: f"{'二三'[int(m.group(1)) - 2]}维环面（{m.group(1)}D torus）", text)
    text = re.sub(r"\((\d+(?:, \d+)+)\)", lambda m: "×".join(m.group(1).split(", ")), text)
    text = re.sub(r"的 pod (\d+(?:×\d+)+)", r"最大的一整块（pod，\1）", text)
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


def _crossover(coll: str, axes, chip, mesh, slice_shape, place: dict | None = None) -> float | None:
    """延迟项等于带宽项时的字节数（cost.crossover_bytes）：与图中的曲线、标题里的判断同一个模型"""
    return cost.crossover_bytes(lambda v: _plot_time(coll, v, axes, chip, mesh, slice_shape, place))


def _first_bend(time_at, cross: float | None) -> float | None:
    """曲线开始离开延迟项的平台（第一步变成带宽受限）的 V；与 V* 差不多（多于 5%）时返回 None"""
    if not cross:
        return None
    lo, hi = cross * 1e-3, cross
    if cost.regime_terms(time_at, lo)[1] > 0 or cost.regime_terms(time_at, hi * 0.95)[1] == 0:
        return None
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if cost.regime_terms(time_at, mid)[1] == 0 else (lo, mid)
    return hi if hi < 0.95 * cross else None


def _cross_model(coll: str, chip, place: dict | None) -> bool:
    """这次通信的组跨节点、而 cost.estimate 按连续放置算（偏乐观），且书中有网卡带宽：标题与图都用跨节点模型"""
    return (
        place is not None
        and place["optimistic"]
        and cross_node_time(coll, 1.0, place["group_size"], place["per_node"], chip) is not None
    )


def _plot_time(coll: str, v: float, axes, chip, mesh, slice_shape, place: dict | None) -> float:
    """图中一点的时间：与标题里的时间是同一个数（偏乐观的跨节点的轴取跨节点模型，否则取 cost.estimate）"""
    if _cross_model(coll, chip, place):
        return cross_node_time(coll, v, place["group_size"], place["per_node"], chip)
    return cost.estimate(coll, v, axes, chip, mesh=mesh, slice_shape=slice_shape).time_s


def axis_placement(mesh: Mapping[str, int], axes: Sequence[str], gpus_per_node: int) -> dict:
    """经过 axes 的每一组设备落在几个节点（NVLink 域）里

    设备按网格的行优先顺序编号（最后一个轴连续，与 ``jax.make_mesh`` / ``np.arange(N).reshape(形状)`` 相同），
    编号 id 的设备在第 id // gpus_per_node 个节点。固定其余轴的下标、让 axes 取遍各自的下标就得到一组；
    逐组数出它跨几个节点、每个节点里有几个组内设备。返回
    ``{"group_size", "nodes", "fewest_nodes", "per_node", "per_node_max"}``：nodes 与 fewest_nodes 是各组跨的节点数的
    最大、最小值；per_node 与 per_node_max 是跨节点的组（没有这样的组时是全部的组）在一个节点里最少、最多有几个
    组内设备（GPU 总数整除时两者相等；GB200 的 72 不能整除 16 时例如 2 与 5）。
    """
    sizes = [int(v) for v in mesh.values()]
    strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    names_ = list(mesh)
    inside = [names_.index(a) for a in axes]
    outside = [i for i in range(len(sizes)) if i not in inside]
    splits = []
    for fixed in _indices([sizes[i] for i in outside]):
        base = sum(k * strides[i] for k, i in zip(fixed, outside))
        counts: dict[int, int] = {}
        for idx in _indices([sizes[i] for i in inside]):
            dev = base + sum(k * strides[i] for k, i in zip(idx, inside))
            counts[dev // gpus_per_node] = counts.get(dev // gpus_per_node, 0) + 1
        splits.append(list(counts.values()))
    spread = [c for c in splits if len(c) > 1] or splits
    group = math.prod(sizes[i] for i in inside)
    return {
        "group_size": group,
        "nodes": max(len(c) for c in splits),
        "fewest_nodes": min(len(c) for c in splits),
        "per_node": min(min(c) for c in spread),
        "per_node_max": max(max(c) for c in spread),
    }


def _assumed_nodes(n: int, gpus_per_node: int) -> int:
    """cost.estimate 对 n 个 GPU 的假设：连续排在 ⌈n / 每节点 GPU 数⌉ 个节点里"""
    return 1 if n <= gpus_per_node else n // gpus_per_node


def cross_node_time(collective: str, nbytes: float, n: int, per_node: int, chip) -> float | None:
    """一组 n 个 GPU 分在几个节点、最少的一个节点里只有 per_node 个时，按跨节点模型估算的时间（秒）

    与 cost 的跨节点公式（gpus.md「Cross-node collectives」）同一个模型，只是把“每节点 G 个 GPU、出口
    W_node = G·W_网卡”换成组内实际的 per_node = k 个 GPU 与它们的 k 块网卡；瓶颈是组内设备最少的节点：
    AllGather / ReduceScatter T = V·max((k-1)/(k·W_NVLink), (n-k)/(n·k·W_网卡))，AllReduce 加倍，
    AllToAll T = V(n-k)/(n²·W_网卡)。k 整除 n 时与 cost.gpu_*_cross_node(G = k, M = n/k) 相同。
    延迟项取 cost.gpu_ring_latency（每节点按 k 个数跨节点的步数）。书中未给出网卡带宽时返回 None。
    """
    spec = hardware.get_chip(chip)
    if not isinstance(spec, hardware.GpuChip) or spec.ib_bw_per_gpu is None or n <= 1:
        return None
    coll, v, k, w_nic = names.canonical(collective), float(nbytes), int(per_node), spec.ib_bw_per_gpu
    if coll == "all_to_all":
        t_bw = v * (n - k) / (n * n * w_nic)
    else:
        t_bw = v * max((k - 1) / (k * spec.nvlink_bw_per_direction), (n - k) / (n * k * w_nic))
        t_bw *= 2 if coll == "all_reduce" else 1
    return cost.gpu_ring_latency(coll, n, k, spec) + t_bw


def _same_time(a: float, b: float) -> bool:
    """两个时间之比写出来是 1（fmt_num 四舍五入之后）：这时不说谁偏乐观、谁是谁的几倍"""
    return b > 0 and fmt_num(a / b) == "1"


def _ratio_text(slow: float, fast: float) -> str:
    return f"约 {fmt_num(slow / fast)} 倍" if fast > 0 else ""


def _indices(sizes: Sequence[int]):
    """sizes 的全部下标组合（行优先）；sizes 为空时只有一个空组合"""
    if not sizes:
        yield ()
        return
    for k in range(sizes[0]):
        for rest in _indices(sizes[1:]):
            yield (k, *rest)


def _domain(spec: hardware.GpuChip) -> str:
    """GPU 的 NVLink 域怎么称呼：8 个 GPU 的机器叫节点；GB200 NVL72 的 72 个 GPU 分在多个机箱里，叫 NVLink 域"""
    return "节点" if spec.gpus_per_node <= 8 else " NVLink 域"  # 前面留空格：中文与英文之间


def _per_node_text(place: dict, word: str) -> str:
    lo, hi = place["per_node"], place["per_node_max"]
    return f"每个{word}里 {lo} 个" if lo == hi else f"每个{word}里 {lo}–{hi} 个，不一样多"


def _gpu_placement(spec: hardware.GpuChip, mesh: Mapping[str, int], axes: Sequence[str]) -> dict:
    """axes 的各组跨几个节点（axis_placement），以及 cost.estimate 是否因为只看 GPU 个数而偏乐观"""
    place = axis_placement(mesh, axes, spec.gpus_per_node)
    n = place["group_size"]
    return {**place, "assumed": _assumed_nodes(n, spec.gpus_per_node)} | {
        "optimistic": place["nodes"] != _assumed_nodes(n, spec.gpus_per_node)
    }


def _cross_text(spec: hardware.GpuChip, place: dict, word: str, t_model: float, t_cross: float | None) -> str:
    """偏乐观时按跨节点模型估算的时间，与 cost.estimate 的时间相比大约几倍"""
    if t_cross is None:
        return "书中未给出网卡带宽，估不出跨节点的时间。"
    k = place["per_node"]
    model = f"按跨节点模型（组内设备最少的{word}只有 {k} 个 GPU，各用一块 {fmt_bw(spec.ib_bw_per_gpu)} 的网卡）"
    if _same_time(t_cross, t_model):
        return f"{model}估算也约 {fmt_time(t_cross)}：这组参数下两者差不多。"
    return f"{model}估算约 {fmt_time(t_cross)}，是 {fmt_time(t_model)} 的{_ratio_text(t_cross, t_model)}。"


def _line_factor(spec: hardware.TpuChip, collective: str, nbytes: float, size: int) -> float | None:
    """同样的 V 在长 size 的线形轴上比在同样长的有回绕的环上慢几倍（cost 的单轴公式，含每跳延迟）"""
    ring_fn, line_fn = cost._SINGLE_AXIS[True][collective][0], cost._SINGLE_AXIS[False][collective][0]
    ring = ring_fn(nbytes, size, spec.ici_bidir_bw, spec.hop_latency)
    line = line_fn(nbytes, size, spec.ici_oneway_bw, spec.hop_latency)
    return line / ring if ring > 0 else None


def _line_factor_text(spec: hardware.TpuChip, est: cost.Estimate) -> str:
    """有没有回绕的轴是线形时，说明线形比同样长的环慢几倍；每条轴都有回绕时什么也不加"""
    parts = []
    for (name, size), wrap in zip(est.axes, est.wraparound):
        factor = None if wrap or size < 2 else _line_factor(spec, est.collective, est.nbytes, size)
        if factor is not None:
            parts.append(f"单看 {name}，这次通信比在同样长的有回绕的环上慢约 {fmt_num(factor)} 倍")
    if not parts:
        return ""
    return "（没有回绕的轴是线形（line），两端的设备只能从一侧收发；" + "；".join(parts) + "）"


def _where_text(spec: hardware.Chip, est: cost.Estimate, mesh: Mapping[str, int], t_cross: float | None) -> str:
    """这次集合通信经过哪里：GPU 按行优先的设备顺序数出跨几个节点（NVLink 域），TPU 各轴有没有回绕"""
    axes, wraparound = est.axes, est.wraparound
    n = math.prod(size for _, size in axes)
    names_ = "、".join(f"{name}（{size}）" for name, size in axes)
    if isinstance(spec, hardware.GpuChip):
        g, word = spec.gpus_per_node, _domain(spec)
        domain = (
            f"每节点 {g} 个 GPU，由 NVSwitch 相连，即一个 NVLink 域"
            if word == "节点"
            else f"一个 NVLink 域有 {g} 个 GPU"
        )
        place = _gpu_placement(spec, mesh, [a for a, _ in axes])
        order = "设备按网格的行优先顺序编号（最后一个轴的设备相邻），"
        if place["nodes"] == 1:
            return f"经过的轴 {names_}每组 {n} 个 GPU：{order}每组都在同一个{word}里（{domain}）。"
        spread = "每组分在" if place["fewest_nodes"] == place["nodes"] else "有的组分在"
        node_bw = spec.node_scaleout_bw
        bw = (
            f"每{word}每方向 {fmt_bw(node_bw)}，每 GPU 一块 {fmt_bw(spec.ib_bw_per_gpu)} 的网卡"
            if node_bw
            else "书中未给出带宽"
        )
        t_here = t_cross if place["optimistic"] and t_cross is not None else est.time_s
        text = (
            f"经过的轴 {names_}每组 {n} 个 GPU：{order}{spread} {place['nodes']} 个{word}里"
            f"（{_per_node_text(place, word)}；{domain}）。"
            f"跨{word}的部分走出口的网络（InfiniBand，{bw}）。{_versus_one_domain(spec, est, n, t_here, word, place['per_node'])}"
        )
        if place["optimistic"]:
            assumed = place["assumed"]
            where = f"在 {assumed} 个{word}里" if assumed > 1 else f"在同一个{word}里"
            text += f"注意：代价模型（cost.estimate）只看 GPU 总数 {n}，按这些 GPU 连续排{where}计算，" + (
                "上面的时间与图中的曲线因此偏乐观。"
                if t_cross is None
                else f"得到 {fmt_time(est.time_s)}；标题里的时间与判断、图中的曲线、圆点与交点都按下面的跨节点模型。"
                if _same_time(t_cross, est.time_s)
                else f"得到的 {fmt_time(est.time_s)} 偏乐观；标题里的时间与判断、图中的曲线、圆点与交点"
                "都按下面的跨节点模型。"
            )
            text += _cross_text(spec, place, word, est.time_s, t_cross)
            trailing = list(mesh)[len(mesh) - len(axes) :] == [a for a, _ in axes]
            text += (
                f"每{word}的 {g} 个 GPU 不是每组 {n} 个的整数倍，有的组跨在两个{word}的交界上。"
                if trailing
                else "要让它们连续，把这条轴放在网格的最后。"
            )
        return text
    if wraparound is not None and isinstance(spec, hardware.TpuChip):
        marks = "、".join(f"{name} {'有' if w else '无'}" for (name, _), w in zip(axes, wraparound))
        return f"经过的轴 {names_}共 {n} 台设备；回绕（wraparound）：{marks}{_line_factor_text(spec, est)}。"
    return f"经过的轴 {names_}共 {n} 台设备（模拟设备：名义值）。"


def _one_domain_time(spec: hardware.GpuChip, collective: str, nbytes: float, n: int) -> float:
    """同样 n 个 GPU 假想都在一个 NVLink 域里（NVSwitch）时 cost 的节点内公式给出的时间，含 NCCL 模型的延迟项"""
    fn, _ = cost._GPU_IN_NODE[collective]
    return cost.gpu_ring_latency(collective, n, n, spec) + fn(nbytes, n, spec.nvlink_bw_per_direction)


def _versus_one_domain(
    spec: hardware.GpuChip, est: cost.Estimate, n: int, t_here: float, word: str, k: int | None = None
) -> str:
    """与同样 n 个 GPU 假想都在一个 NVLink 域里相比：只在算出来更慢时说慢，并写出慢几倍（按算出的数说话）"""
    t_one = _one_domain_time(spec, est.collective, est.nbytes, n)
    one = f"同样 {n} 个 GPU 假想都在一个{word}里（只走 NVLink）约 {fmt_time(t_one)}，这里约 {fmt_time(t_here)}"
    ratio = t_here / t_one if t_one > 0 else 1.0
    if fmt_num(ratio) == "1":
        return f"{one}：这组参数下差不多一样快。"
    if ratio > 1:
        return f"{one}：跨{word}慢{_ratio_text(t_here, t_one)}。"
    text = f"{one}：这组参数下跨{word}不慢，反而快{_ratio_text(t_one, t_here)}"
    if est.collective == "all_to_all" or k is None:
        return text + "。"
    # 不是两种放置谁更好：两个时间的系数不同。跨节点模型里各层同时进行，每个 GPU 经 NVLink 只收 (k-1)/k，
    # 其余经网卡同时到达；都在一个域里时全部 (n-1)/n 都经 NVLink 收
    return (
        f"{text}。这是两个模型的系数不同：跨{word}模型里各层同时进行，每个 GPU 经 NVLink 只收 {k - 1}/{k} 的数据，"
        f"其余经网卡同时到达；都在一个{word}里时 {n - 1}/{n} 全部经 NVLink 收。"
        f"按大 N 的极限（两者都是 V/W_NVLink）比，跨{word}不会更快。"
    )


def _gpu_formula_notes(text: str, est: cost.Estimate, spec: hardware.Chip) -> str:
    """GPU 的公式：写出 NCCL 模型的延迟项的值，说明 W_NVLink 与 W_node 的方向（与 TPU 写出 t_hop 一样）"""
    if not isinstance(spec, hardware.GpuChip):
        return text
    text = text.replace("延迟项（NCCL 模型）", f"延迟项（NCCL 模型，这里 = {fmt_time(est.hop_latency_s)}）", 1)
    text = re.sub(r"(W_NVLink = [^，]+)", r"\1（每 GPU 每方向，即单向）", text, count=1)
    text = re.sub(r"(W_node = [^，]+)$", r"\1（每节点经 InfiniBand 出去的带宽，每方向）", text, count=1)
    if _domain(spec) != "节点":  # GB200 NVL72：72 个 GPU 的 NVLink 域不是一台机器
        text = text.replace("节点内（NVSwitch）", "NVLink 域内（NVSwitch）").replace("个节点", "个 NVLink 域")
        text = text.replace("每节点经", "每 NVLink 域经")
    return text


def _bandwidth_text(text: str, spec: hardware.Chip) -> str:
    """TPU（与模拟设备）的公式：参数里写出公式实际用到的带宽，并写明方向

    cost.estimate 的参数里总是只列 W_单向；有回绕的环的公式用的是 W_双向（两个方向之和），多轴公式两者都用。
    按公式里出现的记号列出：W_双向 = …（每条链路两个方向之和）、W_单向 = …（每条链路一个方向）。
    """
    if isinstance(spec, hardware.GpuChip) or not hasattr(spec, "ici_oneway_bw"):
        return text
    listed = f"W_单向 = {fmt_bw(spec.ici_oneway_bw)}"
    if listed not in text:
        return text
    expr = text.replace(listed, "")
    used = []
    if "W_双向" in expr:
        used.append(f"W_双向 = {fmt_bw(spec.ici_bidir_bw)}（双向带宽：每条链路两个方向之和）")
    if "W_单向" in expr:
        used.append(f"W_单向 = {fmt_bw(spec.ici_oneway_bw)}（单向带宽：每条链路一个方向）")
    return text.replace(listed, "，".join(used), 1) if used else text


def _alltoall_w_text(text: str, est: cost.Estimate, spec: hardware.Chip) -> str:
    """多轴 AllToAll 的公式里的 W_i：每条轴一个，有回绕的环取 W_双向，线形取 W_单向；写出各轴的值"""
    if "W_i" not in text or est.wraparound is None or not isinstance(spec, hardware.TpuChip):
        return text
    values = "，".join(
        f"{name}：W_双向 = {fmt_bw(spec.ici_bidir_bw)}（有回绕）"
        if wrap
        else f"{name}：W_单向 = {fmt_bw(spec.ici_oneway_bw)}（无回绕）"
        for (name, _), wrap in zip(est.axes, est.wraparound)
    )
    return (
        f"{text}；W_i 是第 i 条轴（长 X_i）上越过中间截面的带宽：有回绕的环两个截面、两个方向，取 W_双向，"
        f"线形只有一个截面，取 W_单向。这里 {values}"
    )


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
        gpu = isinstance(spec, hardware.GpuChip)
        place = _gpu_placement(spec, mesh_d, [a for a, _ in est.axes]) if gpu else None
        sizes = curve_sizes()
        curves, crossovers = {}, {}
        for coll in names.COLLECTIVES:
            try:
                cost.estimate(coll, 1.0, axes_l, spec, mesh=mesh_d, slice_shape=slice_shape)  # 有没有公式
                curves[coll] = [_plot_time(coll, v, axes_l, spec, mesh_d, slice_shape, place) for v in sizes]
                crossovers[coll] = _crossover(coll, axes_l, spec, mesh_d, slice_shape, place)
            except ValueError:  # 例如跨节点的 AllToAll 在某些 GPU 上没有公式
                curves[coll], crossovers[coll] = None, None
    except (ValueError, KeyError) as err:
        return {"args": args, "error": _error_text(err)}
    # 曲线完全相同的几种集合通信（例如 AllGather 与 ReduceScatter）：图里是同一条线
    same: dict[tuple, list[str]] = {}
    for coll, times in curves.items():
        if times is not None:
            same.setdefault(tuple(times), []).append(coll)
    coincide = [group for group in same.values() if len(group) > 1]
    positive = [t for times in curves.values() if times for t in times if t > 0]
    cross = crossovers.get(est.collective)
    name = names.display(est.collective)
    t_cross = None
    if place is not None and place["optimistic"]:
        t_cross = cross_node_time(est.collective, est.nbytes, place["group_size"], place["per_node"], spec)
    cross_model = _cross_model(est.collective, spec, place)
    # 标题里的时间与判断：与图中的曲线同一个模型（组跨节点而 cost.estimate 偏乐观时是跨节点模型）
    head_regime = est.regime
    if cross_model:
        head_regime = cost.regime(
            lambda v: cross_node_time(est.collective, v, place["group_size"], place["per_node"], spec), est.nbytes
        )
        summary = (
            f"{name}，V = {fmt_bytes(est.nbytes)}：按跨节点模型约 {fmt_time(t_cross)}，"
            f"{_regime_text(head_regime)}；各组实际分在 {place['nodes']} 个{_domain(spec)}里"
        )
        summary += (
            f"。按 GPU 连续放置算也约 {fmt_time(est.time_s)}"
            if _same_time(t_cross, est.time_s)
            else f"。⚠ 按 GPU 连续放置算约 {fmt_time(est.time_s)}，偏乐观（见下）"
        )
    else:
        summary = f"{name}，V = {fmt_bytes(est.nbytes)}：约 {fmt_time(est.time_s)}，{_regime_text(est.regime)}"
        if place is not None and place["optimistic"]:
            summary += f"。⚠ 这是按 GPU 连续放置算的，偏乐观：各组实际分在 {place['nodes']} 个{_domain(spec)}里（见下）"
    if cross is None:
        cross_text = "只有一台设备，不需要通信。"
    else:
        terms = (
            "延迟项（每一步固定的开销，与 V 无关）在这里等于带宽项（搬运字节的时间，与 V 成正比）"
            if gpu
            else "延迟项（受延迟限制的那些步的固定开销，与 V 无关）在这里等于带宽项（其余各步搬运字节的时间，"
            "与 V 成正比）"
        )
        cross_text = (
            f"虚线是交点（crossover）V* ≈ {fmt_bytes(cross)}：{name} 的{terms}。V 比它小是延迟受限，比它大是带宽受限。"
        )
        bend = _first_bend(lambda v: _plot_time(est.collective, v, axes_l, spec, mesh_d, slice_shape, place), cross)
        if bend is not None:
            cross_text += (
                f"曲线在约 {fmt_bytes(bend)} 就开始弯：各阶段搬的块大小不同，最大的块先变成带宽受限，"
                "到 V* 时受带宽限制的那些步的时间才赶上其余各步的固定开销。"
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
        # 图中圆点的时间：与曲线同一个模型（组跨节点而 cost.estimate 偏乐观时是跨节点模型的 cross_node_time_s）
        "plot_time_s": t_cross if cross_model else est.time_s,
        "curve_model": "cross_node" if cross_model else "cost.estimate",
        "bandwidth_term_s": est.bandwidth_term_s,
        "hop_latency_s": est.hop_latency_s,
        "regime": est.regime,
        "regime_text": _regime_text(est.regime),
        "plot_regime": head_regime,  # 标题里的判断：与 plot_time_s 同一个模型
        "wraparound": None if est.wraparound is None else list(est.wraparound),
        "formula": est.formula,
        "formula_text": _alltoall_w_text(
            _bandwidth_text(_gpu_formula_notes(_readable_formula(est.formula), est, spec), spec), est, spec
        ),
        "summary": summary,
        "where": _where_text(spec, est, mesh_d, t_cross),
        "crosses_nodes": place is not None and place["nodes"] > 1,
        "optimistic": place is not None and place["optimistic"],
        "cross_node_time_s": t_cross,
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


def control_reasons(chips: Sequence[str], meshes: Sequence[str]) -> dict[str, dict[str, dict[str, str]]]:
    """control_choices 里算不了的组合为什么算不了：{网格: {芯片: {“经过的轴”: 中文说明}}}（只列算不了的）

    探索器把说明写在灰掉的选项上（title），并在控件下面列出，读者不用猜。
    """
    table: dict[str, dict[str, dict[str, str]]] = {}
    for mesh in meshes:
        mesh_d = _mesh_dict(mesh)
        options = [[a] for a in mesh_d] + ([list(mesh_d)] if len(mesh_d) > 1 else [])
        table[mesh] = {}
        for chip in chips:
            why = {}
            for axes in options:
                try:
                    spec = hardware.get_chip(chip)
                    shape = default_slice_shape(spec, mesh_d)
                    cost.estimate("all_gather", 1.0, axes, spec, mesh=mesh_d, slice_shape=shape)
                except (ValueError, KeyError) as err:
                    why[",".join(axes)] = _error_text(err)
            table[mesh][chip] = why
    return table


def control_choices(chips: Sequence[str], meshes: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """第 5 章探索器的控件里哪些组合算得了：{网格: {芯片: [可选的“经过的轴”]}}；列表为空表示这个芯片用不了这个网格

    “经过的轴”的取值与探索器一样：每个轴名，多于一个轴时再加上全部轴（'X,Y'）。构建时写进网页，
    探索器据此把算不了的网格与轴设为不可选（例如 TPU v5e 是二维环面，没有 X=4,Y=4,Z=4）。
    """
    table: dict[str, dict[str, list[str]]] = {}
    for mesh in meshes:
        mesh_d = _mesh_dict(mesh)
        options = [[a] for a in mesh_d] + ([list(mesh_d)] if len(mesh_d) > 1 else [])
        table[mesh] = {}
        for chip in chips:
            ok = []
            for axes in options:
                try:
                    spec = hardware.get_chip(chip)
                    shape = default_slice_shape(spec, mesh_d)
                    cost.estimate("all_gather", 1.0, axes, spec, mesh=mesh_d, slice_shape=shape)
                except (ValueError, KeyError):
                    continue
                ok.append(",".join(axes))
            table[mesh][chip] = ok
    return table


def scenario_axes(scenario: str) -> list[str]:
    """第 6 章的场景用到的网格轴（网格必须含这些轴）"""
    sc = SCENARIOS[scenario]
    return sorted({x for spec in (sc.a, sc.b, sc.out) for x in sharding.parse(spec).axes})


# ---- 第 6 章：分片矩阵乘法 ----


@dataclass(frozen=True)
class Scenario:
    """探索器的一种分片场景：两个乘数与想要的输出的分片记号，以及给读者看的中文说明"""

    title: str
    a: str
    b: str
    out: str
    layout: str
    # 第 6 章“分片策略随批量”图里的线对应的做法：(线的名字, 规划器的标签 planner_label)
    lines: tuple[tuple[str, str], ...] = ()


SCENARIOS: dict[str, Scenario] = {
    "replicated": Scenario(
        "激活值复制、输出也复制（图中蓝线 TP 与灰线的起点）",
        "In[B, D]",
        "W[D_Y, F]",
        "Out[B, F]",
        "输入 In[B, D] 在每台设备上都有完整的一份（复制）；权重 W[D_Y, F] 沿 Y 切开收缩维 D；"
        "输出 Out[B, F] 也要在每台设备上完整（复制）。",
        (
            ("图中蓝线（TP：规约激活值）", "本地 matmul 得 Out[B, F]{U_Y} → AllReduce_Y(C)"),
            ("图中灰线（激活值复制，收集权重）", "AllGather_Y(B) → 本地 matmul 得 Out[B, F]"),
        ),
    ),
    "fsdp": Scenario(
        "FSDP：激活值按批量切开（图中绿线）",
        "In[B_Y, D]",
        "W[D_Y, F]",
        "Out[B_Y, F]",
        "输入 In[B_Y, D] 沿 Y 按批量切开，每台设备只有 1/|Y| 的批量；权重 W[D_Y, F] 沿 Y 切开 D（每台只存 1/|Y|）；"
        "输出 Out[B_Y, F] 仍按批量切开，正是下一层要的。",
        (("图中绿线（FSDP：收集权重）", "AllGather_Y(B) → 本地 matmul 得 Out[B_Y, F]"),),
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


# 第 6.8 节“分片策略随批量”图的设定：芯片、网格（v5p 4×4×4 切片里长 4 的轴）、D、F；B 是图的横轴
FIGURE_SETTINGS = {"chip": "v5p", "mesh": {"Y": 4}, "slice_shape": (4, 4, 4), "D": 8192, "F": 32768, "dtype": "bf16"}


def _on_figure(chip: str, mesh: Mapping[str, int], shape, D: int, F: int, dtype: str) -> bool:
    fig = FIGURE_SETTINGS
    return (
        chip == hardware.get_chip(fig["chip"]).name
        and dict(mesh) == fig["mesh"]
        and tuple(shape or ()) == fig["slice_shape"]
        and (D, F, dtype) == (fig["D"], fig["F"], fig["dtype"])
    )


def _lines_text(lines: Sequence[dict], options: Sequence[dict], chosen: int, on_figure: bool, B: int) -> str:
    """图中的线所代表的做法在规划器的做法里排第几；只有设定与图相同时才说这是图中的数"""
    if not lines:
        return ""
    parts = [
        re.sub(r"^(图中.线)（", r"\1所代表的做法（", ln["line"])
        + f"是 {options[ln['index']]['label']}，在全部 {len(options)} 种做法中排第 {ln['index'] + 1}，"
        f"这组参数下约 {options[ln['index']]['t_total_text']}"
        for ln in lines
    ]
    text = "；".join(parts) + "。"
    fig = FIGURE_SETTINGS
    if on_figure:
        text += f"芯片、网格、D、F 与图相同：这就是图中这条线在 B = {fmt_num(B)} 处的数。"
    else:
        text += (
            f"图只画 {hardware.get_chip(fig['chip']).name}、长 {fig['mesh']['Y']} 的轴、D = {fmt_num(fig['D'])}、"
            f"F = {fmt_num(fig['F'])}；这组参数与图不同，这里的数不能直接与图中的读数比较。"
        )
    if all(ln["index"] != chosen for ln in lines):
        best = options[chosen]
        text += (
            f"图与表只比三种固定的做法，规划器搜索的做法更多：这里最快的是 {best['label']}，约 {best['t_total_text']}。"
        )
    return text


def _shape_text(shape: Sequence[int]) -> str:
    return "×".join(str(x) for x in shape)


def _topology_text(spec: hardware.Chip, mesh: Mapping[str, int], shape) -> tuple[str, bool]:
    """假设的拓扑：TPU 每条轴有没有回绕（切片形状），GPU 每条轴的组跨几个节点；第二个值：是否有偏乐观的轴"""
    if isinstance(spec, hardware.TpuChip):
        axes = "；".join(
            f"{name}：{size} 个设备，{'有' if hardware.has_wraparound(spec, size, shape) else '无'}回绕"
            for name, size in mesh.items()
        )
        return f"{axes}（回绕即 wraparound；切片 {_shape_text(shape)}，{spec.topology}）。", False
    if isinstance(spec, hardware.GpuChip):
        word, parts, warn = _domain(spec), [], False
        for name, size in mesh.items():
            place = _gpu_placement(spec, mesh, [name])
            if place["nodes"] == 1:
                parts.append(f"{name}：{size} 个 GPU，每组都在同一个{word}里")
                continue
            spread = "每组分在" if place["fewest_nodes"] == place["nodes"] else "有的组分在"
            part = f"{name}：{size} 个 GPU，{spread} {place['nodes']} 个{word}里（{_per_node_text(place, word)}）"
            if place["optimistic"]:
                warn = True
                part += "⚠"
            parts.append(part)
        text = (
            f"设备按网格的行优先顺序编号（最后一个轴的设备相邻），每{word} {spec.gpus_per_node} 个 GPU："
            + "；".join(parts)
            + "。"
        )
        if warn:
            text += (
                f"注意：标 ⚠ 的轴上，代价模型（cost.estimate）只看 GPU 个数，按连续放置在尽量少的{word}里计算，"
                f"经过它的通信偏乐观；表中标 ⚠ 的做法的时间、条形图与名次都改按跨节点模型（书中给出网卡带宽时）。"
            )
        return text, warn
    return "模拟设备：名义值，每条轴都按有回绕的环计算。", False


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


def _step_cross(
    spec: hardware.Chip, mesh: Mapping[str, int], s: planner.CollectiveStep
) -> tuple[float | None, dict | None]:
    """GPU 上经过的轴的组跨节点、而 cost.estimate 按连续放置算时：按跨节点模型的估算（秒）与组的放置"""
    if not isinstance(spec, hardware.GpuChip) or s.kind == "slice":
        return None, None
    place = _gpu_placement(spec, mesh, list(s.axes))
    if not place["optimistic"]:
        return None, None
    return cross_node_time(s.kind, s.nbytes, place["group_size"], place["per_node"], spec), place


def _warn_text(o: planner.MatmulOption, roles: Mapping[str, str], crosses: Sequence, spec: hardware.Chip) -> str:
    parts = []
    for s, (t_cross, place) in zip(o.steps, crosses):
        if place is None:
            continue
        name = f"{s.name}({roles[s.operand]})"
        word = _domain(spec)
        where = f"{name} 跨 {place['nodes']} 个{word}"
        if t_cross is None:
            parts.append(f"{where}，表中 {fmt_time(s.time_s)} 偏乐观（书中未给出网卡带宽）")
        else:
            parts.append(
                f"{where}：按跨节点模型约 {fmt_time(t_cross)}，按 GPU 连续放置算约 {fmt_time(s.time_s)}"
                f"（偏乐观，{_ratio_text(t_cross, s.time_s)}）"
            )
    if not parts:
        return ""
    text = "⚠ " + "；".join(parts)
    total = _total_cross(o, crosses)
    if not math.isnan(total):
        text += f"；表中的总时间 {fmt_time(total)} 按跨节点模型（按连续放置算约 {fmt_time(o.t_total)}）"
    return text + "。"


def _summary(options: list[dict], chosen: int) -> str:
    """一句话的结论：最快的一种（表按总时间排名；有跨节点的步时按跨节点模型的总时间，标题也这么说）"""
    best = options[chosen]
    head = "按跨节点模型最快" if any(o["cross_node"] for o in options) else "最快"
    text = (
        f"{head}：{best['label']}，约 {best['t_total_text']}"
        f"（T_math {best['t_math_text']} + T_comms {best['t_comms_text']}），{best['bound_text']}"
    )
    if best["warn_text"] and not best["cross_node"]:
        return text + "。⚠ 它经过跨节点的轴，这个时间偏乐观（见表）"
    if any(o["cross_node"] for o in options):
        text += "。表中标 ⚠ 的做法经过跨节点的轴，它们的时间与名次都按跨节点模型（见表）"
    return text


def _total_cross(o: planner.MatmulOption, crosses: Sequence) -> float:
    """按跨节点模型改过的总时间：跨节点的步换成跨节点模型的时间（没有跨节点的步与表中相同；没有网卡带宽时是 nan）"""
    extra = 0.0
    for s, (t_cross, place) in zip(o.steps, crosses):
        if place is not None:
            extra += math.nan if t_cross is None else t_cross - s.time_s
    return o.t_total + extra


def _option(
    o: planner.MatmulOption,
    roles: Mapping[str, str],
    spec: hardware.Chip | None = None,
    mesh=None,
    flop: str | None = None,
) -> dict:
    label = _label(o, roles)
    crosses = [_step_cross(spec, mesh, s) if spec is not None else (None, None) for s in o.steps]
    t_cross = _total_cross(o, crosses)
    # 表、条形图与名次用的时间：有跨节点的步（且算得出跨节点模型）时按跨节点模型，否则就是规划器的时间
    t_comms = o.t_comms if math.isnan(t_cross) else o.t_comms + (t_cross - o.t_total)
    t_total = o.t_math + t_comms
    flops_text = fmt_flops(o.flops_per_device, flop)
    bound = "compute-bound" if o.t_math > t_comms else "communication-bound"
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
                "cross_node_time_s": t_cross,
            }
            for s, (t_cross, _) in zip(o.steps, crosses)
        ],  # fmt: skip
        "warn_text": _warn_text(o, roles, crosses, spec),
        "t_total_cross": t_cross,
        "out": str(o.out),
        "flops_per_device": o.flops_per_device,
        "flops_per_device_text": flops_text,
        "t_math": o.t_math,
        "t_comms": t_comms,
        "t_total": t_total,
        "t_math_text": fmt_time(o.t_math),
        "t_comms_text": fmt_time(t_comms),
        "t_total_text": fmt_time(t_total),
        "cross_node": t_total != o.t_total,
        "t_comms_contiguous": o.t_comms,  # 规划器（cost.estimate，按 GPU 连续放置）的时间
        "t_total_contiguous": o.t_total,
        "bound": bound,
        "bound_text": _bound_text(bound),
        "describe": "\n".join(
            [
                f"{label}：T_math ≈ {fmt_time(o.t_math)}，T_comms ≈ {fmt_time(t_comms)}，"
                f"总 ≈ {fmt_time(t_total)}（T_math + T_comms"
                + ("，跨节点的步按跨节点模型" if t_total != o.t_total else "")
                + f"），每设备 {flops_text}",
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
        "选中的做法（总时间最短，按 T_math + T_comms，通信与计算不重叠"
        + ("；经过跨节点的轴的步按跨节点模型" if any(o["cross_node"] for o in options) else "")
        + "）：",
        "  " + options[chosen]["describe"].replace("\n", "\n  "),
        f"  {options[chosen]['bound_text']}",
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
        return {"args": args, "error": _error_text(err)}
    roles = _operand_names(a_spec, b_spec, out_spec)
    spec = hardware.get_chip(chip)
    flop = flop_unit(max(o.flops_per_device for o in plan.alternatives))  # 全表一个单位
    options = [_option(o, roles, spec, mesh_d, flop) for o in plan.alternatives]
    alternatives = list(plan.alternatives)
    chosen = alternatives.index(plan.chosen)
    crossing = any(o["cross_node"] for o in options)
    if crossing:  # 按跨节点模型改过的总时间重新排名，最快的排第一
        order = sorted(range(len(options)), key=lambda i: (options[i]["t_total"], i))
        options, alternatives, chosen = [options[i] for i in order], [alternatives[i] for i in order], 0
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(options):
        groups.setdefault(o["pattern"], []).append(i)
    lines = [
        {"line": name, "index": i}
        for name, label in (sc.lines if not custom else ())
        for i, o in enumerate(alternatives)
        if o.label == label
    ]
    heads = [members[0] for members in groups.values()][:SHOWN_GROUPS]
    shown = sorted(set(heads) | {ln["index"] for ln in lines})  # 图中的线对应的做法总在默认的表里
    bars = heads[:CHART_BARS]
    out_name = out_spec or str(plan.out)
    topology = _topology_text(spec, mesh_d, shape)
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
        "figure_lines": lines,
        "figure_text": _lines_text(
            lines, options, chosen, not custom and _on_figure(plan.chip, mesh_d, shape, D, F, dtype), B
        ),
        "topology_text": topology[0],
        "topology_warning": topology[1],
        "rank_note": (
            f"名次是在全部 {len(options)} 种做法中按总时间的排名"
            + ("（标 ⚠ 的做法按跨节点模型的总时间）" if crossing else "")
            + "；默认每种通信组合只列最快的一种（加上图中的线对应的做法），所以名次不一定连续。"
        ),
        "chart": {
            "rows": bars,
            "ticks": _linear_ticks(max(options[i]["t_total"] for i in bars), fmt_time),
        },
        "summary": _summary(options, chosen),
        "explain": _explain(plan, options, out_spec, chosen),
        "flops": cost.matmul_flops(B, D, F),
    }
