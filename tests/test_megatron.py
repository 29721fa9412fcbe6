"""shardlab.megatron：列并行 + 行并行的 MLP（有无序列并行）等于参考实现；前向 / 反向的集合通信按 HLO 计数"""

from __future__ import annotations

import functools
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from shardlab import collectives, megatron, runtime

runtime.setup("cpu")  # conftest 已调用；重复调用是幂等的

T, D, F = 32, 16, 64
# (网格形状, 轴名, TP 轴)：一维 TP=8、TP=4（只用前 4 个设备），以及 (2, 4) 上 DP 沿 'X'、TP 沿 'Y'
TP_ONLY = [((8,), ("X",), "X"), ((4,), ("X",), "X")]
WITH_DP = [((2, 4), ("X", "Y"), "Y")]
IDS = ["tp8", "tp4"]


@functools.cache
def mesh_of(shape, names):
    return runtime.make_mesh(shape, names)


@functools.cache
def params(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, D)).astype(np.float32)
    w1 = (rng.standard_normal((D, F)) / np.sqrt(D)).astype(np.float32)
    w2 = (rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32)
    return x, w1, w2


def placed(variant, mesh, axis):
    specs = megatron.layout(variant, mesh, axis)[:3]
    return tuple(runtime.put(arr, mesh, spec) for arr, spec in zip(params(), specs))


def tp_counts(counts: Counter, axis: str) -> dict[str, int]:
    """只保留 TP 轴上的集合通信，键去掉轴名，便于与 collectives_per_layer 比较"""
    return {op: k for (op, where), k in counts.items() if where == axis}


# ---- 数值：等于不分片的参考实现 ----


@pytest.mark.parametrize(("shape", "names", "axis"), TP_ONLY + WITH_DP, ids=IDS + ["dp2-tp4"])
@pytest.mark.parametrize("variant", megatron.VARIANTS)
def test_forward_and_grad_match_reference(shape, names, axis, variant):
    mesh = mesh_of(shape, names)
    x, w1, w2 = params()
    fn = megatron.mlp_tp if variant == "tp" else megatron.mlp_tp_sp
    y = fn(x, w1, w2, mesh, axis)
    assert y.sharding.spec == megatron.layout(variant, mesh, axis)[3]
    np.testing.assert_allclose(np.asarray(y), np.asarray(megatron.mlp_reference(x, w1, w2)), rtol=1e-5, atol=1e-5)
    grads = megatron.build_grad(variant, mesh, axis)(*placed(variant, mesh, axis))
    want = jax.grad(megatron.loss(megatron.mlp_reference), argnums=(0, 1, 2))(x, w1, w2)
    for got, ref, spec in zip(grads, want, megatron.layout(variant, mesh, axis)[:3]):
        assert got.sharding.spec == spec  # 权重梯度与权重同样分片
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-4, atol=1e-5)


def test_layouts():
    mesh = mesh_of((2, 4), ("X", "Y"))
    assert megatron.layout("tp", mesh, "Y") == (P("X", None), P(None, "Y"), P("Y", None), P("X", None))
    assert megatron.layout("tp_sp", mesh, "Y")[0] == P(("X", "Y"), None)
    assert megatron.layout("tp", mesh_of((8,), ("X",)), "X") == (
        P(None, None),
        P(None, "X"),
        P("X", None),
        P(None, None),
    )
    assert megatron.layout("tp_sp", mesh_of((8,), ("X",)), "X")[0] == P("X", None)
    with pytest.raises(ValueError, match="未知的变体"):
        megatron.build("fsdp", mesh, "Y")
    with pytest.raises(ValueError, match="没有轴"):
        megatron.build_grad("tp", mesh, "Z")
    assert megatron.build("tp", mesh, "Y") is megatron.build("tp", mesh, "Y")


# ---- HLO：每个 MLP 块的集合通信 ----


@pytest.mark.parametrize(("shape", "names", "axis"), TP_ONLY, ids=IDS)
@pytest.mark.parametrize("variant", megatron.VARIANTS)
def test_hlo_counts_equal_table(shape, names, axis, variant):
    mesh = mesh_of(shape, names)
    counts = megatron.mlp_collective_counts(variant, mesh, axis, *params())
    table = megatron.collectives_per_layer(variant)["mlp"]
    # 一维网格上只有 TP 轴：所有通信都在它上面
    assert all(where == axis for _, where in counts["forward_backward"])
    assert tp_counts(counts["forward"], axis) == table["forward"]
    assert tp_counts(counts["backward"], axis) == table["backward"]
    both = Counter(table["forward"]) + Counter(table["backward"])
    assert tp_counts(counts["forward_backward"], axis) == dict(both)


@pytest.mark.parametrize("variant", megatron.VARIANTS)
def test_hlo_counts_with_data_parallel(variant):
    # DP 沿 'X'、TP 沿 'Y'：TP 轴上与表一致；反向另有 1 条沿 'X' 的 all-reduce（dW1、dW2 的 DP 梯度同步，合并成一条）
    mesh = mesh_of((2, 4), ("X", "Y"))
    counts = megatron.mlp_collective_counts(variant, mesh, "Y", *params())
    table = megatron.collectives_per_layer(variant)["mlp"]
    assert tp_counts(counts["forward"], "Y") == table["forward"]
    assert tp_counts(counts["backward"], "Y") == table["backward"]
    assert tp_counts(counts["forward"], "X") == {}
    assert tp_counts(counts["backward"], "X") == {"all-reduce": 1}
    text = collectives.compiled_hlo_text(megatron.build_grad(variant, mesh, "Y"), *placed(variant, mesh, "Y"))
    dp_line = next(line for line in text.splitlines() if "replica_groups={{0,4},{1,5},{2,6},{3,7}}" in line)
    # 一条 tuple all-reduce：(dW1 块 f32[D, F/4], dW2 块 f32[F/4, D])
    assert re.search(rf"= \(f32\[{D},{F // 4}\]\S*, f32\[{F // 4},{D}\]\S*\) all-reduce\(", dp_line)


def test_sum_loss_quirk():
    # 文档里记下的现象：用 sum(y) 做损失时，前向的 psum / psum_scatter 被删掉、对全 1 余切的 AllGather 被折叠
    mesh = mesh_of((8,), ("X",))
    for variant, want in (("tp", {"all-reduce": 1}), ("tp_sp", {"all-gather": 1, "reduce-scatter": 1})):
        fn = megatron.build(variant, mesh, "X")
        grad = jax.jit(jax.grad(lambda *a, fn=fn: jnp.sum(fn(*a)), argnums=(0, 1, 2)))
        assert dict(collectives.hlo_collective_counts(grad, *placed(variant, mesh, "X"))) == want


# ---- 文档里的表 ----


def test_collectives_per_layer():
    tp, sp = megatron.collectives_per_layer("tp"), megatron.collectives_per_layer("tp_sp")
    assert tp["mlp"] == {"forward": {"all-reduce": 1}, "backward": {"all-reduce": 1}}
    # 一个 Transformer 层：前向 2、反向 2，共 4 次 AllReduce（Megatron-LM 论文，Shoeybi et al. 2019，图 4）
    assert tp["layer"] == {"forward": {"all-reduce": 2}, "backward": {"all-reduce": 2}}
    assert sp["layer"]["forward"] == {"all-gather": 2, "reduce-scatter": 2}
    assert sp["layer"]["backward"] == {"all-gather": 2, "reduce-scatter": 2}
    with pytest.raises(ValueError, match="未知的变体"):
        megatron.collectives_per_layer("pp")


def test_megatron_lm_regathers_the_sequence_parallel_input():
    """Megatron-LM 的列并行在前向只保存切开的输入，反向为算 dW 再 AllGather 一次
    （NVIDIA/Megatron-LM megatron/core/tensor_parallel/layers.py，
    LinearWithGradAccumulationAndAsyncCommunication.backward）；JAX 的自动微分留着前向收集的结果，不再收集"""
    lm = megatron.collectives_per_layer("tp_sp", "megatron-lm")
    assert lm["mlp"]["backward"] == {"all-gather": 2, "reduce-scatter": 1}
    assert lm["layer"]["backward"] == {"all-gather": 4, "reduce-scatter": 2}
    assert lm["layer"]["forward"] == megatron.collectives_per_layer("tp_sp")["layer"]["forward"]
    assert megatron.collectives_per_layer("tp", "megatron-lm") == megatron.collectives_per_layer("tp")
    # 书里的 HLO 计数是 JAX 的：反向只有 1 次 AllGather，比 Megatron-LM 少 1 次
    assert megatron.collectives_per_layer("tp_sp")["mlp"]["backward"]["all-gather"] == 1
    with pytest.raises(ValueError, match="未知的实现"):
        megatron.collectives_per_layer("tp", "deepspeed")
