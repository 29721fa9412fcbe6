"""代价模型对模拟器：闭式公式必须等于环形 / 环面模拟器给自己的调度逐步计时的结果

模拟器（shardlab.ring）真的按调度搬块，每一步的时间是 max(t_hop, 这一步最忙的有向链路字节数 / W_oneway)，
总时间是各步之和；它不调用 shardlab.cost。AllGather、ReduceScatter、AllReduce 在环、线、多轴环面与没有
wraparound 的切片上逐步都是同样大的块，公式必须与模拟器精确相等（含延迟项）。AllToAll 的公式是流水化后
最忙链路的字节数（模拟器的 link_bound_time，精确相等）与延迟项中的较大者；模拟器的存储转发时间在
[公式, 延迟项 + 带宽项] 之内（max(a, b) ≤ Σ_s max(t_hop, x_s) ≤ Σ_s t_hop + Σ_s x_s）。
"""

import math

import pytest

from shardlab import cost, ring
from shardlab.torus import Ring, Torus

W1 = 4.5e10  # 单向
WB = 2 * W1
V = 3.0e7  # 字节：足够大，带宽受限
TINY = 96.0  # 字节：延迟受限
LATS = (0.0, 1e-6)

# (拓扑, 单轴的闭式函数名)
RINGS = [(Ring(n), "bidir_ring") for n in (2, 3, 4, 7, 8, 16)]
RINGS += [(Ring(n, bidirectional=False), "oneway_ring") for n in (2, 3, 5, 8)]
RINGS += [(Ring(n, wraparound=False), "line") for n in (2, 3, 4, 8)]
TORI = [
    Torus((2, 2), wraparound=False),  # v5e 2×2（第 6 章习题 5）
    Torus((4, 4)),  # v4p 切片里的 X、Y
    Torus((4, 4), wraparound=False),  # v5e 4×4
    Torus((8, 4), wraparound=(False, False)),  # v5e 8×4
    Torus((8, 16), wraparound=(False, True)),  # v5e 8×16：只有 16 的轴有 wraparound
    Torus((16, 16)),
    Torus((4, 4, 4)),
    Torus((2, 2, 4), wraparound=False),  # v5p 2×2×4：不是完整立方体
    Torus((3, 5)),
]


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


def _bw(kind):
    return WB if kind == "bidir_ring" else W1


@pytest.mark.parametrize("topo,kind", RINGS, ids=lambda x: repr(x) if not isinstance(x, str) else x)
@pytest.mark.parametrize("v", [V, TINY])
@pytest.mark.parametrize("lat", LATS)
def test_single_axis_formulas_equal_simulated_time(topo, kind, v, lat):
    n = topo.n
    for coll in ("allgather", "reducescatter", "allreduce"):
        name = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "allreduce": "all_reduce"}[coll]
        sim = ring.count(name, topo, v).time(W1, lat)
        assert _close(getattr(cost, f"{coll}_{kind}")(v, n, _bw(kind), lat), sim), (coll, topo)
    a2a = ring.count("all_to_all", topo, v)
    formula = getattr(cost, f"alltoall_{kind}")(v, n, _bw(kind), lat)
    assert _close(getattr(cost, f"alltoall_{kind}")(v, n, _bw(kind)), a2a.link_bound_time(W1))
    lat_term = getattr(cost, f"alltoall_{kind}")(0.0, n, _bw(kind), lat)
    assert formula * (1 - 1e-12) <= a2a.time(W1, lat)  # 存储转发不比流水化快
    assert _close(a2a.time(W1, lat), max(lat_term, a2a.link_bound_time(W1))) or kind == "line"


@pytest.mark.parametrize("topo", TORI, ids=repr)
@pytest.mark.parametrize("v", [V, TINY])
@pytest.mark.parametrize("lat", LATS)
def test_multi_axis_formulas_equal_simulated_time(topo, v, lat):
    shape, wraps = topo.shape, topo.wraparound
    ag = ring.count("all_gather", topo, v).time(W1, lat)
    rs = ring.count("reduce_scatter", topo, v).time(W1, lat)
    ar = ring.count("all_reduce", topo, v).time(W1, lat)
    assert _close(cost.allgather_multi_axis(v, shape, WB, lat, wraps), ag)
    assert _close(cost.reducescatter_multi_axis(v, shape, WB, lat, wraps), rs)
    assert _close(cost.allreduce_multi_axis(v, shape, WB, lat, wraps), ar)
    a2a = ring.count("all_to_all", topo, v)
    assert _close(cost.alltoall_nd(v, shape, WB, 0.0, wraps), a2a.link_bound_time(W1))
    assert cost.alltoall_nd(v, shape, WB, lat, wraps) * (1 - 1e-12) <= a2a.time(W1, lat)


def test_k_axes_are_about_k_times_faster_only_for_long_axes():
    # 同样的 V：沿 2 条轴收集比沿 1 条轴快多少（精确值）；书中的“k 倍”是大 N 极限
    def speedup(size, wrap):
        one = ring.count("all_gather", Torus((size,), wraparound=wrap), V).time(W1)
        two = ring.count("all_gather", Torus((size, size), wraparound=wrap), V).time(W1)
        return one / two

    assert _close(speedup(2, False), 4 / 3)  # 2×2 线：V/(2W1) 对 3V/(8W1)
    assert _close(speedup(4, True), 1.6)  # 4×4 环：V/W_bidir 对 1.25·V/(2·W_bidir)
    assert 1.85 < speedup(16, True) < 2.0
    assert speedup(16, True) == pytest.approx(2 / (16 / 15 * 255 / 256))


def test_ch06_p5_case_simulated():
    # 第 6 章习题 5：v5e 2×2（没有 wraparound），Out[B, D] = bf16[128, 8192]，ReduceScatter_XY + AllGather_XY
    v = 128 * 8192 * 2
    topo = Torus((2, 2), wraparound=False)
    sim = ring.count("reduce_scatter", topo, v).time(W1, 1e-6) + ring.count("all_gather", topo, v).time(W1, 1e-6)
    est = sum(
        cost.estimate(c, v, ["X", "Y"], "v5e", mesh={"X": 2, "Y": 2}).time_s for c in ("reduce_scatter", "all_gather")
    )
    assert _close(est, sim) and sim == pytest.approx(34.95e-6, rel=1e-3)


def test_book_published_multi_axis_answer_is_the_large_n_limit():
    # 原书 sharding.md 习题 2(b)：v4p 4×4×4 上 AllGather_XY(bf16[1024, 4096]) ≈ 46 µs（V/(2·W_bidir)）
    v = 1024 * 4096 * 2
    assert cost.allgather_multi_axis_limit(v, (4, 4), WB) == pytest.approx(46.6e-6, rel=1e-3)
    exact = ring.count("all_gather", Torus((4, 4)), v).time(W1)
    assert _close(exact, 1.25 * cost.allgather_multi_axis_limit(v, (4, 4), WB))
