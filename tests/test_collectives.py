"""shardlab.collectives：JAX 集合通信与手写环，逐设备对照 shardlab.reference（8 个模拟 CPU 设备）"""

from __future__ import annotations

import functools
from collections import Counter

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from jax.sharding import PartitionSpec as P

from shardlab import collectives, reference, runtime

runtime.setup("cpu")  # conftest 已调用；重复调用是幂等的

# (网格形状, 轴名, 通信轴)：一维网格，以及二维网格 (2, 4) 的每个轴
CASES = [((8,), ("X",), "X"), ((2, 4), ("X", "Y"), "X"), ((2, 4), ("X", "Y"), "Y")]
CASE_IDS = ["8-X", "2x4-X", "2x4-Y"]


@functools.cache
def mesh_of(shape, names):
    return runtime.make_mesh(shape, names)


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request):
    shape, names, axis = request.param
    return mesh_of(shape, names), axis


def data(mesh, block_shape, seed=0):
    """整数值的 float32 全局数组：mesh.size 个块沿第 0 维堆叠，求和在 float32 里是精确的"""
    rng = np.random.default_rng(seed)
    shape = (mesh.size * block_shape[0], *block_shape[1:])
    return rng.integers(-50, 50, size=shape).astype(np.float32)


def assert_matches_reference(got, x, mesh, axis, ref_fn):
    """每组（沿 axis 通信的 n 台设备）分别跑 NumPy 参考实现，逐设备比较"""
    got_groups = collectives.group_blocks(got, mesh, axis)
    in_groups = collectives.group_blocks(x, mesh, axis)
    assert len(got_groups) == mesh.size // mesh.shape[axis]
    for got_blocks, blocks in zip(got_groups, in_groups, strict=True):
        expected = ref_fn(blocks)
        assert len(expected) == len(got_blocks) == mesh.shape[axis]
        for block, want in zip(got_blocks, expected, strict=True):
            assert block.dtype == np.float32
            np.testing.assert_array_equal(block, want)


# ---- 约定与小工具 ----


def test_axis_groups_rows_and_columns():
    mesh = mesh_of((2, 4), ("X", "Y"))
    assert collectives.axis_groups(mesh, "Y") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert collectives.axis_groups(mesh, "X") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert collectives.axis_groups(mesh_of((8,), ("X",)), "X") == [list(range(8))]
    with pytest.raises(ValueError, match="没有轴"):
        collectives.axis_groups(mesh, "Z")


def test_block_spec_and_per_device_order():
    mesh = mesh_of((2, 4), ("X", "Y"))
    assert collectives.block_spec(mesh) == P(("X", "Y"))
    x = np.arange(8 * 2 * 3, dtype=np.float32).reshape(16, 3)
    got = collectives.per_device(collectives.shard_blocks(x, mesh))
    for k, block in enumerate(got):
        np.testing.assert_array_equal(block, x[2 * k : 2 * k + 2])
    # 显式给出 mesh 时结果相同
    explicit = collectives.per_device(collectives.shard_blocks(x, mesh), mesh)
    assert all(np.array_equal(a, b) for a, b in zip(got, explicit, strict=True))
    # NumPy 输入按同一约定切块
    assert all(np.array_equal(a, b) for a, b in zip(got, collectives.per_device(x, mesh), strict=True))
    with pytest.raises(ValueError, match="mesh"):
        collectives.per_device(x)
    columns = collectives.group_blocks(x, mesh, "X")
    assert len(columns) == 4 and len(columns[0]) == 2
    np.testing.assert_array_equal(columns[1][1], x[10:12])  # 网格位置 (1, 1) = 5


def test_shard_blocks_rejects_uneven_split():
    with pytest.raises(ValueError, match="整除"):
        collectives.shard_blocks(np.zeros((12, 2), np.float32), mesh_of((8,), ("X",)))


def test_shift_perm_and_ring_hops():
    assert collectives.shift_perm(4) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert collectives.shift_perm(4, -1) == [(0, 3), (1, 0), (2, 1), (3, 2)]
    assert collectives.ring_hops(8) == (7, 0)
    assert collectives.ring_hops(8, bidirectional=True) == (4, 3)
    assert collectives.ring_hops(7, bidirectional=True) == (3, 3)
    assert collectives.ring_hops(2, bidirectional=True) == (1, 0)
    assert collectives.ring_hops(1, bidirectional=True) == (0, 0)
    for n in range(1, 17):
        cw, ccw = collectives.ring_hops(n, bidirectional=True)
        assert cw + ccw == n - 1  # 每个块只搬一次
        assert max(cw, ccw) == n // 2  # 步数 floor(n/2)
    with pytest.raises(ValueError):
        collectives.ring_hops(0)


def test_build_validates_and_caches():
    mesh = mesh_of((8,), ("X",))
    with pytest.raises(ValueError, match="未知的集合通信"):
        collectives.build("broadcast", mesh, "X")
    with pytest.raises(ValueError, match="没有轴"):
        collectives.build("all_reduce", mesh, "Y")
    assert collectives.build("ring_all_gather", mesh, "X", bidirectional=True) is collectives.build(
        "ring_all_gather", mesh, "X", bidirectional=True
    )
    assert collectives.build("ppermute", mesh, "X", perm=[(0, 1)]) is collectives.build(
        "ppermute", mesh, "X", perm=((0, 1),)
    )
    other = mesh_of((2, 4), ("X", "Y"))
    assert collectives.build("all_reduce", mesh, "X") is not collectives.build("all_reduce", other, "X")


# ---- XLA 原语 vs reference ----

BLOCK_SHAPES = [(8,), (8, 3), (16, 2, 3)]


@pytest.mark.parametrize("block_shape", BLOCK_SHAPES, ids=str)
def test_all_gather(case, block_shape):
    mesh, axis = case
    x = data(mesh, block_shape)
    got = collectives.all_gather(x, mesh, axis)
    n = mesh.shape[axis]
    assert collectives.per_device(got)[0].shape == (n * block_shape[0], *block_shape[1:])
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.all_gather(b, axis=0, tiled=True))


def test_all_gather_untiled_and_other_dim(case):
    mesh, axis = case
    x = data(mesh, (4, 3))
    got = collectives.all_gather(x, mesh, axis, tiled=False)
    assert collectives.per_device(got)[0].shape == (mesh.shape[axis], 4, 3)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.all_gather(b, axis=0, tiled=False))
    got = collectives.all_gather(x, mesh, axis, dim=1)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.all_gather(b, axis=1, tiled=True))


@pytest.mark.parametrize("block_shape", BLOCK_SHAPES, ids=str)
def test_reduce_scatter(case, block_shape):
    mesh, axis = case
    x = data(mesh, block_shape)
    got = collectives.reduce_scatter(x, mesh, axis)
    n = mesh.shape[axis]
    assert collectives.per_device(got)[0].shape == (block_shape[0] // n, *block_shape[1:])
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.reduce_scatter(b, axis=0))


def test_reduce_scatter_other_dim(case):
    mesh, axis = case
    x = data(mesh, (3, 8))
    got = collectives.reduce_scatter(x, mesh, axis, dim=1)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.reduce_scatter(b, axis=1))


@pytest.mark.parametrize("block_shape", BLOCK_SHAPES, ids=str)
def test_all_reduce(case, block_shape):
    mesh, axis = case
    x = data(mesh, block_shape)
    got = collectives.all_reduce(x, mesh, axis)
    assert_matches_reference(got, x, mesh, axis, reference.all_reduce)


@pytest.mark.parametrize(("split_axis", "concat_axis"), [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_all_to_all(case, split_axis, concat_axis):
    mesh, axis = case
    x = data(mesh, (8, 8))
    got = collectives.all_to_all(x, mesh, axis, split_axis=split_axis, concat_axis=concat_axis)
    assert_matches_reference(
        got, x, mesh, axis, lambda b: reference.all_to_all(b, split_axis=split_axis, concat_axis=concat_axis)
    )


@pytest.mark.parametrize("shift", [1, -1, 3])
def test_ppermute_shift(case, shift):
    mesh, axis = case
    x = data(mesh, (2, 3))
    n = mesh.shape[axis]
    got = collectives.ppermute_shift(x, mesh, axis, shift)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.ppermute(b, collectives.shift_perm(n, shift)))


def test_ppermute_partial_perm_gives_zeros(case):
    mesh, axis = case
    x = data(mesh, (2, 3)) + 100  # 没有 0，收不到数据的设备一看便知
    perm = [(0, 1)]  # 只有下标 1 收到数据
    got = collectives.ppermute(x, mesh, axis, perm)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.ppermute(b, perm))
    blocks = collectives.per_device(got)
    for group in collectives.axis_groups(mesh, axis):
        assert not blocks[group[0]].any()


# ---- 手写的环 vs XLA vs reference ----

RING_SHAPES = [(8, 3), (16, 2, 3)]


@pytest.mark.parametrize("bidirectional", [False, True], ids=["oneway", "bidir"])
@pytest.mark.parametrize("block_shape", RING_SHAPES, ids=str)
def test_ring_all_gather(case, block_shape, bidirectional):
    mesh, axis = case
    x = data(mesh, block_shape, seed=1)
    got = collectives.ring_all_gather(x, mesh, axis, bidirectional=bidirectional)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.all_gather(b, axis=0, tiled=True))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(collectives.all_gather(x, mesh, axis)))


@pytest.mark.parametrize("bidirectional", [False, True], ids=["oneway", "bidir"])
@pytest.mark.parametrize("block_shape", RING_SHAPES, ids=str)
def test_ring_reduce_scatter(case, block_shape, bidirectional):
    mesh, axis = case
    x = data(mesh, block_shape, seed=2)
    got = collectives.ring_reduce_scatter(x, mesh, axis, bidirectional=bidirectional)
    assert_matches_reference(got, x, mesh, axis, lambda b: reference.reduce_scatter(b, axis=0))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(collectives.reduce_scatter(x, mesh, axis)))


@pytest.mark.parametrize("bidirectional", [False, True], ids=["oneway", "bidir"])
@pytest.mark.parametrize("block_shape", RING_SHAPES, ids=str)
def test_ring_all_reduce(case, block_shape, bidirectional):
    mesh, axis = case
    x = data(mesh, block_shape, seed=3)
    got = collectives.ring_all_reduce(x, mesh, axis, bidirectional=bidirectional)
    assert_matches_reference(got, x, mesh, axis, reference.all_reduce)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(collectives.all_reduce(x, mesh, axis)))


@settings(max_examples=15, deadline=None, database=None)
@given(
    x=hnp.arrays(np.float32, (64, 2), elements=st.integers(-1000, 1000).map(float)),
    bidirectional=st.booleans(),
)
def test_ring_all_reduce_property(x, bidirectional):
    """任意整数值数据：双向 / 单向环形 AllReduce 都等于每台设备缓冲区之和"""
    mesh = mesh_of((8,), ("X",))
    got = collectives.per_device(collectives.ring_all_reduce(x, mesh, "X", bidirectional=bidirectional))
    total = sum(collectives.per_device(x, mesh))
    for block in got:
        np.testing.assert_array_equal(block, total)


# ---- HLO 里的集合通信 ----


def hlo_of(op, mesh, axis, block_shape=(8, 4), **params):
    x = collectives.shard_blocks(data(mesh, block_shape), mesh)
    return collectives.build(op, mesh, axis, **params), x


@pytest.mark.parametrize(
    ("op", "params", "expected"),
    [
        ("all_reduce", {}, ["all-reduce"]),
        ("all_gather", {}, ["all-gather"]),
        ("reduce_scatter", {}, ["reduce-scatter"]),
        ("all_to_all", {"split_axis": 0, "concat_axis": 1}, ["all-to-all"]),
        ("ppermute", {"perm": collectives.shift_perm(8)}, ["collective-permute"]),
    ],
)
def test_hlo_xla_primitives(op, params, expected):
    fn, x = hlo_of(op, mesh_of((8,), ("X",)), "X", **params)
    assert collectives.hlo_collectives(fn, x) == expected


ONE_WAY = tuple(collectives.shift_perm(8, 1))
OTHER_WAY = tuple(sorted(collectives.shift_perm(8, -1)))


@pytest.mark.parametrize(
    ("op", "bidirectional", "n_permutes", "n_clockwise"),
    [
        # 单向环：n-1 = 7 条 collective-permute，全部顺时针（7 步）
        ("ring_all_gather", False, 7, 7),
        ("ring_reduce_scatter", False, 7, 7),
        # 双向环：仍是 7 条（每个块只搬一次），顺时针 4 条、逆时针 3 条，两方向并行只需 4 步
        ("ring_all_gather", True, 7, 4),
        ("ring_reduce_scatter", True, 7, 4),
        # AllReduce = ReduceScatter + AllGather
        ("ring_all_reduce", False, 14, 14),
        ("ring_all_reduce", True, 14, 8),
    ],
)
def test_hlo_ring_permute_counts(op, bidirectional, n_permutes, n_clockwise):
    fn, x = hlo_of(op, mesh_of((8,), ("X",)), "X", bidirectional=bidirectional)
    assert collectives.hlo_collective_counts(fn, x) == Counter({"collective-permute": n_permutes})
    pairs = [tuple(sorted(p)) for p in collectives.hlo_permute_pairs(fn, x)]
    assert len(pairs) == n_permutes
    assert pairs.count(ONE_WAY) == n_clockwise
    assert pairs.count(OTHER_WAY) == n_permutes - n_clockwise


def test_hlo_ring_on_2d_mesh_uses_global_device_ids():
    mesh = mesh_of((2, 4), ("X", "Y"))
    fn, x = hlo_of("ring_all_gather", mesh, "Y")
    assert collectives.hlo_collectives(fn, x) == ["collective-permute"] * 3
    # 一条 collective-permute 同时驱动两组 (0..3) 与 (4..7) 各自的环
    expected = ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4))
    assert all(tuple(sorted(p)) == tuple(sorted(expected)) for p in collectives.hlo_permute_pairs(fn, x))
    fn, x = hlo_of("ring_all_reduce", mesh, "X", bidirectional=True)
    assert collectives.hlo_collectives(fn, x) == ["collective-permute"] * 2


def test_hlo_plain_function_has_no_collectives():
    x = np.ones((8, 8), np.float32)
    assert collectives.hlo_collectives(lambda a: jnp.sin(a) @ a.T, x) == []
    assert collectives.hlo_collective_counts(lambda a: a * 2, x) == Counter()
    assert collectives.hlo_permute_pairs(lambda a: a + 1, x) == []
    assert "ENTRY" in collectives.compiled_hlo_text(lambda a: a + 1, x)


def test_find_collectives_normalises_async_forms():
    text = "\n".join(
        [
            "%all-gather-start = (f32[2]) all-gather-start(f32[1] %p), dimensions={0}",
            "%all-gather-done = f32[2] all-gather-done(%all-gather-start)",
            "%ar = f32[2] all-reduce(%x), to_apply=%add",
            "%cp = f32[2] collective-permute-start(%y), source_target_pairs={{0,1},{1,0}}",
            '%f = f32[2] fusion(%z), metadata={op_name="jit(f)/all_gather"}',
        ]
    )
    assert collectives.find_collectives(text) == ["all-gather", "all-reduce", "collective-permute"]


def test_replica_group_parsing():
    assert collectives.parse_replica_groups("{{0,1},{2,3}}") == [[0, 1], [2, 3]]
    assert collectives.parse_replica_groups("[2,4]<=[8]") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert collectives.parse_replica_groups("[4,2]<=[2,4]T(1,0)") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    mesh = mesh_of((2, 4), ("X", "Y"))
    assert collectives.axis_of_groups([[0, 4], [1, 5], [2, 6], [3, 7]], mesh) == "X"
    assert collectives.axis_of_groups([[4, 5, 6, 7], [0, 1, 2, 3]], mesh) == "Y"
    assert collectives.axis_of_groups([list(range(8))], mesh) == "X+Y"
    assert collectives.axis_of_groups([[0, 1], [2, 3], [4, 5], [6, 7]], mesh) == "?"
