"""cost 模块：书中数字的回归测试、逐条链路计数的精确性、hypothesis 性质测试、输入检查、estimate"""

import dataclasses
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardlab import cost, hardware

V5E_ONEWAY, V5E_BIDIR = 4.5e10, 9e10
US = 1e-6


# ---- 书中的数字（How To Scale Your Model：sharding.md、gpus.md 的公式与实测） ----


def test_v5e_allgather_without_wraparound_is_560us():
    # sharding.md Case 2 例题：v5e {X:8, Y:4}，bf16[2048, 8192] 沿 Y 收集，Y=4 没有 wraparound
    v = 2048 * 8192 * 2  # 33,554,432 B，书中写作 34 MB
    t = cost.allgather_line(v, 4, V5E_ONEWAY)
    assert t == pytest.approx(3 * (v / 4) / V5E_ONEWAY)
    assert t == pytest.approx(559.2 * US, rel=1e-3)
    assert t == pytest.approx(560 * US, rel=0.01)  # 书中的 3 × 8.4e6 / 4.5e10


def test_v5e_allgather_with_wraparound_is_377us():
    # 书中用 V = 34e6 得 377 µs；用精确的 V = 33,554,432 B 得 373 µs
    assert cost.allgather_bidir_ring(34e6, 4, V5E_BIDIR) == pytest.approx(377.8 * US, rel=1e-3)
    assert cost.allgather_bidir_ring(2048 * 8192 * 2, 4, V5E_BIDIR) == pytest.approx(372.8 * US, rel=1e-3)


def test_v5e_small_allgather_is_latency_bound_3us():
    # bf16[256, 256]：每块 32 kB < 45 kB 的每跳阈值，3 跳 × 1 µs
    v = 256 * 256 * 2
    assert v / 4 < cost.latency_threshold_bytes(V5E_ONEWAY, 1e-6) == pytest.approx(45e3)
    est = cost.estimate("all_gather", v, ["Y"], "v5e", mesh={"X": 8, "Y": 4})
    assert est.time_s == pytest.approx(3 * US)
    assert est.regime == "latency-bound" and est.wraparound == (False,)
    assert est.bandwidth_term_s == pytest.approx(3 * (v / 4) / V5E_ONEWAY)


def test_v5e_large_allgather_estimate_matches_line_formula():
    v = 2048 * 8192 * 2
    est = cost.estimate("AllGather", v, {"Y": 4}, "TPU v5e", mesh={"X": 8, "Y": 4})
    assert est.time_s == pytest.approx(cost.allgather_line(v, 4, V5E_ONEWAY))
    assert est.regime == "bandwidth-bound"
    assert "559 µs" in str(est) and "带宽受限" in str(est) and "线形" in str(est)


def test_v4p_allgather_problem():
    # sharding.md 习题 2：v4p 4x4x4，mesh {X:4, Y:4, Z:4}，bf16[1024, 4096] 分片为 [B_X, D_Y]
    mesh = {"X": 4, "Y": 4, "Z": 4}
    full = 2 * 1024 * 4096
    est_x = cost.estimate("all_gather", full / 4, ["X"], "v4p", mesh=mesh)  # 收集后每设备持有 [B, D/Y]
    assert est_x.wraparound == (True,)
    assert est_x.time_s == pytest.approx(full / 4 / 9e10) == pytest.approx(23.3 * US, rel=1e-3)
    # 书中答案约 46 µs：多轴公式的大 N 极限 V/(2·W_bidir)
    limit = cost.allgather_multi_axis_limit(full, [4, 4], 9e10)
    assert limit == pytest.approx(full / (2 * 9e10)) == pytest.approx(46.6 * US, rel=1e-3)
    # estimate 用模拟器调度的精确值：4×4 为 L(N-1)/((L-1)N) = 4·15/(3·16) = 1.25 倍
    est_xy = cost.estimate("all_gather", full, ["X", "Y"], "v4p", mesh=mesh)
    assert est_xy.time_s == pytest.approx(1.25 * limit) == pytest.approx(58.3 * US, rel=1e-3)
    # 习题 3：bf16[128] 在 X 上收集，延迟受限，2 跳
    tiny = cost.estimate("all_gather", 256, ["X"], "v4p", mesh=mesh)
    assert tiny.time_s == pytest.approx(2 * US) and tiny.regime == "latency-bound"


def test_7b_gradient_allreduce_on_8_h100():
    grad = 7e9 * 2  # bf16 梯度
    exact = cost.gpu_allreduce_in_node(grad, 8, hardware.H100.nvlink_bw_per_direction)
    assert exact == pytest.approx(2 * grad * 7 / 8 / 450e9) == pytest.approx(54.4e-3, rel=1e-3)  # 含 (N-1)/N
    book = cost.t_comms(2 * grad, 450e9)  # 62 ms 是去掉 (N-1)/N 的大 N 极限：2 × 14 GB / 450 GB/s
    assert book == pytest.approx(62.2e-3, rel=1e-3)
    assert book - exact > 5e-3
    est = cost.estimate("all_reduce", grad, {"data": 8}, "h100")
    assert est.bandwidth_term_s == pytest.approx(exact)
    assert est.time_s == pytest.approx(exact + 6.6e-6 + 14 * 0.6e-6)  # 加上 NCCL 模型的延迟项：2(N-1) 步


def test_h100_node_allgather_1ms():
    # gpus.md 节点习题 3：bf16[4096, 65536]（512 MiB）在 8×H100 上 AllGather，约 1.04 ms
    assert cost.gpu_allgather_in_node(4096 * 65536 * 2, 8, 450e9) == pytest.approx(1.04e-3, rel=0.01)


def test_tensor_parallel_threshold_on_v5e():
    assert cost.compute_bound_d_threshold(4, 1.97e14, V5E_BIDIR) == pytest.approx(17511.1, rel=1e-5)
    assert cost.compute_bound_d_threshold(2, 1.97e14, V5E_BIDIR) == pytest.approx(8755.6, rel=1e-5)
    assert cost.is_compute_bound(17512, 4, 1.97e14, V5E_BIDIR)
    assert not cost.is_compute_bound(17511, 4, 1.97e14, V5E_BIDIR)
    assert cost.compute_bound_d_threshold(4, 1.97e14, V5E_BIDIR, bytes_per_elem=4) == pytest.approx(35022.2)


@pytest.mark.parametrize(
    ("chip", "expected"),
    [("v5p", 2550), ("v4p", 3055.6), ("v5e", 2188.9), ("v6e", 5111.1), ("h100", 2197.8), ("TPU v3", 700)],
)
def test_critical_intensity(chip, expected):
    assert cost.critical_intensity(chip) == pytest.approx(expected, rel=1e-4)


def test_sharded_matmul_times():
    b, d, f, n = 1024, 8192, 32768, 4
    times = cost.sharded_matmul_allreduce_times(b, d, f, n, 1.97e14, V5E_BIDIR)
    assert times.t_math == pytest.approx(2 * b * d * f / (n * 1.97e14))
    assert times.t_comms == pytest.approx(4 * b * f / V5E_BIDIR)  # 书中 bf16 的 4BF/W
    t_math, t_comms = times
    d_star = cost.compute_bound_d_threshold(n, 1.97e14, V5E_BIDIR)
    assert (t_math > t_comms) == (d > d_star)
    assert cost.matmul_flops(2, 3, 4) == 48
    assert cost.t_math(2e14, 1.97e14) == pytest.approx(1.0152, rel=1e-4)


def test_sharp_and_hierarchical_allreduce():
    v, w = 1e9, 450e9
    assert cost.gpu_allreduce_in_node(v, 8, w, sharp=True) == pytest.approx(v / w)  # 书中：恰为 V/W
    assert cost.gpu_allreduce_in_node(v, 1, w, sharp=True) == 0.0
    t = cost.gpu_allreduce_hierarchical(v, 8, 4, w, 400e9)
    assert t == pytest.approx(2 * v * 7 / (8 * w) + 2 * v * 3 / (4 * 400e9))
    assert t >= cost.gpu_allreduce_cross_node(v, 8, 4, w, 400e9)


def test_gpu_cross_node_formulas():
    v = 1e9
    assert cost.gpu_allgather_cross_node(v, 8, 1, 450e9, 400e9) == pytest.approx(
        cost.gpu_allgather_in_node(v, 8, 450e9)
    )
    assert cost.gpu_allgather_cross_node(v, 8, 32, 450e9, 400e9) == pytest.approx(v * 31 / (32 * 400e9))
    assert cost.gpu_reducescatter_cross_node(v, 8, 32, 450e9, 400e9) == cost.gpu_allgather_cross_node(
        v, 8, 32, 450e9, 400e9
    )
    # 跨 2 个节点的 AllToAll：精确式 V(M-1)/(M²W) = V/(4W)；书中近似 V/(M·W) = V/(2W)
    assert cost.gpu_alltoall_cross_node(v, 2, 400e9) == pytest.approx(v / (4 * 400e9))
    assert cost.gpu_alltoall_in_node(v, 8, 450e9) == pytest.approx(v * 7 / (64 * 450e9))


# ---- 逐条有向链路计数（与环形模拟器同一口径），检验环形函数对有限 N 精确 ----


def _alltoall_link_loads(n: int, topology: str) -> dict:
    """每条有向链路承载的块数（每块 V/N²）；双向环上正对面的块两个方向各走一半"""
    loads: dict = {}

    def walk(src, steps, direction, weight):
        for k in range(steps):
            a = (src + direction * k) % n if topology != "line" else src + direction * k
            loads[(a, direction)] = loads.get((a, direction), 0) + weight

    for s in range(n):
        for t in range(n):
            if s == t:
                continue
            d = (t - s) % n
            if topology == "oneway":
                walk(s, d, +1, 1)
            elif topology == "line":
                walk(s, abs(t - s), 1 if t > s else -1, 1)
            elif d < n - d:
                walk(s, d, +1, 1)
            elif d > n - d:
                walk(s, n - d, -1, 1)
            else:
                walk(s, d, +1, 0.5)
                walk(s, d, -1, 0.5)
    return loads


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 8, 16])
def test_alltoall_equals_busiest_link_count(n):
    v, w = 1e6 * n * n, 1e10
    chunk = v / (n * n)
    for topology, fn, bw in [
        ("oneway", cost.alltoall_oneway_ring, w),
        ("bidir", cost.alltoall_bidir_ring, 2 * w),
        ("line", cost.alltoall_line, w),
    ]:
        busiest = max(_alltoall_link_loads(n, topology).values())
        assert fn(v, n, bw) == pytest.approx(busiest * chunk / w), topology
    assert sum(min(d, n - d) for d in range(1, n)) == n * n // 4


def test_bidir_ring_allgather_odd_and_even():
    v, w = 1e9, 9e10
    assert cost.allgather_bidir_ring(v, 8, w) == pytest.approx(v / w)
    assert cost.allgather_bidir_ring(v, 7, w) == pytest.approx(6 / 7 * v / w)
    assert cost.allgather_bidir_ring(v, 1, w) == 0.0
    assert cost.allgather_oneway_ring(v, 1, w) == 0.0


def test_multi_axis_formulas():
    v, w = 1e9, 9e10
    assert cost.allgather_multi_axis_limit(v, [4, 4], w) == pytest.approx(v / (2 * w))
    assert cost.allgather_multi_axis_limit(1.0, [4, 4], w, 1e-3) == pytest.approx(4e-3)  # Σ|X_i|/2 = 4 跳
    assert cost.allgather_multi_axis_limit(v, [4, 1], w) == pytest.approx(v / w)  # 长度 1 的轴不参与
    assert cost.allgather_multi_axis_limit(v, [1, 1], w) == 0.0
    assert cost.allgather_multi_axis_limit(v, [8, 4], w, wraparound=[True, False]) == pytest.approx(v / (1.5 * w))
    # 精确值：4×4 是极限的 1.25 倍；每阶段 2 步、两个阶段共 4 步，小数组时受延迟限制
    assert cost.allgather_multi_axis(v, [4, 4], w) == pytest.approx(1.25 * v / (2 * w))
    assert cost.allgather_multi_axis(1.0, [4, 4], w, 1e-3) == pytest.approx(4e-3)
    assert cost.allgather_multi_axis(v, [4, 1], w) == pytest.approx(cost.allgather_bidir_ring(v, 4, w))
    assert cost.allgather_multi_axis(v, [1, 1], w) == 0.0
    assert cost.allgather_multi_axis(v, [2, 2], w, wraparound=[False, False]) == pytest.approx(3 * v / (8 * w / 2))
    assert cost.reducescatter_multi_axis(v, [4, 4], w) == cost.allgather_multi_axis(v, [4, 4], w)
    assert cost.alltoall_nd(v, [4, 8, 2], w) == pytest.approx(v * 8 / (4 * 64 * w))
    assert cost.alltoall_nd(v, [8], w) == pytest.approx(cost.alltoall_bidir_ring(v, 8, w))
    assert cost.alltoall_nd(v, [8], w, wraparound=[False]) == pytest.approx(cost.alltoall_line(v, 8, w / 2))
    assert cost.alltoall_nd(1.0, [4, 4], w, 1e-6) == pytest.approx(4e-6)


# ---- hypothesis 性质测试 ----

sizes = st.integers(2, 64)
volumes = st.floats(1e3, 1e12)
bandwidths = st.floats(1e9, 1e12)
latencies = st.sampled_from([0.0, 1e-6, 1e-3])


@settings(max_examples=60, deadline=None)
@given(v=volumes, n=sizes, w=bandwidths, lat=latencies)
def test_allreduce_is_twice_allgather(v, n, w, lat):
    for ar, ag in [
        (cost.allreduce_oneway_ring, cost.allgather_oneway_ring),
        (cost.allreduce_bidir_ring, cost.allgather_bidir_ring),
        (cost.allreduce_line, cost.allgather_line),
    ]:
        assert ar(v, n, w, lat) == pytest.approx(2 * ag(v, n, w, lat))
    assert cost.allreduce_multi_axis(v, [n, 4], w, lat) == pytest.approx(
        2 * cost.allgather_multi_axis(v, [n, 4], w, lat)
    )
    assert cost.gpu_allreduce_in_node(v, n, w) == pytest.approx(2 * cost.gpu_allgather_in_node(v, n, w))
    assert cost.gpu_allreduce_cross_node(v, 8, n, w, w) == pytest.approx(
        2 * cost.gpu_allgather_cross_node(v, 8, n, w, w)
    )
    for rs, ag in [
        (cost.reducescatter_oneway_ring, cost.allgather_oneway_ring),
        (cost.reducescatter_bidir_ring, cost.allgather_bidir_ring),
        (cost.reducescatter_line, cost.allgather_line),
    ]:
        assert rs(v, n, w, lat) == ag(v, n, w, lat)
    assert cost.gpu_reducescatter_in_node(v, n, w) == cost.gpu_allgather_in_node(v, n, w)


@settings(max_examples=60, deadline=None)
@given(v=volumes, n=sizes, w=bandwidths)
def test_alltoall_to_allgather_ratios(v, n, w):
    assert cost.alltoall_oneway_ring(v, n, w) / cost.allgather_oneway_ring(v, n, w) == pytest.approx(0.5)
    ratio = cost.alltoall_bidir_ring(v, n, w) / cost.allgather_bidir_ring(v, n, w)
    assert ratio == pytest.approx(0.25 if n % 2 == 0 else (n + 1) / (4 * n))
    assert cost.alltoall_line(v, n, w / 2) == pytest.approx(2 * cost.alltoall_bidir_ring(v, n, w))
    assert cost.gpu_alltoall_in_node(v, n, w) == pytest.approx(cost.gpu_allgather_in_node(v, n, w) / n)


@settings(max_examples=60, deadline=None)
@given(v=volumes, n=sizes, w_oneway=bandwidths, lat=latencies)
def test_bidirectional_never_slower_than_oneway(v, n, w_oneway, lat):
    w_bidir = 2 * w_oneway
    assert cost.allgather_bidir_ring(v, n, w_bidir, lat) <= cost.allgather_oneway_ring(v, n, w_oneway, lat)
    assert cost.allgather_bidir_ring(v, n, w_bidir, lat) <= cost.allgather_line(v, n, w_oneway, lat)
    assert cost.alltoall_bidir_ring(v, n, w_bidir, lat) <= cost.alltoall_oneway_ring(v, n, w_oneway, lat)


@settings(max_examples=60, deadline=None)
@given(v1=volumes, v2=volumes, n=sizes, w=bandwidths, lat=latencies)
def test_monotonic_in_bytes(v1, v2, n, w, lat):
    small, large = sorted((v1, v2))
    for fn in [
        cost.allgather_oneway_ring,
        cost.allgather_bidir_ring,
        cost.allgather_line,
        cost.allreduce_bidir_ring,
        cost.alltoall_oneway_ring,
        cost.alltoall_bidir_ring,
        cost.alltoall_line,
    ]:
        assert fn(small, n, w, lat) <= fn(large, n, w, lat)
    assert cost.gpu_allgather_in_node(small, n, w) <= cost.gpu_allgather_in_node(large, n, w)
    assert cost.alltoall_nd(small, [n, 2], w, lat) <= cost.alltoall_nd(large, [n, 2], w, lat)


@settings(max_examples=60, deadline=None)
@given(v=volumes, n=sizes, w=bandwidths)
def test_large_n_limit_independent_of_n(v, n, w):
    # 带宽受限时 T 与 N 无关，只差 (N-1)/N
    limit = v / w
    for t in [
        cost.allgather_bidir_ring(v, n, w),
        cost.allgather_oneway_ring(v, n, w / 2) / 2,
        cost.gpu_allgather_in_node(v, n, w),
    ]:
        assert limit * (n - 1) / n * (1 - 1e-12) <= t <= limit * (1 + 1e-12)
    assert cost.allgather_oneway_ring(v, n, w) == pytest.approx(limit * (n - 1) / n)


@settings(max_examples=60, deadline=None)
@given(n=sizes, w=bandwidths, lat=st.floats(1e-7, 1e-4))
def test_latency_bound_below_per_hop_threshold(n, w, lat):
    threshold = cost.latency_threshold_bytes(w, lat)
    small = 0.5 * threshold * n  # 每跳块 V/N 只有阈值的一半
    assert cost.allgather_oneway_ring(small, n, w, lat) == pytest.approx((n - 1) * lat)
    assert cost.allgather_bidir_ring(small, n, 2 * w, lat) == pytest.approx((n // 2) * lat)
    big = 2 * threshold * n
    assert cost.allgather_line(big, n, w, lat) == pytest.approx((n - 1) * big / n / w)


# ---- 输入检查 ----


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cost.allgather_bidir_ring(-1, 4, 9e10), "非负"),
        (lambda: cost.allgather_bidir_ring(float("nan"), 4, 9e10), "非负"),
        (lambda: cost.allgather_bidir_ring(True, 4, 9e10), "非负"),
        (lambda: cost.allgather_oneway_ring(1e6, 0, 4.5e10), "≥ 1"),
        (lambda: cost.allgather_line(1e6, 2.5, 4.5e10), "整数"),
        (lambda: cost.allgather_line(1e6, 4, 0), "带宽"),
        (lambda: cost.alltoall_bidir_ring(1e6, 4, -9e10), "带宽"),
        (lambda: cost.alltoall_oneway_ring(1e6, 4, 9e10, -1e-6), "hop_latency"),
        (lambda: cost.allgather_multi_axis(1e6, [], 9e10), "不能为空"),
        (lambda: cost.alltoall_nd(1e6, [4, 4], 9e10, wraparound=[True]), "wraparound"),
        (lambda: cost.gpu_allgather_cross_node(1e6, 8, 0, 450e9, 400e9), "节点数"),
        (lambda: cost.gpu_alltoall_cross_node(1e6, 2, 0), "node_bw"),
        (lambda: cost.t_math(-1, 1e14), "FLOPs"),
        (lambda: cost.t_comms(1e6, float("inf")), "带宽"),
        (lambda: cost.matmul_flops(0, 2, 3), "B"),
        (lambda: cost.compute_bound_d_threshold(4, 0, 9e10), "算力"),
    ],
)
def test_invalid_inputs_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(collective="broadcast"), "未知的集合通信"),
        (dict(axes=["Q"]), "未知的网格轴"),
        (dict(axes={"Y": 8}), "未知的网格轴"),
        (dict(axes=["X", "X"]), "重复"),
        (dict(axes=[]), "不能为空"),
        (dict(axes=["Y"], mesh=None), "需要 mesh"),
        (dict(axes={"Y": 4}, mesh=None), "需要 mesh 或 slice_shape"),
        (dict(axes={"Y": 0}, mesh=None), "≥ 1"),
        (dict(nbytes=-5), "非负"),
        (dict(hop_latency=-1.0), "hop_latency"),
        (dict(mesh={"X": 8, "Y": 4, "Z": 2}), "2D torus"),
    ],
)
def test_estimate_validation(kwargs, message):
    call = dict(collective="all_gather", nbytes=1e6, axes=["Y"], chip="v5e", mesh={"X": 8, "Y": 4}) | kwargs
    with pytest.raises(ValueError, match=message):
        cost.estimate(
            call["collective"],
            call["nbytes"],
            call["axes"],
            call["chip"],
            mesh=call["mesh"],
            hop_latency=call.get("hop_latency"),
        )


def test_estimate_unknown_chip():
    with pytest.raises(hardware.UnknownChipError, match="known chips"):
        cost.estimate("all_gather", 1e6, {"X": 4}, "tpu v9")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(axes={"d": 12}), "整分"),
        (dict(axes={"d": 8}, hop_latency=-1e-6), "延迟"),
        (dict(axes={"d": 16}, chip="a100"), "书中未给出"),
    ],
)
def test_estimate_gpu_validation(kwargs, message):
    call = dict(axes={"d": 8}, chip="h100", hop_latency=None) | kwargs
    with pytest.raises(ValueError, match=message):
        cost.estimate("all_gather", 1e6, call["axes"], call["chip"], hop_latency=call["hop_latency"])


# ---- estimate：路径选择与输出 ----


@pytest.mark.parametrize(
    ("alias", "ring", "line"),
    [
        ("all_gather", cost.allgather_bidir_ring, cost.allgather_line),
        ("ReduceScatter", cost.reducescatter_bidir_ring, cost.reducescatter_line),
        ("psum_scatter", cost.reducescatter_bidir_ring, cost.reducescatter_line),
        ("AllReduce", cost.allreduce_bidir_ring, cost.allreduce_line),
        ("psum", cost.allreduce_bidir_ring, cost.allreduce_line),
        ("all-to-all", cost.alltoall_bidir_ring, cost.alltoall_line),
    ],
)
def test_estimate_picks_ring_or_line(alias, ring, line):
    v, mesh = 64e6, {"X": 8, "Y": 16}
    wrapped = cost.estimate(alias, v, ["Y"], "v5e", mesh=mesh)
    assert wrapped.wraparound == (True,)
    assert wrapped.time_s == pytest.approx(ring(v, 16, V5E_BIDIR, 1e-6))
    unwrapped = cost.estimate(alias, v, ["X"], "v5e", mesh=mesh)
    assert unwrapped.wraparound == (False,)
    assert unwrapped.time_s == pytest.approx(line(v, 8, V5E_ONEWAY, 1e-6))
    assert unwrapped.time_s > wrapped.time_s


def test_estimate_multi_axis_and_slice_shape():
    v = 64e6
    est = cost.estimate("all_gather", v, {"X": 8, "Y": 16}, "v5e", slice_shape=(8, 16))
    assert est.wraparound == (False, True)
    assert est.time_s == pytest.approx(cost.allgather_multi_axis(v, [8, 16], V5E_BIDIR, 1e-6, [False, True]))
    a2a = cost.estimate("all_to_all", v, ["X", "Y", "Z"], "v5p", mesh={"X": 4, "Y": 4, "Z": 8})
    assert a2a.time_s == pytest.approx(cost.alltoall_nd(v, [4, 4, 8], 1.8e11, 1e-6))
    assert cost.estimate("all_reduce", v, {"X": 4, "Y": 4}, "v4p", slice_shape=(4, 4, 4)).time_s == pytest.approx(
        2 * 1.25 * v / (2 * 9e10)
    )


def test_estimate_gpu_paths():
    v = 1e9
    in_node = cost.estimate("all_to_all", v, {"ep": 8}, "h100")
    assert in_node.bandwidth_term_s == pytest.approx(cost.gpu_alltoall_in_node(v, 8, 450e9))
    assert in_node.time_s == pytest.approx(in_node.bandwidth_term_s + 6.6e-6 + 0.6e-6)  # AllToAll：一步直接交换
    assert in_node.wraparound is None and in_node.regime == "bandwidth-bound"
    cross = cost.estimate("all_gather", v, {"dp": 4, "tp": 8}, "b200")
    assert cross.bandwidth_term_s == pytest.approx(cost.gpu_allgather_cross_node(v, 8, 4, 900e9, 400e9))
    # 31 步里有 3 步跨节点（M-1 = 3）；跨节点时每步 NVLink 开销至少 1 µs（NCCL 的 net overhead）
    assert cross.time_s - cross.bandwidth_term_s == pytest.approx(6.6e-6 + 28 * 1.0e-6 + 3 * 2.7e-6)
    a2a = cost.estimate("all_to_all", v, {"ep": 16}, "h100")
    assert a2a.bandwidth_term_s == pytest.approx(cost.gpu_alltoall_cross_node(v, 2, 400e9))
    nvl = cost.estimate("all_reduce", v, {"dp": 72}, "gb200")
    assert nvl.bandwidth_term_s == pytest.approx(cost.gpu_allreduce_in_node(v, 72, 900e9))
    assert "节点内" in nvl.formula and "跨 M=4" in cross.formula


def test_gpu_small_messages_are_latency_bound():
    decode = cost.estimate("all_reduce", 8192 * 2, {"tp": 8}, "h100")  # 一个 token 的激活
    assert decode.regime == "latency-bound"
    assert decode.hop_latency_s == pytest.approx(cost.gpu_ring_latency("all_reduce", 8, 8, hardware.H100))
    assert cost.gpu_ring_latency("psum", 1, 8, hardware.H100) == 0.0
    faster = cost.estimate("all_reduce", 8192 * 2, {"tp": 8}, "h100", hop_latency=0.0)
    assert faster.time_s == pytest.approx(6.6e-6 + decode.bandwidth_term_s)


def test_estimate_emulated_cpu_runs_without_mesh():
    est = cost.estimate("all_gather", 1e8, {"X": 8}, "cpu")
    assert est.wraparound == (True,)
    assert est.time_s == pytest.approx(
        cost.allgather_bidir_ring(1e8, 8, hardware.CPU.ici_bidir_bw, hardware.CPU.hop_latency)
    )
    assert est.chip == hardware.CPU.name


def test_estimate_hop_latency_override_and_output():
    small = cost.estimate("all_gather", 256 * 256 * 2, ["Y"], "v5e", mesh={"X": 8, "Y": 4}, hop_latency=0.0)
    assert small.regime == "bandwidth-bound" and small.hop_latency_s == 0.0
    assert small.time_us == pytest.approx(small.time_s * 1e6)
    text = str(cost.estimate("all_gather", 256 * 256 * 2, ["Y"], "v5e", mesh={"X": 8, "Y": 4}))
    assert text.startswith("AllGather 沿 {Y: 4}，TPU v5e：约 3 µs，延迟受限（latency-bound）")
    assert "公式（formula）" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        small.time_s = 1.0


def test_cost_does_not_import_jax():
    source = open(cost.__file__, encoding="utf-8").read()
    assert "import jax" not in source and "from jax" not in source
    assert all(math.isfinite(cost.critical_intensity(c)) for c in hardware.ALL_CHIPS)
    assert "shardlab.cost" in sys.modules


def test_axis_bandwidth_names_the_direction_used_by_v_over_w():
    assert cost.axis_bandwidth("v5e") == 9e10  # 一条轴的 W_双向
    assert cost.axis_bandwidth("h100") == 450e9  # 每 GPU 单方向的 NVLink
    assert cost.compute_bound_d_threshold(4, hardware.TPU_V5E.flops_bf16, cost.axis_bandwidth("v5e")) == pytest.approx(
        2 * 4 * cost.critical_intensity("v5e")
    )
