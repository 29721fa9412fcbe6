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


@dataclass(frozen=True)
class Slip:
    """一种常见失误：错误答案 ≈ 正确答案 × factor，或 ≈ alt(正确答案, 参数)

    factor 可以是数，也可以是参数的函数（例如“V 用了整个数组”差的是 |Y| 倍）；函数返回 None 表示这组参数下没有这种失误。
    """

    factor: float | Callable[[Params], float | None] | None
    hint: str
    alt: Callable[[float, Params], float] | None = None

    def wrong_value(self, right: float, params: Params | None = None) -> float | None:
        """这种失误给出的错误值；这组参数下没有这种失误时为 None"""
        if self.alt is not None:
            return self.alt(right, params)
        factor = self.factor(params) if callable(self.factor) else self.factor
        return None if factor is None else right * factor


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
        """本章的参数：给了 p 就是 p，没给（None）是发布版"""
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


# ---- 常见失误 ----
BF16 = Slip(0.5, "少了 bf16 的因子 2：每个 bf16 元素占 2 字节")
BF16_TWICE = Slip(2.0, "bf16 的因子 2 乘了两次，或把 bf16 当成了 4 字节")
ONEWAY_FOR_BIDIR = Slip(2.0, "用了单向带宽 W_单向；有 wraparound 的双向环应该用 W_双向 = 2·W_单向")


def _merge(*slips: Slip) -> tuple[Slip, ...]:
    """因子相同（都是数）的失误给出同一个错误值，学生的答案无法区分它们：合并成一条，提示里列出每种可能"""
    out: list[Slip] = []
    for s in slips:
        k = next(
            (
                i
                for i, o in enumerate(out)
                if o.alt is None and s.alt is None and not callable(o.factor) and not callable(s.factor)
                and math.isclose(o.factor, s.factor)
            ),
            None,
        )  # fmt: skip
        if k is None:
            out.append(s)
        else:
            out[k] = Slip(out[k].factor, f"{out[k].hint}；也可能是：{s.hint}")
    return tuple(out)


def n_over_n_minus_1(n: int) -> Slip:
    return Slip(n / (n - 1), f"用了大 N 极限：环上有 {n} 个成员时，环形算法每个成员只发送 (N-1)/N = {n - 1}/{n} 份")


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


P5_COMMS_SLIPS = (
    Slip(
        None,
        "用了多轴公式的大 N 极限 V/(k·W_双向)：2x2 上每个芯片只需收下其余 3/4 的数据，"
        "但只有两条入口链路、每条只能用一个方向（没有 wraparound），精确值是每次 3V/(8·W_单向)",
        alt=lambda right, p: mlp_t_comms_book_limit(p),
    ),
    Slip(4 / 3, "忽略了 (N-1)/N：每个芯片从两条链路同时收数据，只需收下其余 3/4 的 V，不是整个 V"),
    Slip(0.5, "只有参考值的一半：只算了 ReduceScatter（下一层之前还要 AllGather），或者少了 bf16 的因子 2"),
    Slip(2.0, "是参考值的 2 倍：两条轴的入口链路同时在用，带宽是两条之和；或者 bf16 的因子 2 乘了两次"),
)


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
    """ch06 P4：策略 2（本地乘 + AllReduce Z[B, F]）与策略 1（AllGather Y[D, F]）的通信时间之比 = 2B/D"""
    return 2.0 * bytes_of((b, f)) / bytes_of((d, f))


# ---- 与参数有关的失误 ----
def _line_over_ring(n: int) -> float:
    """没有 wraparound 的线与双向环上 AllGather 的时间比：(N-1)/N·V/W_单向 对 V/W_双向 = 2(N-1)/N"""
    return 2 * (n - 1) / n


LINE_FOR_RING = Slip(
    lambda p: _line_over_ring(p["mesh"]["X"]),
    "按没有 wraparound 的线算了；v4p 切片每维都是 4 的倍数时，每条轴都有 wraparound",
)
WHOLE_ARRAY_P1A = Slip(lambda p: p["mesh"]["Y"], "V 用了整个数组；AllGather_X 之后每个设备只有 [B, D_Y]")
ONE_AXIS_P1B = Slip(2.0, "只用了一条轴的带宽：沿 X、Y 同时收集，可用带宽是两条轴之和")
AR_IS_TWICE = Slip(0.5, "AllReduce = ReduceScatter + AllGather，时间是 AllGather 的 2 倍")
WHOLE_ARRAY_P1C = Slip(
    lambda p: p["mesh"]["X"] * p["mesh"]["Y"], "V 用了整个数组；每个设备未规约的缓冲区只有 [B_X, D_Y]"
)
P1_SLIPS = (BF16, BF16_TWICE, ONEWAY_FOR_BIDIR)
EXACT_P1B = Slip(
    1.25, "这是模拟器按并发调度逐步计时的精确值（4x4 上是大 N 公式的 1.25 倍）；本题按正文的多轴公式 V/(k·W_双向) 估算"
)
WHOLE_ARRAY_P1C_CH05 = Slip(
    lambda p: p["mesh"]["X"] * p["mesh"]["Y"],
    "V 用了整个数组（原书早期版本的算法）；每个设备未规约的缓冲区只有 [B_X, D_Y]",
)


def _bandwidth_only(name: str) -> Slip:
    return Slip(
        None,
        "只算了带宽项：每跳的块只有几十字节，时间由每跳约 1 µs 的延迟决定（latency-bound）",
        alt=lambda right, p: bytes_of((p[name],)) / hardware.TPU_V4P.ici_bidir_bw,
    )


LINE_HOPS = Slip(
    lambda p: (p["mesh"]["X"] - 1) / (p["mesh"]["X"] // 2),
    "按 N-1 跳（线）算了；有 wraparound 的双向环只需 ⌊N/2⌋ 跳",
)


def _replication_slips(name: str) -> tuple[Slip, ...]:
    def m(p):
        return p[name]

    return (
        Slip(lambda p: m(p)["X"] / (m(p)["Y"] * m(p)["Z"]), "只用到了 X：复制份数是没有用来分片的轴的大小之积 |Y|·|Z|"),
        Slip(lambda p: m(p)["X"], "把所有芯片都当成了一份完整拷贝"),
        Slip(lambda p: 1 / (m(p)["Y"] * m(p)["Z"]) ** 2, "比值倒过来了：要的是总字节数 / 一份的字节数"),
    )


def _ib_flat(n: int) -> Slip:
    return Slip(
        None,
        "整个环只经过每个节点的一块 50 GB/s 网卡；题目假设八块网卡都用上（每节点 400 GB/s）",
        alt=lambda right, p: 2 * bytes_of((p["params5"],)) * (n - 1) / n / hardware.H100.ib_bw_per_gpu,
    )


def _eight_rail(n: int) -> Slip:
    return Slip(
        None,
        "这是扁平的 8 轨环（8 个环各经一块网卡）或大 N 极限 2V/W_node：同样用满了八块网卡，"
        "是合理的模型；本题按题目说明的流水线分层 AllReduce 计算",
        alt=lambda right, p: 2 * bytes_of((p["params5"],)) * (n - 1) / n / hardware.H100.node_scaleout_bw,
    )


def _hier_sequential(n: int) -> Slip:
    h = hardware.H100
    return Slip(
        None,
        "这是各层依次进行、不重叠的分层 AllReduce（上界）；本题假设各层流水线化、同时在忙",
        alt=lambda right, p: cost.gpu_allreduce_hierarchical(
            bytes_of((p["params5"],)), 8, n // 8, h.nvlink_bw_per_direction, h.node_scaleout_bw
        ),
    )


def _p5_slips(n: int) -> tuple[Slip, ...]:
    if n <= 8:
        return _merge(BF16, *P5_SLIPS, n_over_n_minus_1(n))
    # 512 张时 8 轨环与流水线分层只差 1% 以内，判为正确，不需要提示
    rail = (_eight_rail(n),) if n <= 64 else ()
    return _merge(BF16, *P5_SLIPS, *rail, _hier_sequential(n), _ib_flat(n))


def _bandwidth_term_only(phase: str) -> Slip:
    return Slip(
        None,
        "只算了带宽项，漏了延迟项：NCCL 每次集合通信有固定开销，环上每一步还有开销；负载越小，延迟项越重要",
        alt=lambda right, p: cost.gpu_allreduce_in_node(
            tp_bytes(phase)(p), p["TP"], hardware.H100.nvlink_bw_per_direction
        ),
    )


P5_SLIPS = (Slip(0.5, "AllReduce 的时间是 AllGather 的 2 倍"),)
P7_BYTES_SLIPS = (
    BF16,
    Slip(80.0, "问的是一次 AllReduce，不是 80 层各一次的总和"),
    Slip(160.0, "问的是一次 AllReduce，不是每步 80 层 × 2 次的总和"),
    Slip(2.0, "问的是一次 AllReduce，不是每层两次的总和"),
)
P7_TIME_SLIPS = (
    BF16,
    Slip(2.0, "问的是一次 AllReduce 的时间，不是每层两次的总和"),
    Slip(80.0, "问的是一次 AllReduce 的时间，不是 80 层各一次的总和"),
    Slip(160.0, "问的是一次 AllReduce 的时间，不是每步 80 层 × 2 次的总和"),
)
P3_MIXED = Slip(
    None,
    "这是正文的约定（AllGather 的正对面块整块走一个方向）给出的比值；题目约定两种算法都把正对面的块拆成两半",
    alt=lambda right, p: 0.25,
)
P8_BYTES_SLIPS = (BF16, Slip(4.0, "V 用错了数组：注意哪些维度仍是分片的"))


def _p8_time_slips(letter: str) -> tuple[Slip, ...]:
    def only_rs(p: Params) -> float | None:
        return 2.0 if problems.p8_scheme(p["cases8"], letter) == "rs" else None

    return (
        BF16,
        Slip(only_rs, "用了 AllReduce：输出允许分片时 ReduceScatter 只要一半时间"),
        Slip(2 / 3, "把 4x4 的轴当成了有 wraparound 的双向环；v5e 只有长度 16 的轴才有 wraparound"),
    )


UNI_SLIPS = (
    Slip(0.5, "这是双向环的结果；单向环上是 AllGather 的一半"),
    Slip(4.0, "比值倒过来了：要的是 AllToAll / AllGather"),
)
BI_SLIPS = (
    Slip(2.0, "这是单向环的结果；双向环上 AllToAll 再省一半"),
    Slip(16.0, "比值倒过来了：要的是 AllToAll / AllGather"),
)


def _book_q2(id_prefix: str, var_prefix: str) -> tuple[Answer, ...]:
    """原书 Q2 的 (a)(b)(c)：第 5 章问题 1 与第 6 章问题 2 都是它，答案 id 与变量名不同，其余相同"""
    return (
        Answer(
            f"{id_prefix}a",
            f"{var_prefix}a",
            "s",
            "AllGather_X([B_X, D_Y]) 的时间",
            v4p_gather_x,
            slips=_merge(*P1_SLIPS, WHOLE_ARRAY_P1A, LINE_FOR_RING),
        ),
        Answer(
            f"{id_prefix}b",
            f"{var_prefix}b",
            "s",
            "AllGather_XY([B_X, D_Y]) 的时间（多轴公式，大 N 近似）",
            v4p_gather_xy_limit,
            slips=_merge(*P1_SLIPS, ONE_AXIS_P1B, EXACT_P1B),
        ),
        Answer(
            f"{id_prefix}c",
            f"{var_prefix}c",
            "s",
            "AllReduce_Z([B_X, D_Y]{U_Z}) 的时间",
            v4p_reduce_z,
            slips=_merge(*P1_SLIPS, AR_IS_TWICE, WHOLE_ARRAY_P1C_CH05),
        ),
    )


# ---- 登记表：每个答案一条 ----
ANSWER_LIST: tuple[Answer, ...] = (
    # 第 5 章
    *_book_q2("ch05-p1", "p1"),
    Answer("ch05-p2", "p2", "s", "AllGather_X(bf16[B]) 的时间，B 很小（受延迟限制）", small_gather("B2"),
           slips=(_bandwidth_only("B2"), LINE_HOPS)),
    Answer("ch05-p3-uni", "p3_uni", "1", "大的单向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.5,
           slips=UNI_SLIPS, varies=False),
    Answer("ch05-p3-bi", "p3_bi", "1", "大的双向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.25,
           slips=BI_SLIPS, varies=False),
    Answer("ch05-p3-fn", "alltoall_over_allgather", "1", "N 个设备的环上 AllToAll / AllGather 的精确比值（函数）",
           alltoall_over_allgather, kind="function", examples=((4, False), (4, True), (5, True), (8, True)),
           edge_cases=((2, False), (2, True), (3, True), (7, True), (64, False), (64, True)), rtol=1e-6, varies=False,
           slips=(P3_MIXED,)),
    Answer("ch05-p4", "p4", "1", "所有芯片上的总字节数 / 一份数组的字节数", replication("mesh4"),
           rtol=1e-9, slips=_replication_slips("mesh4")),
    Answer("ch05-p5-8", "p5_8", "s", "bf16 梯度在 8 张 H100 上 AllReduce 的时间", dp_allreduce(8),
           slips=_p5_slips(8)),
    Answer("ch05-p5-64", "p5_64", "s", "bf16 梯度在 64 张 H100 上 AllReduce 的时间", dp_allreduce(64),
           slips=_p5_slips(64)),
    Answer("ch05-p5-512", "p5_512", "s", "bf16 梯度在 512 张 H100 上 AllReduce 的时间", dp_allreduce(512),
           slips=_p5_slips(512)),
    Answer("ch05-p6-dp", "p6_dp", "B", "bf16 模型纯数据并行：每步每个设备发送的字节数（大 N 极限）",
           lambda p: 2 * bytes_of((p["params6"],)),
           slips=_merge(BF16, Slip(0.5, "AllReduce = ReduceScatter + AllGather，要发送 2 倍的模型大小"),
                        Slip(1.5, "这是 ZeRO-3 的量"))),
    Answer("ch05-p6-fsdp", "p6_fsdp", "B", "bf16 模型 ZeRO-3 / FSDP：每步每个设备发送的字节数（大 N 极限）",
           lambda p: 3 * bytes_of((p["params6"],)),
           slips=(BF16, Slip(2 / 3, "漏了反向传播里再做一次的权重 AllGather：前向 AG + 反向 AG + 梯度 RS"))),
    Answer("ch05-p7-decode-bytes", "p7_decode_bytes", "B", "decode：一次 AllReduce 的负载（字节）",
           tp_bytes("decode"), rtol=1e-9, slips=P7_BYTES_SLIPS),
    Answer("ch05-p7-decode-time", "p7_decode_time", "s", "decode：一次 AllReduce 的时间", tp_time("decode"),
           slips=(_bandwidth_term_only("decode"), *P7_TIME_SLIPS)),
    Answer("ch05-p7-prefill-bytes", "p7_prefill_bytes", "B", "prefill：一次 AllReduce 的负载（字节）",
           tp_bytes("prefill"), rtol=1e-9, slips=P7_BYTES_SLIPS),
    Answer("ch05-p7-prefill-time", "p7_prefill_time", "s", "prefill：一次 AllReduce 的时间", tp_time("prefill"),
           slips=(_bandwidth_term_only("prefill"), *P7_TIME_SLIPS)),
    # 第 6 章
    Answer("ch06-p1", "p1", "1", "所有芯片上的总字节数 / 一份数组的字节数", replication("mesh1"),
           rtol=1e-9, slips=_replication_slips("mesh1")),
    # 与第 5 章问题 1 是同一道题（原书 Q2）：同样的参考算法（多轴用正文的大 N 公式）与同样合并过的失误
    *_book_q2("ch06-p2", "p2"),
    Answer("ch06-p3", "p3", "s", "AllGather_X(bf16[B]) 的时间，B 很小（受延迟限制）", small_gather("B3"),
           slips=(_bandwidth_only("B3"), LINE_HOPS)),
    Answer("ch06-p4-fn", "strategy_comm_ratio", "1", "策略 2 与策略 1 的通信时间之比（函数，参数 b, d, f）",
           strategy_comm_ratio, kind="function", examples=((128, 8192, 32768), (4096, 4096, 16384)),
           edge_cases=((4096, 8192, 1024), (1, 8192, 8192)), rtol=1e-6, varies=False),
    Answer("ch06-p5-weight-bytes-per-chip", "p5_weight_bytes_per_chip", "B",
           "推荐分片下每个芯片上两个权重矩阵的字节数", mlp_weight_bytes, rtol=1e-9,
           slips=(BF16, Slip(2.0, "只算了一个矩阵：W_in 和 W_out 都要存"), Slip(4.0, "没有把 F 分到 4 个芯片上"))),
    Answer("ch06-p5-t-math", "p5_t_math", "s", "推荐分片下每个芯片的计算时间", mlp_t_math,
           slips=(Slip(0.5, "只算了一个矩阵乘法"), Slip(4.0, "没有除以 4 个芯片"),
                  Slip(0.5 * 0.5, "漏了 matmul 的因子 2（2BDF）且只算了一个矩阵"))),
    Answer("ch06-p5-t-comms", "p5_t_comms", "s",
           "推荐分片下每层的通信时间（ReduceScatter_XY + AllGather_XY，v5e 2x2 的两条轴都是线）",
           mlp_t_comms, slips=P5_COMMS_SLIPS),
    Answer("ch06-p6-uni", "p6_uni", "1", "大的单向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.5,
           slips=UNI_SLIPS, varies=False),
    Answer("ch06-p6-bi", "p6_bi", "1", "大的双向环上 AllToAll 时间 / AllGather 时间", lambda p: 0.25,
           slips=BI_SLIPS, varies=False),
    Answer("ch06-p8a-bytes", "p8a_bytes", "B", "方案 (a) 的通信负载 V（字节）", p8_bytes("a"),
           rtol=1e-9, slips=P8_BYTES_SLIPS),
    Answer("ch06-p8a-time", "p8a_time", "s", "方案 (a) 的通信时间", p8_time("a"), slips=_p8_time_slips("a")),
    Answer("ch06-p8b-bytes", "p8b_bytes", "B", "方案 (b) 的通信负载 V（字节）", p8_bytes("b"),
           rtol=1e-9, slips=P8_BYTES_SLIPS),
    Answer("ch06-p8b-time", "p8b_time", "s", "方案 (b) 的通信时间", p8_time("b"), slips=_p8_time_slips("b")),
    # 发布版的 (c) 是 Case 1（答案 0）；个人版把三种分片换了顺序，(c) 可能是要通信的那两种之一
    Answer("ch06-p8c-bytes", "p8c_bytes", "B", "方案 (c) 的通信负载 V（字节）", p8_bytes("c"),
           rtol=1e-9, slips=P8_BYTES_SLIPS),
    Answer("ch06-p8c-time", "p8c_time", "s", "方案 (c) 的通信时间", p8_time("c"), slips=_p8_time_slips("c")),
    Answer("ch06-p9-fn", "case2_comm_ratio", "1",
           "Case 2：本地乘 + AllReduce 与先 AllGather 的通信时间之比（函数，参数 i, j, k）",
           case2_comm_ratio, kind="function", examples=((1024, 4096, 1024), (512, 8192, 16384)),
           edge_cases=((256, 8192, 4096), (1, 4096, 1)), rtol=1e-6, varies=False),
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
