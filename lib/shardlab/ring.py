"""环形 / 环面模拟器：真的把带标签的数据块（chunk）在链路上一步一步搬过去

第 5 章的步骤表（D0=[A,D] …）和所有“数出来的”通信量都来自这里。分两层：

1. 调度（schedule，`shardlab.torus`）：由算法推出每一步哪个块走哪条有向链路；
2. 执行（本模块）：按调度搬运数据。块可以是标签（'A'、'B'；规约显示成 'A0+A1'，全部加齐后显示成 'ΣA'），
   也可以是 NumPy 数组（规约时真的相加，结果与 `shardlab.reference` 逐个相等）；
   计数模式（`count`）只用块的字节数，不搬数据，N = 1024 也在一秒内完成。

V 的约定（全书统一，见前言的“约定”一节）：

- AllGather：V = 收集后完整数组的字节数，每个设备开始时有 V/N；
- ReduceScatter / AllReduce：V = 每个设备本地（未规约）缓冲区的字节数；
- AllToAll：V = 所有设备上数组的总字节数，每个设备有 V/N，切成 N 块，每块 V/N²。

时间模型：每条有向链路有单向带宽 W_oneway；同一步内所有链路同时传输，这一步用时
= max(hop_latency, 这一步最忙的链路字节数 / W_oneway)；总时间是各步之和（带宽受限、流水线化的传输）。
多轴 AllGather / ReduceScatter / AllReduce 的并发调度分阶段：同一阶段里 k 片各走一条不同的轴
（链路互不相交），每一片只等它自己的上一步，所以每一片按上式逐步计时，阶段的时间是各片用时中最长的，
总时间是各阶段之和（阶段之间同步：下一阶段转发的是上一阶段收齐的数据）。各轴一样长时这与逐步同步相同。
AllToAll 采用存储转发：每一步所有在途的块都前进一跳，一条链路在一步里携带排在它上面的全部块。
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tabulate import tabulate

from shardlab import names, reference
from shardlab.torus import (
    Ring,
    Schedule,
    Torus,
    _suffix,
    allgather_schedule,
    alltoall_routes,
    alltoall_schedule,
    reducescatter_schedule,
)

__all__ = [
    "Ring",
    "Torus",
    "SimResult",
    "all_gather",
    "reduce_scatter",
    "all_reduce",
    "all_to_all",
    "simulate",
    "count",
    "format_step_table",
]

COLLECTIVES = names.COLLECTIVES


@dataclass
class SimResult:
    """一次模拟的结果

    link_bytes: 形状 [步数, 链路数]，第 s 步经过链路 l（即 ``topology.links[l]`` = (源, 目的)）的字节数
    final: 每个设备最后的内容（数组模式为数组，标签模式为标签列表）；计数模式为 None
    steps: steps[s][d] = 第 s 步之后设备 d 持有的块的标签（s = 0 为初始状态）；计数模式为 None
    phase: phase[s] = 第 s 步所属的阶段；None 表示逐步同步（每一步自成一个阶段，只有一片）
    lane_bytes: 形状 [步数, 片数]，第 s 步第 p 片用到的链路里最忙的那条的字节数
    lane_active: 形状 [步数, 片数]，第 s 步第 p 片有没有传输
    """

    collective: str
    topology: Torus
    link_bytes: np.ndarray
    final: list | None = None
    steps: list | None = None
    phase: np.ndarray | None = None
    lane_bytes: np.ndarray | None = None
    lane_active: np.ndarray | None = None

    @property
    def n_steps(self) -> int:
        return self.link_bytes.shape[0]

    @property
    def links(self) -> list[tuple[int, int]]:
        return self.topology.links

    @property
    def per_link_bytes(self) -> np.ndarray:
        """每条有向链路在整个集合通信中经过的字节数"""
        return self.link_bytes.sum(axis=0)

    @property
    def max_link_bytes(self) -> float:
        """最忙的有向链路在整个集合通信中经过的字节数"""
        return float(self.per_link_bytes.max()) if self.link_bytes.size else 0.0

    @property
    def total_link_bytes(self) -> float:
        """所有链路字节数之和（每跳都算一次）"""
        return float(self.link_bytes.sum())

    @property
    def step_max_bytes(self) -> np.ndarray:
        """每一步里最忙的那条链路的字节数"""
        return self.link_bytes.max(axis=1) if self.link_bytes.size else np.zeros(self.n_steps)

    def time(self, oneway_bw: float, hop_latency: float = 0.0) -> float:
        """总时间（秒）

        逐步同步的调度（一维环、线、AllToAll）：Σ_步 max(hop_latency, 本步最忙链路字节数 / oneway_bw)。
        分阶段、分片的调度（多轴并发）：Σ_阶段 max_片 Σ_{这一片在本阶段的步} max(hop_latency,
        这一片本步最忙链路字节数 / oneway_bw)；同一阶段各片的链路互不相交（构造时已核对），各走各的。
        oneway_bw：一条链路一个方向的带宽 W_oneway（字节/秒）；双向环的每个方向各有一份。
        """
        if oneway_bw <= 0 or hop_latency < 0:
            raise ValueError(f"需要 oneway_bw > 0、hop_latency >= 0，收到 {oneway_bw!r}、{hop_latency!r}")
        if self.phase is None:
            return float(np.maximum(hop_latency, self.step_max_bytes / oneway_bw).sum())
        per_step = np.where(self.lane_active, np.maximum(hop_latency, self.lane_bytes / oneway_bw), 0.0)
        n_phases = int(self.phase.max(initial=-1)) + 1
        per_phase = np.zeros((n_phases, per_step.shape[1]))
        np.add.at(per_phase, self.phase, per_step)
        # 每个阶段取用时最长的那一片，把它逐步的时间依次加起来（各片一样长时与逐步同步的和逐位相同）
        slowest = per_phase.argmax(axis=1)[self.phase]
        total = float(per_step[np.arange(self.n_steps), slowest].sum())
        if total < self.link_bound_time(oneway_bw) * (1 - 1e-12):
            raise RuntimeError("分片计时比最忙链路的字节数 / W_oneway 还短（内部错误）")
        return total

    def link_bound_time(self, oneway_bw: float) -> float:
        """理想流水线下的带宽项（秒）= 最忙有向链路的总字节数 / oneway_bw

        环上各步负载均匀，它等于 ``time(oneway_bw)``；线和环面上的 AllToAll 每步负载不均，
        逐步相加的 ``time`` 更大，这个值是任何调度都无法突破的下界（代价模型 `shardlab.cost` 用的就是它）。
        """
        if oneway_bw <= 0:
            raise ValueError(f"需要 oneway_bw > 0，收到 {oneway_bw!r}")
        return self.max_link_bytes / oneway_bw

    def step_table(self) -> list[list[str]]:
        """步骤表：每一步一行，每行形如 ["D0=[A,D]", "D1=[B,A]", ...]"""
        if self.steps is None:
            raise ValueError("计数模式（count）不记录每一步的内容：请用 all_gather(topology) 等函数做带标签的模拟")
        return [[f"D{d}=[{','.join(labels)}]" for d, labels in enumerate(row)] for row in self.steps]


def format_step_table(result: SimResult) -> str:
    """把步骤表排成纯文本（tabulate 的 plain 格式），每步一行、各列对齐：``第 1 步  D0=[A,D]  D1=[B,A] …``"""
    rows = [[f"第 {s} 步", *row] for s, row in enumerate(result.step_table())]
    return tabulate(rows, tablefmt="plain", disable_numparse=True)


# ---- 数据准备 ----


def _names(n: int) -> list[str]:
    return [chr(ord("A") + i) if i < 26 else f"X{i}" for i in range(n)]


def _parse(data, n: int, v_bytes) -> tuple[list[str], list[np.ndarray] | None]:
    """data 为 None（默认标签 A, B, …）、n 个字符串标签，或 n 个数组"""
    if data is None:
        return _names(n), None
    if len(data) != n:
        raise ValueError(f"数据块个数 {len(data)} 与拓扑的设备数 {n} 不一致")
    if all(isinstance(x, str) for x in data):
        return list(data), None
    if v_bytes is not None:
        raise ValueError("传入数组时字节数由数组决定，不能再给 v_bytes")
    return _names(n), reference._check_blocks(data)


def _n_pieces(topo: Torus, concurrent: bool) -> int:
    return topo.k if concurrent else 1


def _assemble(state: dict, d: int, n_pieces: int, shape) -> np.ndarray:
    """把键 (d, 0..P-1) 的各片（拉平的）拼回原形状"""
    return np.concatenate([state[(d, p)][1] for p in range(n_pieces)]).reshape(shape)


def _chain(first: Schedule, second: Schedule) -> Schedule:
    """两段调度首尾相接（AllReduce = ReduceScatter 接 AllGather）"""
    items = first.items + second.items if first.items is not None else None
    phase = lane = None
    if first.phase is not None and second.phase is not None:
        phase = np.concatenate([first.phase, second.phase + first.phase.max(initial=-1) + 1])
        lane = np.concatenate([first.lane, second.lane])
    return Schedule(
        step=np.concatenate([first.step, second.step + first.n_steps]),
        src=np.concatenate([first.src, second.src]),
        dst=np.concatenate([first.dst, second.dst]),
        port=np.concatenate([first.port, second.port]),
        nbytes=np.concatenate([first.nbytes, second.nbytes]),
        items=items,
        ops=first.ops + second.ops,
        phase=phase,
        lane=lane,
    )


def _link_bytes(topo: Torus, sched: Schedule) -> np.ndarray:
    """按 (步, 链路) 累加字节：这就是“数出来的”通信量"""
    cols = topo.link_index(sched.src, sched.port)
    flat = sched.step * topo.n_links + cols
    out = np.bincount(flat, weights=sched.nbytes, minlength=sched.n_steps * topo.n_links)
    return out.reshape(sched.n_steps, topo.n_links)


def _result(name: str, topo: Torus, sched: Schedule, final=None, steps=None) -> SimResult:
    """数出每步每条链路的字节；分片的调度再数出每步每片最忙的链路，并核对同一阶段各片的链路互不相交"""
    link_bytes = _link_bytes(topo, sched)
    if sched.phase is None:
        return SimResult(name, topo, link_bytes, final, steps)
    cols = topo.link_index(sched.src, sched.port)
    n_lanes = int(sched.lane.max(initial=0)) + 1
    owner = np.full((int(sched.phase.max(initial=0)) + 1, topo.n_links), -1, dtype=np.int64)
    ph = sched.phase[sched.step]
    owner[ph, cols] = sched.lane
    if np.any(owner[ph, cols] != sched.lane):
        raise RuntimeError("同一阶段里两片用了同一条链路，不能各走各的（调度错误）")
    step_owner = owner[sched.phase]  # [步数, 链路数]：这一步这条链路属于哪一片
    lane_bytes = [np.where(step_owner == p, link_bytes, 0.0).max(axis=1, initial=0.0) for p in range(n_lanes)]
    lane_bytes = np.stack(lane_bytes, axis=1).reshape(sched.n_steps, n_lanes)
    active = np.zeros((sched.n_steps, n_lanes), dtype=bool)
    active[sched.step, sched.lane] = True
    return SimResult(name, topo, link_bytes, final, steps, sched.phase, lane_bytes, active)


# ---- 执行：真的搬运 ----


def _add(x: tuple, y: tuple) -> tuple:
    """部分和相加：标签记下贡献者，数组真的相加"""
    contrib = tuple(sorted(x[0] + y[0]))
    return contrib, (None if x[1] is None else x[1] + y[1])


def _execute(sched: Schedule, state: list[dict], sizes: dict, label) -> list:
    """按调度逐步搬运；每一步先按步初的状态取出要发的块，再投递。返回每一步的标签快照"""

    def snapshot():
        return [[label(key, payload) for key, payload in dev.items()] for dev in state]

    order = np.argsort(sched.step, kind="stable")
    bounds = np.searchsorted(sched.step[order], np.arange(sched.n_steps + 1))
    snaps = [snapshot()]
    for s, op in enumerate(sched.ops):
        msgs = []
        for m in order[bounds[s] : bounds[s + 1]].tolist():
            src, dst, keys = int(sched.src[m]), int(sched.dst[m]), sched.items[m]
            missing = [key for key in keys if key not in state[src]]
            if missing:
                raise RuntimeError(f"第 {s} 步设备 {src} 要发送它没有的块 {missing}（调度错误）")
            if not np.isclose(sum(sizes[key] for key in keys), sched.nbytes[m]):
                raise RuntimeError(f"第 {s} 步 {src}→{dst} 的计数字节与实际块大小不符（调度错误）")
            msgs.append((src, dst, keys, [state[src][key] for key in keys]))
        if op != "copy":
            for src, _, keys, _ in msgs:
                for key in keys:
                    del state[src][key]
        for _, dst, keys, payloads in msgs:
            for key, payload in zip(keys, payloads):
                if (key in state[dst]) != (op == "add"):
                    raise RuntimeError(f"第 {s} 步设备 {dst} 收到块 {key} 时状态不对（调度错误）")
                state[dst][key] = _add(state[dst][key], payload) if op == "add" else payload
        snaps.append(snapshot())
    return snaps


def _gather_label(names: list[str], n_pieces: int):
    def label(key, payload):
        d, p = key
        contrib = payload[0]
        if len(contrib) == len(names) > 1:
            text = f"Σ{names[d]}"  # 全部设备的贡献都已加上
        else:
            text = "+".join(f"{names[d]}{i}" for i in contrib) if contrib else names[d]
        if n_pieces > 1:
            text = f"({text}).{p}" if "+" in text else f"{text}.{p}"
        return text

    return label


# ---- 公开接口 ----


def all_gather(topology: Torus, data=None, *, axis: int = 0, concurrent: bool = True, v_bytes=None) -> SimResult:
    """全收集（AllGather）模拟；data 为 None、n 个标签或 n 个数组（结果沿 axis 拼接）

    多轴环面上 concurrent=True 把每块切成 k 片，各片按不同的轴顺序同时收集（见 `torus.allgather_schedule`）。
    标签模式下每块默认 1 字节（v_bytes 给出时每块 v_bytes / N）。
    """
    n, n_pieces = topology.n, _n_pieces(topology, concurrent)
    names, arrays = _parse(data, n, v_bytes)
    if arrays is None:
        per = (1.0 if v_bytes is None else v_bytes / n) / n_pieces
        state = [{(d, p): ((), None) for p in range(n_pieces)} for d in range(n)]
        sizes = {(d, p): per for d in range(n) for p in range(n_pieces)}
    else:
        axis = reference._check_axis(axis, arrays[0].ndim)
        parts = [np.array_split(a.ravel(), n_pieces) for a in arrays]
        state = [{(d, p): ((), parts[d][p]) for p in range(n_pieces)} for d in range(n)]
        sizes = {(d, p): float(parts[d][p].nbytes) for d in range(n) for p in range(n_pieces)}
    piece_bytes = np.array([[sizes[(d, p)] for p in range(n_pieces)] for d in range(n)])
    sched = allgather_schedule(topology, piece_bytes, detail=True)
    snaps = _execute(sched, state, sizes, _gather_label(names, n_pieces))
    if arrays is None:
        final = [[names[d] for d in range(n)] for _ in state]
    else:
        shape = arrays[0].shape
        final = [np.concatenate([_assemble(st, d, n_pieces, shape) for d in range(n)], axis=axis) for st in state]
    return _result("all_gather", topology, sched, final, snaps)


def _reduce_setup(topology: Torus, data, v_bytes, n_pieces: int, axis: int | None):
    """ReduceScatter / AllReduce 的初始状态：设备 i 持有每个输出块 d 的第 i 份贡献"""
    n = topology.n
    names, arrays = _parse(data, n, v_bytes)
    if arrays is None:
        per = (1.0 if v_bytes is None else v_bytes / n) / n_pieces
        state = [{(d, p): ((i,), None) for d in range(n) for p in range(n_pieces)} for i in range(n)]
        sizes = {(d, p): per for d in range(n) for p in range(n_pieces)}
        return names, None, state, sizes
    if axis is None:  # AllReduce：把缓冲区拉平后切成 N 块（块大小可以不等）
        chunks = [np.array_split(a.ravel(), n) for a in arrays]
    else:
        if arrays[0].ndim == 0:
            raise ValueError("reduce_scatter 需要至少一维的数据块，收到标量（0 维）")
        chunks = [reference._split(a, n, axis, "reduce_scatter") for a in arrays]
    parts = [[np.array_split(c.ravel(), n_pieces) for c in ch] for ch in chunks]
    state = [{(d, p): ((i,), parts[i][d][p]) for d in range(n) for p in range(n_pieces)} for i in range(n)]
    sizes = {(d, p): float(parts[0][d][p].nbytes) for d in range(n) for p in range(n_pieces)}
    return names, [c.shape for c in chunks[0]], state, sizes


def _piece_table(sizes: dict, n: int, n_pieces: int) -> np.ndarray:
    return np.array([[sizes[(d, p)] for p in range(n_pieces)] for d in range(n)])


def reduce_scatter(topology: Torus, data=None, *, axis: int = 0, concurrent: bool = True, v_bytes=None) -> SimResult:
    """规约散射（ReduceScatter）模拟：部分和真的沿链路传递并相加；设备 d 最后得到第 d 份之和

    数组模式下每个设备的缓冲区沿 axis 等分成 N 份（同 reference.reduce_scatter）；
    标签模式下设备 i 对块 A 的贡献记作 'Ai'，部分和显示为 'A0+A1'。
    """
    n, n_pieces = topology.n, _n_pieces(topology, concurrent)
    names, shapes, state, sizes = _reduce_setup(topology, data, v_bytes, n_pieces, axis)
    sched = reducescatter_schedule(topology, _piece_table(sizes, n, n_pieces), detail=True)
    label = _gather_label(names, n_pieces)
    snaps = _execute(sched, state, sizes, label)
    if shapes is None:
        final = [[label((d, p), st[(d, p)]) for p in range(n_pieces)] for d, st in enumerate(state)]
    else:
        final = [_assemble(st, d, n_pieces, shapes[d]) for d, st in enumerate(state)]
    return _result("reduce_scatter", topology, sched, final, snaps)


def all_reduce(topology: Torus, data=None, *, concurrent: bool = True, v_bytes=None) -> SimResult:
    """全规约（AllReduce）= ReduceScatter 接 AllGather；数组模式下把缓冲区拉平切成 N 块"""
    n, n_pieces = topology.n, _n_pieces(topology, concurrent)
    names, shapes, state, sizes = _reduce_setup(topology, data, v_bytes, n_pieces, None)
    table = _piece_table(sizes, n, n_pieces)
    sched = _chain(
        reducescatter_schedule(topology, table, detail=True), allgather_schedule(topology, table, detail=True)
    )
    label = _gather_label(names, n_pieces)
    snaps = _execute(sched, state, sizes, label)
    if shapes is None:
        final = [[label(key, st[key]) for key in sorted(st)] for st in state]
    else:
        shape = np.asarray(data[0]).shape
        final = [
            np.concatenate([_assemble(st, d, n_pieces, shapes[d]) for d in range(n)]).reshape(shape) for st in state
        ]
    return _result("all_reduce", topology, sched, final, snaps)


def all_to_all(topology: Torus, data=None, *, split_axis: int = 0, concat_axis: int = 0, v_bytes=None) -> SimResult:
    """全交换（AllToAll）模拟：块 (s, t) 沿最短方向、按维度顺序从 s 走到 t

    标签 'B2' 表示设备 B（1 号）的块里要去设备 2 的那一份；正对面的块拆成两半 'B3a'（正向）、'B3b'（反向）。
    数组模式的结果同 reference.all_to_all(blocks, split_axis, concat_axis)。
    """
    n = topology.n
    names, arrays = _parse(data, n, v_bytes)
    if arrays is None:
        per = 1.0 if v_bytes is None else v_bytes / n / n
        routes = alltoall_routes(topology, np.full((n, n), per))
        pieces = None
    else:
        pieces = [reference._split(a, n, split_axis, "all_to_all 的 split_axis") for a in arrays]
        concat_axis = reference._check_axis(concat_axis, arrays[0].ndim, "concat_axis")
        routes = alltoall_routes(topology, np.array([[p.nbytes for p in row] for row in pieces], dtype=float))
    keys = [
        (int(s), int(t), _suffix(int(c), int(m))) for s, t, c, m in zip(*(routes[f] for f in ("s", "t", "code", "m")))
    ]
    payload: dict = {}
    if pieces is not None:
        for e, key in enumerate(keys):
            part = np.array_split(pieces[key[0]][key[1]].ravel(), 2 ** int(routes["m"][e]))[int(routes["code"][e])]
            payload[key] = part
            routes["size"][e] = part.nbytes
    sizes = dict(zip(keys, routes["size"].tolist()))
    for d in range(n):  # 留在本地的那一份不上链路
        keys.append((d, d, ""))
        payload[(d, d, "")] = None if pieces is None else pieces[d][d].ravel()
    state = [{} for _ in range(n)]
    for key in sorted(keys):
        state[key[0]][key] = ((), payload.get(key))
    sched = alltoall_schedule(topology, None, detail=True, routes=routes)
    snaps = _execute(sched, state, sizes, lambda key, _: f"{names[key[0]]}{key[1]}{key[2]}")
    if pieces is None:
        final = [[f"{names[s]}{t}{suf}" for s, t, suf in sorted(st)] for st in state]
    else:
        final = []
        for t, st in enumerate(state):
            per_src = [
                np.concatenate([st[key][1] for key in sorted(k for k in st if k[0] == s)]).reshape(pieces[s][t].shape)
                for s in range(n)
            ]
            final.append(np.concatenate(per_src, axis=concat_axis))
    return _result("all_to_all", topology, sched, final, snaps)


def simulate(collective: str, topology: Torus, data=None, **kwargs) -> SimResult:
    """按名字调用：``simulate('all_gather', Ring(4), ['A', 'B', 'C', 'D'])``"""
    func = {
        "all_gather": all_gather,
        "reduce_scatter": reduce_scatter,
        "all_reduce": all_reduce,
        "all_to_all": all_to_all,
    }
    return func[names.canonical(collective)](topology, data, **kwargs)


def count(
    collective: str, topology: Torus, v_bytes: float, *, concurrent: bool = True, split_opposite: bool = False
) -> SimResult:
    """计数模式：只用块的字节数走一遍调度，统计每步每条链路的字节（不搬数据，不记步骤表）

    V 的含义见模块说明（AllGather：收集后的总大小；ReduceScatter / AllReduce：每设备的本地缓冲区；
    AllToAll：所有设备的总大小）。
    split_opposite=True：AllGather / ReduceScatter / AllReduce 在偶数长度的双向环上把正对面的块拆成两半、
    两个方向各走一半（默认是全书的约定：整块走正向；见 `torus.ag_pattern`）。AllToAll 总是拆开。
    """
    name = names.canonical(collective)
    if not v_bytes >= 0:
        raise ValueError(f"v_bytes 必须是非负数，收到 {v_bytes!r}")
    n = topology.n
    if name == "all_to_all":
        sched = alltoall_schedule(topology, np.full((n, n), v_bytes / n / n))
    else:
        n_pieces = _n_pieces(topology, concurrent)
        table = np.full((n, n_pieces), v_bytes / n / n_pieces)
        so = {"split_opposite": split_opposite}
        if name == "all_gather":
            sched = allgather_schedule(topology, table, **so)
        elif name == "reduce_scatter":
            sched = reducescatter_schedule(topology, table, **so)
        else:
            sched = _chain(reducescatter_schedule(topology, table, **so), allgather_schedule(topology, table, **so))
    return _result(name, topology, sched)
