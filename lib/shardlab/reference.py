"""集合通信的 NumPy 参考语义（reference semantics）：输入、输出都是“每个设备一块”的列表

``blocks[i]`` 是设备 i 上的数据块（block），返回值的第 i 项是集合通信之后设备 i 上的数据。
这里只描述“结果是什么”，不描述“数据怎样走”（那是 `shardlab.ring` 的事），也不导入 JAX；
`shardlab.collectives` 的 shard_map 版本和 `shardlab.ring` 的模拟器都用本模块核对结果。

约定：

- 所有块必须形状（shape）和数据类型（dtype）相同，否则 ValueError；
- 返回的数组都是新拷贝（copy），修改它们不影响输入；
- 规约（reduction）一律按设备 0, 1, …, n-1 的顺序相加，用整数值的浮点数检验时结果精确。
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "broadcast",
    "reduce",
    "scatter",
    "gather",
    "all_gather",
    "reduce_scatter",
    "all_reduce",
    "all_to_all",
    "ppermute",
]


# ---- 输入检查 ----


def _check_blocks(blocks: Sequence) -> list[np.ndarray]:
    """把输入转成数组列表，并检查非空、形状与 dtype 一致"""
    if blocks is None or len(blocks) == 0:
        raise ValueError("blocks 不能为空：至少要有一个设备的数据块（block）")
    arrays = [np.asarray(b) for b in blocks]
    first = arrays[0]
    for i, a in enumerate(arrays[1:], start=1):
        if a.shape != first.shape:
            raise ValueError(f"各设备的数据块形状（shape）必须相同：设备 0 为 {first.shape}，设备 {i} 为 {a.shape}")
        if a.dtype != first.dtype:
            raise ValueError(f"各设备的数据块类型（dtype）必须相同：设备 0 为 {first.dtype}，设备 {i} 为 {a.dtype}")
    return arrays


def _check_root(root: int, n: int) -> int:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < n:
        raise ValueError(f"root 必须是 0 到 {n - 1} 之间的设备编号，收到 {root!r}")
    return int(root)


def _check_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """把可能为负的轴号规范化；越界时给出中文说明"""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"{what}={axis!r} 超出范围：数据块只有 {ndim} 个维度（ndim）")
    return int(axis) % ndim


def _split(x: np.ndarray, n: int, axis: int, what: str) -> list[np.ndarray]:
    """沿 axis 等分成 n 块（每块是拷贝）；不能整除时报错"""
    axis = _check_axis(axis, x.ndim, "axis" if what == "axis" else what)
    if x.shape[axis] % n != 0:
        raise ValueError(f"维度 {axis} 的长度 {x.shape[axis]} 不能被设备数 {n} 整除，无法等分（{what}）")
    return [p.copy() for p in np.split(x, n, axis=axis)]


def _sum(arrays: list[np.ndarray]) -> np.ndarray:
    """按设备顺序逐个相加，保持 dtype"""
    total = arrays[0].copy()
    for a in arrays[1:]:
        total = np.add(total, a, dtype=total.dtype)
    return total


# ---- 一对多、多对一 ----


def broadcast(blocks: Sequence, root: int = 0) -> list[np.ndarray]:
    """广播（Broadcast）：每个设备都得到 blocks[root] 的拷贝"""
    arrays = _check_blocks(blocks)
    root = _check_root(root, len(arrays))
    return [arrays[root].copy() for _ in arrays]


def reduce(blocks: Sequence, root: int = 0, op: Callable = np.add) -> list[np.ndarray]:
    """规约（Reduce）：root 得到 op 按设备顺序归并所有块的结果

    非 root 设备保留自己原来的块（拷贝）。MPI 规定非 root 的输出未定义（undefined），
    这里选择“保持不变”，好让结果可以逐设备比较。op 是二元函数，如 np.add、np.maximum。
    """
    arrays = _check_blocks(blocks)
    root = _check_root(root, len(arrays))
    total = arrays[0].copy()
    for a in arrays[1:]:
        total = np.asarray(op(total, a))
    return [total if i == root else a.copy() for i, a in enumerate(arrays)]


def scatter(x, n: int, axis: int = 0) -> list[np.ndarray]:
    """散射（Scatter）：把 root 上的数组 x 沿 axis 等分成 n 块，第 i 块给设备 i"""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"设备数 n 必须是正整数，收到 {n!r}")
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("scatter 需要至少一维的数组，收到标量（0 维）")
    return _split(x, int(n), axis, "scatter")


def gather(blocks: Sequence, root: int = 0, axis: int = 0) -> np.ndarray:
    """收集（Gather）：root 得到各块沿 axis 按设备顺序拼接（concatenate）的数组

    只返回 root 上的那一个数组；root 只做合法性检查，不影响结果。
    """
    arrays = _check_blocks(blocks)
    _check_root(root, len(arrays))
    axis = _check_axis(axis, arrays[0].ndim)
    return np.concatenate(arrays, axis=axis)


# ---- 多对多 ----


def all_gather(blocks: Sequence, axis: int = 0, tiled: bool = True) -> list[np.ndarray]:
    """全收集（AllGather）：每个设备都得到所有块

    tiled=True：沿 axis 拼接，形状的第 axis 维变成 n 倍（同 ``jax.lax.all_gather(..., tiled=True)``）；
    tiled=False：在第 axis 维插入一个长度为 n 的新维度后堆叠（stack）。
    """
    arrays = _check_blocks(blocks)
    if tiled:
        axis = _check_axis(axis, arrays[0].ndim)
        full = np.concatenate(arrays, axis=axis)
    else:
        axis = _check_axis(axis, arrays[0].ndim + 1)
        full = np.stack(arrays, axis=axis)
    return [full.copy() for _ in arrays]


def all_reduce(blocks: Sequence) -> list[np.ndarray]:
    """全规约（AllReduce）：每个设备都得到所有块之和"""
    arrays = _check_blocks(blocks)
    total = _sum(arrays)
    return [total.copy() for _ in arrays]


def reduce_scatter(blocks: Sequence, axis: int = 0) -> list[np.ndarray]:
    """规约散射（ReduceScatter）：所有块求和，再沿 axis 等分成 n 份，设备 i 得到第 i 份

    同 ``jax.lax.psum_scatter(..., scatter_dimension=axis, tiled=True)``。
    """
    arrays = _check_blocks(blocks)
    if arrays[0].ndim == 0:
        raise ValueError("reduce_scatter 需要至少一维的数据块，收到标量（0 维）")
    return _split(_sum(arrays), len(arrays), axis, "reduce_scatter")


def all_to_all(blocks: Sequence, split_axis: int, concat_axis: int) -> list[np.ndarray]:
    """全交换（AllToAll）：设备 i 把自己的块沿 split_axis 等分成 n 份，第 j 份发给设备 j；
    设备 j 把来自设备 0..n-1 的份沿 concat_axis 按来源顺序拼接

    同 ``jax.lax.all_to_all(x, axis_name, split_axis, concat_axis, tiled=True)``。
    """
    arrays = _check_blocks(blocks)
    n = len(arrays)
    if arrays[0].ndim == 0:
        raise ValueError("all_to_all 需要至少一维的数据块，收到标量（0 维）")
    concat_axis = _check_axis(concat_axis, arrays[0].ndim, "concat_axis")
    pieces = [_split(a, n, split_axis, "all_to_all 的 split_axis") for a in arrays]
    return [np.concatenate([pieces[i][j] for i in range(n)], axis=concat_axis) for j in range(n)]


def ppermute(blocks: Sequence, perm: Sequence[tuple[int, int]]) -> list[np.ndarray]:
    """点对点置换（ppermute / collective permute）：perm 中每对 (src, dst) 把 src 的块发给 dst

    没有收到任何块的设备得到全零（同 ``jax.lax.ppermute``）。同一个 src 或同一个 dst 只能出现一次。
    """
    arrays = _check_blocks(blocks)
    n = len(arrays)
    out = [np.zeros_like(a) for a in arrays]
    seen_src: set[int] = set()
    seen_dst: set[int] = set()
    for pair in perm:
        try:
            src, dst = pair
        except (TypeError, ValueError):
            raise ValueError(f"perm 的每一项必须是 (src, dst) 二元组，收到 {pair!r}") from None
        for name, v in (("src", src), ("dst", dst)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < n:
                raise ValueError(f"perm 中的 {name}={v!r} 不是 0 到 {n - 1} 之间的设备编号")
        if src in seen_src:
            raise ValueError(f"perm 中 src={src} 出现了两次：一个设备在一次 ppermute 中只能发送一次")
        if dst in seen_dst:
            raise ValueError(f"perm 中 dst={dst} 出现了两次：一个设备在一次 ppermute 中只能接收一次")
        seen_src.add(int(src))
        seen_dst.add(int(dst))
        out[dst] = arrays[src].copy()
    return out
