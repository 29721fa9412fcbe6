"""环（ring）与环面（torus）拓扑，以及集合通信的调度（schedule）：每一步哪个数据块走哪条有向链路

本模块只回答“怎么走”，由算法推出，不用任何代价公式；真正搬运数据、统计字节的是 `shardlab.ring`。

拓扑约定：

- 设备按行优先（row-major）编号：``Torus((4, 4))`` 中坐标 (x, y) 的设备是 ``4 * x + y``；
- 每个设备在每个轴上有两个端口（port）：正向 +1 与反向 -1；一条有向链路（directed link）
  = (源设备, 端口)，每条有向链路有一份单向带宽（W_oneway）；
- 单向环（unidirectional）只用正向端口；双向（bidirectional）两个方向都用；
- 有回绕（wraparound）的轴是环，没有回绕的轴是一条线（line）：两端之间没有链路，线上只能双向通信；
- 长度为 2 且有回绕的轴：正向和反向端口连到同一个邻居，算作两条独立的物理链路（直连与回绕各一条）。

调度用扁平数组表示：第 m 次传输（transfer）在第 ``step[m]`` 步（从 0 起）从 ``src[m]`` 经端口
``port[m]`` 发到 ``dst[m]``，携带 ``nbytes[m]`` 字节；``items[m]`` 是它携带的数据块键（key），
只在需要搬运真实数据时生成（计数模式下为 None，好让 N = 1024 也能很快算完）。
多轴 AllGather / ReduceScatter 还记下每一步属于哪个阶段（``phase[s]``）、每次传输属于哪一片
（``lane[m]``，片号 p）：同一阶段里各片走不同的轴、用的链路互不相交，也不等别的片的数据，
所以各自按自己的步子前进（计时见 `shardlab.ring.SimResult.time`）；阶段之间同步。
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class Torus:
    """k 维环面 ``Torus((4, 4))``、``Torus((4, 4, 4))``；每个轴可以有或没有回绕

    shape: 各轴长度；bidirectional: 是否双向；wraparound: 一个布尔值或每轴一个
    """

    def __init__(self, shape: Sequence[int], *, bidirectional: bool = True, wraparound: bool | Sequence[bool] = True):
        shape = tuple(shape)
        if not shape or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1 for s in shape):
            raise ValueError(f"拓扑形状（shape）必须是正整数组成的非空元组，收到 {shape!r}")
        self.shape = tuple(int(s) for s in shape)
        self.k = len(self.shape)
        wrap = (wraparound,) * self.k if isinstance(wraparound, (bool, np.bool_)) else tuple(wraparound)
        if len(wrap) != self.k:
            raise ValueError(f"wraparound 需要 {self.k} 个布尔值（每轴一个），收到 {wraparound!r}")
        self.wraparound = tuple(bool(w) for w in wrap)
        self.bidirectional = bool(bidirectional)
        for a, (size, w) in enumerate(zip(self.shape, self.wraparound)):
            if size > 1 and not w and not self.bidirectional:
                raise ValueError(f"轴 {a} 没有回绕（一条线），单向链路无法让线的一端收到另一端的数据：请用双向")
        self.n = int(np.prod(self.shape))
        self.strides = tuple(int(np.prod(self.shape[a + 1 :])) for a in range(self.k))
        self.coords = np.stack(np.unravel_index(np.arange(self.n), self.shape), axis=1)  # [n, k]
        self._build_links()

    def _build_links(self) -> None:
        """列出存在的有向链路，并建 (设备, 端口) → 链路编号 的查表"""
        n_ports = 2 * self.k
        col = np.full(self.n * n_ports, -1, dtype=np.int64)
        src_all, dst_all = [], []
        for a in range(self.k):
            size, wrap = self.shape[a], self.wraparound[a]
            for d, direction in enumerate((1, -1)):
                if size == 1 or (d == 1 and not self.bidirectional):
                    continue
                c = self.coords[:, a] + direction
                ok = (c >= 0) & (c < size) if not wrap else np.ones(self.n, dtype=bool)
                src = np.flatnonzero(ok)
                dst = src + ((c[ok] % size) - self.coords[ok, a]) * self.strides[a]
                col[src * n_ports + 2 * a + d] = len(src_all) + np.arange(len(src))
                src_all.extend(src.tolist())
                dst_all.extend(dst.tolist())
        self._col = col
        self.links: list[tuple[int, int]] = list(zip(src_all, dst_all))

    @property
    def n_links(self) -> int:
        return len(self.links)

    def link_index(self, src: np.ndarray, port: np.ndarray) -> np.ndarray:
        """(源设备, 端口) → 链路编号；端口 = 2 * 轴 + (0 正向 / 1 反向)"""
        idx = self._col[np.asarray(src) * 2 * self.k + np.asarray(port)]
        if np.any(idx < 0):
            raise ValueError("调度用了一条不存在的链路（内部错误）")
        return idx

    def lines(self, axis: int) -> np.ndarray:
        """沿 axis 的所有线 / 环：形状 [组数, 轴长]，每行是按坐标顺序排列的设备编号"""
        ids = np.arange(self.n).reshape(self.shape)
        return np.moveaxis(ids, axis, -1).reshape(-1, self.shape[axis])

    def reflect(self, devices: np.ndarray) -> np.ndarray:
        """把每个坐标反射（环上 c → -c mod L，线上 c → L-1-c）；反射是拓扑的对称，且是对合（involution）"""
        c = self.coords[np.asarray(devices)]
        out = np.zeros_like(np.asarray(devices))
        for a, (size, wrap) in enumerate(zip(self.shape, self.wraparound)):
            r = (-c[..., a]) % size if wrap else size - 1 - c[..., a]
            out = out + r * self.strides[a]
        return out

    def describe(self) -> str:
        kind = "双向" if self.bidirectional else "单向"
        axes = " x ".join(f"{s}{'' if w or s == 1 else '(线)'}" for s, w in zip(self.shape, self.wraparound))
        return f"{kind} {axes}，{self.n} 个设备，{self.n_links} 条有向链路"

    def __repr__(self) -> str:
        return f"Torus({self.shape}, bidirectional={self.bidirectional}, wraparound={self.wraparound})"


class Ring(Torus):
    """一维环 ``Ring(8, bidirectional=False)``；``wraparound=False`` 得到一条线（必须双向）"""

    def __init__(self, n: int, bidirectional: bool = True, *, wraparound: bool = True):
        super().__init__((n,), bidirectional=bidirectional, wraparound=wraparound)

    def __repr__(self) -> str:
        return f"Ring({self.n}, bidirectional={self.bidirectional}, wraparound={self.wraparound[0]})"


@dataclass
class Schedule:
    """扁平的调度表；ops[s] 是第 s 步的语义：'copy'（收集）、'add'（规约）、'move'（转发）"""

    step: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    port: np.ndarray
    nbytes: np.ndarray
    items: list | None
    ops: list[str]
    # phase[s]：第 s 步所属的阶段；lane[m]：第 m 次传输所属的片。None 表示每一步自成一个阶段、
    # 只有一片（逐步同步，lock-step：AllToAll 的存储转发就是这样）
    phase: np.ndarray | None = None
    lane: np.ndarray | None = None

    @property
    def n_steps(self) -> int:
        return len(self.ops)


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


# ---- 一维 AllGather 的走法（在一条线 / 环的位置坐标里） ----


def ag_pattern(
    length: int, wrap: bool, bidir: bool, *, split_opposite: bool = False
) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray, int, float]]]:
    """一维 AllGather 每一步的传输：(from 位置, to 位置, 数据块来源位置, 方向, 送出的份额)

    单向环：N-1 步，每步每个设备把上一步收到的块（第一步是自己的块）发给下一个设备；
    双向环：floor(N/2) 步，正向、反向同时转发；N 为偶数时正对面（antipodal）的块默认整块从正向来
    （全书的约定），所以最后一步只有正向链路在忙；split_opposite=True 时正对面的块拆成两半，
    最后一步两个方向各送半块（份额 0.5）；
    线（无回绕）：N-1 步，两个方向各自把块一直送到线的尽头。
    """
    q = np.arange(length)
    steps = []
    if length == 1:
        return steps
    if wrap and not bidir:
        for t in range(1, length):
            steps.append([(q, (q + 1) % length, (q - t + 1) % length, 1, 1.0)])
    elif wrap:
        for t in range(1, length // 2 + 1):
            last_even = 2 * t == length
            share = 0.5 if (last_even and split_opposite) else 1.0
            moves = [(q, (q + 1) % length, (q - t + 1) % length, 1, share)]
            if t <= (length - 1) // 2 or (last_even and split_opposite):
                moves.append((q, (q - 1) % length, (q + t - 1) % length, -1, share))
            steps.append(moves)
    else:
        for t in range(1, length):
            fw = np.arange(t - 1, length - 1)
            bw = np.arange(1, length - t + 1)
            steps.append([(fw, fw + 1, fw - t + 1, 1, 1.0), (bw, bw - 1, bw + t - 1, -1, 1.0)])
    return steps


def allgather_schedule(
    topo: Torus, piece_bytes: np.ndarray, *, detail: bool = False, split_opposite: bool = False
) -> Schedule:
    """多轴 AllGather 的调度；piece_bytes[d, p] = 设备 d 的块的第 p 片（piece）的字节数

    片数 P = 轴数 k（并发，concurrent）：第 p 片依次沿轴 p, p+1, …（循环）收集，
    每个阶段（phase）k 片各用一个不同的轴，所有轴的链路同时在忙，带宽项约为 V / (k W_bidir)；
    P = 1（逐轴，sequential）：整块依次沿轴 0, 1, …, k-1 收集。
    每个阶段转发的是“这一片到目前为止已收齐的部分”（bundle），阶段结束后 bundle 沿该轴拼起来。
    数据块的键是 (来源设备 d, 片号 p)。调度记下每一步的阶段号（phase = j）和每次传输的片号（lane = p）：
    第 p 片在一个阶段里只依赖它自己上一步收到的块，所以各片按自己的步数前进，不必逐步互等。
    split_opposite：偶数长度的双向环上正对面的块拆成两半、两个方向各走一半（见 ag_pattern）；
    默认 False 是全书的约定（整块走正向）。
    """
    n, n_pieces = piece_bytes.shape
    bundle_bytes = piece_bytes.astype(float).copy()
    bundles = [[[(d, p)] for p in range(n_pieces)] for d in range(n)] if detail else None
    cols: dict[str, list] = {k: [] for k in ("step", "src", "dst", "port", "nbytes", "lane")}
    items: list | None = [] if detail else None
    offset = 0
    phase: list[int] = []
    for j in range(topo.k):
        phase_len = 0
        for p in range(n_pieces):
            a = (p + j) % topo.k
            lines = topo.lines(a)
            pattern = ag_pattern(topo.shape[a], topo.wraparound[a], topo.bidirectional, split_opposite=split_opposite)
            phase_len = max(phase_len, len(pattern))
            for t, moves in enumerate(pattern):
                for frm, to, origin, direction, share in moves:
                    src, dst, org = lines[:, frm].ravel(), lines[:, to].ravel(), lines[:, origin].ravel()
                    cols["step"].append(np.full(len(src), offset + t))
                    cols["src"].append(src)
                    cols["dst"].append(dst)
                    cols["port"].append(np.full(len(src), 2 * a + (direction < 0)))
                    cols["nbytes"].append(bundle_bytes[org, p] * share)
                    cols["lane"].append(np.full(len(src), p))
                    if detail:
                        items.extend(list(bundles[o][p]) for o in org)
            # 阶段结束：每个设备的 bundle 变成整条线上 bundle 的拼接
            line_sum = bundle_bytes[lines, p].sum(axis=1)
            bundle_bytes[lines, p] = line_sum[:, None]
            if detail:
                for line in lines:
                    merged = [key for dev in line for key in bundles[dev][p]]
                    for dev in line:
                        bundles[dev][p] = merged
        offset += phase_len
        phase += [j] * phase_len
    return Schedule(
        step=_concat(cols["step"], np.int64),
        src=_concat(cols["src"], np.int64),
        dst=_concat(cols["dst"], np.int64),
        port=_concat(cols["port"], np.int64),
        nbytes=_concat(cols["nbytes"], float),
        items=items,
        ops=["copy"] * offset,
        phase=np.array(phase, dtype=np.int64),
        lane=_concat(cols["lane"], np.int64),
    )


def reducescatter_schedule(
    topo: Torus, piece_bytes: np.ndarray, *, detail: bool = False, split_opposite: bool = False
) -> Schedule:
    """ReduceScatter = AllGather 的转置（transpose）：时间倒放、收发对调，再做一次坐标反射

    AllGather 里块 d 沿一棵树从 d 复制出去；倒过来，部分和（partial sum）沿同一棵树流回 d，
    每经过一个设备就加上它的那一份。反射 c → -c 让转置后的传输仍走正向端口（单向环也成立）。
    piece_bytes[d, p] = 输出块 d（最终属于设备 d）的第 p 片的字节数；键是 (目标设备 d, 片号 p)。
    """
    ag = allgather_schedule(
        topo, piece_bytes[topo.reflect(np.arange(topo.n))], detail=detail, split_opposite=split_opposite
    )
    last = ag.n_steps - 1
    items = None
    if detail:
        refl = topo.reflect(np.arange(topo.n))
        items = [[(int(refl[d]), p) for d, p in keys] for keys in ag.items]
    return Schedule(
        step=last - ag.step,
        src=topo.reflect(ag.dst),
        dst=topo.reflect(ag.src),
        port=ag.port,
        nbytes=ag.nbytes,
        items=items,
        ops=["add"] * ag.n_steps,
        phase=ag.phase.max(initial=0) - ag.phase[::-1],
        lane=ag.lane,
    )


# ---- AllToAll：最短方向、按维度顺序路由（dimension-ordered routing），存储转发 ----


def _suffix(code: int, m: int) -> str:
    """被拆开的块的后缀：每个平局轴一个字母，a = 正向那一半，b = 反向那一半"""
    return "".join("ab"[(code >> (m - 1 - i)) & 1] for i in range(m))


def alltoall_routes(topo: Torus, chunk_bytes: np.ndarray):
    """每个块 (s, t) 的路线：先走轴 0，再走轴 1……每个轴走最短方向

    正对面（距离恰为 L/2，偶数长度的双向环）的块拆成两半，一半正向一半反向（每个这样的轴拆一次）。
    返回 dict：s, t, code, m（code 的二进制位记录每个平局轴选的方向，m 为平局轴数），
    size（字节），dist 与 dirn（形状 [条目数, k]）。
    """
    n = topo.n
    s, t = np.divmod(np.arange(n * n), n)
    keep = s != t
    s, t = s[keep], t[keep]
    size = chunk_bytes[s, t].astype(float)
    code = np.zeros(len(s), dtype=np.int64)
    m = np.zeros(len(s), dtype=np.int64)
    dists, dirns = [], []
    for a, (length, wrap) in enumerate(zip(topo.shape, topo.wraparound)):
        delta = topo.coords[t, a] - topo.coords[s, a]
        if not wrap:
            dist, dirn, tie = np.abs(delta), np.where(delta >= 0, 1, -1), np.zeros(len(s), dtype=bool)
        elif not topo.bidirectional:
            dist, dirn, tie = delta % length, np.ones(len(s), dtype=np.int64), np.zeros(len(s), dtype=bool)
        else:
            fwd = delta % length
            back = (length - fwd) % length
            tie = (fwd == back) & (fwd > 0)
            dist, dirn = np.minimum(fwd, back), np.where(fwd <= back, 1, -1)
        if tie.any():
            # 平局的条目复制一份：原条目走正向（a），副本走反向（b），各带一半字节
            idx = np.flatnonzero(tie)
            s, t, size = np.concatenate([s, s[idx]]), np.concatenate([t, t[idx]]), size.copy()
            size[idx] /= 2
            size = np.concatenate([size, size[idx]])
            code = np.concatenate([np.where(tie, code * 2, code), code[idx] * 2 + 1])
            m = np.concatenate([m + tie, m[idx] + 1])
            dists = [np.concatenate([d, d[idx]]) for d in dists]
            dirns = [np.concatenate([d, d[idx]]) for d in dirns]
            dist, dirn = np.concatenate([dist, dist[idx]]), np.concatenate([dirn, -np.ones(len(idx), dtype=np.int64)])
        dists.append(dist)
        dirns.append(dirn)
    return {
        "s": s,
        "t": t,
        "code": code,
        "m": m,
        "size": size,
        "dist": np.stack(dists, axis=1),
        "dirn": np.stack(dirns, axis=1),
    }


def alltoall_schedule(topo: Torus, chunk_bytes: np.ndarray, *, detail: bool = False, routes=None) -> Schedule:
    """AllToAll 的调度：每一步，所有在途的块都前进一跳（store-and-forward，不排队等待）

    一个块在第 h 步走它路线上的第 h 跳。从同一设备、同一时刻、沿同一轴同一方向出发的块结伴而行
    （一列“火车”，train），每前进一跳，到站的块下车，火车变短。按火车统计让 N = 1024 的单向环
    （约一百万个块）也能在零点几秒内数完；detail=True 时每次传输还列出它携带的每个块的键
    (来源 s, 目标 t, 后缀)。
    """
    r = routes if routes is not None else alltoall_routes(topo, chunk_bytes)
    k, n = topo.k, topo.n
    dist, dirn = r["dist"], r["dirn"]
    start = np.concatenate([np.zeros((len(r["s"]), 1), dtype=np.int64), np.cumsum(dist, axis=1)[:, :-1]], axis=1)
    legs = []  # (轴, 入口设备, 方向, 起始步, 本轴距离, 条目下标)
    for a in range(k):
        on = dist[:, a] > 0
        idx = np.flatnonzero(on)
        entry_coords = np.where(np.arange(k) < a, topo.coords[r["t"][idx]], topo.coords[r["s"][idx]])
        entry = entry_coords @ np.array(topo.strides)
        legs.append((np.full(len(idx), a), entry, dirn[idx, a], start[idx, a], dist[idx, a], idx))
    axis_, entry, dirs, st, dl, idx = (np.concatenate(col) for col in zip(*legs))
    total_steps = int(dist.sum(axis=1).max()) if len(dist) else 0
    if len(idx) == 0:
        return Schedule(*(np.zeros(0, dtype=np.int64) for _ in range(4)), np.zeros(0), [] if detail else None, [])
    span = total_steps + 1
    key = ((axis_ * n + entry) * 2 + (dirs < 0)) * span + st
    uniq, train = np.unique(key, return_inverse=True)
    n_train, width = len(uniq), int(dl.max()) + 1
    # prof[i, h] = 第 i 列火车在第 h 跳时还载着的字节（本轴距离 >= h 的块）
    flat = train * width + dl
    prof = np.bincount(flat, weights=r["size"][idx], minlength=n_train * width).reshape(n_train, width)
    prof = np.cumsum(prof[:, ::-1], axis=1)[:, ::-1]
    hops = np.zeros(n_train, dtype=np.int64)
    np.maximum.at(hops, train, dl)
    t_axis = (uniq // span // 2) // n
    t_entry = (uniq // span // 2) % n
    t_dir = np.where((uniq // span) % 2 == 1, -1, 1)
    t_start = uniq % span
    # 展开成每列火车的每一跳
    tr = np.repeat(np.arange(n_train), hops)
    h = np.arange(len(tr)) - np.repeat(np.cumsum(hops) - hops, hops) + 1
    lengths = np.array(topo.shape)[t_axis[tr]]
    strides = np.array(topo.strides)[t_axis[tr]]
    c0 = topo.coords[t_entry[tr], t_axis[tr]]
    c_from = (c0 + t_dir[tr] * (h - 1)) % lengths
    c_to = (c0 + t_dir[tr] * h) % lengths
    src = t_entry[tr] + (c_from - c0) * strides
    dst = t_entry[tr] + (c_to - c0) * strides
    items = None
    if detail:
        members: list[list] = [[] for _ in range(n_train)]
        for i, d, e in zip(train.tolist(), dl.tolist(), idx.tolist()):
            members[i].append((d, (int(r["s"][e]), int(r["t"][e]), _suffix(int(r["code"][e]), int(r["m"][e])))))
        items = [[key for d, key in members[i] if d >= hh] for i, hh in zip(tr.tolist(), h.tolist())]
    return Schedule(
        step=t_start[tr] + h - 1,
        src=src,
        dst=dst,
        port=2 * t_axis[tr] + (t_dir[tr] < 0),
        nbytes=prof[tr, h],
        items=items,
        ops=["move"] * total_steps,
    )
