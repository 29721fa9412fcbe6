"""第 5、6 章练习的答案登记表（answer registry）：每个答案 id 的含义、单位、参考算法和常见失误

登记表是数据：``ANSWER_LIST`` 里每个答案一条，按 id 就能找到。
数值答案的参考值是题目参数（``shardlab.exercise.problems``）的函数 ``reference(p)``，用 ``shardlab.cost`` 现算；
发布版参数下它与解答笔记本（solutions/）各自独立地推导，测试保证两者一致，换一组参数（个人版）也一致。
函数答案的 ``reference`` 就是参考函数，与参数无关。
判定（``shardlab.exercise.judge``，自检与评分器共用）从这里读答案的规格。

单位一律是 SI：秒（s）、字节（B）、FLOP，比值为 1。
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shardlab import cost, hardware
from shardlab.exercise import problems
from shardlab.exercise.problems import MESH5, MESH8
from shardlab.units import bytes_of

Params = Mapping[str, Any]


SLIP_RTOL = 0.02  # 认出常见失误时的相对容差（判定 ``shardlab.exercise.judge`` 用同一个数）
DEAD_ZONE = SLIP_RTOL  # 错误值与正确答案相差在这之内时，这组参数下没有这种失误（这样的答案判为对）


@dataclass(frozen=True)
class Slip:
    """一种常见失误：错误答案 ≈ 正确答案 × factor，或 ≈ alt(正确答案, 参数)，即犯了这个错的学生按自己的算法算出的数

    factor 可以是数，也可以是参数的函数（例如“V 用了整个数组”差的是 |Y| 倍）；函数返回 None 表示这组参数下没有这种失误。
    函数答案的失误拿到的“参数”是这一组输入（args 元组），例如 ``(n, bidirectional)``。
    同一个错误值可能有几种原因：它们是几条失误，按可能性从大到小排在登记表里，判定按这个顺序列出提示。
    """

    factor: float | Callable[[Any], float | None] | None
    hint: str
    alt: Callable[[float, Any], float | None] | None = None
    draw_check: bool = True  # 抽个人版参数时检查它的错误值不撞上发布版的答案（variants.answer_violations）

    def wrong_value(self, right: float, params: Any = None) -> float | None:
        """这种失误给出的错误值；这组参数下没有这种失误（或错误值离正确答案不到 DEAD_ZONE）时为 None"""
        if self.alt is not None:
            wrong = self.alt(right, params)
        else:
            factor = self.factor(params) if callable(self.factor) else self.factor
            wrong = None if factor is None else right * factor
        if wrong is None or not right:
            return wrong
        return None if math.isclose(wrong, right, rel_tol=DEAD_ZONE) else wrong


@dataclass(frozen=True)
class Answer:
    """一个答案 id 的规格

    kind 为 'value' 时 reference(p) 给出参数 p 下的参考值（``value()``；不带 p 时是发布版）；为 'function' 时 reference 就是参考函数，
    自检用 examples 里的公开输入调用学生的函数，评分器在评分时另选输入。
    varies=False 的答案与参数无关（例如大环的极限比值），个人版里它与发布版相同。
    """

    id: str
    var: str  # 笔记本里保存答案的变量名（或函数名）
    unit: str  # 's' | 'B' | 'FLOP' | '1'
    meaning: str
    reference: Callable
    kind: str = "value"
    examples: tuple[tuple, ...] = ()
    rtol: float = 0.02
    slips: tuple[Slip, ...] = field(default=())
    hint: str = ""
    varies: bool = True
    edge_cases: tuple[tuple, ...] = ()  # 函数答案：题目说到的边界情形，评分时一定检查

    def __post_init__(self):
        if self.kind == "value":  # reference() 不带参数时取发布版
            ref = self.reference

            def reference(p: Params | None = None) -> float:
                return ref(self.params(p))

            object.__setattr__(self, "reference", reference)

    def params(self, p: Params | None = None) -> Params:
        """本章的参数：给了 p 就是 p，没给（None）是发布版；函数答案的“参数”是一组输入（args 元组），没给时为 None"""
        if self.kind == "function":
            return p
        return problems.published(self.assignment) if p is None else p

    @property
    def chapter(self) -> int:
        return int(self.id[2:4])

    @property
    def assignment(self) -> str:
        return self.id[:4]

    @property
    def problem(self) -> int:
        return int(re.match(r"ch\d\d-p(\d+)", self.id).group(1))

    def value(self, params: Params | None = None) -> float:
        """数值答案在参数 params（默认发布版）下的参考值"""
        if self.kind != "value":
            raise TypeError(f"{self.id} 是函数答案（function answer），没有单一的参考值")
        return float(self.reference(params))


# ---- 参考算法（与解答笔记本独立推导）：p 是本章的参数（problems.published 或一个个人版） ----
def _v4p(collective: str, nbytes: float, axes, p: Params) -> float:
    return cost.estimate(collective, nbytes, axes, "v4p", mesh=p["mesh"]).time_s


def v4p_gather_x(p: Params) -> float:
    # AllGather_X 之后每个设备持有 [B, D_Y]：V 是它的字节数
    return _v4p("all_gather", bytes_of((p["B"], p["D"] // p["mesh"]["Y"])), ["X"], p)


def v4p_gather_xy_limit(p: Params) -> float:
    # 正文的多轴公式（大 N 极限，原书的答案约 46 µs）；模拟器的精确调度（cost.estimate）在 4x4 上是它的 1.25 倍
    m = p["mesh"]
    chip = hardware.TPU_V4P
    return cost.allgather_multi_axis_limit(
        bytes_of((p["B"], p["D"])), [m["X"], m["Y"]], chip.ici_bidir_bw, chip.hop_latency
    )


def v4p_reduce_z(p: Params) -> float:
    # {U_Z}：每个设备的未规约缓冲区是 [B_X, D_Y]
    m = p["mesh"]
    return _v4p("all_reduce", bytes_of((p["B"] // m["X"], p["D"] // m["Y"])), ["Z"], p)


def small_gather(name: str) -> Callable[[Params], float]:
    """AllGather_X(bf16[B])，B 是参数 name（ch05 的 B2、ch06 的 B3）"""
    return lambda p: _v4p("all_gather", bytes_of((p[name],)), ["X"], p)


def alltoall_over_allgather(n: int, bidirectional: bool) -> float:
    """N 个设备的环上 AllToAll 与 AllGather 的时间比（精确，受带宽限制）

    题目的约定：双向环上正对面的块在两种算法里都拆成两半，每条有向链路负载相同，
    时间之比 = 全部块的字节·跳数之比 = ⌊N²/4⌋/(N(N-1))（偶数 N 为 N/(4(N-1))，奇数 N 为 (N+1)/(4N)）；单向环 1/2。
    """
    if n < 2:
        raise ValueError(f"需要至少 2 个设备，收到 n = {n}")
    return (n * n // 4) / (n * (n - 1)) if bidirectional else 0.5


def replication(name: str) -> Callable[[Params], float]:
    """A[I_X, J, K] 在网格 name 上：总字节数 / 一份 = |Y|·|Z|"""
    return lambda p: float(p[name]["Y"] * p[name]["Z"])


def dp_allreduce(n_gpus: int) -> Callable[[Params], float]:
    return lambda p: cost.estimate("all_reduce", bytes_of((p["params5"],)), {"G": n_gpus}, "h100").time_s


def tp_tokens(phase: str, p: Params) -> int:
    return 1 if phase == "decode" else int(p["PROMPT"])


def tp_bytes(phase: str) -> Callable[[Params], float]:
    return lambda p: float(bytes_of((tp_tokens(phase, p), p["D7"])))


def tp_time(phase: str) -> Callable[[Params], float]:
    # 节点内的 NCCL 环形 AllReduce：带宽项 2V(N-1)/(N·W_nvlink) 加上 NCCL 模型的延迟项（2(N-1) 步）
    return lambda p: cost.estimate("all_reduce", tp_bytes(phase)(p), {"TP": p["TP"]}, "h100").time_s


def _n5() -> int:
    return math.prod(MESH5.values())


def mlp_weight_bytes(p: Params) -> float:
    # 推荐：W_in[D, F_XY]、W_out[F_XY, D]，两个矩阵都按 F 分到 4 个芯片
    return 2 * bytes_of((p["D5"], p["F5"])) / _n5()


def mlp_t_math(p: Params) -> float:
    flops = 2 * cost.matmul_flops(p["B5"], p["D5"], p["F5"])
    return cost.t_math(flops / _n5(), hardware.TPU_V5E.flops_bf16)


def mlp_t_comms(p: Params) -> float:
    # Out[B, D]{U_XY} 做 ReduceScatter_XY，下一层之前再 AllGather_XY 回 [B, D]；
    # v5e 2x2 的两条轴都是没有回绕的线。cost.estimate 的多轴时间就是环形模拟器按自己的调度计出的时间
    # （tests/test_cost_vs_sim.py 逐一核对），两条入口链路同时收
    v = bytes_of((p["B5"], p["D5"]))
    return sum(cost.estimate(c, v, ["X", "Y"], "v5e", mesh=MESH5).time_s for c in ("reduce_scatter", "all_gather"))


def mlp_t_comms_book_limit(p: Params) -> float:
    """原书多轴公式 V/(k·W_双向) 的 RS + AG（大 N 极限，忽略 (N-1)/N）：常见的错误答案"""
    return 2 * bytes_of((p["B5"], p["D5"])) / (len(MESH5) * hardware.TPU_V5E.ici_bidir_bw)


def p8_bytes(letter: str) -> Callable[[Params], float]:
    """问题 8 方案 (letter) 的负载 V：方案由参数 cases8 决定（个人版把三种分片按另一种顺序排给 (a)(b)(c)）"""

    def ref(p: Params) -> float:
        nx, ny = MESH8["X"], MESH8["Y"]
        kind = problems.p8_scheme(p["cases8"], letter)
        if kind == "rs":  # C[I_X, K]{U_Y} → ReduceScatter_Y → C[I_X, K_Y]；V 是未规约的本地缓冲区
            return float(bytes_of((p["I8"] // nx, p["K8"])))
        if kind == "ag":  # AllGather_X：B[J_X, K_Y] → B[J, K_Y]；V 是收集后的字节数
            return float(bytes_of((p["J8"], p["K8"] // ny)))
        return 0.0  # Case 1：不需要通信

    return ref


_P8_COLLECTIVE = {"rs": ("reduce_scatter", "Y"), "ag": ("all_gather", "X")}


def p8_time(letter: str) -> Callable[[Params], float]:
    def ref(p: Params) -> float:
        kind = problems.p8_scheme(p["cases8"], letter)
        if kind not in _P8_COLLECTIVE:
            return 0.0
        collective, axis = _P8_COLLECTIVE[kind]
        return cost.estimate(collective, p8_bytes(letter)(p), [axis], "v5e", mesh=MESH8).time_s

    return ref


def case2_comm_ratio(i: int, j: int, k: int) -> float:
    """Case 2：A[I, J_X]·B[J, K] 先本地乘再 AllReduce C[I, K]，与先 AllGather A[I, J] 的通信时间之比 = 2K/J"""
    return 2.0 * bytes_of((i, k)) / bytes_of((i, j))


def strategy_comm_ratio(b: int, d: int, f: int) -> float:
    """ch06 P4：策略 2（本地乘 + AllReduce Out[B, F]）与策略 1（AllGather W[D, F]）的通信时间之比 = 2B/D"""
    return 2.0 * bytes_of((b, f)) / bytes_of((d, f))


# ---- 常见失误 ----
# 每条失误的错误值是犯了这个错的学生按自己的算法算出的数（用他自己的参数）；提示说错在哪里、该回去看什么，
# 不说答案（不给出参考值，也不给出代进去就是答案的式子）。同一个错误值有几种原因时，可能性大的排在前面。
H100 = hardware.H100
NVLINK_BIDIR = 2 * H100.nvlink_bw_per_direction  # NVIDIA 宣传的“900 GB/s”：两个方向之和


def _gbps(bw: float) -> str:
    return f"{bw / 1e9:g} GB/s"


BF16 = Slip(0.5, "少了 bf16 的因子 2：每个 bf16 元素占 2 字节")
BF16_AS_4 = Slip(2.0, "把 bf16 当成了 4 字节（或者 2 字节乘了两次）：每个 bf16 元素占 2 字节")
ONEWAY_FOR_BIDIR = Slip(2.0, "用了单向带宽 W_单向：有 wraparound 的双向环上两个方向同时在送，要用 W_双向 = 2·W_单向")
FP32 = Slip(2.0, "按 4 字节（fp32）算了每个参数：题目里的模型是 bf16，每个参数 2 字节")


def inverse(what: str) -> Slip:
    """比值倒过来了：错误值是正确答案的倒数"""
    return Slip(None, f"比值倒过来了：要的是“{what}”", alt=lambda right, p: 1 / right)


UNIT_SLIPS = {
    "s": (
        Slip(1e6, "看起来是用微秒（µs）写的：答案要以秒（s）为单位"),
        Slip(1e3, "看起来是用毫秒（ms）写的：答案要以秒（s）为单位"),
        Slip(1e9, "看起来是用纳秒（ns）写的：答案要以秒（s）为单位"),
    ),
    "B": (
        Slip(1e-3, "看起来是用 kB 写的：答案要以字节（B）为单位"),
        Slip(1e-6, "看起来是用 MB 写的：答案要以字节（B）为单位"),
        Slip(1e-9, "看起来是用 GB 写的：答案要以字节（B）为单位"),
        Slip(8.0, "看起来是比特（bit）：答案要以字节（B）为单位"),
    ),
}


# ---- 原书 Q2（第 5 章问题 1、第 6 章问题 2） ----
def _line_over_ring(n: int) -> float:
    """没有 wraparound 的线与双向环上 AllGather 的时间比：(N-1)/N·V/W_单向 对 V/W_双向 = 2(N-1)/N"""
    return 2 * (n - 1) / n


def _line_for_ring(axis: str) -> Slip:
    return Slip(
        lambda p: _line_over_ring(p["mesh"][axis]),
        "按没有 wraparound 的线算了：v4p 切片每维都是 4 的倍数时，每条轴都有 wraparound",
    )


def _ring_factor(axes: tuple[str, ...]) -> Callable[[Params], float]:
    def factor(p: Params) -> float:
        n = math.prod(p["mesh"][a] for a in axes)
        return (n - 1) / n

    return factor


# 偶数 N 的双向环：正文的约定让正对面的块整块走一个方向，最忙的链路多搬半块，(N-1)/N 正好被抵消。
# 乘了 (N-1)/N 的值是把正对面的块拆成两半的调度：物理上成立、也更快，只是不合题目写明的约定，所以提示不说它错
_RING_MINUS_ONE = (
    "乘了 (N-1)/N（这是把正对面的块拆成两半、两个方向各走一半的调度：物理上成立，也更快，见第 5 章 5.5 节）："
    "但这道题按第 5 章模拟器与 cost.estimate 的约定，正对面的块整块走一个方向；按这个约定重新数一数最忙的那条链路要搬几块"
)
MINUS_ONE_P1A = Slip(_ring_factor(("X",)), _RING_MINUS_ONE)
MINUS_ONE_P1C = Slip(_ring_factor(("Z",)), _RING_MINUS_ONE)
MINUS_ONE_P1B = Slip(
    _ring_factor(("X", "Y")),
    "乘了 (N-1)/N：这是入口下界（把正对面的块拆成两半的调度达到它，物理上成立）；"
    "但这一问要按正文的多轴公式（大 N 近似）估算，不带这个因子",
)
WHOLE_ARRAY_P1A = Slip(lambda p: p["mesh"]["Y"], "V 用了整个数组：AllGather_X 只沿 X 收集，收集完成后 D 仍沿 Y 分片")
ONE_AXIS_P1B = Slip(2.0, "只用了一条轴的带宽：沿 X、Y 同时收集，可用带宽是两条轴之和")
AR_IS_TWICE = Slip(
    0.5, "漏了 AllReduce 的因子 2：AllReduce = ReduceScatter + AllGather，时间是同样大小的 AllGather 的 2 倍"
)
EXACT_P1B = Slip(
    None,
    "这是模拟器按并发调度逐步计时的精确值（cost.estimate 给出的就是它）；这一问按正文的多轴公式（大 N 近似）估算",
    alt=lambda right, p: (
        cost.estimate("all_gather", bytes_of((p["B"], p["D"])), ["X", "Y"], "v4p", mesh=p["mesh"]).time_s
    ),
)
WHOLE_ARRAY_P1C = Slip(
    lambda p: p["mesh"]["X"] * p["mesh"]["Y"],
    "V 用了整个数组（原书早期版本的算法）：AllReduce 的 V 是每个设备本地未规约的缓冲区，它仍沿 X、Y 分片",
)
# 按可能性排：同一个错误值（例如 2 倍）先列更常见的原因
P1A_SLIPS = (ONEWAY_FOR_BIDIR, BF16_AS_4, BF16, WHOLE_ARRAY_P1A, _line_for_ring("X"), MINUS_ONE_P1A)
P1B_SLIPS = (ONE_AXIS_P1B, ONEWAY_FOR_BIDIR, BF16_AS_4, BF16, EXACT_P1B, MINUS_ONE_P1B)
P1C_SLIPS = (AR_IS_TWICE, BF16, ONEWAY_FOR_BIDIR, BF16_AS_4, WHOLE_ARRAY_P1C, _line_for_ring("Z"), MINUS_ONE_P1C)


# ---- 受延迟限制的小 AllGather（第 5 章问题 2、第 6 章问题 3） ----
def _bandwidth_only(name: str) -> Slip:
    return Slip(
        None,
        "只算了带宽项：每跳的块只有几十字节，时间由每跳约 1 µs 的延迟决定（latency-bound）",
        alt=lambda right, p: bytes_of((p[name],)) / hardware.TPU_V4P.ici_bidir_bw,
    )


LINE_HOPS = Slip(
    lambda p: (p["mesh"]["X"] - 1) / (p["mesh"]["X"] // 2),
    "按 N-1 跳算了：那是没有 wraparound 的线；有 wraparound 的双向环上块可以往两个方向走，数一数最远的设备有几跳",
)
ONE_HOP = Slip(
    lambda p: 1 / (p["mesh"]["X"] // 2),
    "只算了一跳的延迟：每一块都要送到环上离它最远的设备，数一数要走几跳",
)


def _small_gather_slips(name: str) -> tuple[Slip, ...]:
    return (_bandwidth_only(name), LINE_HOPS, ONE_HOP)


# ---- AllToAll 与 AllGather（第 5 章问题 3、第 6 章问题 6） ----
A2A_OVER_AG = "AllToAll 时间 / AllGather 时间"
UNI_SLIPS = (
    Slip(0.5, "这是双向环上的比值：单向环上块只能沿一个方向走，AllToAll 的小块没有近路可走"),
    inverse(A2A_OVER_AG),
)
BI_SLIPS = (
    Slip(2.0, "这是单向环上的比值：双向环上 AllToAll 的每一小块还可以走较近的那个方向"),
    inverse(A2A_OVER_AG),
)


def _ring_args(args) -> tuple[int, bool] | None:
    """函数答案 alltoall_over_allgather 的一组输入 (n, bidirectional)；不是这种形状时为 None"""
    if not isinstance(args, tuple) or len(args) != 2 or not isinstance(args[0], int) or args[0] < 2:
        return None
    return args[0], bool(args[1])


def _p3_chapter_convention(right: float, args) -> float | None:
    """偶数 n 的双向环上按混合约定（AllGather 的正对面块整块走一个方向、AllToAll 拆半）数出的比值"""
    a = _ring_args(args)
    if a is None or not a[1] or a[0] % 2:
        return None
    n = a[0]
    return cost.alltoall_bidir_ring(1.0, n, 2.0) / cost.allgather_bidir_ring(1.0, n, 2.0)


def _p3_big_ring_limit(right: float, args) -> float | None:
    """奇数 n 的双向环上返回了大环的极限（与 n 无关的常数）"""
    a = _ring_args(args)
    if a is None or not a[1] or a[0] % 2 == 0:
        return None
    return 0.25  # 双向环上 ⌊N²/4⌋/(N(N-1)) 在 N → ∞ 时的极限


def _p3_flipped(right: float, args) -> float | None:
    a = _ring_args(args)
    return None if a is None else alltoall_over_allgather(a[0], not a[1])


P3_EDGES = ((2, False), (2, True), (3, True), (7, True), (64, False), (64, True))  # 题目说到的边界：N = 2、奇数 N、大环
P3_FN_SLIPS = (
    Slip(
        None,
        "这是两种约定混在一起的比值（正文的约定：AllGather 的正对面块整块走一个方向，AllToAll 却拆成两半），"
        "偶数 n 上恰好等于大环的极限；这道题约定两种算法都把正对面的块拆成两半，要的是 n 个设备上的精确值",
        alt=_p3_chapter_convention,
    ),
    Slip(None, "返回的是大环的极限（与 n 无关的常数）：要的是 n 个设备上的精确值", alt=_p3_big_ring_limit),
    Slip(None, "单向环与双向环弄反了（或者没有用到参数 bidirectional）", alt=_p3_flipped),
    inverse(A2A_OVER_AG),
)


# ---- 复制份数（第 5 章问题 4、第 6 章问题 1） ----
def _replication_slips(name: str) -> tuple[Slip, ...]:
    def m(p):
        return p[name]

    return (
        Slip(
            lambda p: m(p)["X"] / (m(p)["Y"] * m(p)["Z"]),
            "答的是 X 轴的大小：A 沿 X 切分，想一想同一块沿哪些轴被存了好几份",
        ),
        Slip(lambda p: m(p)["X"], "答的是芯片总数：每个芯片只存一份 A 的一部分，不是一整份"),
        Slip(
            lambda p: 1 / (m(p)["X"] * m(p)["Y"] * m(p)["Z"]),
            "这是每个芯片上那一块占一份 A 的比例：题目问的是所有芯片加起来",
        ),
        inverse("所有芯片上的总字节数 / 一份的字节数"),
    )


# ---- H100 上的 AllReduce（第 5 章问题 5、7） ----
def _h100_in_node_allreduce(nbytes: float, n: int, nvlink_bw: float) -> float:
    """节点内 AllReduce：NCCL 模型的延迟项 + 按给定的每方向带宽算的带宽项"""
    return cost.gpu_ring_latency("all_reduce", n, H100.gpus_per_node, H100) + cost.gpu_allreduce_in_node(
        nbytes, n, nvlink_bw
    )


_NVLINK_900 = (
    f"用了 {_gbps(NVLINK_BIDIR)}：那是 NVLink 两个方向之和（W_双向）；"
    f"环上每张 GPU 每个方向只能送 {_gbps(H100.nvlink_bw_per_direction)}（W_单向）"
)


def _dp_bytes(p: Params) -> float:
    return float(bytes_of((p["params5"],)))


def _nvlink_900_dp(n: int) -> Slip:
    return Slip(None, _NVLINK_900, alt=lambda right, p: _h100_in_node_allreduce(_dp_bytes(p), n, NVLINK_BIDIR))


def _allgather_only(nbytes: Callable[[Params], float], group: Callable[[Params], dict]) -> Slip:
    return Slip(
        None,
        "算的是一次 AllGather：AllReduce = ReduceScatter + AllGather，数据要在环上走两遍",
        alt=lambda right, p: cost.estimate("all_gather", nbytes(p), group(p), "h100").time_s,
    )


def _bf16_time(nbytes: Callable[[Params], float], group: Callable[[Params], dict]) -> Slip:
    return Slip(
        None,
        BF16.hint,
        alt=lambda right, p: cost.estimate("all_reduce", nbytes(p) / 2, group(p), "h100").time_s,
    )


def n_over_n_minus_1(n: int) -> Slip:
    return Slip(n / (n - 1), f"用了大 N 极限 2V/W：只有 {n} 张 GPU 时，环形算法的 (N-1)/N 不能省")


def _ib_flat(n: int) -> Slip:
    return Slip(
        None,
        f"整个环只经过每个节点的一块 {_gbps(H100.ib_bw_per_gpu)} 网卡；题目假设八块网卡都用上"
        f"（每节点 {_gbps(H100.node_scaleout_bw)}）",
        alt=lambda right, p: 2 * _dp_bytes(p) * (n - 1) / n / H100.ib_bw_per_gpu,
    )


def _eight_rail(n: int) -> Slip:
    return Slip(
        None,
        "这是扁平的 8 轨环（8 个环各经一块网卡）或大 N 极限 2V/W_node：同样用满了八块网卡，"
        "是合理的模型；本题按题目说明的流水线分层 AllReduce 计算",
        alt=lambda right, p: 2 * _dp_bytes(p) * (n - 1) / n / H100.node_scaleout_bw,
    )


def _hier_sequential(n: int) -> Slip:
    return Slip(
        None,
        "这是各层依次进行、不重叠的分层 AllReduce（上界）；本题假设各层流水线化、同时在忙",
        alt=lambda right, p: cost.gpu_allreduce_hierarchical(
            _dp_bytes(p), H100.gpus_per_node, n // H100.gpus_per_node, H100.nvlink_bw_per_direction,
            H100.node_scaleout_bw,
        ),
    )  # fmt: skip


def _p5_slips(n: int) -> tuple[Slip, ...]:
    def group(p: Params) -> dict:
        return {"G": n}

    own = (_allgather_only(_dp_bytes, group), _bf16_time(_dp_bytes, group))
    if n <= H100.gpus_per_node:  # 节点内：带宽是 NVLink 的，最常见的是把 900 GB/s 当成每方向的带宽
        return (_nvlink_900_dp(n), *own, n_over_n_minus_1(n))
    # 512 张时 8 轨环与流水线分层只差 1% 以内，判为正确，不需要提示
    rail = (_eight_rail(n),) if n <= 64 else ()
    return (*own, *rail, _hier_sequential(n), _ib_flat(n))


P6_DP_SLIPS = (
    Slip(0.5, "漏了 AllReduce 的因子 2：AllReduce = ReduceScatter + AllGather，要发送 2 倍的模型大小"),
    BF16,
    Slip(1.5, "这是 ZeRO-3 的量"),
    FP32,
)
P6_FSDP_SLIPS = (
    BF16,
    Slip(2 / 3, "漏了反向传播里再做一次的权重 AllGather：前向 AG + 反向 AG + 梯度 RS"),
    FP32,
)


def _bandwidth_term_only(phase: str) -> Slip:
    return Slip(
        None,
        "只算了带宽项，漏了延迟项：NCCL 每次集合通信有固定开销，环上每一步还有开销；负载越小，延迟项越重要",
        alt=lambda right, p: cost.gpu_allreduce_in_node(tp_bytes(phase)(p), p["TP"], H100.nvlink_bw_per_direction),
    )


def _tp_group(p: Params) -> dict:
    return {"TP": p["TP"]}


P7_BYTES_SLIPS = (
    BF16,
    Slip(80.0, "问的是一次 AllReduce，不是 80 层各一次的总和"),
    Slip(160.0, "问的是一次 AllReduce，不是每步 80 层 × 2 次的总和"),
    Slip(2.0, "问的是一次 AllReduce，不是每层两次的总和"),
    BF16_AS_4,
)


def _p7_time_slips(phase: str) -> tuple[Slip, ...]:
    nbytes = tp_bytes(phase)
    return (
        _bandwidth_term_only(phase),
        Slip(None, _NVLINK_900, alt=lambda right, p: _h100_in_node_allreduce(nbytes(p), p["TP"], NVLINK_BIDIR)),
        _bf16_time(nbytes, _tp_group),  # 延迟项不变，只有带宽项减半
        Slip(
            None,
            BF16_AS_4.hint,
            alt=lambda right, p: cost.estimate("all_reduce", 2 * nbytes(p), _tp_group(p), "h100").time_s,
        ),
        Slip(2.0, "问的是一次 AllReduce 的时间，不是每层两次的总和"),
        Slip(80.0, "问的是一次 AllReduce 的时间，不是 80 层各一次的总和"),
        Slip(160.0, "问的是一次 AllReduce 的时间，不是每步 80 层 × 2 次的总和"),
    )


# ---- 第 6 章问题 5：v5e 2x2 上的 MLP ----
P5_WEIGHT_SLIPS = (
    Slip(0.5, "只算了一个矩阵：W_in 和 W_out 都要存"),
    BF16,
    Slip(2.0, "F 只分到了 2 个芯片上（只沿一条轴切分）：2x2 有 4 个芯片"),
    BF16_AS_4,
    Slip(2.0, "只算了一个矩阵，而且没有切分它"),
    Slip(4.0, "没有切分权重：每个芯片只存每个矩阵的一部分"),
)
P5_MATH_SLIPS = (
    Slip(0.5, "漏了矩阵乘法 FLOPs 的因子 2：每次乘加是两次浮点运算，[B, D]·[D, F] 要 2BDF FLOPs"),
    Slip(0.5, "只算了一个矩阵乘法：In·W_in 与 Mid·W_out 各一次"),
    Slip(0.25, "漏了 FLOPs 的因子 2，又只算了一个矩阵乘法"),
    Slip(2.0, "只分到了 2 个芯片上（只沿一条轴切分）：2x2 有 4 个芯片"),
    Slip(4.0, "没有除以芯片数：计算分摊在 2x2 的所有芯片上"),
    Slip(3.0, "算进了反向传播（前向 + 反向约是前向的 3 倍）：题目只问前向"),
)
P5_COMMS_SLIPS = (
    Slip(
        None,
        "用了多轴公式的大 N 极限 V/(k·W_双向)：2x2 上 N 只有 4，两条轴又都是没有 wraparound 的线，"
        "每条入口链路只能用一个方向；按每个芯片实际要收的字节数和能用的链路重新算",
        alt=lambda right, p: mlp_t_comms_book_limit(p),
    ),
    Slip(4 / 3, "忽略了 (N-1)/N：2x2 只有 4 个芯片，每个芯片自己的那一份不用收，这个因子不能省"),
    Slip(0.5, "只算了 ReduceScatter：下一层开始之前还要 AllGather 回 [B, D]"),
    BF16,
    Slip(2.0, "只用了一条入口链路：沿 X、Y 同时收集时，两条轴的链路同时在收"),
    BF16_AS_4,
)


# ---- 第 6 章问题 8：v5e 4x4 上的三种分片 ----
def _only(letter: str, scheme: str, factor: float) -> Callable[[Params], float | None]:
    """只属于某一种方案的失误：字母 letter 在这组参数里是方案 scheme 时才有"""
    return lambda p: factor if problems.p8_scheme(p["cases8"], letter) == scheme else None


def _p8_v_slips(letter: str) -> tuple[Slip, ...]:
    return (
        Slip(
            _only(letter, "rs", 4.0),
            "V 用了整个 C[I, K]：ReduceScatter 的 V 是每个设备未规约的缓冲区，注意哪些维度仍是分片的",
        ),
        Slip(
            _only(letter, "rs", 0.25),
            "V 用了 ReduceScatter 之后每个设备留下的那一块：ReduceScatter 的 V 是规约之前的整个本地缓冲区",
        ),
        Slip(
            _only(letter, "ag", 4.0),
            "V 用了整个 B[J, K]：收集之后每个设备拿到的仍然沿另一条轴分片，注意哪些维度仍是分片的",
        ),
        Slip(_only(letter, "ag", 0.25), "V 用了收集之前每个设备的那一块：AllGather 的 V 是收集完成后的字节数"),
    )


def _p8_book_order(letter: str, quantity: Callable[[str], Callable[[Params], float]]) -> Slip:
    """按书上 (a)(b)(c) 的顺序答了：个人版把三种分片换了顺序，学生却按书上这个字母的那种分片、用自己的维度算（以前不认，
    150 人的班里有诚实的学生因此被标为“对上了书上的答案”）"""

    def alt(right: float, p: Params) -> float | None:
        book = problems.published("ch06")["cases8"]
        kind = problems.p8_scheme(book, letter)
        if kind == "none" or kind == problems.p8_scheme(p["cases8"], letter):
            return (
                None  # 答 0 不是这种失误特有的（以为不需要通信也会答 0）；单这一个字母只对上书上的两个答案，够不上标记
            )
        return quantity(letter)({**p, "cases8": book})

    # 这种失误的错误值常常就是书上的答案（答 0、维度的乘积恰好相同）：分不出是失误还是照抄时按失误算，不当作抄袭的证据；
    # 所以它不参加抽参数时“失误不能撞上发布版”的检查（draw_check=False），个人版的参数也不因它改变
    return Slip(
        None,
        f"按书上的顺序答了方案 ({letter})：你的笔记本里三种分片换了顺序，({letter}) 是题目参数单元里 cases8 写的那一种",
        alt,
        draw_check=False,
    )


def _p8_bytes_slips(letter: str) -> tuple[Slip, ...]:
    return (BF16, *_p8_v_slips(letter), BF16_AS_4, _p8_book_order(letter, p8_bytes))


def _p8_time_slips(letter: str) -> tuple[Slip, ...]:
    return (
        Slip(
            0.5,
            "用了 W_双向：4x4 的轴是没有 wraparound 的线，端点只能经一条链路的一个方向收数据，要用 W_单向",
        ),
        BF16,
        Slip(2 / 3, "把 4x4 的轴当成了有 wraparound 的双向环：v5e 只有长度 16 的轴才有 wraparound"),
        Slip(
            _only(letter, "rs", 2.0),
            "用了 AllReduce（按 ReduceScatter + AllGather 算）：输出允许分片时 ReduceScatter 就够了，它只要其中一半的时间",
        ),
        BF16_AS_4,
        Slip(4 / 3, "忽略了 (N-1)/N：一条轴上只有 4 个芯片，这个因子不能省"),
        Slip(
            _only(letter, "rs", 4 / 3),
            "用了流水线化的链式 AllReduce（V/W_单向）：输出允许分片时 ReduceScatter 就够了，它还能再省 1/N",
        ),
        *_p8_v_slips(letter),
        _p8_book_order(letter, p8_time),
    )


# ---- 第 6 章问题 4、9：通信时间之比（函数答案，失误拿到的是一组输入） ----
def _args3(args) -> tuple[int, int, int] | None:
    if not isinstance(args, tuple) or len(args) != 3 or not all(isinstance(x, int) and x > 0 for x in args):
        return None
    return args


_AR_AS_AG = "把 AllReduce 当成了与同样大小的 AllGather 一样的代价：AllReduce = ReduceScatter + AllGather"
P4_FN_SLIPS = (
    Slip(0.5, _AR_AS_AG),
    inverse("策略 2 的通信时间 / 策略 1 的通信时间"),
    Slip(
        None,
        "策略 2 规约的是部分和 Out[B, F]，不是输入 In[B, D]",
        alt=lambda right, a: None if _args3(a) is None else 2.0 * a[0] / a[2],
    ),
)
P9_FN_SLIPS = (
    Slip(0.5, _AR_AS_AG),
    inverse("本地乘 + AllReduce 的通信时间 / 先 AllGather 的通信时间"),
)


def _book_q2(id_prefix: str, var_prefix: str) -> tuple[Answer, ...]:
    """原书 Q2 的 (a)(b)(c)：第 5 章问题 1 与第 6 章问题 2 都是它，答案 id 与变量名不同，其余相同"""
    return (
        Answer(f"{id_prefix}a", f"{var_prefix}a", "s", "AllGather_X([B_X, D_Y]) 的时间", v4p_gather_x, slips=P1A_SLIPS),
        Answer(
            f"{id_prefix}b",
            f"{var_prefix}b",
            "s",
            "AllGather_XY([B_X, D_Y]) 的时间（多轴公式，大 N 近似）",
            v4p_gather_xy_limit,
            slips=P1B_SLIPS,
        ),
        Answer(
            f"{id_prefix}c", f"{var_prefix}c", "s", "AllReduce_Z([B_X, D_Y]{U_Z}) 的时间", v4p_reduce_z, slips=P1C_SLIPS
        ),
    )


# ---- 登记表：每个答案一条 ----
ANSWER_LIST: tuple[Answer, ...] = (
    # 第 5 章
    *_book_q2("ch05-p1", "p1"),
    Answer("ch05-p2", "p2", "s", "AllGather_X(bf16[B]) 的时间，B 很小（受延迟限制）", small_gather("B2"),
           slips=_small_gather_slips("B2")),
    Answer("ch05-p3-uni", "p3_uni", "1", "大的单向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.5,
           slips=UNI_SLIPS, varies=False),
    # 正对面的块两种算法都拆半时偶数 N 上的比值是 N/(4(N-1))；“大的环”与单向时一样取 N = 1024（极限 1/4）
    Answer("ch05-p3-bi", "p3_bi", "1", "大的双向环上 AllToAll 时间 / AllGather 时间", lambda p: 1024 / (4 * 1023),
           slips=BI_SLIPS, varies=False),
    Answer("ch05-p3-fn", "alltoall_over_allgather", "1", "N 个设备的环上 AllToAll / AllGather 的精确比值（函数）",
           alltoall_over_allgather, kind="function", examples=((4, False), (4, True), (5, True), (8, True), *P3_EDGES),
           edge_cases=P3_EDGES, rtol=1e-6, varies=False, slips=P3_FN_SLIPS),
    Answer("ch05-p4", "p4", "1", "所有芯片上的总字节数 / 一份数组的字节数", replication("mesh4"),
           rtol=1e-9, slips=_replication_slips("mesh4"), hint="想一想每个芯片存了一份 A 的几分之几、一共有多少个芯片"),
    Answer("ch05-p5-8", "p5_8", "s", "bf16 梯度在 8 张 H100 上 AllReduce 的时间", dp_allreduce(8),
           slips=_p5_slips(8)),
    Answer("ch05-p5-64", "p5_64", "s", "bf16 梯度在 64 张 H100 上 AllReduce 的时间", dp_allreduce(64),
           slips=_p5_slips(64)),
    Answer("ch05-p5-512", "p5_512", "s", "bf16 梯度在 512 张 H100 上 AllReduce 的时间", dp_allreduce(512),
           slips=_p5_slips(512)),
    Answer("ch05-p6-dp", "p6_dp", "B", "bf16 模型纯数据并行：每步每个设备发送的字节数（大 N 极限）",
           lambda p: 2 * bytes_of((p["params6"],)), slips=P6_DP_SLIPS),
    Answer("ch05-p6-fsdp", "p6_fsdp", "B", "bf16 模型 ZeRO-3 / FSDP：每步每个设备发送的字节数（大 N 极限）",
           lambda p: 3 * bytes_of((p["params6"],)), slips=P6_FSDP_SLIPS),
    Answer("ch05-p7-decode-bytes", "p7_decode_bytes", "B", "decode：一次 AllReduce 的负载（字节）",
           tp_bytes("decode"), rtol=1e-9, slips=P7_BYTES_SLIPS),
    Answer("ch05-p7-decode-time", "p7_decode_time", "s", "decode：一次 AllReduce 的时间", tp_time("decode"),
           slips=_p7_time_slips("decode")),
    Answer("ch05-p7-prefill-bytes", "p7_prefill_bytes", "B", "prefill：一次 AllReduce 的负载（字节）",
           tp_bytes("prefill"), rtol=1e-9, slips=P7_BYTES_SLIPS),
    Answer("ch05-p7-prefill-time", "p7_prefill_time", "s", "prefill：一次 AllReduce 的时间", tp_time("prefill"),
           slips=_p7_time_slips("prefill")),
    # 第 6 章
    Answer("ch06-p1", "p1", "1", "所有芯片上的总字节数 / 一份数组的字节数", replication("mesh1"),
           rtol=1e-9, slips=_replication_slips("mesh1"), hint="想一想每个芯片存了一份 A 的几分之几、一共有多少个芯片"),
    # 与第 5 章问题 1 是同一道题（原书 Q2）：同样的参考算法（多轴用正文的大 N 公式）与同样的失误
    *_book_q2("ch06-p2", "p2"),
    Answer("ch06-p3", "p3", "s", "AllGather_X(bf16[B]) 的时间，B 很小（受延迟限制）", small_gather("B3"),
           slips=_small_gather_slips("B3")),
    Answer("ch06-p4-fn", "strategy_comm_ratio", "1", "策略 2 与策略 1 的通信时间之比（函数，参数 b, d, f）",
           strategy_comm_ratio, kind="function",
           examples=((128, 8192, 32768), (4096, 4096, 16384), (4096, 8192, 1024), (1, 8192, 8192), (2048, 16384, 4096)),
           edge_cases=((4096, 8192, 1024), (1, 8192, 8192)), rtol=1e-6, varies=False, slips=P4_FN_SLIPS),
    Answer("ch06-p5-weight-bytes-per-chip", "p5_weight_bytes_per_chip", "B",
           "推荐分片下每个芯片上两个权重矩阵的字节数", mlp_weight_bytes, rtol=1e-9, slips=P5_WEIGHT_SLIPS),
    Answer("ch06-p5-t-math", "p5_t_math", "s", "推荐分片下每个芯片的计算时间", mlp_t_math, slips=P5_MATH_SLIPS,
           hint="检查 FLOPs（有几个矩阵乘法、每次乘加算两次）、分到了几个芯片上，以及用的是不是 bf16 的峰值算力"),
    Answer("ch06-p5-t-comms", "p5_t_comms", "s",
           "推荐分片下每层的通信时间（ReduceScatter_XY + AllGather_XY，v5e 2x2 的两条轴都是线）",
           mlp_t_comms, slips=P5_COMMS_SLIPS),
    Answer("ch06-p6-uni", "p6_uni", "1", "大的单向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.5,
           slips=UNI_SLIPS, varies=False),
    Answer("ch06-p6-bi", "p6_bi", "1", "大的双向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.25,
           slips=BI_SLIPS, varies=False),
    Answer("ch06-p8a-bytes", "p8a_bytes", "B", "方案 (a) 的通信负载 V（字节）", p8_bytes("a"),
           rtol=1e-9, slips=_p8_bytes_slips("a")),
    Answer("ch06-p8a-time", "p8a_time", "s", "方案 (a) 的通信时间", p8_time("a"), slips=_p8_time_slips("a")),
    Answer("ch06-p8b-bytes", "p8b_bytes", "B", "方案 (b) 的通信负载 V（字节）", p8_bytes("b"),
           rtol=1e-9, slips=_p8_bytes_slips("b")),
    Answer("ch06-p8b-time", "p8b_time", "s", "方案 (b) 的通信时间", p8_time("b"), slips=_p8_time_slips("b")),
    # 发布版的 (c) 是 Case 1（答案 0）；个人版把三种分片换了顺序，(c) 可能是要通信的那两种之一
    Answer("ch06-p8c-bytes", "p8c_bytes", "B", "方案 (c) 的通信负载 V（字节）", p8_bytes("c"),
           rtol=1e-9, slips=_p8_bytes_slips("c")),
    Answer("ch06-p8c-time", "p8c_time", "s", "方案 (c) 的通信时间", p8_time("c"), slips=_p8_time_slips("c")),
    Answer("ch06-p9-fn", "case2_comm_ratio", "1",
           "Case 2：本地乘 + AllReduce 与先 AllGather 的通信时间之比（函数，参数 i, j, k）",
           case2_comm_ratio, kind="function",
           examples=((1024, 4096, 1024), (512, 8192, 16384), (256, 8192, 4096), (1, 4096, 1), (2048, 2048, 8192)),
           edge_cases=((256, 8192, 4096), (1, 4096, 1)), rtol=1e-6, varies=False, slips=P9_FN_SLIPS),
)  # fmt: skip

ANSWERS: dict[str, Answer] = {a.id: a for a in ANSWER_LIST}


def get(answer_id: str) -> Answer:
    """按 id 取答案规格；未知 id 给出清楚的错误"""
    try:
        return ANSWERS[answer_id]
    except KeyError:
        known = "、".join(sorted(ANSWERS))
        raise KeyError(f"未知的答案 id（answer id）{answer_id!r}。已知的 id：{known}") from None


def chapter_answers(assignment: str) -> list[Answer]:
    """一章（'ch05' / 'ch06'）的答案，按练习里的顺序"""
    return [a for a in ANSWER_LIST if a.assignment == assignment]


def expected_value(answer_id: str, params: Params | None = None) -> float:
    """value 类答案的参考值（SI 单位）；params 是本章的参数，默认发布版"""
    return get(answer_id).value(params)
