"""Megatron 式张量并行（tensor parallelism, TP）的 MLP：列并行 + 行并行，以及序列并行（sequence parallelism, SP）

模型是两层 MLP ``y = gelu(x · W1) · W2``，x: f32[T, D]（T = 词元数 tokens，即 B·S），
W1: f32[D, F]，W2: f32[F, D]。TP 沿网格轴 axis（n 台设备）进行：

- W1 按列切分 ``P(None, axis)``：列并行（column parallel），即 Case 1（收缩维 D 不切分），
  每台设备算出 ``h[T, F_axis]``，gelu 逐元素，在本地做，无通信；
- W2 按行切分 ``P(axis, None)``：行并行（row parallel），即 Case 3（收缩维 F 被切分），
  每台设备得到未规约的部分和 ``y[T, D]{U_axis}``，需要规约。

两个变体（variant）：

- ``'tp'``（`mlp_tp`）：x 在 TP 轴上复制；W2 之后一次 AllReduce（psum），y 也在 TP 轴上复制；
- ``'tp_sp'``（`mlp_tp_sp`）：x 沿词元维在 TP 轴上切分 ``x[T_axis, D]``；W1 之前 AllGather（tiled），
  W2 之后 ReduceScatter（psum_scatter），y 同样沿词元维切分。AllReduce = ReduceScatter + AllGather，
  所以通信量与 'tp' 相同，但 LayerNorm、dropout 等逐词元运算可以只在 T/n 个词元上做，激活值也只存 1/n。

每个 MLP 块的集合通信（在 jax 0.10.2 的 XLA CPU 上从编译后的 HLO 数出，测试逐条断言）：

- ``'tp'``：前向 1 AllReduce（行并行之后的 g）；反向 1 AllReduce（dx：列并行之前的复制 f 的转置）；
- ``'tp_sp'``：前向 1 AllGather + 1 ReduceScatter；反向 1 AllGather（dy：ReduceScatter 的转置）
  + 1 ReduceScatter（dx：AllGather 的转置）。JAX 把前向收集好的 x 留到反向算 dW1；
  Megatron-LM 为了省显存只存切开的 x，反向再 AllGather 一次（`collectives_per_layer` 的
  implementation='megatron-lm'），所以它的反向是 2 AllGather + 1 ReduceScatter。

Megatron 论文里的 f / g：f 在前向是恒等（复制的 x 直接进入列并行），反向是 AllReduce；
g 在前向是 AllReduce，反向是恒等。JAX 的 shard_map（check_vma=True）里 f 就是隐式的 ``pvary``：
复制（invariant）的 x 与分片（varying）的 W1 相乘时自动插入，它的转置正是 psum。
权重梯度 dW1 = xᵀ·dh、dW2 = hᵀ·dy 在每台设备上只涉及本地的列块 / 行块，保持分片，不需要通信。
一个完整的 Transformer 层（注意力块 + MLP 块，注意力的 QKV 投影列并行、输出投影行并行，通信模式相同）
因此是前向 2 次、反向 2 次 AllReduce，共 4 次；SP 时每次 AllReduce 换成一对 ReduceScatter + AllGather。
`collectives_per_layer` 把这张表以数据形式给出。

数据并行（data parallel, DP）：网格 (2, 4) 上 TP 沿 'Y'、DP 沿 'X' 时，x 的词元维还按 'X' 切分，
W1、W2 在 'X' 上复制。于是反向多出 DP 的梯度同步：dW1、dW2 各要沿 'X' 求和
（shard_map 对在 'X' 上复制的权重插入的 pvary 的转置），XLA 把它们合并成一条 all-reduce。
它属于数据并行，不是张量并行，`mlp_collective_counts` 用 replica_groups 区分通信轴。

梯度用的损失是 `loss` = ``0.5 * sum(y**2)``：它的余切（cotangent）就是 y，所以前向的集合通信都要真的执行，
反向的输入也不是常数，HLO 的计数与上表一一对应。换成 ``sum(y)`` 时计数会变少（jax 0.10.2 CPU 实测）：
'tp' 只剩 1 条 all-reduce（前向的 psum 不影响梯度，被当作死代码删掉）；'tp_sp' 是 1 all-gather
+ 1 reduce-scatter（前向的 ReduceScatter 被删掉，反向对全 1 余切的 AllGather 被常量折叠，
剩下前向收集 x 的 AllGather——dW1 = xᵀ·dh 要用——和反向 dx 的 ReduceScatter）。
用 ``jax.value_and_grad`` 时 'tp_sp' 还多 1 条 all-reduce：y 沿词元维切分，标量损失要跨设备求和。
"""

from __future__ import annotations

import functools
from collections import Counter

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardlab import runtime
from shardlab.collectives import axis_groups, hlo_collectives_by_axis

__all__ = [
    "IMPLEMENTATIONS",
    "VARIANTS",
    "build",
    "build_grad",
    "collectives_per_layer",
    "layout",
    "loss",
    "mlp_collective_counts",
    "mlp_reference",
    "mlp_tp",
    "mlp_tp_block",
    "mlp_tp_sp",
    "mlp_tp_sp_block",
]

VARIANTS = ("tp", "tp_sp")


def mlp_reference(x, w1, w2):
    """不分片的参考实现：``gelu(x · W1) · W2``"""
    return jax.nn.gelu(x @ w1) @ w2


# ---- shard_map 内部的逐设备函数（TP 轴 n 台设备） ----


def mlp_tp_block(x_block, w1_block, w2_block, *, axis: str):
    """Megatron TP：列并行 W1 → 本地 gelu → 行并行 W2 → AllReduce"""
    # x_block: f32[T, D]（TP 轴上复制），w1_block: f32[D, F/n]，w2_block: f32[F/n, D]
    h = jax.nn.gelu(x_block @ w1_block)  # f32[T, F/n]：列并行，无通信
    y_partial = h @ w2_block  # f32[T, D]{U_axis}：行并行，未规约的部分和
    return lax.psum(y_partial, axis)  # f32[T, D]：AllReduce


def mlp_tp_sp_block(x_block, w1_block, w2_block, *, axis: str):
    """Megatron TP + 序列并行：AllGather 词元 → 列并行 → gelu → 行并行 → ReduceScatter 词元"""
    # x_block: f32[T/n, D]（词元维沿 TP 轴切分），w1_block: f32[D, F/n]，w2_block: f32[F/n, D]
    x = lax.all_gather(x_block, axis, axis=0, tiled=True)  # f32[T, D]：AllGather
    h = jax.nn.gelu(x @ w1_block)  # f32[T, F/n]
    y_partial = h @ w2_block  # f32[T, D]{U_axis}
    return lax.psum_scatter(y_partial, axis, scatter_dimension=0, tiled=True)  # f32[T/n, D]：ReduceScatter


_BLOCKS = {"tp": mlp_tp_block, "tp_sp": mlp_tp_sp_block}


# ---- 布局与编译 ----


def layout(variant: str, mesh, axis: str = "X") -> tuple[P, P, P, P]:
    """(x, W1, W2, y) 的 PartitionSpec

    词元维按 axis 以外的网格轴切分（数据并行）；'tp_sp' 的词元维再按 axis 切分。
    例：网格 (2, 4)、axis='Y'：'tp' 为 (P('X', None), P(None, 'Y'), P('Y', None), P('X', None))，
    'tp_sp' 的 x 与 y 为 ``P(('X', 'Y'), None)``。
    """
    if variant not in VARIANTS:
        raise ValueError(f"未知的变体 {variant!r}：可选 {', '.join(VARIANTS)}")
    axis_groups(mesh, axis)  # 检查轴名
    dp = tuple(name for name in mesh.axis_names if name != axis)
    tokens = (*dp, axis) if variant == "tp_sp" else dp
    tokens = tokens[0] if len(tokens) == 1 else (tokens or None)
    return P(tokens, None), P(None, axis), P(axis, None), P(tokens, None)


def build(variant: str, mesh, axis: str = "X"):
    """编译好的前向 ``(x, w1, w2) -> y``：jit(shard_map(逐设备函数))，按 (variant, mesh, axis) 缓存"""
    layout(variant, mesh, axis)
    return _build(variant, mesh, axis)


@functools.lru_cache(maxsize=64)
def _build(variant: str, mesh, axis: str):
    x_spec, w1_spec, w2_spec, y_spec = layout(variant, mesh, axis)
    block_fn = functools.partial(_BLOCKS[variant], axis=axis)
    return runtime.jit_shard_map(block_fn, mesh, (x_spec, w1_spec, w2_spec), y_spec)


def loss(fn):
    """标量损失 ``0.5 * sum(fn(x, w1, w2) ** 2)``：余切是 y 本身，前向的通信在梯度里保留"""

    def scalar_loss(x, w1, w2):
        return 0.5 * jnp.sum(fn(x, w1, w2) ** 2)

    return scalar_loss


def build_grad(variant: str, mesh, axis: str = "X"):
    """编译好的反向 ``(x, w1, w2) -> (dx, dW1, dW2)``：``jax.grad`` 作用在 `loss` 上；梯度与参数同样分片"""
    layout(variant, mesh, axis)
    return _build_grad(variant, mesh, axis)


@functools.lru_cache(maxsize=64)
def _build_grad(variant: str, mesh, axis: str):
    specs = layout(variant, mesh, axis)[:3]
    shardings = tuple(NamedSharding(mesh, spec) for spec in specs)
    grad = jax.grad(loss(build(variant, mesh, axis)), argnums=(0, 1, 2))
    return jax.jit(grad, in_shardings=shardings, out_shardings=shardings)


def _put_all(variant: str, mesh, axis: str, x, w1, w2):
    specs = layout(variant, mesh, axis)[:3]
    return tuple(runtime.put(arr, mesh, spec) for arr, spec in zip((x, w1, w2), specs))


def mlp_tp(x, w1, w2, mesh, axis: str = "X"):
    """Megatron TP 的 MLP（x 在 TP 轴上复制）；结果等于 `mlp_reference`，按 `layout` 切分"""
    return build("tp", mesh, axis)(*_put_all("tp", mesh, axis, x, w1, w2))


def mlp_tp_sp(x, w1, w2, mesh, axis: str = "X"):
    """Megatron TP + 序列并行的 MLP（x 的词元维沿 TP 轴切分）；结果等于 `mlp_reference`"""
    return build("tp_sp", mesh, axis)(*_put_all("tp_sp", mesh, axis, x, w1, w2))


def mlp_collective_counts(variant: str, mesh, axis: str, x, w1, w2) -> dict[str, Counter]:
    """前向与反向的集合通信（HLO 计数）：``{'forward': ..., 'forward_backward': ..., 'backward': ...}``

    'forward' 数 `build` 的 HLO；'forward_backward' 数 `build_grad` 的 HLO（梯度需要前向的结果，
    所以它包含前向的通信）；'backward' 是两者之差。计数的键是 (种类, 网格轴)，见 `hlo_collectives_by_axis`。
    """
    args = _put_all(variant, mesh, axis, x, w1, w2)
    forward = hlo_collectives_by_axis(build(variant, mesh, axis), *args, mesh=mesh)
    both = hlo_collectives_by_axis(build_grad(variant, mesh, axis), *args, mesh=mesh)
    return {"forward": forward, "forward_backward": both, "backward": both - forward}


# ---- 文档里的表：每个 MLP 块 / 每个 Transformer 层的集合通信 ----


IMPLEMENTATIONS = ("jax", "megatron-lm")


def collectives_per_layer(variant: str, implementation: str = "jax") -> dict[str, dict[str, dict[str, int]]]:
    """Megatron 每个块的集合通信次数（只计 TP 轴），书里的表由它生成，测试断言 HLO 与 'mlp' 一致

    返回 ``{'mlp': {'forward': {...}, 'backward': {...}}, 'layer': {...}}``，
    'layer' 是一个完整 Transformer 层（注意力块 + MLP 块，各一次列并行 + 行并行）。

    implementation：'jax' 是 JAX 自动微分编译出来的（前向收集的 x 留给反向算 dW1 用）；
    'megatron-lm' 是 Megatron-LM 的做法：为了省显存，列并行的前向只保存切开的输入，
    反向算权重梯度之前再 AllGather 一次（`LinearWithGradAccumulationAndAsyncCommunication.backward`，
    megatron/core/tensor_parallel/layers.py，NVIDIA/Megatron-LM 提交 000c4ac），
    所以 'tp_sp' 的反向每个列并行多 1 次 AllGather。'tp' 两者相同。
    """
    if variant not in VARIANTS:
        raise ValueError(f"未知的变体 {variant!r}：可选 {', '.join(VARIANTS)}")
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"未知的实现 {implementation!r}：可选 {', '.join(IMPLEMENTATIONS)}")
    if variant == "tp":
        mlp = {"forward": {"all-reduce": 1}, "backward": {"all-reduce": 1}}
    else:
        regather = 1 if implementation == "megatron-lm" else 0  # 反向为 dW1 重新收集 x
        mlp = {
            "forward": {"all-gather": 1, "reduce-scatter": 1},
            "backward": {"all-gather": 1 + regather, "reduce-scatter": 1},
        }
    layer = {phase: {op: 2 * k for op, k in ops.items()} for phase, ops in mlp.items()}
    return {"mlp": mlp, "layer": layer}
