"""集合通信的 JAX 版本：XLA 原语、用 ppermute 手写的环形算法，以及 HLO 检查

两类实现，结果都与 `shardlab.reference`（NumPy 语义）逐设备比较：

- XLA 原语：``lax.all_gather``、``lax.psum_scatter``、``lax.psum``、``lax.all_to_all``、``lax.ppermute``；
- 手写的环（ring）：只用 ``lax.ppermute`` 把数据块传给邻居，
  拼出 AllGather、ReduceScatter 与 AllReduce（单向环与双向环）。

形状约定（全模块一致）：

- 全局输入 ``x`` 的第 0 维按网格的全部轴切分（``block_spec(mesh)`` = ``P(('X', 'Y', ...))``），
  网格位置（``mesh.devices`` 按行优先展平）为 k 的设备持有第 k 块 ``x_block = x[k*b:(k+1)*b]``；
- 集合通信只沿 ``axis`` 这一个网格轴进行：其他轴坐标相同的 n 个设备组成一组（``axis_groups``），
  组内第 j 个设备就是该轴上的下标 ``lax.axis_index(axis) == j``；
- 对 psum / psum_scatter，``x_block`` 就是该设备尚未规约（unreduced）的本地缓冲区，
  所以全局 ``x`` 是各设备缓冲区沿第 0 维的堆叠，每台设备的缓冲区都不同；
- 输出同样按 ``block_spec(mesh)`` 拼接：``per_device(y)`` 取回每台设备自己的输出块，
  与 ``reference`` 在每一组上的结果逐一比较。

所有函数都经过 ``jax.jit`` 编译；编译结果按（操作、网格、轴、参数）缓存，不同网格互不影响。
`hlo_collectives` 列出 XLA 在编译后的 HLO 里插入的集合通信。
JAX 的 shard_map 与网格只从 `shardlab.runtime` 取得（版本差异的唯一适配层）。
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from shardlab import names, runtime

__all__ = [
    "COLLECTIVE_OPS",
    "HLO_COLLECTIVES",
    "all_gather",
    "all_gather_block",
    "all_reduce",
    "all_reduce_block",
    "all_to_all",
    "all_to_all_block",
    "axis_groups",
    "block_spec",
    "build",
    "compiled_hlo_text",
    "find_collectives",
    "hlo_collective_counts",
    "hlo_collectives",
    "hlo_collectives_by_axis",
    "hlo_permute_pairs",
    "per_device",
    "group_blocks",
    "ppermute",
    "ppermute_block",
    "ppermute_shift",
    "reduce_scatter",
    "reduce_scatter_block",
    "ring_all_gather",
    "ring_all_gather_block",
    "ring_all_reduce",
    "ring_all_reduce_block",
    "ring_hops",
    "ring_reduce_scatter",
    "ring_reduce_scatter_block",
    "shard_blocks",
    "shift_perm",
]

# ---- 分片约定与逐设备取回 ----


def block_spec(mesh) -> P:
    """输入与输出的分片：第 0 维按网格全部轴切分，设备 k 持有第 k 块"""
    return P(tuple(mesh.axis_names))


def shard_blocks(x, mesh):
    """把全局数组 x 按 `block_spec(mesh)` 放到网格上（第 0 维必须能被设备数整除）"""
    if x.shape[0] % mesh.size:
        raise ValueError(f"x 的第 0 维 {x.shape[0]} 不能被网格设备数 {mesh.size} 整除：每台设备必须分到同样大小的块")
    return runtime.put(x, mesh, block_spec(mesh))


def per_device(arr, mesh=None) -> list[np.ndarray]:
    """每台设备上的块（NumPy 数组），按网格位置排序（``mesh.devices`` 行优先展平）

    arr 是分片的 jax 数组时读 ``addressable_shards``，mesh 省略时取 ``arr.sharding.mesh``；
    arr 是 NumPy 数组时按 `block_spec` 的约定沿第 0 维切成 mesh.size 块（此时必须给出 mesh）。
    """
    if not hasattr(arr, "addressable_shards"):
        if mesh is None:
            raise ValueError("NumPy 数组没有分片信息：请同时给出 mesh")
        return np.split(np.asarray(arr), mesh.size)
    mesh = mesh if mesh is not None else arr.sharding.mesh
    by_device = {shard.device: np.asarray(shard.data) for shard in arr.addressable_shards}
    return [by_device[d] for d in mesh.devices.flat]


def group_blocks(arr, mesh, axis: str) -> list[list[np.ndarray]]:
    """按 `axis_groups` 分组的逐设备块：每组正好是 `shardlab.reference` 的一个输入 / 输出列表

    用法：``for got, blocks in zip(group_blocks(y, mesh, 'Y'), group_blocks(x, mesh, 'Y')):``
    再比较 ``got`` 与 ``reference.all_gather(blocks)``。
    """
    blocks = per_device(arr, mesh)
    return [[blocks[k] for k in group] for group in axis_groups(mesh, axis)]


def axis_groups(mesh, axis: str) -> list[list[int]]:
    """沿 axis 通信的设备组：每组是 n 个网格位置，按该轴下标排序

    例：网格 (2, 4)、轴 ('X', 'Y') 时，沿 'Y' 的组是 [[0, 1, 2, 3], [4, 5, 6, 7]]，
    沿 'X' 的组是 [[0, 4], [1, 5], [2, 6], [3, 7]]。
    """
    names = tuple(mesh.axis_names)
    if axis not in names:
        raise ValueError(f"网格没有轴 {axis!r}：网格的轴是 {names}")
    position = np.arange(mesh.size).reshape(mesh.devices.shape)
    position = np.moveaxis(position, names.index(axis), -1)
    return position.reshape(-1, mesh.shape[axis]).tolist()


# ---- 环的拓扑 ----


def shift_perm(n: int, shift: int = 1) -> list[tuple[int, int]]:
    """ppermute 的 (源, 目的) 列表：每台设备 i 发给 (i + shift) mod n"""
    return [(i, (i + shift) % n) for i in range(n)]


def ring_hops(n: int, bidirectional: bool = False) -> tuple[int, int]:
    """环上每个方向走几跳（顺时针 i → i+1，逆时针 i → i-1）

    单向环：顺时针 n-1 跳，逆时针 0 跳；
    双向环：两个方向分担 n-1 个块，顺时针 ceil((n-1)/2) = floor(n/2) 跳，逆时针 floor((n-1)/2) 跳。
    两个方向同时进行，所以步数（依赖链长度）是两者中较大的 floor(n/2)，
    而 ppermute 的总次数在两种环上都是 n-1（每个块仍只搬一次）。
    """
    if n < 1:
        raise ValueError(f"环的设备数必须是正整数，收到 {n}")
    if not bidirectional:
        return n - 1, 0
    return n // 2, (n - 1) // 2


# ---- shard_map 内部的逐设备函数（block functions） ----
# 约定：x_block 是本设备的块，形状记作 f32[b, ...]；n 是 axis 轴的设备数


def all_gather_block(x_block, *, axis: str, n: int, tiled: bool = True, dim: int = 0):
    """XLA 的 AllGather：每台设备得到组内全部块"""
    # x_block: f32[b, m]
    # tiled=True, dim=0 -> f32[n*b, m]；tiled=False -> f32[n, b, m]
    return lax.all_gather(x_block, axis, axis=dim, tiled=tiled)


def reduce_scatter_block(x_block, *, axis: str, n: int, dim: int = 0):
    """XLA 的 ReduceScatter（psum_scatter）：块沿 dim 切成 n 份，设备 j 得到第 j 份的组内总和"""
    # x_block: f32[b, m]（本设备未规约的缓冲区）
    # dim=0 -> f32[b/n, m]
    return lax.psum_scatter(x_block, axis, scatter_dimension=dim, tiled=True)


def all_reduce_block(x_block, *, axis: str, n: int):
    """XLA 的 AllReduce（psum）：每台设备得到组内全部缓冲区之和"""
    # x_block: f32[b, m] -> f32[b, m]
    return lax.psum(x_block, axis)


def all_to_all_block(x_block, *, axis: str, n: int, split_axis: int = 0, concat_axis: int = 0):
    """XLA 的 AllToAll：块沿 split_axis 切成 n 份，第 j 份发给设备 j，收到的 n 份按来源顺序沿 concat_axis 拼接"""
    # x_block: f32[b, m]，split_axis=0, concat_axis=1 -> f32[b/n, n*m]
    return lax.all_to_all(x_block, axis, split_axis, concat_axis, tiled=True)


def ppermute_block(x_block, *, axis: str, n: int, perm: Sequence[tuple[int, int]]):
    """点对点置换：按 perm 的 (源, 目的) 发送；没有收到数据的设备得到全零"""
    # x_block: f32[b, m] -> f32[b, m]
    return lax.ppermute(x_block, axis, perm)


def ring_all_gather_block(x_block, *, axis: str, n: int, bidirectional: bool = False):
    """用 ppermute 手写的环形 AllGather，结果等于 ``all_gather_block(..., tiled=True, dim=0)``

    单向环：n-1 步，每步把上一步收到的块转发给右邻居 i+1；
    双向环：顺时针与逆时针同时转发，各负责一半的块，floor(n/2) 步。
    """
    # x_block: f32[b, m]
    i = lax.axis_index(axis)
    # out: f32[n, b, m]，第 k 行放来自设备 k 的块
    out = jnp.zeros((n, *x_block.shape), x_block.dtype).at[i].set(x_block)
    clockwise, counter = ring_hops(n, bidirectional)
    # direction=+1 是顺时针（发给 i+1），-1 是逆时针（发给 i-1）
    for direction, hops in ((+1, clockwise), (-1, counter)):
        chunk = x_block
        for step in range(1, hops + 1):
            # chunk: f32[b, m]，收到的是设备 i - direction*step 的块
            chunk = lax.ppermute(chunk, axis, shift_perm(n, direction))
            out = out.at[(i - direction * step) % n].set(chunk)
    # 两个方向的 ppermute 互不依赖，XLA 可以让它们同时进行
    return out.reshape(n * x_block.shape[0], *x_block.shape[1:])  # f32[n*b, m]


def ring_reduce_scatter_block(x_block, *, axis: str, n: int, bidirectional: bool = False):
    """用 ppermute 手写的环形 ReduceScatter，结果等于 ``reduce_scatter_block(..., dim=0)``

    累加器（accumulator）沿环走一圈，每到一台设备加上该设备的那一份；
    终点为设备 k 的累加器从 k - hops 出发，只装第 k 份。
    双向环把每份的 n-1 个来源分给两个方向的累加器，最后在终点相加。
    """
    # x_block: f32[b, m]，b 必须能被 n 整除
    i = lax.axis_index(axis)
    chunks = x_block.reshape(n, x_block.shape[0] // n, *x_block.shape[1:])  # f32[n, b/n, m]
    out = chunks[i]  # f32[b/n, m]，本设备对第 i 份的贡献
    clockwise, counter = ring_hops(n, bidirectional)
    for direction, hops in ((+1, clockwise), (-1, counter)):
        if hops == 0:
            continue
        # 出发时装的是终点为 i + direction*hops 的那一份
        acc = chunks[(i + direction * hops) % n]  # f32[b/n, m]
        for step in range(1, hops + 1):
            acc = lax.ppermute(acc, axis, shift_perm(n, direction))
            if step < hops:
                # 收到的累加器终点是 i + direction*(hops-step)，加上本设备的这一份
                acc = acc + chunks[(i + direction * (hops - step)) % n]
        # 最后一跳到达终点 i，不再加（本设备的一份已经在 out 里）
        out = out + acc
    return out  # f32[b/n, m]


def ring_all_reduce_block(x_block, *, axis: str, n: int, bidirectional: bool = False):
    """环形 AllReduce = 环形 ReduceScatter + 环形 AllGather"""
    # x_block: f32[b, m] -> 规约散射 f32[b/n, m] -> 全收集 f32[b, m]
    part = ring_reduce_scatter_block(x_block, axis=axis, n=n, bidirectional=bidirectional)
    return ring_all_gather_block(part, axis=axis, n=n, bidirectional=bidirectional)


COLLECTIVE_OPS: dict[str, Callable] = {
    "all_gather": all_gather_block,
    "reduce_scatter": reduce_scatter_block,
    "all_reduce": all_reduce_block,
    "all_to_all": all_to_all_block,
    "ppermute": ppermute_block,
    "ring_all_gather": ring_all_gather_block,
    "ring_reduce_scatter": ring_reduce_scatter_block,
    "ring_all_reduce": ring_all_reduce_block,
}


# ---- 包成 jit(shard_map(...))：作用在全局数组上 ----


def build(op: str, mesh, axis: str = "X", **params):
    """编译好的全局函数 ``x -> y``：jit(shard_map(逐设备函数))，输入输出都按 `block_spec(mesh)` 切分

    op 是 `COLLECTIVE_OPS` 的键；params 传给逐设备函数（如 ``bidirectional=True``）。
    结果按 (op, mesh, axis, params) 缓存，可直接交给 `hlo_collectives`。
    """
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"未知的集合通信 {op!r}：可选 {', '.join(COLLECTIVE_OPS)}")
    axis_groups(mesh, axis)  # 检查轴名
    if "perm" in params:
        params["perm"] = tuple((int(src), int(dst)) for src, dst in params["perm"])
    return _build(op, mesh, axis, tuple(sorted(params.items())))


@functools.lru_cache(maxsize=256)
def _build(op: str, mesh, axis: str, params: tuple):
    block_fn = functools.partial(COLLECTIVE_OPS[op], axis=axis, n=mesh.shape[axis], **dict(params))
    spec = block_spec(mesh)
    # 输出也用分片的 out_specs：每台设备的结果各占一块。
    # 这也绕开了 check_vma 的限制：tiled all_gather 的结果被标为 varying，out_specs=P() 会被拒绝
    return runtime.jit_shard_map(block_fn, mesh, spec, spec)


def _run(op: str, x, mesh, axis: str, **params):
    return build(op, mesh, axis, **params)(shard_blocks(x, mesh))


def all_gather(x, mesh, axis: str = "X", *, tiled: bool = True, dim: int = 0):
    """XLA AllGather；x: f32[D*b, m]（D = 设备数）-> 每台设备 f32[n*b, m]（tiled=False 时 f32[n, b, m]）"""
    return _run("all_gather", x, mesh, axis, tiled=tiled, dim=dim)


def reduce_scatter(x, mesh, axis: str = "X", *, dim: int = 0):
    """XLA ReduceScatter（psum_scatter）；每台设备的缓冲区 f32[b, m] -> f32[b/n, m]"""
    return _run("reduce_scatter", x, mesh, axis, dim=dim)


def all_reduce(x, mesh, axis: str = "X"):
    """XLA AllReduce（psum）；每台设备的缓冲区 f32[b, m] -> 组内之和 f32[b, m]"""
    return _run("all_reduce", x, mesh, axis)


def all_to_all(x, mesh, axis: str = "X", *, split_axis: int = 0, concat_axis: int = 0):
    """XLA AllToAll；每台设备的块沿 split_axis 切 n 份互换，收到的沿 concat_axis 拼接"""
    return _run("all_to_all", x, mesh, axis, split_axis=split_axis, concat_axis=concat_axis)


def ppermute(x, mesh, axis: str, perm: Sequence[tuple[int, int]]):
    """XLA CollectivePermute；perm 是组内下标的 (源, 目的) 列表，没收到数据的设备得到全零"""
    return _run("ppermute", x, mesh, axis, perm=perm)


def ppermute_shift(x, mesh, axis: str = "X", shift: int = 1):
    """环上整体移位：设备 i 的块发给 (i + shift) mod n"""
    return ppermute(x, mesh, axis, shift_perm(mesh.shape[axis], shift))


def ring_all_gather(x, mesh, axis: str = "X", *, bidirectional: bool = False):
    """手写环形 AllGather；每台设备 f32[b, m] -> f32[n*b, m]"""
    return _run("ring_all_gather", x, mesh, axis, bidirectional=bidirectional)


def ring_reduce_scatter(x, mesh, axis: str = "X", *, bidirectional: bool = False):
    """手写环形 ReduceScatter；每台设备 f32[b, m] -> f32[b/n, m]"""
    return _run("ring_reduce_scatter", x, mesh, axis, bidirectional=bidirectional)


def ring_all_reduce(x, mesh, axis: str = "X", *, bidirectional: bool = False):
    """手写环形 AllReduce（ReduceScatter + AllGather）；每台设备 f32[b, m] -> f32[b, m]"""
    return _run("ring_all_reduce", x, mesh, axis, bidirectional=bidirectional)


# ---- 编译后的 HLO 里有哪些集合通信 ----

HLO_COLLECTIVES = names.HLO_COLLECTIVES
# 匹配指令名后紧跟 "(" 的写法；GPU/TPU 上的异步形式是 "all-gather-start("，归一为 "all-gather"
_HLO_OP = re.compile(r"\b(" + "|".join(HLO_COLLECTIVES) + r")(?:-start)?\(")


def compiled_hlo_text(fn, *args) -> str:
    """XLA 编译（SPMD 切分）之后的 HLO 文本；fn 不是 jit 函数时先 jax.jit"""
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    return jitted.lower(*args).compile().as_text()


def find_collectives(hlo_text: str) -> list[str]:
    """在一段 HLO 文本里找集合通信指令，按出现顺序；``-start`` 异步形式归一，``-done`` 不计"""
    return _HLO_OP.findall(hlo_text)


def hlo_collectives(fn, *args) -> list[str]:
    """编译后的 HLO 里 XLA 插入的集合通信，按出现顺序，例如 ``['all-gather']``"""
    return find_collectives(compiled_hlo_text(fn, *args))


def hlo_collective_counts(fn, *args) -> Counter:
    """同 `hlo_collectives`，但按种类计数，例如 ``Counter({'collective-permute': 7})``"""
    return Counter(hlo_collectives(fn, *args))


_PERMUTE_PAIRS = re.compile(r"\bcollective-permute(?:-start)?\(.*?source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")


def hlo_permute_pairs(fn, *args) -> list[tuple[tuple[int, int], ...]]:
    """每条 collective-permute 的 (源, 目的) 设备对，按出现顺序

    HLO 里的编号是全局设备编号（网格位置），不是轴内下标：
    网格 (2, 4) 上沿 'Y' 的单向环，一条 collective-permute 同时包含两组各自的环
    ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), ...)。
    """
    pairs = []
    for match in _PERMUTE_PAIRS.finditer(compiled_hlo_text(fn, *args)):
        pairs.append(tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", match.group(1))))
    return pairs


# ---- replica_groups：一条集合通信沿哪个网格轴 ----

_REPLICA_GROUPS = re.compile(r"replica_groups=(\{\{[\d,{}]*\}\}|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?)")


def parse_replica_groups(text: str) -> list[list[int]]:
    """HLO 的 replica_groups 两种写法：显式 ``{{0,1},{2,3}}`` 与 iota 写法 ``[2,4]<=[8]`` / ``[4,2]<=[2,4]T(1,0)``"""
    if text.startswith("{{"):
        return [[int(v) for v in group.split(",") if v] for group in re.findall(r"\{([\d,]*)\}", text[1:-1])]
    dims, rest = text[1:].split("]<=[", 1)
    shape = [int(v) for v in dims.split(",")]
    reshape, _, perm = rest.partition("]")
    ids = np.arange(int(np.prod([int(v) for v in reshape.split(",")]))).reshape([int(v) for v in reshape.split(",")])
    if perm:
        ids = ids.transpose([int(v) for v in perm[2:-1].split(",")])
    return ids.reshape(shape).tolist()


def axis_of_groups(groups: list[list[int]], mesh) -> str:
    """一条集合通信的 replica_groups 对应哪个网格轴（或几个轴）"""
    wanted = sorted(sorted(g) for g in groups)
    for name in mesh.axis_names:
        if sorted(sorted(g) for g in axis_groups(mesh, name)) == wanted:
            return name
    return "+".join(mesh.axis_names) if wanted == [list(range(mesh.size))] else "?"


def hlo_collectives_by_axis(fn, *args, mesh) -> Counter:
    """编译后 HLO 里的集合通信，按 (种类, 网格轴) 计数，例如 ``Counter({('all-reduce', 'Y'): 1})``

    CPU 上的设备编号就是网格位置（`runtime.make_mesh` 按行优先取设备），据此把 replica_groups 映射回网格轴。
    """
    counts: Counter = Counter()
    for line in compiled_hlo_text(fn, *args).splitlines():
        ops = find_collectives(line)
        if not ops:
            continue
        match = _REPLICA_GROUPS.search(line)
        where = axis_of_groups(parse_replica_groups(match.group(1)), mesh) if match else "?"
        counts[(ops[0], where)] += 1
    return counts
