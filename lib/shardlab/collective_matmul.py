"""集合矩阵乘法（collective matmul）：用 ppermute 让通信与计算重叠

两种需要通信的分片矩阵乘法，各有一个「先通信、后计算」的朴素版本（naive）
和一个「边传边算」的重叠版本（overlapped），重叠版本又分单向环与双向环：

- AllGather-matmul：``C[B_X, F_Y] = A[B_X, D_Y] · W[D, F_Y]``（收缩维 D 在 A 上沿 axis 切分）。
  朴素版先沿 axis AllGather 出 A 的整行块 ``A[B_X, D]``，再做本地 matmul；
  重叠版不收集整个 A：A 的 n 个块沿环传一圈，每到一台设备就乘上 W 中对应的行块并累加。
- matmul-ReduceScatter：``C[B_X, F_Y] = A[B_X, D_Y] · W[D_Y, F]``（两边的收缩维都沿 axis 切分）。
  朴素版先算本地部分和 ``C[B_X, F]{U_Y}``，再沿 F 做 ReduceScatter；
  重叠版让 n 个累加器（accumulator）沿环传一圈，每到一台设备就加上该设备对那一块输出的贡献。

布局（layout，以网格 (2, 4)、轴 ('X', 'Y')、axis='Y' 为例；n = 4）：

==========================  ===============  ==================  ===================
版本                        A[B, D]          W[D, F]             C[B, F]
==========================  ===============  ==================  ===================
AllGather-matmul            P('X', 'Y')      P(None, 'Y')        P('X', 'Y')
matmul-ReduceScatter        P('X', 'Y')      P('Y', None)        P('X', 'Y')
==========================  ===============  ==================  ===================

A 的行（B）按网格中 axis 以外的轴切分（数据并行），所以在一维网格 (8,) 上 A 是 ``P(None, 'X')``。
设备上的块：``a_block: f32[B/2, D/4]``；AllGather 版 ``w_block: f32[D, F/4]``，
ReduceScatter 版 ``w_block: f32[D/4, F]``；两种输出都是 ``c_block: f32[B/2, F/4]``。

时间线（timeline，单向环，设备 j，第 s 步，s = 0 … n-1）：

- AllGather-matmul：手里持有 A 的第 k = j - s (mod n) 个 D 块；本步一边把它发给右邻居 j+1，
  一边用它乘 ``w_block`` 的第 k 个行块并累加。共 n 次 matmul、n-1 次 ppermute。
- matmul-ReduceScatter：先收到左邻居发来的累加器，它的终点是设备 t = j-1-s (mod n)；
  本步算出本设备对输出第 t 块的贡献 ``a_block · w_block[:, t 块]`` 并加上去，下一步再发出。
  第 n-1 步 t = j，累加器回到终点。同样 n 次 matmul、n-1 次 ppermute。

每步的 matmul 与 ppermute 互不依赖，XLA 的调度器可以让它们同时进行：
理想情况下总时间从 ``T_math + T_comms`` 降到约 ``max(T_math, T_comms)`` 再加一步的零头。
双向环（bidirectional）把每块切成两半，一半顺时针、一半逆时针，两个方向的链路同时使用，
每步每个方向只传半块，所以通信时间减半，ppermute 的条数变成 2(n-1)。
减半要求轴有回绕（wraparound）：在没有回绕的线上（如 v5e-8 长度 4 的轴），环的最后一对
（n-1 → 0 与 0 → n-1）要穿过中间的每条链路，两个方向都用上之后每条有向链路每步仍要搬一整块，没有 2 倍的好处。

第三种是 Case 3 后接 AllReduce（输出要复制）：``C[B_X, F] = A[B_X, D_Y] · W[D_Y, F]``。
分块版（`matmul_allreduce_chunked_block`）沿 B 把本地乘法切成 n 块，每块乘完就对它做 AllReduce；
第 i 块的 AllReduce 与第 i+1 块的乘法互不依赖，可以同时进行。朴素版先算完整个部分和，再 AllReduce 一次。
`step_schedule` 给出每一步算哪块、发哪块，书里的时间线图直接由它画出。

为什么在 CPU 上测不出重叠：模拟的 CPU 设备（emulated devices）共用同一台主机的内存与核心，
XLA CPU 把集合通信实现成内存拷贝（memcpy），没有独立的链路可以与计算并行，
ppermute 版本反而多出 n-1 次同步。CPU 上只能验证结果与 HLO 结构（通信原语是哪些、有几条）；
速度差要在真正的加速器上量：书中的 TPU v5e-8（网格 (2, 4)，B, D, F = 1024, 2048, 8192）
从 311 µs（jit，阻塞的 AllGather）降到 244 µs（collective matmul）；原书的数组由 jnp.arange 生成，是 int32 而不是 bf16。

所有全局函数都经过 ``jax.jit`` 编译，按（操作、网格、轴）缓存，可直接交给
`shardlab.collectives.hlo_collective_counts`。shard_map 与网格只从 `shardlab.runtime` 取得。
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from shardlab import runtime
from shardlab.collectives import axis_groups, shift_perm

__all__ = [
    "MATMUL_OPS",
    "allgather_matmul",
    "allgather_matmul_bidi_block",
    "allgather_matmul_block",
    "allgather_matmul_naive",
    "allgather_matmul_naive_block",
    "build",
    "held_block",
    "layout",
    "line_link_load",
    "matmul_reducescatter",
    "matmul_reducescatter_bidi_block",
    "matmul_reducescatter_block",
    "matmul_reducescatter_naive",
    "matmul_reducescatter_naive_block",
    "matmul_allreduce",
    "matmul_allreduce_chunked_block",
    "matmul_allreduce_naive_block",
    "step_schedule",
    "target_block",
]

# ---- 环上的下标：第 s 步设备 j 处理哪一块（逐设备函数与 step_schedule 共用） ----


def held_block(j, step: int, n: int, direction: int = +1):
    """AllGather-matmul：第 step 步设备 j 手里的 A 块下标（块沿 direction 方向传，+1 = 发给 j+1）"""
    return (j - direction * step) % n


def target_block(j, step: int, n: int, direction: int = +1):
    """matmul-ReduceScatter：第 step 步设备 j 上的累加器属于哪块输出（终点设备）"""
    return (j - direction * (step + 1)) % n


# ---- shard_map 内部的逐设备函数（block functions） ----
# 约定（网格 (2, 4)、axis='Y'、n = 4）：a_block: f32[B/2, D/4]，输出 c_block: f32[B/2, F/4]


def allgather_matmul_naive_block(a_block, w_block, *, axis: str, n: int):
    """朴素版：先阻塞地 AllGather 出 A 的整行块，再做本地 matmul"""
    # a_block: f32[B/2, D/4]，w_block: f32[D, F/4]
    a_rows = lax.all_gather(a_block, axis, axis=1, tiled=True)  # f32[B/2, D]
    return a_rows @ w_block  # f32[B/2, F/4]


def allgather_matmul_block(a_block, w_block, *, axis: str, n: int):
    """重叠版（单向环）：每步把手里的 A 块发给右邻居，同时用它乘 W 的对应行块"""
    # a_block: f32[B/2, D/4]，w_block: f32[D, F/4]
    j = lax.axis_index(axis)
    d = a_block.shape[1]  # D/4
    c_block = 0
    for step in range(n):
        k = held_block(j, step, n)  # 手里是 A 的第 k 个 D 块
        w_rows = lax.dynamic_slice_in_dim(w_block, k * d, d, axis=0)  # f32[D/4, F/4]
        part = a_block @ w_rows  # f32[B/2, F/4]
        if step < n - 1:  # 把这块发给右邻居，同时收左邻居的；与上面的 matmul 互不依赖
            a_block = lax.ppermute(a_block, axis, shift_perm(n, +1))
        c_block = c_block + part
    return c_block  # f32[B/2, F/4]


def allgather_matmul_bidi_block(a_block, w_block, *, axis: str, n: int):
    """重叠版（双向环）：A 块沿 D 切两半，左半顺时针、右半逆时针，每步两个方向各传半块"""
    # a_block: f32[B/2, D/4]，w_block: f32[D, F/4]；D/4 必须是偶数
    j = lax.axis_index(axis)
    d, h = a_block.shape[1], a_block.shape[1] // 2  # D/4, D/8
    lo, hi = a_block[:, :h], a_block[:, h:]  # 各 f32[B/2, D/8]
    c_block = 0
    for step in range(n):
        k_lo, k_hi = held_block(j, step, n, +1), held_block(j, step, n, -1)
        w_lo = lax.dynamic_slice_in_dim(w_block, k_lo * d, h, axis=0)  # f32[D/8, F/4]
        w_hi = lax.dynamic_slice_in_dim(w_block, k_hi * d + h, h, axis=0)  # f32[D/8, F/4]
        part = lo @ w_lo + hi @ w_hi  # f32[B/2, F/4]
        if step < n - 1:
            lo = lax.ppermute(lo, axis, shift_perm(n, +1))  # 顺时针 j → j+1
            hi = lax.ppermute(hi, axis, shift_perm(n, -1))  # 逆时针 j → j-1
        c_block = c_block + part
    return c_block  # f32[B/2, F/4]


def matmul_reducescatter_naive_block(a_block, w_block, *, axis: str, n: int):
    """朴素版：先算完本地部分和，再阻塞地沿 F 做 ReduceScatter"""
    # a_block: f32[B/2, D/4]，w_block: f32[D/4, F]
    partial = a_block @ w_block  # f32[B/2, F]{U_Y}：未规约的部分和
    return lax.psum_scatter(partial, axis, scatter_dimension=1, tiled=True)  # f32[B/2, F/4]


def matmul_reducescatter_block(a_block, w_block, *, axis: str, n: int):
    """重叠版（单向环）：累加器沿环传一圈，每步加上本设备对它那一块输出的贡献"""
    # a_block: f32[B/2, D/4]，w_block: f32[D/4, F]
    j = lax.axis_index(axis)
    f = w_block.shape[1] // n  # F/4
    acc = 0
    for step in range(n):
        t = target_block(j, step, n)  # 本步的累加器终点是设备 t
        w_cols = lax.dynamic_slice_in_dim(w_block, t * f, f, axis=1)  # f32[D/4, F/4]
        part = a_block @ w_cols  # f32[B/2, F/4]，与收累加器的 ppermute 互不依赖
        if step > 0:  # 收左邻居 j-1 在上一步结束时发出的累加器
            acc = lax.ppermute(acc, axis, shift_perm(n, +1))
        acc = acc + part
    return acc  # f32[B/2, F/4]：第 n-1 步 t = j，累加器已回到终点


def matmul_reducescatter_bidi_block(a_block, w_block, *, axis: str, n: int):
    """重叠版（双向环）：每块输出沿 F 切两半，左半的累加器顺时针、右半逆时针传"""
    # a_block: f32[B/2, D/4]，w_block: f32[D/4, F]；F/4 必须是偶数
    j = lax.axis_index(axis)
    f, h = w_block.shape[1] // n, w_block.shape[1] // (2 * n)  # F/4, F/8
    lo = hi = 0
    for step in range(n):
        t_lo, t_hi = target_block(j, step, n, +1), target_block(j, step, n, -1)
        part_lo = a_block @ lax.dynamic_slice_in_dim(w_block, t_lo * f, h, axis=1)  # f32[B/2, F/8]
        part_hi = a_block @ lax.dynamic_slice_in_dim(w_block, t_hi * f + h, h, axis=1)  # f32[B/2, F/8]
        if step > 0:
            lo = lax.ppermute(lo, axis, shift_perm(n, +1))  # 从 j-1 收
            hi = lax.ppermute(hi, axis, shift_perm(n, -1))  # 从 j+1 收
        lo, hi = lo + part_lo, hi + part_hi
    return jnp.concatenate([lo, hi], axis=1)  # f32[B/2, F/4]


def matmul_allreduce_naive_block(a_block, w_block, *, axis: str, n: int):
    """朴素版：先算完本地部分和，再阻塞地 AllReduce"""
    # a_block: f32[B/2, D/4]，w_block: f32[D/4, F]
    return lax.psum(a_block @ w_block, axis)  # f32[B/2, F]：在 axis 上复制


def matmul_allreduce_chunked_block(a_block, w_block, *, axis: str, n: int):
    """分块版：沿 B 切成 n 块，每块乘完就 AllReduce；第 i 块的规约与第 i+1 块的乘法互不依赖"""
    # a_block: f32[B/2, D/4]，w_block: f32[D/4, F]；B/2 必须能被 n 整除
    rows = a_block.shape[0] // n
    chunks = []
    for i in range(n):
        part = a_block[i * rows : (i + 1) * rows] @ w_block  # f32[B/2n, F]{U_axis}
        chunks.append(lax.psum(part, axis))  # 第 i 块的 AllReduce
    return jnp.concatenate(chunks, axis=0)  # f32[B/2, F]


MATMUL_OPS: dict[str, Callable] = {
    "allgather_matmul_naive": allgather_matmul_naive_block,
    "allgather_matmul": allgather_matmul_block,
    "allgather_matmul_bidi": allgather_matmul_bidi_block,
    "matmul_reducescatter_naive": matmul_reducescatter_naive_block,
    "matmul_reducescatter": matmul_reducescatter_block,
    "matmul_reducescatter_bidi": matmul_reducescatter_bidi_block,
    "matmul_allreduce_naive": matmul_allreduce_naive_block,
    "matmul_allreduce_chunked": matmul_allreduce_chunked_block,
}


# ---- 布局与编译 ----


def layout(op: str, mesh, axis: str = "Y") -> tuple[P, P, P]:
    """(A, W, C) 的 PartitionSpec；A 与 C 的行按 axis 以外的网格轴切分

    例：网格 (2, 4)、axis='Y' 时 AllGather 版为 (P('X', 'Y'), P(None, 'Y'), P('X', 'Y'))，
    ReduceScatter 版为 (P('X', 'Y'), P('Y', None), P('X', 'Y'))，AllReduce 版为 (P('X', 'Y'), P('Y', None), P('X', None))。
    """
    if op not in MATMUL_OPS:
        raise ValueError(f"未知的集合矩阵乘法 {op!r}：可选 {', '.join(MATMUL_OPS)}")
    axis_groups(mesh, axis)  # 检查轴名
    rows = tuple(name for name in mesh.axis_names if name != axis)
    rows = rows[0] if len(rows) == 1 else (rows or None)
    w_spec = P(None, axis) if op.startswith("allgather") else P(axis, None)
    c_spec = P(rows, None) if op.startswith("matmul_allreduce") else P(rows, axis)
    return P(rows, axis), w_spec, c_spec


def build(op: str, mesh, axis: str = "Y"):
    """编译好的全局函数 ``(a, w) -> c``：jit(shard_map(逐设备函数))，布局见 `layout`

    op 是 `MATMUL_OPS` 的键；结果按 (op, mesh, axis) 缓存，可直接交给 `hlo_collective_counts`。
    """
    layout(op, mesh, axis)  # 检查 op 与轴名
    return _build(op, mesh, axis)


@functools.lru_cache(maxsize=128)
def _build(op: str, mesh, axis: str):
    a_spec, w_spec, c_spec = layout(op, mesh, axis)
    block_fn = functools.partial(MATMUL_OPS[op], axis=axis, n=mesh.shape[axis])
    return runtime.jit_shard_map(block_fn, mesh, (a_spec, w_spec), c_spec)


def _run(op: str, a, w, mesh, axis: str):
    a_spec, w_spec, _ = layout(op, mesh, axis)
    n = mesh.shape[axis]
    if op.endswith("bidi"):
        size, name = (a.shape[1], "D") if op.startswith("allgather") else (w.shape[1], "F")
        if size % (2 * n):
            raise ValueError(f"双向环把每块切成两半：{name} = {size} 必须能被 2n = {2 * n} 整除")
    return build(op, mesh, axis)(runtime.put(a, mesh, a_spec), runtime.put(w, mesh, w_spec))


def allgather_matmul_naive(a, w, mesh, axis: str = "Y"):
    """朴素 AllGather-matmul：A[B, D] · W[D, F]，先 AllGather A 再 matmul；结果按 `layout` 切分"""
    return _run("allgather_matmul_naive", a, w, mesh, axis)


def allgather_matmul(a, w, mesh, axis: str = "Y", *, bidirectional: bool = False):
    """重叠的 AllGather-matmul（ppermute 环）；双向环要求 D/n 为偶数"""
    return _run("allgather_matmul_bidi" if bidirectional else "allgather_matmul", a, w, mesh, axis)


def matmul_reducescatter_naive(a, w, mesh, axis: str = "Y"):
    """朴素 matmul-ReduceScatter：本地 matmul 得部分和，再沿 F 做 ReduceScatter"""
    return _run("matmul_reducescatter_naive", a, w, mesh, axis)


def matmul_reducescatter(a, w, mesh, axis: str = "Y", *, bidirectional: bool = False):
    """重叠的 matmul-ReduceScatter（累加器沿 ppermute 环传递）；双向环要求 F/n 为偶数"""
    return _run("matmul_reducescatter_bidi" if bidirectional else "matmul_reducescatter", a, w, mesh, axis)


def matmul_allreduce(a, w, mesh, axis: str = "Y", *, chunked: bool = True):
    """Case 3 + AllReduce：A[B, D] · W[D, F]，两边的 D 沿 axis 切分，输出在 axis 上复制；chunked 时分块重叠"""
    op = "matmul_allreduce_chunked" if chunked else "matmul_allreduce_naive"
    if chunked:
        rows = a.shape[0] // math.prod(mesh.shape[name] for name in mesh.axis_names if name != axis)
        if rows % mesh.shape[axis]:
            raise ValueError(f"分块版沿 B 切成 n = {mesh.shape[axis]} 块：每个设备的 {rows} 行必须能被 n 整除")
    return _run(op, a, w, mesh, axis)


def line_link_load(n: int, bidirectional: bool = True) -> int:
    """环形调度的一步放到没有回绕的线上时，最忙的有向链路要承载几条消息

    每步设备 j 把一条消息发给 j+1（双向时另一条发给 j-1），下标对 n 取模；在线上，
    n-1 → 0（与 0 → n-1）没有直连，要沿线穿过中间的每条链路。双向时每条消息是半块：
    n ≥ 3 时返回 2，即每条有向链路每步仍要搬一整块，没有回绕就没有双向的 2 倍。
    """
    if n < 2:
        raise ValueError(f"n = {n}：环至少要 2 个设备")
    load: dict[tuple[int, int], int] = {}
    for shift in (+1, -1) if bidirectional else (+1,):
        for src in range(n):
            dst = (src + shift) % n
            step = 1 if dst > src else -1
            for at in range(src, dst, step):
                load[(at, step)] = load.get((at, step), 0) + 1
    return max(load.values())


# ---- 时间线：每一步算哪块、发哪块 ----


def step_schedule(n: int, bidirectional: bool = False, kind: str = "allgather", device: int = 0) -> list[dict]:
    """设备 device 在每一步的工作，供书里画时间线图；与逐设备函数用同一套下标公式

    返回 n 个字典 ``{'step': s, 'compute': [...], 'send': [...]}``：

    - kind='allgather'：compute 里的 ``(k, part)`` 表示本步用 A 的第 k 个 D 块（的 part 部分）做 matmul；
      send 里的 ``(k, part, dst)`` 表示本步把这块发给环上的设备 dst（与计算同时进行）；
    - kind='reducescatter'：compute 里的 ``(t, part)`` 表示本步算出对第 t 块输出的贡献并加进累加器；
      send 里的 ``(t, part, dst)`` 表示本步结束时把终点为 t 的累加器发给 dst。

    part 是 'all'（单向环，整块）、'lo'（顺时针传的一半）或 'hi'（逆时针传的一半）。
    """
    if n < 1:
        raise ValueError(f"环的设备数必须是正整数，收到 {n}")
    if kind not in ("allgather", "reducescatter"):
        raise ValueError(f"kind 必须是 'allgather' 或 'reducescatter'，收到 {kind!r}")
    index = held_block if kind == "allgather" else target_block
    parts = (("lo", +1), ("hi", -1)) if bidirectional else (("all", +1),)
    schedule = []
    for step in range(n):
        compute = [(int(index(device, step, n, d)), part) for part, d in parts]
        send = [(k, part, (device + d) % n) for (k, part), (_, d) in zip(compute, parts)] if step < n - 1 else []
        schedule.append({"step": step, "compute": compute, "send": send})
    return schedule
