"""shardlab.ring / shardlab.torus：模拟结果等于参考语义，数出来的通信量等于 shardlab.cost 的公式"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardlab import cost, reference, ring
from shardlab.ring import Ring, Torus
from shardlab.torus import Schedule

W1 = 4.5e10  # 单向带宽（字节/秒）
WB = 2 * W1  # 双向带宽


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-18)


# ---- 步骤表（第 5 章要印的就是这两张） ----


def test_step_table_oneway_allgather_n4():
    r = ring.all_gather(Ring(4, bidirectional=False))
    assert r.step_table()[1] == ["D0=[A,D]", "D1=[B,A]", "D2=[C,B]", "D3=[D,C]"]
    assert ring.format_step_table(r).splitlines() == [
        "第 0 步  D0=[A]        D1=[B]        D2=[C]        D3=[D]",
        "第 1 步  D0=[A,D]      D1=[B,A]      D2=[C,B]      D3=[D,C]",
        "第 2 步  D0=[A,D,C]    D1=[B,A,D]    D2=[C,B,A]    D3=[D,C,B]",
        "第 3 步  D0=[A,D,C,B]  D1=[B,A,D,C]  D2=[C,B,A,D]  D3=[D,C,B,A]",
    ]
    assert r.final == [["A", "B", "C", "D"]] * 4


def test_step_table_bidir_allgather_n4():
    r = ring.all_gather(Ring(4, bidirectional=True))
    assert r.step_table() == [
        ["D0=[A]", "D1=[B]", "D2=[C]", "D3=[D]"],
        ["D0=[A,D,B]", "D1=[B,A,C]", "D2=[C,B,D]", "D3=[D,C,A]"],
        ["D0=[A,D,B,C]", "D1=[B,A,C,D]", "D2=[C,B,D,A]", "D3=[D,C,A,B]"],
    ]
    # 偶数 N：正对面的块只从正向来，最后一步反向链路空闲
    fwd = [i for i, (s, d) in enumerate(r.links) if d == (s + 1) % 4]
    back = [i for i in range(r.topology.n_links) if i not in fwd]
    assert r.link_bytes[1, back].sum() == 0 and r.link_bytes[1, fwd].min() == 1


def test_reduce_scatter_labels_show_partial_sums():
    r = ring.reduce_scatter(Ring(4, bidirectional=False), list("ABCD"))
    assert r.steps[0][0] == ["A0", "B0", "C0", "D0"]
    assert r.steps[1][0] == ["A0", "B0", "C0+C3"]
    assert r.final == [["ΣA"], ["ΣB"], ["ΣC"], ["ΣD"]]
    ar = ring.all_reduce(Ring(3, bidirectional=False))
    assert ar.final == [["ΣA", "ΣB", "ΣC"]] * 3


def test_all_to_all_labels_and_antipodal_split():
    r = ring.all_to_all(Ring(4, bidirectional=True))
    assert r.steps[0][1] == ["B0", "B1", "B2", "B3a", "B3b"]
    assert r.final[2] == ["A2a", "A2b", "B2", "C2", "D2"]
    assert ring.all_to_all(Ring(3, bidirectional=False)).final[0] == ["A0", "B0", "C0"]


def test_torus_piece_labels():
    r = ring.all_gather(Torus((2, 2)))
    assert r.steps[0][0] == ["A.0", "A.1"]
    assert sorted(r.steps[-1][3]) == sorted(f"{c}.{p}" for c in "ABCD" for p in (0, 1))
    rs = ring.reduce_scatter(Torus((2, 2)))
    assert rs.final[1] == ["ΣB.0", "ΣB.1"]
    assert "(B0+B2).0" in rs.steps[1][3] or any("+" in lbl for row in rs.steps[1] for lbl in row)


# ---- 结果等于 NumPy 参考语义（整数值的浮点数，求和精确） ----

TOPOLOGIES = [
    Ring(1),
    Ring(2, False),
    Ring(5, False),
    Ring(6),
    Ring(7),
    Ring(5, wraparound=False),
    Torus((2, 3)),
    Torus((4, 4)),
    Torus((2, 2, 2)),
    Torus((3, 4), wraparound=(False, True)),
    Torus((2, 4), bidirectional=False),
]


@settings(max_examples=40, deadline=None)
@given(
    t=st.integers(0, len(TOPOLOGIES) - 1),
    rows=st.integers(1, 2),
    cols=st.integers(1, 2),
    concurrent=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_results_equal_reference(t, rows, cols, concurrent, seed):
    topo = TOPOLOGIES[t]
    n = topo.n
    rng = np.random.default_rng(seed)
    # 第二维取 24 的倍数：拆成 k 片、正对面拆成 2^m 半时字节都能均分，才能与纯计数逐项比较
    blocks = [rng.integers(-50, 50, size=(rows * n, 24 * cols)).astype(np.float32) for _ in range(n)]

    def same(a, b):
        return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))

    assert same(
        ring.all_gather(topo, blocks, axis=1, concurrent=concurrent).final, reference.all_gather(blocks, axis=1)
    )
    assert same(ring.reduce_scatter(topo, blocks, concurrent=concurrent).final, reference.reduce_scatter(blocks))
    assert same(ring.all_reduce(topo, blocks, concurrent=concurrent).final, reference.all_reduce(blocks))
    a2a = ring.all_to_all(topo, blocks, split_axis=0, concat_axis=1)
    assert same(a2a.final, reference.all_to_all(blocks, split_axis=0, concat_axis=1))
    # 数组搬运得到的链路字节 = 只用字节数计数的结果
    v = float(blocks[0].nbytes)
    assert np.allclose(a2a.link_bytes, ring.count("all_to_all", topo, v * n).link_bytes)
    rs = ring.simulate("ReduceScatter", topo, blocks, concurrent=concurrent)
    assert np.allclose(rs.link_bytes, ring.count("reduce_scatter", topo, v, concurrent=concurrent).link_bytes)


def test_results_are_copies():
    blocks = [np.arange(4.0) + i for i in range(2)]
    out = ring.all_gather(Ring(2), blocks).final
    out[0][0] = -1
    assert blocks[0][0] == 0 and out[1][0] == 0


# ---- 数出来的时间等于 shardlab.cost（带宽受限，hop_latency = 0） ----


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 64), v=st.floats(1.0, 1e9), bidir=st.booleans())
def test_counted_ring_times_equal_cost(n, v, bidir):
    topo = Ring(n, bidirectional=bidir)
    suffix, bw = ("bidir_ring", WB) if bidir else ("oneway_ring", W1)
    for coll, name in [
        ("all_gather", "allgather"),
        ("reduce_scatter", "reducescatter"),
        ("all_reduce", "allreduce"),
        ("all_to_all", "alltoall"),
    ]:
        r = ring.count(coll, topo, v)
        expected = getattr(cost, f"{name}_{suffix}")(v, n, bw)
        assert _close(r.time(W1), expected), (coll, n, bidir)
        assert _close(r.link_bound_time(W1), expected)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 64), v=st.floats(1.0, 1e9))
def test_counted_line_times_equal_cost(n, v):
    topo = Ring(n, wraparound=False)
    for coll, name in [("all_gather", "allgather"), ("reduce_scatter", "reducescatter"), ("all_reduce", "allreduce")]:
        assert _close(ring.count(coll, topo, v).time(W1), getattr(cost, f"{name}_line")(v, n, W1))
    # 线上的 AllToAll：最忙链路 = 代价模型的带宽项；逐步相加的存储转发时间不会更短
    a2a = ring.count("all_to_all", topo, v)
    assert _close(a2a.link_bound_time(W1), cost.alltoall_line(v, n, W1))
    assert a2a.time(W1) >= a2a.link_bound_time(W1) * (1 - 1e-12)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.sampled_from([2, 4, 6]), min_size=2, max_size=3), v=st.floats(1.0, 1e9))
def test_torus_alltoall_busiest_link_equals_cost(shape, v):
    r = ring.count("all_to_all", Torus(tuple(shape)), v)
    assert _close(r.link_bound_time(W1), cost.alltoall_nd(v, shape, WB))


# ---- 书中的比值：由计数得到，精确的有限 N 值 ----


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16, 33, 64])
def test_ratios_by_counting(n):
    v = 1024.0
    one = {c: ring.count(c, Ring(n, False), v) for c in ring.COLLECTIVES}
    two = {c: ring.count(c, Ring(n, True), v) for c in ring.COLLECTIVES}
    # AllGather：单向环每条链路 V(N-1)/N、N-1 步；双向环 floor(N/2) 步，每条有向链路最多 floor(N/2)·V/N
    assert _close(one["all_gather"].max_link_bytes, v * (n - 1) / n) and one["all_gather"].n_steps == n - 1
    assert two["all_gather"].n_steps == n // 2
    assert _close(two["all_gather"].max_link_bytes, (n // 2) * v / n)
    for res in (one, two):
        # ReduceScatter 与 AllGather 对偶；AllReduce = 2 × AllGather（字节与步数）
        assert _close(res["reduce_scatter"].max_link_bytes, res["all_gather"].max_link_bytes)
        assert _close(res["all_reduce"].max_link_bytes, 2 * res["all_gather"].max_link_bytes)
        assert res["all_reduce"].n_steps == 2 * res["all_gather"].n_steps
        assert _close(res["all_reduce"].time(W1), 2 * res["all_gather"].time(W1))
    # AllToAll：单向环恰为 AllGather 的 1/2；双向环偶数 N 恰为 1/4，奇数 N 为 (N+1)/(4N)
    assert _close(one["all_to_all"].max_link_bytes / one["all_gather"].max_link_bytes, 0.5)
    quarter = 0.25 if n % 2 == 0 else (n + 1) / (4 * n)
    assert _close(two["all_to_all"].max_link_bytes / two["all_gather"].max_link_bytes, quarter)
    assert _close(two["all_to_all"].time(W1) / two["all_gather"].time(W1), quarter)


def test_limits_and_n_independence():
    v = 2.0**30
    # 偶数 N 的双向环：AllGather 时间恰为 V/W_bidir，与 N 无关
    assert all(_close(ring.count("all_gather", Ring(n), v).time(W1), v / WB) for n in (2, 4, 8, 64, 256))
    # 单向环趋于 V/W_oneway，AllToAll 双向环奇数 N 的比值趋于 1/4
    assert abs(ring.count("all_gather", Ring(1023, False), v).time(W1) / (v / W1) - 1) < 1e-3
    odd = ring.count("all_to_all", Ring(255), v).max_link_bytes / ring.count("all_gather", Ring(255), v).max_link_bytes
    assert abs(odd - 0.25) < 2e-3


@pytest.mark.parametrize("shape", [(4, 4), (8, 8), (4, 4, 4), (16, 16)])
def test_torus_allgather_concurrent_vs_sequential(shape):
    v, k, n = 1e6, len(shape), math.prod(shape)
    conc = ring.count("all_gather", Torus(shape), v)
    seq = ring.count("all_gather", Torus(shape), v, concurrent=False)
    # 并发：第 j 阶段每片（V/(kN)·L^j 字节）走 L/2 步；带宽项趋于 V/(k·W_bidir)
    size = shape[0]
    expected = sum((size // 2) * v / (k * n) * size**j for j in range(k)) / W1
    assert _close(conc.time(W1), expected)
    assert conc.time(W1) >= cost.allgather_multi_axis(v, shape, WB) * (1 - 1e-12)
    assert conc.time(W1) <= cost.allgather_multi_axis(v, shape, WB) * (1 + 1.0 / size + 1.0 / size**2)
    # 逐轴：约 V/W_bidir，是并发的约 k 倍
    assert _close(seq.time(W1), sum((size // 2) * v / n * size**j for j in range(k)) / W1)
    assert seq.time(W1) > (k - 0.5) * conc.time(W1)
    assert conc.n_steps == seq.n_steps == k * (size // 2)


def test_result_helpers():
    r = ring.count("all_gather", Ring(4, False), 4.0)
    assert r.links == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert r.total_link_bytes == 12.0 and list(r.per_link_bytes) == [3.0] * 4
    assert r.time(1.0, hop_latency=5.0) == 15.0
    empty = ring.count("all_to_all", Ring(1), 8.0)
    assert empty.n_steps == 0 and empty.max_link_bytes == 0.0 and empty.time(1.0) == 0.0
    assert ring.all_gather(Ring(1), [np.ones(2)]).final[0].tolist() == [1.0, 1.0]
    assert "单向" in Ring(3, False).describe() and "(线)" in Ring(3, wraparound=False).describe()
    assert repr(Ring(3, False)) == "Ring(3, bidirectional=False, wraparound=True)"
    assert repr(Torus((2, 2))).startswith("Torus((2, 2)")


@pytest.mark.parametrize(
    "call",
    [
        lambda: Ring(0),
        lambda: Torus(()),
        lambda: Torus((2, 2), wraparound=(True,)),
        lambda: Ring(4, False, wraparound=False),
        lambda: ring.all_gather(Ring(3), ["A", "B"]),
        lambda: ring.all_gather(Ring(2), [np.ones(2)] * 2, v_bytes=8),
        lambda: ring.reduce_scatter(Ring(2), [np.float64(1.0)] * 2),
        lambda: ring.reduce_scatter(Ring(3), [np.ones(4)] * 3),
        lambda: ring.all_to_all(Ring(3), [np.ones(4)] * 3),
        lambda: ring.count("broadcast", Ring(2), 1.0),
        lambda: ring.count("all_gather", Ring(2), -1.0),
        lambda: ring.count("all_gather", Ring(2), 1.0).step_table(),
        lambda: ring.count("all_gather", Ring(2), 1.0).time(0.0),
        lambda: ring.count("all_gather", Ring(2), 1.0).link_bound_time(-1.0),
    ],
)
def test_invalid_inputs_raise_valueerror(call):
    with pytest.raises(ValueError):
        call()


def _tiny_schedule(op, src, dst, key, nbytes=1.0):
    z = np.zeros(1, dtype=np.int64)
    return Schedule(z, z + src, z + dst, z, np.array([nbytes]), [[key]], [op])


def test_executor_rejects_bad_schedules():
    with pytest.raises(ValueError, match="不存在的链路"):
        Ring(3, False).link_index(np.array([0]), np.array([1]))
    state = [{("a",): ((), None)}, {}]
    with pytest.raises(RuntimeError, match="它没有的块"):
        ring._execute(_tiny_schedule("copy", 1, 0, ("a",)), state, {("a",): 1.0}, lambda k, p: "x")
    with pytest.raises(RuntimeError, match="字节"):
        ring._execute(_tiny_schedule("copy", 0, 1, ("a",), 2.0), state, {("a",): 1.0}, lambda k, p: "x")
    with pytest.raises(RuntimeError, match="状态不对"):
        ring._execute(_tiny_schedule("add", 0, 1, ("a",)), state, {("a",): 1.0}, lambda k, p: "x")
