"""轴长不等的多轴 AllGather：同一阶段里各片走不同的轴，各走各的，不逐步互等

独立的核对：测试自己从调度表按 (源, 目的, 端口) 数每条有向链路的字节，不用模拟器的计数；
2×4 两条线的时间由手算得出。
"""

import math
from collections import defaultdict

import numpy as np
import pytest

from shardlab import cost, ring
from shardlab.torus import Torus, allgather_schedule

W1 = 4.5e10  # 单向（字节/秒）
WB = 2 * W1
V = 3.2e7  # 字节

SHAPES = [
    ((2, 4), (False, False)),  # v5e 2×4：两条线
    ((2, 4), (True, True)),
    ((2, 8), (False, False)),
    ((4, 8), (False, False)),
    ((4, 8), (True, True)),
    ((8, 4), (False, True)),
    ((2, 4, 8), (False, False, False)),
]


def _busiest_link_bytes(topo: Torus, v: float) -> float:
    """按调度表逐次传输累加每条有向链路的字节（只用 src、port、nbytes），返回最忙那条的总字节"""
    n, k = topo.n, topo.k
    sched = allgather_schedule(topo, np.full((n, k), v / n / k))
    load: dict = defaultdict(float)
    for src, port, nbytes in zip(sched.src.tolist(), sched.port.tolist(), sched.nbytes.tolist()):
        load[(src, port)] += nbytes
    return max(load.values())


def _ingress(v: float, shape, wraps) -> float:
    n = math.prod(shape)
    return (n - 1) / n * v / sum(WB if w else W1 for w in wraps)


@pytest.mark.parametrize("shape,wraps", SHAPES, ids=str)
@pytest.mark.parametrize("lat", [0.0, 1e-6])
def test_cost_equals_simulator(shape, wraps, lat):
    topo = Torus(shape, wraparound=wraps)
    for v in (V, 96.0):
        for coll, func in [
            ("all_gather", cost.allgather_multi_axis),
            ("reduce_scatter", cost.reducescatter_multi_axis),
            ("all_reduce", cost.allreduce_multi_axis),
        ]:
            sim = ring.count(coll, topo, v).time(W1, lat)
            assert math.isclose(func(v, shape, WB, lat, wraps), sim, rel_tol=1e-9), (coll, v)


@pytest.mark.parametrize("shape,wraps", SHAPES, ids=str)
def test_time_is_at_least_the_busiest_link_and_the_ingress_bound(shape, wraps):
    t = cost.allgather_multi_axis(V, shape, WB, 0.0, wraps)
    busiest = _busiest_link_bytes(Torus(shape, wraparound=wraps), V)
    assert t >= busiest / W1 * (1 - 1e-12)
    assert t >= _ingress(V, shape, wraps) * (1 - 1e-12)
    assert math.isclose(ring.count("all_gather", Torus(shape, wraparound=wraps), V).max_link_bytes, busiest)


def test_2x4_lines_by_hand():
    # c = V/16/W_oneway（每片 V/(8·2)）。第 0 阶段：片 0 沿 X（1 步，每步 c），片 1 沿 Y（3 步，每步 c）→ 3c；
    # 第 1 阶段：片 0 沿 Y（收齐 X 的 2 块，每步 2c，3 步 = 6c），片 1 沿 X（收齐 Y 的 4 块，1 步 = 4c）→ 6c
    c = V / 16 / W1
    t = cost.allgather_multi_axis(V, (2, 4), WB, 0.0, (False, False))
    assert math.isclose(t, 9 * c, rel_tol=1e-12)
    assert math.isclose(ring.count("all_gather", Torus((2, 4), wraparound=False), V).time(W1), 9 * c)
    # Y 轴最忙的链路要运 3·c + 6·c 的字节：这个调度已经贴着它自己最忙的链路
    assert math.isclose(_busiest_link_bytes(Torus((2, 4), wraparound=False), V) / W1, 9 * c)
    assert math.isclose(_ingress(V, (2, 4), (False, False)), 7 * c)
    # 只沿 Y 收集同样大的 V：线上 3 步，每步 V/4 → 12c；比值 4/3
    one = cost.allgather_line(V, 4, W1)
    assert math.isclose(one / t, 4 / 3)


def test_2x4_wrapped_and_2x8_lines_by_hand():
    # 2×4 有 wraparound：X 1 步、Y 2 步；(max(c, 2c) = 2c) + (max(2·2c, 1·4c) = 4c) = 6c
    c = V / 16 / W1
    assert math.isclose(cost.allgather_multi_axis(V, (2, 4), WB), 6 * c)
    # 2×8 两条线，d = V/32/W1：max(d, 7d) + max(7·2d, 1·8d) = 21d
    d = V / 32 / W1
    assert math.isclose(cost.allgather_multi_axis(V, (2, 8), WB, 0.0, (False, False)), 21 * d)


@pytest.mark.parametrize("shape", [(4, 4), (8, 8), (4, 4, 4)])
def test_equal_axes_are_unchanged(shape):
    # 各轴一样长时各片步数相同，各走各的与逐步同步是同一个数：第 j 阶段 (L/2) 步，每步 V/(kN)·L^j
    k, n, size = len(shape), math.prod(shape), shape[0]
    expected = sum((size // 2) * V / (k * n) * size**j for j in range(k)) / W1
    assert math.isclose(cost.allgather_multi_axis(V, shape, WB), expected)
