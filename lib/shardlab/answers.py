"""第 5、6 章练习的答案登记表（answer registry）：每个答案 id 的含义、单位、参考算法和常见失误

参考值不是抄来的数字，而是用 ``shardlab.cost`` 现算的：它与解答笔记本（solutions/）各自独立地推导，
测试保证两者一致。自检（``shardlab.check``）和评分（``shardlab.grade``）都从这里读答案的规格。

单位一律是 SI：秒（s）、字节（B）、FLOP，比值为 1。
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from shardlab import cost, hardware
from shardlab.units import bytes_of

# ---- 题目里的设定（只是输入，不是答案） ----
V4P_MESH = {"X": 4, "Y": 4, "Z": 4}  # TPU v4p 4x4x4 切片（书中的 v4p 即 TPU v4）
P1_B, P1_D = 1024, 4096  # ch05 P1 / ch06 P2：A[B_X, D_Y]，bf16
P2_B = 128  # ch05 P2 / ch06 P3：A[B_X]，bf16
P4_MESH = {"X": 4, "Y": 8, "Z": 2}  # ch05 P4 / ch06 P1
P5_PARAMS = 7e9  # ch05 P5：7B 模型的梯度，bf16
P6_PARAMS = 70e9  # ch05 P6：70B 模型，bf16
P7_D, P7_TP, P7_PROMPT = 8192, 8, 2048  # ch05 P7：LLaMA-70B，TP=8
CH06_P5 = {"B": 128, "D": 8192, "F": 32768, "mesh": {"X": 2, "Y": 2}}  # TPU v5e 2x2
CH06_P8 = {"I": 4096, "J": 8192, "K": 4096, "mesh": {"X": 4, "Y": 4}}  # TPU v5e 4x4


@dataclass(frozen=True)
class Slip:
    """一种常见失误：错误答案 ≈ 正确答案 × factor，或 ≈ alt(正确答案)"""

    factor: float | None
    hint: str
    alt: Callable[[float], float] | None = None

    def wrong_value(self, right: float) -> float:
        return self.alt(right) if self.alt is not None else right * self.factor


@dataclass(frozen=True)
class Answer:
    """一个答案 id 的规格

    kind 为 'value' 时 reference() 给出参考值；为 'function' 时 reference 就是参考函数，
    自检用 examples 里的公开输入调用学生的函数，评分器在评分时另选输入。
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

    @property
    def chapter(self) -> int:
        return int(self.id[2:4])


# ---- 常见失误 ----
BF16 = Slip(0.5, "少了 bf16 的因子 2：每个 bf16 元素占 2 字节")
BF16_TWICE = Slip(2.0, "bf16 的因子 2 乘了两次，或把 bf16 当成了 4 字节")
ONEWAY_FOR_BIDIR = Slip(2.0, "用了单向带宽 W_单向；有 wraparound 的双向环应该用 W_双向 = 2·W_单向")
BIDIR_FOR_ONEWAY = Slip(0.5, "用了双向带宽 W_双向；这里数据只走一个方向，应该用 W_单向")


def _merge(*slips: Slip) -> tuple[Slip, ...]:
    """因子相同的失误给出同一个错误值，学生的答案无法区分它们：合并成一条，提示里列出每种可能"""
    out: list[Slip] = []
    for s in slips:
        k = next(
            (i for i, o in enumerate(out) if o.alt is None and s.alt is None and math.isclose(o.factor, s.factor)), None
        )
        if k is None:
            out.append(s)
        else:
            out[k] = Slip(out[k].factor, f"{out[k].hint}；也可能是：{s.hint}")
    return tuple(out)


def n_over_n_minus_1(n: int) -> Slip:
    return Slip(n / (n - 1), f"用了大 N 极限：环上有 {n} 个成员时，环形算法每个成员只发送 (N-1)/N = {n - 1}/{n} 份")


def times_n_minus_1_over_n(n: int) -> Slip:
    return Slip((n - 1) / n, f"多乘了 (N-1)/N = {n - 1}/{n}：这里用的公式已经包含了它，或题目问的是大 N 极限")


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


# ---- 参考算法（与解答笔记本独立推导） ----
def _v4p(collective: str, nbytes: float, axes) -> float:
    return cost.estimate(collective, nbytes, axes, "v4p", mesh=V4P_MESH).time_s


def ch05_p1a() -> float:
    # AllGather_X 之后每个设备持有 [B, D_Y]：V 是它的字节数
    return _v4p("all_gather", bytes_of((P1_B, P1_D // V4P_MESH["Y"])), ["X"])


def ch05_p1b() -> float:
    # 原书的答案（约 46 µs）：多轴公式的大 N 极限 V/(2·W_bidir)；模拟器的精确调度在 4×4 上是它的 1.25 倍
    return cost.allgather_multi_axis_limit(bytes_of((P1_B, P1_D)), [4, 4], hardware.TPU_V4P.ici_bidir_bw)


def ch05_p1c() -> float:
    # {U_Z}：每个设备的未规约缓冲区是 [B_X, D_Y]
    return _v4p("all_reduce", bytes_of((P1_B // V4P_MESH["X"], P1_D // V4P_MESH["Y"])), ["Z"])


def ch05_p2() -> float:
    return _v4p("all_gather", bytes_of((P2_B,)), ["X"])


def alltoall_over_allgather(n: int, bidirectional: bool) -> float:
    """N 个设备的环上 AllToAll 与 AllGather 的时间比（精确，受带宽限制）

    题目的约定：双向环上正对面的块在两种算法里都拆成两半，每条有向链路负载相同，
    时间之比 = 全部块的字节·跳数之比 = ⌊N²/4⌋/(N(N-1))（偶数 N 为 N/(4(N-1))，奇数 N 为 (N+1)/(4N)）；单向环 1/2。
    """
    if n < 2:
        raise ValueError(f"需要至少 2 个设备，收到 n = {n}")
    return (n * n // 4) / (n * (n - 1)) if bidirectional else 0.5


def ch05_p4() -> float:
    return float(P4_MESH["Y"] * P4_MESH["Z"])


def ch05_p5(n_gpus: int) -> float:
    return cost.estimate("all_reduce", bytes_of((P5_PARAMS,)), {"G": n_gpus}, "h100").time_s


def ch05_p7_bytes(tokens: int) -> float:
    return float(bytes_of((tokens, P7_D)))


def ch05_p7_time(tokens: int) -> float:
    # 节点内的 NCCL 环形 AllReduce：带宽项 2V(N-1)/(N·W_nvlink) 加上 NCCL 模型的延迟项（2(N-1) 步）
    return cost.estimate("all_reduce", ch05_p7_bytes(tokens), {"TP": P7_TP}, "h100").time_s


def ch06_p5_weight_bytes() -> float:
    # 推荐：W_in[D, F_XY]、W_out[F_XY, D]，两个矩阵都按 F 分到 4 个芯片
    p = CH06_P5
    n = p["mesh"]["X"] * p["mesh"]["Y"]
    return 2 * bytes_of((p["D"], p["F"])) / n


def ch06_p5_t_math() -> float:
    p = CH06_P5
    n = p["mesh"]["X"] * p["mesh"]["Y"]
    flops = 2 * cost.matmul_flops(p["B"], p["D"], p["F"])
    return cost.t_math(flops / n, hardware.TPU_V5E.flops_bf16)


def ch06_p5_t_comms() -> float:
    # Out[B, D]{U_XY} 做 ReduceScatter_XY，下一层之前再 AllGather_XY 回 [B, D]
    p = CH06_P5
    v = bytes_of((p["B"], p["D"]))
    rs = cost.estimate("reduce_scatter", v, ["X", "Y"], "v5e", mesh=p["mesh"]).time_s
    ag = cost.estimate("all_gather", v, ["X", "Y"], "v5e", mesh=p["mesh"]).time_s
    return rs + ag


def ch06_p8_bytes(part: str) -> float:
    p = CH06_P8
    nx, ny = p["mesh"]["X"], p["mesh"]["Y"]
    if part == "a":  # C[I_X, K]{U_Y} → ReduceScatter_Y → C[I_X, K_Y]；V 是未规约的本地缓冲区
        return float(bytes_of((p["I"] // nx, p["K"])))
    if part == "b":  # AllGather_X：B[J_X, K_Y] → B[J, K_Y]；V 是收集后的字节数
        return float(bytes_of((p["J"], p["K"] // ny)))
    return 0.0  # (c) Case 1：不需要通信


def ch06_p8_time(part: str) -> float:
    p = CH06_P8
    kind, axis = {"a": ("reduce_scatter", "Y"), "b": ("all_gather", "X")}.get(part, (None, None))
    if kind is None:
        return 0.0
    return cost.estimate(kind, ch06_p8_bytes(part), [axis], "v5e", mesh=p["mesh"]).time_s


def case2_comm_ratio(i: int, j: int, k: int) -> float:
    """Case 2：A[I, J_X]·B[J, K] 先本地乘再 AllReduce C[I, K]，与先 AllGather A[I, J] 的通信时间之比 = 2K/J"""
    return 2.0 * bytes_of((i, k)) / bytes_of((i, j))


def strategy_comm_ratio(b: int, d: int, f: int) -> float:
    """ch06 P4：策略 2（本地乘 + AllReduce Z[B, F]）与策略 1（AllGather Y[D, F]）的通信时间之比 = 2B/D"""
    return 2.0 * bytes_of((b, f)) / bytes_of((d, f))


# ---- 登记表 ----
def _p1(pid: str, part: str) -> list[Answer]:
    p1 = {
        "a": (
            ch05_p1a,
            "AllGather_X([B_X, D_Y]) 的时间",
            (
                Slip(4.0, "V 用了整个数组；AllGather_X 之后每个设备只有 [B, D_Y]"),
                Slip(1.5, "按没有 wraparound 的线算了；4x4x4 是完整的立方体，每条轴都有 wraparound"),
            ),
        ),
        "b": (
            ch05_p1b,
            "AllGather_XY([B_X, D_Y]) 的时间",
            (
                Slip(2.0, "只用了一条轴的带宽：沿 X、Y 同时收集，可用带宽是两条轴之和"),
                Slip(
                    1.25,
                    "这是模拟器按并发调度逐步计时的精确值（4x4 上是大 N 公式的 1.25 倍）；本题按正文的多轴公式 V/(k·W_双向) 估算",
                ),
            ),
        ),
        "c": (
            ch05_p1c,
            "AllReduce_Z([B_X, D_Y]{U_Z}) 的时间",
            (
                Slip(0.5, "AllReduce = ReduceScatter + AllGather，时间是 AllGather 的 2 倍"),
                Slip(16.0, "V 用了整个数组（原书早期版本的算法）；每个设备未规约的缓冲区只有 [B_X, D_Y]"),
            ),
        ),
    }[part]
    ref, meaning, extra = p1
    slips = _merge(BF16, BF16_TWICE, ONEWAY_FOR_BIDIR, *extra)
    var = f"{pid.split('-')[1]}{part}"  # 'ch05-p1' + 'a' → p1a；'ch06-p2' + 'a' → p2a
    return [Answer(f"{pid}{part}", var, "s", meaning, ref, slips=slips)]


def _registry() -> dict[str, Answer]:
    ans: list[Answer] = []
    for pid in ("ch05-p1", "ch06-p2"):
        for part in "abc":
            ans += _p1(pid, part)
    for aid in ("ch05-p2", "ch06-p3"):
        bw_only = Slip(
            None,
            "只算了带宽项：每跳的块只有几十字节，时间由每跳约 1 µs 的延迟决定（latency-bound）",
            alt=lambda right: bytes_of((P2_B,)) / hardware.TPU_V4P.ici_bidir_bw,
        )
        ans.append(
            Answer(
                aid,
                aid.split("-")[1],
                "s",
                "AllGather_X(bf16[128]) 的时间（受延迟限制）",
                ch05_p2,
                slips=(bw_only, Slip(1.5, "按 3 跳（线）算了；有 wraparound 的双向环只需 ⌊N/2⌋ = 2 跳")),
            )
        )
    for prefix in ("ch05-p3", "ch06-p6"):
        var = prefix.split("-")[1]
        ans.append(
            Answer(
                f"{prefix}-uni",
                f"{var}_uni",
                "1",
                "大的单向环上 AllToAll 时间 / AllGather 时间",
                lambda: 0.5,
                slips=(
                    Slip(0.5, "这是双向环的结果；单向环上是 AllGather 的一半"),
                    Slip(4.0, "比值倒过来了：要的是 AllToAll / AllGather"),
                ),
            )
        )
        ans.append(
            Answer(
                f"{prefix}-bi",
                f"{var}_bi",
                "1",
                "大的双向环上 AllToAll 时间 / AllGather 时间",
                lambda: 0.25,
                slips=(
                    Slip(2.0, "这是单向环的结果；双向环上 AllToAll 再省一半"),
                    Slip(16.0, "比值倒过来了：要的是 AllToAll / AllGather"),
                ),
            )
        )
    ans.append(
        Answer(
            "ch05-p3-fn",
            "alltoall_over_allgather",
            "1",
            "N 个设备的环上 AllToAll / AllGather 的精确比值（函数）",
            alltoall_over_allgather,
            kind="function",
            examples=((4, False), (4, True), (5, True), (8, True)),
            rtol=1e-6,
            slips=(
                Slip(
                    None,
                    "这是正文的约定（AllGather 的正对面块整块走一个方向）给出的比值；"
                    "题目约定两种算法都把正对面的块拆成两半",
                    alt=lambda right: 0.25,
                ),
            ),
        )
    )
    for aid in ("ch05-p4", "ch06-p1"):
        ans.append(
            Answer(
                aid,
                aid.split("-")[1],
                "1",
                "所有芯片上的总字节数 / 一份数组的字节数",
                ch05_p4,
                rtol=1e-9,
                slips=(
                    Slip(1 / 4, "只用到了 X：复制份数是没有用来分片的轴的大小之积 |Y|·|Z|"),
                    Slip(4.0, "把所有 64 个芯片都当成了一份完整拷贝"),
                    Slip(1 / 16, "比值倒过来了：要的是总字节数 / 一份的字节数"),
                ),
            )
        )
    for n in (8, 64, 512):
        v5 = bytes_of((P5_PARAMS,))
        w_node, w_gpu = hardware.H100.node_scaleout_bw, hardware.H100.nvlink_bw_per_direction
        if n == 8:
            extra = (n_over_n_minus_1(8),)
        else:
            m = n // 8
            eight_rail = (
                Slip(
                    None,
                    "这是扁平的 8 轨环（8 个环各经一块网卡）或大 N 极限 2V/W_node：同样用满了八块网卡，"
                    "是合理的模型；本题按题目说明的流水线分层 AllReduce 计算",
                    alt=lambda right, n=n: 2 * v5 * (n - 1) / n / w_node,
                ),
            )
            # 512 张时 8 轨环与流水线分层只差 1% 以内，判为正确，不需要提示
            extra = eight_rail[: 1 if n == 64 else 0] + (
                Slip(
                    None,
                    "这是各层依次进行、不重叠的分层 AllReduce（上界）；本题假设各层流水线化、同时在忙",
                    alt=lambda right, m=m: cost.gpu_allreduce_hierarchical(v5, 8, m, w_gpu, w_node),
                ),
                Slip(
                    None,
                    "整个环只经过每个节点的一块 50 GB/s 网卡；题目假设八块网卡都用上（每节点 400 GB/s）",
                    alt=lambda right, n=n: 2 * v5 * (n - 1) / n / hardware.H100.ib_bw_per_gpu,
                ),
            )
        ans.append(
            Answer(
                f"ch05-p5-{n}",
                f"p5_{n}",
                "s",
                f"7B bf16 梯度在 {n} 张 H100 上 AllReduce 的时间",
                lambda n=n: ch05_p5(n),
                slips=_merge(BF16, Slip(0.5, "AllReduce 的时间是 AllGather 的 2 倍"), *extra),
            )
        )
    ans.append(
        Answer(
            "ch05-p6-dp",
            "p6_dp",
            "B",
            "70B bf16 模型纯数据并行：每步每个设备发送的字节数（大 N 极限）",
            lambda: 2 * bytes_of((P6_PARAMS,)),
            slips=_merge(
                BF16,
                Slip(0.5, "AllReduce = ReduceScatter + AllGather，要发送 2 倍的模型大小"),
                Slip(1.5, "这是 ZeRO-3 的量"),
            ),
        )
    )
    ans.append(
        Answer(
            "ch05-p6-fsdp",
            "p6_fsdp",
            "B",
            "70B bf16 模型 ZeRO-3 / FSDP：每步每个设备发送的字节数（大 N 极限）",
            lambda: 3 * bytes_of((P6_PARAMS,)),
            slips=(BF16, Slip(2 / 3, "漏了反向传播里再做一次的权重 AllGather：前向 AG + 反向 AG + 梯度 RS")),
        )
    )
    for phase, tokens in (("decode", 1), ("prefill", P7_PROMPT)):
        ans.append(
            Answer(
                f"ch05-p7-{phase}-bytes",
                f"p7_{phase}_bytes",
                "B",
                f"{phase}：一次 AllReduce 的负载（字节）",
                lambda t=tokens: ch05_p7_bytes(t),
                rtol=1e-9,
                slips=(
                    BF16,
                    Slip(80.0, "问的是一次 AllReduce，不是 80 层各一次的总和"),
                    Slip(160.0, "问的是一次 AllReduce，不是每步 80 层 × 2 次的总和"),
                    Slip(2.0, "问的是一次 AllReduce，不是每层两次的总和"),
                ),
            )
        )
        ans.append(
            Answer(
                f"ch05-p7-{phase}-time",
                f"p7_{phase}_time",
                "s",
                f"{phase}：一次 AllReduce 的时间",
                lambda t=tokens: ch05_p7_time(t),
                slips=(
                    Slip(
                        None,
                        "只算了带宽项，漏了延迟项：NCCL 每次集合通信有固定开销，环上每一步还有开销；负载越小，延迟项越重要",
                        alt=lambda right, t=tokens: cost.gpu_allreduce_in_node(
                            ch05_p7_bytes(t), P7_TP, hardware.H100.nvlink_bw_per_direction
                        ),
                    ),
                    BF16,
                    Slip(2.0, "问的是一次 AllReduce 的时间，不是每层两次的总和"),
                    Slip(80.0, "问的是一次 AllReduce 的时间，不是 80 层各一次的总和"),
                    Slip(160.0, "问的是一次 AllReduce 的时间，不是每步 80 层 × 2 次的总和"),
                ),
            )
        )
    ans.append(
        Answer(
            "ch06-p4-fn",
            "strategy_comm_ratio",
            "1",
            "策略 2 与策略 1 的通信时间之比（函数，参数 b, d, f）",
            strategy_comm_ratio,
            kind="function",
            examples=((128, 8192, 32768), (4096, 4096, 16384)),
            rtol=1e-6,
        )
    )
    ans.append(
        Answer(
            "ch06-p5-weight-bytes-per-chip",
            "p5_weight_bytes_per_chip",
            "B",
            "推荐分片下每个芯片上两个权重矩阵的字节数",
            ch06_p5_weight_bytes,
            rtol=1e-9,
            slips=(BF16, Slip(2.0, "只算了一个矩阵：W_in 和 W_out 都要存"), Slip(4.0, "没有把 F 分到 4 个芯片上")),
        )
    )
    ans.append(
        Answer(
            "ch06-p5-t-math",
            "p5_t_math",
            "s",
            "推荐分片下每个芯片的计算时间",
            ch06_p5_t_math,
            slips=(
                Slip(0.5, "只算了一个矩阵乘法"),
                Slip(4.0, "没有除以 4 个芯片"),
                Slip(0.5 * 0.5, "漏了 matmul 的因子 2（2BDF）且只算了一个矩阵"),
            ),
        )
    )
    ans.append(
        Answer(
            "ch06-p5-t-comms",
            "p5_t_comms",
            "s",
            "推荐分片下每层的通信时间（ReduceScatter_XY + AllGather_XY）",
            ch06_p5_t_comms,
            slips=(BF16, Slip(0.5, "只算了 ReduceScatter；下一层之前还要 AllGather"), ONEWAY_FOR_BIDIR),
        )
    )
    for part in "abc":
        ans.append(
            Answer(
                f"ch06-p8{part}-bytes",
                f"p8{part}_bytes",
                "B",
                f"方案 ({part}) 的通信负载 V（字节）",
                lambda part=part: ch06_p8_bytes(part),
                rtol=1e-9,
                slips=(BF16, Slip(4.0, "V 用错了数组：注意哪些维度仍是分片的")),
            )
        )
        ans.append(
            Answer(
                f"ch06-p8{part}-time",
                f"p8{part}_time",
                "s",
                f"方案 ({part}) 的通信时间",
                lambda part=part: ch06_p8_time(part),
                slips=(
                    BF16,
                    Slip(2.0, "用了 AllReduce：输出允许分片时 ReduceScatter 只要一半时间"),
                    Slip(2 / 3, "把 4x4 的轴当成了有 wraparound 的双向环；v5e 只有长度 16 的轴才有 wraparound"),
                ),
            )
        )
    ans.append(
        Answer(
            "ch06-p9-fn",
            "case2_comm_ratio",
            "1",
            "Case 2：本地乘 + AllReduce 与先 AllGather 的通信时间之比（函数，参数 i, j, k）",
            case2_comm_ratio,
            kind="function",
            examples=((1024, 4096, 1024), (512, 8192, 16384)),
            rtol=1e-6,
        )
    )
    return {a.id: a for a in ans}


ANSWERS: dict[str, Answer] = _registry()


def get(answer_id: str) -> Answer:
    """按 id 取答案规格；未知 id 给出清楚的错误"""
    try:
        return ANSWERS[answer_id]
    except KeyError:
        known = "、".join(sorted(ANSWERS))
        raise KeyError(f"未知的答案 id（answer id）{answer_id!r}。已知的 id：{known}") from None


def expected_value(answer_id: str) -> float:
    """value 类答案的参考值（SI 单位）"""
    spec = get(answer_id)
    if spec.kind != "value":
        raise TypeError(f"{answer_id} 是函数答案（function answer），没有单一的参考值")
    return float(spec.reference())
