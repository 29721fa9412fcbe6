"""规划器对照暴力枚举：在一条网格轴上列出所有合法做法，T_math 与 T_comms 在测试里从头算，不经过 planner 或 cost

模型（只在这个文件里写一次）：

- 芯片常数直接取自原书的规格表（REFERENCE §2），不读 shardlab.hardware；
- 一条轴上有 N 个设备；有 wraparound 时是双向环，否则是线。集合通信按块流水线化，
  时间 = 最忙的一条有向链路承载的字节数 / W_单向（带宽受限，hop_latency = 0）。
  链路负载由逐块路由数出来：AllGather 的每块从源设备沿路转发到所有设备（环上正对面那一块整块走顺时针，
  与原书和第 5 章的约定一致）；ReduceScatter 是它的转置，负载相同；AllReduce = ReduceScatter + AllGather；
  AllToAll 的每小块（V/N²）走最短路，环上正对面那一小块两个方向各走一半；
- 一个乘数在轴 X 上的状态是“X 切的维度”或“不切”。转移：相同 0；不切 → 切：免费的本地切片；
  切 → 不切：AllGather（V = 整个数组）；切 → 切另一维：AllToAll（V = 整个数组）；
- 本地 matmul 合法的状态：A、B 的收缩维都不切且非收缩维不同时用 X，或两者的收缩维都切（得到部分和 {U_X}）；
- 部分和：AllReduce（V = 每设备的缓冲区）到复制的输出，或 ReduceScatter 到某一维，再按上面的规则转移；
- T_math = 每设备 FLOPs / C；总时间：不重叠时 T_math + T_comms，重叠时 max(T_math, T_comms)。
"""

from __future__ import annotations

import itertools
import math

import pytest

from shardlab import planner

# 原书的芯片规格（REFERENCE §2）：bf16 FLOP/s、每条链路单方向带宽（B/s）
CHIPS = {"v5p": (4.59e14, 9.0e10), "v5e": (1.97e14, 4.5e10), "v4p": (2.75e14, 4.5e10), "v6e": (9.20e14, 9.0e10)}

# (芯片, 切片形状, 轴长 N, 有没有 wraparound)：v5e 只有长度 16 的轴回绕；v4p/v5p 的整立方体每条轴都回绕
AXES = [
    ("v5p", (4, 4, 4), 4, True),
    ("v4p", (4, 4, 8), 8, True),
    ("v5e", (16, 16), 16, True),
    ("v5e", (4, 4), 4, False),
    ("v5e", (8, 8), 8, False),
    ("v6e", (16, 16), 16, True),
    ("v4p", (2, 4, 4), 2, False),  # 不是整立方体：长度 2 的轴是线
]

SHAPES = [
    {"I": 4096, "J": 8192, "K": 16384},  # 第 6.3 节的表
    {"I": 128, "J": 8192, "K": 32768},  # 小批量：激活值小，权重大
    {"I": 65536, "J": 8192, "K": 32768},  # 大批量：激活值大
    {"I": 1024, "J": 512, "K": 8192},  # 收缩维短
]

A_STARTS = ("I", "J", None)  # A[I, J] 上 X 切哪一维
B_STARTS = ("J", "K", None)  # B[J, K] 上 X 切哪一维
TARGETS = {"C[I, K]": None, "C[I_X, K]": "I", "C[I, K_X]": "K"}
BYTES = 2  # bf16


def link_loads(kind: str, v: float, n: int, wrap: bool) -> float:
    """最忙的有向链路承载的字节数，逐块路由数出来；链路 (i, ±1) 是设备 i 往 i±1 的方向"""
    load: dict[tuple[int, int], float] = {}

    def walk(src: int, step: int, hops: int, nbytes: float):
        at = src
        for _ in range(hops):
            load[(at, step)] = load.get((at, step), 0.0) + nbytes
            at = (at + step) % n

    for src in range(n):
        if kind == "all_gather":
            chunk = v / n
            if wrap:  # 顺时针送到 ⌊N/2⌋ 跳以内，逆时针送其余
                walk(src, +1, n // 2, chunk)
                walk(src, -1, n - 1 - n // 2, chunk)
            else:  # 线：向两端各送到头
                walk(src, +1, n - 1 - src, chunk)
                walk(src, -1, src, chunk)
        elif kind == "all_to_all":
            chunk = v / (n * n)
            for dst in range(n):
                if dst == src:
                    continue
                if wrap:
                    cw = (dst - src) % n
                    if 2 * cw < n:
                        walk(src, +1, cw, chunk)
                    elif 2 * cw > n:
                        walk(src, -1, n - cw, chunk)
                    else:  # 正对面：两个方向各一半
                        walk(src, +1, cw, chunk / 2)
                        walk(src, -1, cw, chunk / 2)
                else:
                    walk(src, +1 if dst > src else -1, abs(dst - src), chunk)
        else:
            raise ValueError(kind)
    return max(load.values())


def t_collective(kind: str, v: float, n: int, wrap: bool, w_oneway: float) -> float:
    if kind in ("all_gather", "reduce_scatter"):
        return link_loads("all_gather", v, n, wrap) / w_oneway
    if kind == "all_reduce":
        return 2 * link_loads("all_gather", v, n, wrap) / w_oneway
    return link_loads("all_to_all", v, n, wrap) / w_oneway


def move(src, dst, v, n, wrap, w):
    """一个没有未规约轴的数组从 src（X 切的维度或 None）到 dst 的最少通信时间"""
    if src == dst or src is None:
        return 0.0  # 不动，或免费的本地切片
    if dst is None:
        return t_collective("all_gather", v, n, wrap, w)
    return t_collective("all_to_all", v, n, wrap, w)


def brute_force(a0, b0, target, shapes, n, wrap, chip):
    """{(A 的本地状态, B 的本地状态): (T_math, T_comms)}：每个合法的本地 matmul 状态取通信最少的路径"""
    flops_rate, w = CHIPS[chip]
    i, j, k = shapes["I"], shapes["J"], shapes["K"]
    va, vb, vc = BYTES * i * j, BYTES * j * k, BYTES * i * k
    out = {}
    for a_loc, b_loc in itertools.product(A_STARTS, B_STARTS):
        if (a_loc == "J") != (b_loc == "J") or (a_loc == "I" and b_loc == "K"):
            continue  # 收缩维没有对齐，或两个非收缩维都用 X
        t_in = move(a0, a_loc, va, n, wrap, w) + move(b0, b_loc, vb, n, wrap, w)
        local = {"I": i // n if a_loc == "I" else i, "J": j // n if a_loc == "J" else j,
                 "K": k // n if b_loc == "K" else k}  # fmt: skip
        t_math = 2 * local["I"] * local["J"] * local["K"] / flops_rate
        if a_loc == "J":  # 部分和 C[I, K]{U_X}：每设备的缓冲区是整个 C
            via_ar = t_collective("all_reduce", vc, n, wrap, w) + move(None, target, vc, n, wrap, w)
            via_rs = min(
                t_collective("reduce_scatter", vc, n, wrap, w) + move(d, target, vc, n, wrap, w) for d in ("I", "K")
            )
            t_out = min(via_ar, via_rs)
        else:
            c_loc = "I" if a_loc == "I" else ("K" if b_loc == "K" else None)
            t_out = move(c_loc, target, vc, n, wrap, w)
        out[(a_loc, b_loc)] = (t_math, t_in + t_out)
    return out


def _spec(name, dims, pos):
    return f"{name}[" + ", ".join(f"{d}_X" if d == pos else d for d in dims) + "]"


def _loc(spec, dim_a, dim_b):
    """本地 matmul 时 X 切在哪一维"""
    return dim_a if spec.axes_of(dim_a) else (dim_b if spec.axes_of(dim_b) else None)


GRID = list(itertools.product(AXES, range(len(SHAPES)), A_STARTS, B_STARTS, TARGETS, (False, True)))


@pytest.mark.parametrize(("axis", "shape_id", "a0", "b0", "target", "overlap"), GRID)
def test_planner_matches_brute_force(axis, shape_id, a0, b0, target, overlap):
    chip, slice_shape, n, wrap = axis
    shapes = SHAPES[shape_id]
    combine = max if overlap else (lambda tm, tc: tm + tc)
    found = brute_force(a0, b0, TARGETS[target], shapes, n, wrap, chip)
    best = min(combine(*t) for t in found.values())
    p = planner.plan_matmul(
        _spec("A", "IJ", a0), _spec("B", "JK", b0), "J", {"X": n}, chip,
        shapes=shapes, out=target, slice_shape=slice_shape, hop_latency=0, overlap=overlap,
    )  # fmt: skip
    assert str(p.out) == target
    assert p.t_total == pytest.approx(best, rel=1e-9)
    # 选中做法的本地状态在暴力枚举里，两段时间都对得上
    state = (_loc(p.chosen.a_local, "I", "J"), _loc(p.chosen.b_local, "J", "K"))
    t_math, t_comms = found[state]
    assert p.t_math == pytest.approx(t_math, rel=1e-9)
    assert p.t_comms == pytest.approx(t_comms, rel=1e-9)
    assert p.t_total == pytest.approx(combine(p.t_math, p.t_comms), rel=1e-9)


def test_link_counting_matches_closed_forms():
    """数链路的结果与熟悉的闭式一致：有回绕的偶数 N 上 AllGather = V/W_双向，线上 (N-1)/N·V/W_单向"""
    v, w = 1e6, 1.0
    assert t_collective("all_gather", v, 4, True, w) == pytest.approx(v / (2 * w))
    assert t_collective("all_gather", v, 4, False, w) == pytest.approx(3 / 4 * v / w)
    assert t_collective("all_to_all", v, 8, True, w) == pytest.approx(v / 4 / (2 * w))  # AllGather 的 1/4
    assert t_collective("all_to_all", v, 4, False, w) == pytest.approx(4 * v / 16 / w)


def test_case2_row_of_section_6_3_is_not_gather_a():
    """6.3 节的 Case 2 行（v5p，轴长 4，I, J, K = 4096, 8192, 16384）：AllGather_X(A) 后每个设备算整个乘法，
    T_math ≈ 2.40 ms，总 ≈ 2.77 ms；本地切片 B + AllReduce 约 2.09 ms，AllToAll A → 分摊计算 → AllGather C
    约 1.43 ms。只数字节时规划器选 AllGather A；按总时间它必须选最快的那一种"""
    shapes = SHAPES[0]
    found = brute_force("J", None, None, shapes, 4, True, "v5p")
    gather_a, reduce_c, a2a = (sum(found[s]) for s in ((None, None), ("J", "J"), ("I", None)))
    assert gather_a == pytest.approx(2.77e-3, rel=0.01) and reduce_c == pytest.approx(2.09e-3, rel=0.01)
    assert a2a == pytest.approx(1.43e-3, rel=0.01) == min(sum(t) for t in found.values())
    p = planner.plan_matmul("A[I, J_X]", "B[J, K]", "J", {"X": 4}, "v5p", shapes=shapes, slice_shape=(4, 4, 4))
    assert p.kinds == ("all_to_all", "all_gather") and p.t_total == pytest.approx(a2a, rel=1e-6)
    gather = next(o for o in p.alternatives if o.kinds == ("all_gather",) and o.steps[0].operand == "A")
    assert gather.t_total == pytest.approx(gather_a, rel=0.01) and gather.t_total > p.t_total
    assert math.isclose(p.t_total, p.t_math + p.t_comms)
