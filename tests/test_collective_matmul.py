"""shardlab.collective_matmul：朴素版与 ppermute 重叠版都等于 jnp.dot，HLO 里的通信原语与条数（8 个模拟 CPU 设备）"""

from __future__ import annotations

import functools
import re

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import PartitionSpec as P

from shardlab import collective_matmul, collectives, runtime

runtime.setup("cpu")  # conftest 已调用；重复调用是幂等的

# (网格形状, 轴名, 通信轴)：书里的 (2, 4) 沿 'Y'，一维 (8,)，以及 (2, 4) 沿 'X'（n = 2）
CASES = [((2, 4), ("X", "Y"), "Y"), ((8,), ("X",), "X"), ((2, 4), ("X", "Y"), "X")]
CASE_IDS = ["2x4-Y", "8-X", "2x4-X"]
B, D, F = 16, 32, 64


@functools.cache
def mesh_of(shape, names):
    return runtime.make_mesh(shape, names)


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request):
    shape, names, axis = request.param
    return mesh_of(shape, names), axis


def operands(seed=0, dtype=np.float32, high=5):
    """整数值的 A[B, D] 与 W[D, F]：float32 里的乘加是精确的，与累加顺序无关"""
    rng = np.random.default_rng(seed)
    a = rng.integers(-high, high, size=(B, D)).astype(dtype)
    w = rng.integers(-high, high, size=(D, F)).astype(dtype)
    return a, w


def placed(op, mesh, axis, a, w):
    a_spec, w_spec, _ = collective_matmul.layout(op, mesh, axis)
    return runtime.put(a, mesh, a_spec), runtime.put(w, mesh, w_spec)


# ---- 结果等于 jnp.dot ----

FUNCTIONS = {
    "allgather_naive": collective_matmul.allgather_matmul_naive,
    "allgather": collective_matmul.allgather_matmul,
    "allgather_bidi": functools.partial(collective_matmul.allgather_matmul, bidirectional=True),
    "reducescatter_naive": collective_matmul.matmul_reducescatter_naive,
    "reducescatter": collective_matmul.matmul_reducescatter,
    "reducescatter_bidi": functools.partial(collective_matmul.matmul_reducescatter, bidirectional=True),
    "allreduce_naive": functools.partial(collective_matmul.matmul_allreduce, chunked=False),
    "allreduce_chunked": collective_matmul.matmul_allreduce,
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_equals_dot(case, name):
    mesh, axis = case
    a, w = operands()
    got = FUNCTIONS[name](a, w, mesh, axis)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.dot(a, w)))
    # 输出 C[B_X, F_Y]：每台设备一块 f32[B/(网格其他轴), F/n]；AllReduce 版的 F 不切分
    n = mesh.shape[axis]
    if name.startswith("allreduce"):
        assert got.sharding.spec == collective_matmul.layout("matmul_allreduce_naive", mesh, axis)[2]
        assert collectives.per_device(got)[0].shape == (B * n // mesh.size, F)
    else:
        assert got.sharding.spec == collective_matmul.layout("allgather_matmul", mesh, axis)[2]
        assert collectives.per_device(got)[0].shape == (B * n // mesh.size, F // n)


def test_book_layout_on_2x4():
    mesh = mesh_of((2, 4), ("X", "Y"))
    assert collective_matmul.layout("allgather_matmul", mesh, "Y") == (P("X", "Y"), P(None, "Y"), P("X", "Y"))
    assert collective_matmul.layout("matmul_reducescatter_bidi", mesh, "Y") == (P("X", "Y"), P("Y", None), P("X", "Y"))
    assert collective_matmul.layout("allgather_matmul", mesh_of((8,), ("X",)), "X") == (
        P(None, "X"),
        P(None, "X"),
        P(None, "X"),
    )


def test_bfloat16_small_integers_exact():
    # |部分和| ≤ 2·2·32 = 128 < 256：bf16 精确表示，所以重叠版与 jnp.dot 逐位相同
    mesh = mesh_of((2, 4), ("X", "Y"))
    a, w = operands(seed=1, dtype=jnp.bfloat16, high=2)
    want = np.asarray(jnp.dot(a, w), np.float32)
    for bidirectional in (False, True):
        got = collective_matmul.allgather_matmul(a, w, mesh, "Y", bidirectional=bidirectional)
        assert got.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(got, np.float32), want)
        got = collective_matmul.matmul_reducescatter(a, w, mesh, "Y", bidirectional=bidirectional)
        np.testing.assert_array_equal(np.asarray(got, np.float32), want)


def test_validation_and_cache():
    mesh = mesh_of((2, 4), ("X", "Y"))
    with pytest.raises(ValueError, match="未知的集合矩阵乘法"):
        collective_matmul.build("allreduce_matmul", mesh, "Y")
    with pytest.raises(ValueError, match="没有轴"):
        collective_matmul.build("allgather_matmul", mesh, "Z")
    a, w = np.ones((4, 12), np.float32), np.ones((12, 4), np.float32)  # D/4 = 3、F/4 = 1 是奇数
    with pytest.raises(ValueError, match="D = 12"):
        collective_matmul.allgather_matmul(a, w, mesh, "Y", bidirectional=True)
    with pytest.raises(ValueError, match="F = 4"):
        collective_matmul.matmul_reducescatter(a[:, :4], w[:4], mesh, "Y", bidirectional=True)
    with pytest.raises(ValueError, match="必须能被 n 整除"):
        collective_matmul.matmul_allreduce(np.ones((6, 8), np.float32), np.ones((8, 4), np.float32), mesh, "Y")
    assert collective_matmul.build("allgather_matmul", mesh, "Y") is collective_matmul.build(
        "allgather_matmul", mesh, "Y"
    )
    assert collective_matmul.build("allgather_matmul", mesh, "Y") is not collective_matmul.build(
        "allgather_matmul", mesh_of((8,), ("X",)), "X"
    )


# ---- HLO：朴素版只有 AllGather / ReduceScatter，重叠版只有 collective-permute ----


def expected_hlo(op, n):
    """单向环 n-1 条 collective-permute（A 块或累加器各走 n-1 跳），双向环两个方向各 n-1 条"""
    return {
        "allgather_matmul_naive": {"all-gather": 1},
        "matmul_reducescatter_naive": {"reduce-scatter": 1},
        "allgather_matmul": {"collective-permute": n - 1},
        "matmul_reducescatter": {"collective-permute": n - 1},
        "allgather_matmul_bidi": {"collective-permute": 2 * (n - 1)},
        "matmul_reducescatter_bidi": {"collective-permute": 2 * (n - 1)},
        "matmul_allreduce_naive": {"all-reduce": 1},
        # 每块一条 psum，但 XLA 的 AllReduceCombiner 把 n 条合并成一条带 n 个操作数的 all-reduce
        "matmul_allreduce_chunked": {"all-reduce": 1},
    }[op]


@pytest.mark.parametrize("op", list(collective_matmul.MATMUL_OPS))
def test_hlo_collectives(case, op):
    mesh, axis = case
    n = mesh.shape[axis]
    counts = collectives.hlo_collective_counts(
        collective_matmul.build(op, mesh, axis), *placed(op, mesh, axis, *operands())
    )
    assert dict(counts) == expected_hlo(op, n)


def test_chunked_allreduce_is_combined_into_one_tuple(case):
    """分块版写了 n 条 psum；编译后是一条 all-reduce，结果是 n 个 f32[B/2n, F] 的元组（书里讲这件事）"""
    mesh, axis = case
    n = mesh.shape[axis]
    op = "matmul_allreduce_chunked"
    text = collectives.compiled_hlo_text(collective_matmul.build(op, mesh, axis), *placed(op, mesh, axis, *operands()))
    (line,) = [x for x in text.splitlines() if re.search(r"= \(.*\) all-reduce\(", x)]
    assert line.split(") all-reduce(")[0].count("f32[") == n


def test_book_case_counts():
    # 书里的例子：网格 (2, 4)，沿 'Y'（n = 4）：朴素版 1 条 all-gather；单向环 3 条 permute，双向环 6 条
    mesh = mesh_of((2, 4), ("X", "Y"))
    args = placed("allgather_matmul", mesh, "Y", *operands())
    assert collectives.hlo_collectives(collective_matmul.build("allgather_matmul_naive", mesh, "Y"), *args) == [
        "all-gather"
    ]
    assert (
        collectives.hlo_collectives(collective_matmul.build("allgather_matmul", mesh, "Y"), *args)
        == ["collective-permute"] * 3
    )
    assert (
        collectives.hlo_collectives(collective_matmul.build("allgather_matmul_bidi", mesh, "Y"), *args)
        == ["collective-permute"] * 6
    )


def ring_pairs(mesh, axis, shift):
    """沿 axis 的每组设备上整体移位 shift 的全局 (源, 目的) 设备对"""
    n = mesh.shape[axis]
    return {(g[i], g[(i + shift) % n]) for g in collectives.axis_groups(mesh, axis) for i in range(n)}


@pytest.mark.parametrize("op", ["allgather_matmul", "matmul_reducescatter", "allgather_matmul_bidi"])
def test_permute_directions(op):
    mesh = mesh_of((2, 4), ("X", "Y"))
    pairs = [
        set(p)
        for p in collectives.hlo_permute_pairs(
            collective_matmul.build(op, mesh, "Y"), *placed(op, mesh, "Y", *operands())
        )
    ]
    clockwise, counter = ring_pairs(mesh, "Y", +1), ring_pairs(mesh, "Y", -1)
    if op.endswith("bidi"):
        assert sorted(p == clockwise for p in pairs) == [False] * 3 + [True] * 3
        assert all(p in (clockwise, counter) for p in pairs)
    else:
        assert pairs == [clockwise] * 3


# ---- 时间线 ----


def test_step_schedule_oneway_allgather():
    sched = collective_matmul.step_schedule(4)
    assert [s["compute"] for s in sched] == [[(0, "all")], [(3, "all")], [(2, "all")], [(1, "all")]]
    assert sched[0]["send"] == [(0, "all", 1)]
    assert sched[-1]["send"] == []


def test_step_schedule_reducescatter_ends_at_home():
    for device in range(4):
        sched = collective_matmul.step_schedule(4, kind="reducescatter", device=device)
        assert sched[-1]["compute"] == [(device, "all")]  # 最后一步累加器回到终点
        assert sched[0]["send"] == [((device - 1) % 4, "all", (device + 1) % 4)]
    bidi = collective_matmul.step_schedule(4, bidirectional=True, kind="reducescatter", device=2)
    assert bidi[-1]["compute"] == [(2, "lo"), (2, "hi")]
    assert bidi[0]["send"] == [(1, "lo", 3), (3, "hi", 1)]


@given(n=st.integers(1, 12), bidirectional=st.booleans(), kind=st.sampled_from(["allgather", "reducescatter"]))
def test_step_schedule_is_a_consistent_ring(n, bidirectional, kind):
    scheds = [collective_matmul.step_schedule(n, bidirectional, kind, device=j) for j in range(n)]
    parts = ("lo", "hi") if bidirectional else ("all",)
    for j, sched in enumerate(scheds):
        assert [s["step"] for s in sched] == list(range(n))
        # 每个部分：n 步里每块正好处理一次
        for part in parts:
            assert sorted(k for s in sched for k, p in s["compute"] if p == part) == list(range(n))
        assert sum(len(s["send"]) for s in sched) == len(parts) * (n - 1)
        for step, s in enumerate(sched[:-1]):
            for k, part, dst in s["send"]:
                assert (k, part) in s["compute"]  # 发出的正是本步处理的那块
                assert dst == (j + (-1 if part == "hi" else +1)) % n  # 'hi' 逆时针，其余顺时针
                assert (k, part) in scheds[dst][step + 1]["compute"]  # 邻居下一步接着处理它


def test_step_schedule_validation():
    with pytest.raises(ValueError, match="正整数"):
        collective_matmul.step_schedule(0)
    with pytest.raises(ValueError, match="kind"):
        collective_matmul.step_schedule(4, kind="allreduce")


def test_bidirectional_needs_wraparound():
    """线上（无回绕）的双向调度：最忙的有向链路每步仍有 2 个半块 = 1 整块，与单向环一样"""
    for n in (3, 4, 8):
        assert collective_matmul.line_link_load(n, bidirectional=True) == 2  # 半块 × 2
        assert collective_matmul.line_link_load(n, bidirectional=False) == 1  # 整块 × 1
    with pytest.raises(ValueError, match="至少要 2 个设备"):
        collective_matmul.line_link_load(1)
