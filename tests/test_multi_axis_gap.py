"""多轴 AllGather 与式 (多轴) 的差距从哪里来：正对面整块的约定，而不是 (N-1)/N

独立的核对：逐条链路数字节（模拟器的调度），以及入口下界（每个设备必须从入链路收下 (N-1)/N 个数组）。
"""

import numpy as np
import pytest

from shardlab import cost, hardware, ring
from shardlab.torus import Torus

V = 1e9
V5E, V4P = hardware.TPU_V5E, hardware.TPU_V4P


def test_4x4_forward_links_carry_twice_the_backward():
    # 全书的约定：正对面的块整块走正向；4×4 上正向链路共 10·V/32，反向 5·V/32
    per_link = ring.count("all_gather", Torus((4, 4)), V).link_bytes.sum(axis=0)
    assert sorted(set(np.round(per_link / (V / 32), 9))) == [5.0, 10.0]
    split = ring.count("all_gather", Torus((4, 4)), V, split_opposite=True).link_bytes.sum(axis=0)
    assert np.allclose(split, 7.5 * V / 32)  # 拆成两半：每条链路一样忙


def test_split_opposite_is_below_the_books_formula():
    w1 = V5E.ici_oneway_bw
    whole = ring.count("all_gather", Torus((4, 4)), V).time(w1)
    split = ring.count("all_gather", Torus((4, 4)), V, split_opposite=True).time(w1)
    limit = cost.allgather_multi_axis_limit(V, (4, 4), V5E.ici_bidir_bw)
    assert whole == pytest.approx(6.944e-3, rel=1e-3)
    assert split == pytest.approx(5.208e-3, rel=1e-3) and limit == pytest.approx(5.556e-3, rel=1e-3)
    assert split < limit < whole
    assert split == pytest.approx(15 / 16 * limit)  # (N-1)/N 让时间变短


@pytest.mark.parametrize(
    "shape, wrap", [((4,), True), ((8,), True), ((4, 4), True), ((4, 4, 4), True), ((2, 2), False)]
)
@pytest.mark.parametrize("coll, factor", [("all_gather", 1), ("reduce_scatter", 1), ("all_reduce", 2)])
def test_ingress_bound_is_reached(shape, wrap, coll, factor):
    # 入口下界：每个设备收下 (N-1)/N·V，入链路合计 Σ W_i（回绕轴 W_双向，线端 W_单向）
    topo = Torus(shape, wraparound=wrap)
    n = int(np.prod(shape))
    w_in = sum(V5E.ici_bidir_bw if wrap else V5E.ici_oneway_bw for _ in shape)
    bound = factor * (n - 1) / n * V / w_in
    assert cost.allgather_ingress_bound(V, shape, V5E.ici_bidir_bw, [wrap] * len(shape)) * factor == pytest.approx(
        bound
    )
    t = ring.count(coll, topo, V, split_opposite=True).time(V5E.ici_oneway_bw)
    assert t == pytest.approx(bound)
    # 每个设备收下的字节确实是 (N-1)/N·V（AllGather）
    if coll == "all_gather":
        res = ring.count(coll, topo, V, split_opposite=True)
        dst = np.array([d for (_, d) in topo.links])
        received = np.bincount(dst, weights=res.link_bytes.sum(axis=0), minlength=n)
        assert np.allclose(received, (n - 1) / n * V)


def test_split_schedule_still_gathers_the_right_arrays():
    data = [np.arange(4) + 10 * i for i in range(16)]
    whole = ring.all_gather(Torus((4, 4)), data)
    assert all(np.array_equal(f, whole.final[0]) for f in whole.final)


def test_p1b_ingress_bound_is_below_the_book():
    # 原书 P1(b)（v4p 4×4 上 AllGather_XY，bf16[1024, 4096]）约 46.6 µs；全书调度 58.3 µs；入口下界 43.7 µs
    v = 1024 * 4096 * 2
    bound = cost.allgather_ingress_bound(v, (4, 4), V4P.ici_bidir_bw)
    assert bound == pytest.approx(43.69e-6, rel=1e-3)
    assert ring.count("all_gather", Torus((4, 4)), v, split_opposite=True).time(V4P.ici_oneway_bw) == pytest.approx(
        bound
    )
    assert (
        bound
        < cost.allgather_multi_axis_limit(v, (4, 4), V4P.ici_bidir_bw)
        < cost.allgather_multi_axis(v, (4, 4), V4P.ici_bidir_bw)
    )


def test_2x2_lines_limit_vs_printed_formula():
    # 式 (多轴) 照印出来的样子 V/(k·W_双向) = 5.56 ms；2×2 的线上每个轴只有一个邻居，模拟器 8.33 ms = 1.5 倍
    printed = V / (2 * V5E.ici_bidir_bw)
    sim = ring.count("all_gather", Torus((2, 2), wraparound=False), V).time(V5E.ici_oneway_bw)
    assert sim / printed == pytest.approx(1.5)
    assert cost.allgather_multi_axis_limit(V, (2, 2), V5E.ici_bidir_bw, 0.0, [False, False]) == pytest.approx(
        2 * printed
    )


def _chain_allreduce(data, n_chunks):
    """独立的小模拟：部分和沿正向加到末端，再沿反向广播；返回结果与每一步每条有向链路的最大字节数"""
    n = len(data)
    chunks = [np.array_split(d, n_chunks) for d in data]
    acc = [list(c) for c in chunks]
    out = [[None] * n_chunks for _ in range(n)]
    loads = {}  # (步, 源, 目的) → 字节
    for c in range(n_chunks):  # 块 c 在第 c + i 步从 i 走到 i+1
        for i in range(n - 1):
            acc[i + 1][c] = acc[i + 1][c] + acc[i][c]
            key = (c + i, i, i + 1)
            loads[key] = loads.get(key, 0) + acc[i][c].nbytes
        out[n - 1][c] = acc[n - 1][c]
        for j in range(n - 1, 0, -1):  # 末端收齐后在第 c + (n-1) + (n-1-j) 步从 j 送回 j-1
            out[j - 1][c] = out[j][c]
            key = (c + (n - 1) + (n - 1 - j), j, j - 1)
            loads[key] = loads.get(key, 0) + out[j][c].nbytes
    steps = max(k[0] for k in loads) + 1
    per_step = [max(v for k, v in loads.items() if k[0] == s) for s in range(steps)]
    return [np.concatenate(o) for o in out], per_step


def test_pipelined_chain_allreduce_on_a_line_matches_the_wrapped_ring():
    n, k = 4, 64
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(k * 16) for _ in range(n)]
    result, per_step = _chain_allreduce(data, k)
    for r in result:
        np.testing.assert_allclose(r, sum(data))
    v = data[0].nbytes
    w1 = V5E.ici_oneway_bw
    t = sum(per_step) / w1  # 每一步每个方向的链路都只运一小块
    assert t == pytest.approx(v / w1 * (k + 2 * (n - 1) - 1) / k)  # 流水线填充之外正好 V/W_单向
    assert cost.allreduce_line_pipelined(v, n, w1) == pytest.approx(v / w1)
    assert cost.allreduce_line_pipelined(v, n, w1) == pytest.approx(cost.allreduce_bidir_ring(v, n, V5E.ici_bidir_bw))
    assert cost.allreduce_line(v, n, w1) / cost.allreduce_line_pipelined(v, n, w1) == pytest.approx(1.5)


def test_gpu_alltoall_latency_is_one_direct_step():
    # NCCL 的 AllToAll 不是环：固定开销 + 一步，不是 N-1 步
    h100 = hardware.H100
    assert cost.gpu_ring_latency("all_to_all", 8, 8, h100) == pytest.approx(6.6e-6 + 0.6e-6)
    assert cost.gpu_ring_latency("all_to_all", 64, 8, h100) == pytest.approx(6.6e-6 + h100.net_step_latency)
    assert cost.gpu_ring_latency("all_gather", 8, 8, h100) == pytest.approx(6.6e-6 + 7 * 0.6e-6)
