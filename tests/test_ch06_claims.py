"""第 6 章与它的解答说的话：读出共享的整本书构建执行章节时交给正文的数字，和测试里从原书的规格从头算的值比较；再查几条文字

独立于章节代码的部分：芯片常数（原书规格表）、线与环上 AllReduce 的链路计数、三种做法的 FLOPs。
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shardlab import units
from shardlab.exercise import answers, judge

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = ROOT / "book" / "ch06_sharded_matmul.md"
SOLUTIONS = ROOT / "solutions" / "ch06_solutions.md"

# 原书的规格：bf16 FLOP/s、每条链路单方向带宽
V5E_C, V5E_W1 = 1.97e14, 4.5e10
V5P_C, V5P_W1 = 4.59e14, 9.0e10


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def glued(glued_text) -> dict[str, str]:
    """第 6 章在共享的整本书构建里 glue 交给正文的文字（键 → 字符串）"""
    return glued_text("book/ch06_sharded_matmul")


def number(s: str) -> float:
    """'26,267' → 26267；'2.77 ms' → 0.00277"""
    value, *unit = s.replace(",", "").split()
    scale = {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit[0]] if unit else 1
    return float(value) * scale


pytestmark = pytest.mark.slow


def test_v5e_threshold_uses_the_line(glued):
    """v5e 长度 4 的轴是线：AllReduce = 2(N-1)/N·V/W_单向，门槛 D = 2(N-1)C/W_单向 ≈ 26,267（环上才是 17,511）"""
    n = 4
    assert number(glued["ch06-v5e-n4"]) == round(2 * (n - 1) * V5E_C / V5E_W1) == 26267
    assert number(glued["ch06-v5e-n4-ring"]) == round(2 * n * V5E_C / (2 * V5E_W1)) == 17511


def test_case2_row_counts_compute(glued):
    """6.3 节 Case 2：收集 A 的总时间 ≈ 2.77 ms（每个设备算整个乘法），规划器选的做法更快"""
    i, j, k, n = 4096, 8192, 16384, 4
    gather = 2 * i * j * k / V5P_C + (2 * i * j) * (n // 2) / n / V5P_W1  # 双向环：⌊N/2⌋ 跳，每跳 V/N
    assert number(glued["ch06-c2-gather-total"]) == pytest.approx(gather, rel=0.01)
    assert gather == pytest.approx(2.77e-3, rel=0.01)
    assert number(glued["ch06-c2-best-total"]) < number(glued["ch06-c2-reduce-total"]) < gather


def test_strategy_table_counts_compute(glued):
    """6.8 节：B = 65536 时激活值复制、收集权重的 T_math ≈ 77 ms；TP 的 AllReduce ≈ 48 ms，计算 ≈ 19 ms"""
    b, d, f, n = 65536, 8192, 32768, 4
    assert number(glued["ch06-s8-rep-math"]) == pytest.approx(2 * b * d * f / V5P_C, rel=0.01)
    assert number(glued["ch06-s8-tp-comms"]) == pytest.approx(2 * (2 * b * f) / (2 * V5P_W1), rel=0.01)
    assert number(glued["ch06-s8-tp-math"]) == pytest.approx(2 * b * d * f / (n * V5P_C), rel=0.01)
    assert number(glued["ch06-s8-fsdp-comms"]) == pytest.approx(2 * d * f / (2 * V5P_W1), rel=0.01)


def test_bidirectional_on_a_line_gains_nothing(glued):
    assert number(glued["ch06-tl-bidir-line"]) == number(glued["ch06-tl-oneway"]) > number(glued["ch06-tl-bidir"])


def test_overlap_does_not_move_the_threshold():
    """重叠改变总时间，不改变 T_math > T_comms 的门槛"""
    chapter = text(CHAPTER)
    assert "门槛都会下降" not in chapter
    assert "让通信与计算重叠（下一节）却不改变门槛" in chapter
    assert "（若不把通信与计算重叠）" not in chapter


def test_megatron_lm_backward_is_stated():
    chapter = text(CHAPTER)
    assert "Megatron-LM 的做法不同" in chapter and "LinearWithGradAccumulationAndAsyncCommunication" in chapter


def test_claims_about_the_book():
    """现在的原书：Q2(c) 11.6 µs（190 µs 是早期版本），Q4 标为 Case 3，Q5 是 v4p 且有部分答案，Q7 有部分答案"""
    both = text(CHAPTER) + text(SOLUTIONS)
    for word in ("第一套完整", "种子材料", "我们的解答是第一"):
        assert word not in both, word
    solutions = text(SOLUTIONS)
    assert re.search(r"早期版本[^。]*190 µs", solutions) and "11.6 µs" in solutions
    assert "标为 Case 3（早期版本写作 Case 4）" in solutions
    assert "(1)（把 I 切到三条轴）与 (2)（把 K 切到三条轴）一样好" in solutions
    assert "只给了部分答案" in solutions
    assert "原书没有给出答案" not in solutions


def test_p4_two_regimes_are_stated():
    solutions = text(SOLUTIONS)
    assert "两种看法并不矛盾" not in solutions
    assert "$D > 2B$ 时策略 2 更快" in solutions and "$D > 2C_\\text{芯片}/W_\\text{双向}$ 时策略 2 更快" in solutions


def test_p5_book_convention_is_not_called_a_bf16_slip():
    """v5e 2x2（两条线）：RS_XY + AG_XY = 2 · 3V/(8·W_单向) ≈ 35 µs；按原书 V/(k·W_双向) 得 23.3 µs 的学生
    应得到“大 N 极限”的提示，而不是“少了 bf16 的因子 2”"""
    v = 2 * 128 * 8192
    right = 2 * (3 * v / 4) / (2 * V5E_W1)
    assert answers.expected_value("ch06-p5-t-comms") == pytest.approx(right, rel=1e-9)
    spec = answers.get("ch06-p5-t-comms")
    book = 2 * v / (2 * 2 * V5E_W1)
    assert book == pytest.approx(23.3e-6, rel=0.01)
    verdict = judge.judge_value(spec, book, right)
    assert not verdict.ok
    assert "大 N 极限" in verdict.message and "bf16" not in verdict.message
    assert judge.judge_value(spec, right, right).ok
    assert "bf16" in judge.judge_value(spec, right / 2, right).message


# H100 的规格（原书 GPU 一章）：bf16 稠密 9.89e14 FLOP/s，每 GPU 单方向 NVLink 450 GB/s；NCCL 的总线带宽上限 18 × 20.6 GB/s
H100_C, H100_W = 9.89e14, 4.5e11
NCCL_BUS = 18 * 20.6e9


def test_h100_thresholds_keep_n_minus_1_over_n(glued):
    """节点内环形 AllReduce = 2(N-1)/N·V/W：T_math = T_comms ⇔ D = 2(N-1)C/W（4,396 / 13,187 / 30,769）"""
    for n, want in [(2, 4396), (4, 13187), (8, 30769)]:
        assert number(glued[f"ch06-h100-n{n}"]) == round(2 * (n - 1) * H100_C / H100_W) == want
    # D = 16384：N = 4 仍受算力限制，N = 8 不行；换成 NCCL 的总线带宽上限，答案不变
    d = 16384
    best = max(n for n in (2, 4, 8) if d > 2 * (n - 1) * H100_C / H100_W)
    best_bus = max(n for n in (2, 4, 8) if d > 2 * (n - 1) * H100_C / NCCL_BUS)
    assert number(glued["ch06-q6-h100-n"]) == best == best_bus == 4
    assert number(glued["ch06-q6-h100-bus-n4"]) == pytest.approx(2 * 3 * H100_C / NCCL_BUS, abs=1)
    chapter = text(CHAPTER)
    assert "这里略去 $(N-1)/N$" not in chapter and "就已经低于三条线" not in chapter


def test_v5p_quiz_states_the_convention(glued):
    """v5p、N = 4：整块对面走一个方向时门槛 2NC/W = 20,400；把对面那块对半分开，2(N-1)C/W = 15,300 < 16,384"""
    assert number(glued["ch06-q6-v5p-next"]) == round(2 * 4 * V5P_C / (2 * V5P_W1)) == 20400
    assert number(glued["ch06-q6-v5p-n4-split"]) == round(2 * 3 * V5P_C / (2 * V5P_W1)) == 15300


def test_case2_demo_column_is_allreduce_over_both_axes(glued):
    """2×4 网格上切片 B 的做法：8 个设备各算 1/8、AllReduce 跨两条轴；只沿 Y（N = 4）时 T_math 翻倍"""
    i, j, k = 4096, 8192, 16384
    v5e_c = V5E_C
    t_math_y = 2 * i * j * k / (4 * v5e_c)
    t_ar_y = 2 * 3 * (2 * i * k) / 4 / V5E_W1  # 长度 4 的线：2(N-1)·(V/N)/W_单向
    math_s, comms_s = glued["ch06-c2-row1-ar-y"].split(" + ")
    assert number(math_s) == pytest.approx(t_math_y, rel=0.01) and number(comms_s) == pytest.approx(t_ar_y, rel=0.01)
    assert "切片到 8 个设备 + $\\\\text{AllReduce}_{YX}$" in text(CHAPTER)


def test_multi_axis_speedup_is_not_k(glued):
    """两条轴同时 AllGather 比只沿较慢的一条快多少：数每条链路上的块（单位 V/W_单向）

    两片各走一条轴；同一阶段里两片的链路不相交，各走各的，阶段用时取较慢的那一片，阶段之间同步。
    2×2（两条长 2 的线）：单轴 1 跳 × V/2 = 1/2；XY：阶段 1 一跳 V/8，阶段 2 一跳 V/4，共 3/8 → 4/3。
    4×4 的环：单轴 ⌊4/2⌋ = 2 步 × V/4 = 1/2；XY：阶段 1 两步 × V/32，阶段 2 两步 × V/8，共 5/16 → 8/5。
    2×4 的线：只沿 Y 3 步 × V/4 = 3/4；XY：阶段 1 max(X 一步 V/16, Y 三步 × V/16) = 3/16，
    阶段 2 max(Y 三步 × V/8, X 一步 V/4) = 3/8，共 9/16 → 4/3。
    """
    want = {"v5e22": 4 / 3, "v4p44": 8 / 5, "v5e24": 4 / 3}
    for key, ratio in want.items():
        assert float(glued[f"ch06-multi-{key}"]) == pytest.approx(ratio, abs=0.005)
    assert "可用的带宽约是 $k$ 倍" not in text(CHAPTER)


def test_strategy_section_compares_like_with_like(glued):
    """6.8：激活值复制、输出也复制时，收集权重后免费切批量再收集输出：T_math/4 + AG(W) + AG(Out)；AllToAll 版更快"""
    b, d, f, n = 65536, 8192, 32768, 4
    t_math = 2 * b * d * f / (n * V5P_C)

    def ag(v):  # 双向环：⌊N/2⌋ 跳，每跳 2V/(N·W_双向) = V/(N·W_单向)
        return v * (n // 2) / n / V5P_W1

    gather_slice = t_math + ag(2 * d * f) + ag(2 * b * f)
    assert number(glued["ch06-s8-gather-slice"]) == pytest.approx(gather_slice, rel=0.01)
    assert number(glued["ch06-s8-a2a"]) < number(glued["ch06-s8-gather-slice"]) < number(glued["ch06-s8-tp"])
    assert number(glued["ch06-s8-fsdp"]) < number(glued["ch06-s8-a2a"])
    chapter = text(CHAPTER)
    assert "三种做法的终点并不相同" in chapter and "反向要再收集一次权重" in chapter


def test_q8_is_a_lower_envelope(glued):
    """Q8：2(N-1)/N·V/450 GB/s ≈ 261 µs 加延迟 ≈ 276 µs 是下包络；原书实测约 150 GB/s 的总线带宽 → 约 783 µs"""
    v = 4096 * 8192 * 2
    bus_bytes = 2 * 7 / 8 * v
    assert bus_bytes / H100_W < number(glued["ch06-q8-t"]) < bus_bytes / H100_W + 20e-6  # 带宽项 + 十几 µs 的延迟
    assert number(glued["ch06-q8-measured"]) == pytest.approx(bus_bytes / 150e9, rel=0.01)
    assert number(glued["ch06-q8-t"]) < number(glued["ch06-q8-nccl-simple"]) < number(glued["ch06-q8-measured"])
    assert "下包络" in text(CHAPTER)


def test_naive_baseline_on_the_same_ring(glued):
    """有回绕的环上朴素的 AllGather 也走两个方向：⌊4/2⌋ 步 × 每步 1.5 = 3，再乘 4 块 → 7 个单位"""
    assert number(glued["ch06-tl-naive-bidir"]) == 2 * 1.5 + 4 == 7
    assert number(glued["ch06-tl-bidir"]) == 4 and number(glued["ch06-tl-naive"]) == 8.5


def test_summary_does_not_claim_hlo_always_agrees():
    chapter = text(CHAPTER)
    assert "XLA 编译出的 HLO 与规划器的预计一致" not in chapter
    assert "只有四种情形" not in chapter and "理想情况下只有最后一块的 AllReduce 露在外面" not in chapter


def test_case2_table_uses_the_line(glued):
    """6.2 节 Case 2 第一行：v5e 长度 4 的 Y 是线，收集 A（67.1 MB）= 3 跳 × (V/4)/W_单向 ≈ 1.12 ms；环只要 V/W_双向 ≈ 746 µs"""
    v_a = 2 * 4096 * 8192
    assert number(glued["ch06-c2-row1-ag-line"]) == pytest.approx(3 * v_a / 4 / V5E_W1, rel=0.01)
    assert number(glued["ch06-c2-row1-ag-ring"]) == pytest.approx(v_a / (2 * V5E_W1), rel=0.01)


def test_multi_axis_ingress_bound(glued):
    """入口下界 (N-1)/N·V/ΣW_i（线上每条轴只有 W_单向）：2×4 两条线 = 7/8·V/(2W_单向)，只沿 Y（线，3 跳 × V/4）是 3V/(4W_单向)
    → 12/7 ≈ 1.71；2×2 = 3/4·V/(2W_单向) 对 V/(2W_单向) → 4/3，课程的调度已经达到它"""
    assert float(glued["ch06-multi-v5e24-bound"]) == pytest.approx(12 / 7, abs=0.005)
    assert float(glued["ch06-multi-v5e22-bound"]) == pytest.approx(4 / 3, abs=0.005)
    assert float(glued["ch06-multi-v5e22-bound"]) == float(glued["ch06-multi-v5e22"])


def test_mlp_block_threshold(glued):
    """整个 MLP 块：F > (N-1)·C/W_GPU；F = 32768 → N ≤ 15。D 8192、F 28672、TP 8、4096 个词元：
    计算 4TDF/(8C) ≈ 486 µs，比 AllReduce 的带宽项 2·7/8·2TD/W ≈ 261 µs 长"""
    ci = H100_C / H100_W
    assert number(glued["ch06-mlp-nmax"]) == max(n for n in range(1, 65) if 32768 > (n - 1) * ci) == 15
    t, d, f = 4096, 8192, 28672
    assert number(glued["ch06-mlp-math"]) == pytest.approx(4 * t * d * f / (8 * H100_C), rel=0.01)
    bw = 2 * 7 / 8 * 2 * t * d / H100_W
    assert bw < number(glued["ch06-mlp-ar"]) < bw + 20e-6 < number(glued["ch06-mlp-math"])


def test_exercise_8a_book_and_course_outputs(glued, glued_solutions):
    """原书 Q6(a) 的 C[I_X, K]：AllReduce_Y（线）= 2·3·(V/4)/W_单向，V = 2·(I/4)·K；本章的 C[I_X, K_Y]：一半。
    6.2 节的小测验换了尺寸（4x8，I = 16384、J = K = 8192）：线长 8，2·7·(V/8)/W_单向"""
    v = 2 * (4096 // 4) * 4096
    ar = 2 * 3 * (v / 4) / V5E_W1
    assert number(glued_solutions["ch06-sol-p8-ar"]) == pytest.approx(ar, rel=0.02)
    assert number(glued_solutions["ch06-sol-p8-rs"]) == pytest.approx(ar / 2, rel=0.02)
    vq = 2 * (16384 // 4) * 8192
    assert number(glued["ch06-q2-t"]) == pytest.approx(2 * 7 * (vq / 8) / V5E_W1, rel=0.02)
    assert number(glued["ch06-q2-chain"]) == pytest.approx(vq / V5E_W1, rel=0.01)


@pytest.fixture(scope="module")
def glued_solutions(glued_text) -> dict[str, str]:
    return glued_text("solutions/ch06_solutions")


def test_p5_limit_gap_factors(glued_solutions):
    """2x2 的线：答案 3/4·V/(2W_单向)，极限 V/(2W_双向)；之比 = (W_双向/W_单向)·(3/4) = 1.5，极限短 33%"""
    g = glued_solutions
    assert float(g["ch06-sol-p5-bw-factor"]) == 2 and g["ch06-sol-p5-n-factor"] == "3/4"
    assert float(g["ch06-sol-p5-net"]) == 1.5 and g["ch06-sol-p5-limit-short"] == "33%"


def test_p7_speedup_is_printed(glued_solutions):
    """方阵 4096 切到 64 个芯片：T_math/64 + AllGather_XYZ(2IK) 对不切的 2IJK/C ≈ 2.9 倍。
    4×4×4 的环、课程调度：带宽项 h·V(N-1)/(N·k·(L-1)·W_单向)，h = 2、k = 3、L = 4、N = 64（每步都大于 1 µs 的延迟）"""
    c, w1 = 2.75e14, 4.5e10  # v4p（原书的 TPU v4）：bf16 FLOP/s，每条链路单方向
    n = 4096
    full = 2 * n**3 / c
    ag = 2 * (2 * n * n) * 63 / (64 * 3 * 3 * w1)
    assert float(glued_solutions["ch06-sol-p7-speedup"]) == pytest.approx(full / (full / 64 + ag), abs=0.05)


def test_line_allreduce_chain_thresholds(glued):
    """v5e 的线：ReduceScatter + AllGather 的门槛 2(N-1)C/W_单向（N = 8：61,289）；流水线化的链式 AllReduce 是 V/W_单向，
    门槛与有回绕的环相同 2NC/W_双向（N = 8：35,022）。6.2 的小测验：V = 67.1 MB，链式 V/W_单向 ≈ 1.49 ms"""
    assert number(glued["ch06-v5e-n8"]) == round(2 * 7 * V5E_C / V5E_W1) == 61289
    assert number(glued["ch06-v5e-n8-chain"]) == round(2 * 8 * V5E_C / (2 * V5E_W1)) == 35022
    v = 2 * 4096 * 8192
    assert number(glued["ch06-q2-chain"]) == pytest.approx(v / V5E_W1, rel=0.01)


def test_xla_on_mismatched_axes_costs(glued):
    """A[I, J_X]·B[J_Y, K]（2×4 的两条线，4096, 8192, 4096）：XLA 收集 A（X，1 跳 × V_A/2）与 B（Y，3 跳 × V_B/4），
    每个设备算整个乘法：≈ 1.40 + 0.746 + 1.12 ≈ 3.26 ms"""
    i, j, k = 4096, 8192, 4096
    want = 2 * i * j * k / V5E_C + (2 * i * j) / 2 / V5E_W1 + 3 * (2 * j * k) / 4 / V5E_W1
    assert number(glued["ch06-mis-xla"]) == pytest.approx(want, rel=0.01)
    assert number(glued["ch06-mis-best"]) < number(glued["ch06-mis-xla"])


def test_gather_then_split_beats_allreduce(glued):
    """6.3 的 Case 2（v5p 长 4 的环）：收集 A 后各算 1/4、再收集输出 = 2IJK/(4C) + V_A/(2W_单向) + V_C/(2W_单向) ≈ 1.72 ms，
    比切片再 AllReduce 的 2.09 ms 快"""
    i, j, k = 4096, 8192, 16384
    want = 2 * i * j * k / (4 * V5P_C) + (2 * i * j) / (2 * V5P_W1) + (2 * i * k) / (2 * V5P_W1)
    assert number(glued["ch06-c2-gather-split-total"]) == pytest.approx(want, rel=0.01)
    assert number(glued["ch06-c2-gather-split-total"]) < number(glued["ch06-c2-reduce-total"])


def test_gb200_and_swiglu(glued):
    """GB200 每 GPU 稠密 BF16 约 2.5e15：C/W_GPU ≈ 2,778，F = 32768 时 N ≤ 12；SwiGLU 三次乘法 6TDF/(8C) ≈ 730 µs"""
    ci = 2.5e15 / 9e11
    assert number(glued["ch06-gb200-own-ci"]) == round(ci)
    assert number(glued["ch06-mlp-nmax-gb200-own"]) == max(n for n in range(1, 73) if 32768 > (n - 1) * ci) == 12
    assert number(glued["ch06-mlp-math3"]) == pytest.approx(6 * 4096 * 8192 * 28672 / (8 * H100_C), rel=0.01)


def test_megatron_sp_extra_agrees_with_chapter_5(glued, glued_text):
    """反向本身多 50%（6V 对 4V），一层前向加反向合计多 25%（10V 对 8V）：与第 5 章同一对数"""
    ch05 = glued_text("book/ch05_collectives")
    assert glued["ch06-sp-lm-extra-bwd"] == ch05["ch05-sp-megatron-extra-bwd"] == "50%"
    assert glued["ch06-sp-lm-extra"] == ch05["ch05-sp-megatron-extra"] == "25%"


def test_case3_quiz_is_a_size_the_table_does_not_show(glued):
    """v5p 长度 4 的轴，I = 4096、J = 32768、K = 12288：V_C = 4096·12288·2 字节"""
    v_c = 4096 * 12288 * 2
    assert glued["ch06-q3-ar"] == units.fmt_time(2 * v_c / 1.8e11)
    assert glued["ch06-q3-rs"] == units.fmt_time(v_c / 1.8e11)
    assert glued["ch06-q3-math"] == units.fmt_time(2 * 4096 * 32768 * 12288 / 4 / 4.59e14)
    assert glued["ch06-q3-bound"] == "受算力限制"


def test_explorer_gathers_weights_from_the_crossover(glued):
    """6.8 节：探索器（FSDP 场景）从约 12,288 起把收集权重排第一，不是 16,384（只试 2 的幂时的答案）"""
    from shardlab import explorer

    def first(b):
        st = explorer.sharding_state(b, 8192, 32768, "v5p", {"Y": 4}, scenario="fsdp")
        return st["options"][st["chosen"]]["kinds"]

    b = int(number(glued["ch06-s8-explorer-from"]))
    assert 8192 < b < 16384
    assert first(b) == ["all_gather"] and first(b - 4) != ["all_gather"]


def test_p7_hbm_terms(glued_solutions):
    """问题 7 计入 HBM（v4p：1.2e12 B/s、2.75e14 FLOP/s）：第一组不切 ≈ 115 µs，切 I ≈ 124 µs，切 K ≈ 15 µs"""
    hbm, c = 1.2e12, 2.75e14
    i, j, k = 128, 8192, 8192
    a, b, out = 2 * i * j, 2 * j * k, 2 * i * k
    full = max(2 * i * j * k / c, (a + b + out) / hbm)
    assert number(glued_solutions["ch06-sol-p7-hbm-g1-full"]) == pytest.approx(full, rel=0.01)
    split_k = number(glued_solutions["ch06-sol-p7-hbm-g1-k"])
    split_i = number(glued_solutions["ch06-sol-p7-hbm-g1-i"])
    assert split_k < 20e-6 < full < split_i
    i, j, k = 64, 2048, 2048
    ai = 2 * i * j * k / (2 * (i * j + j * k + i * k))
    assert number(glued_solutions["ch06-sol-p7-hbm-g4-ai"]) == pytest.approx(ai, abs=1) and ai < c / hbm
    g4_full = (2 * (i * j + j * k + i * k)) / hbm
    assert number(glued_solutions["ch06-sol-p7-hbm-g4-full"]) == pytest.approx(g4_full, rel=0.01)
    assert number(glued_solutions["ch06-sol-p7-hbm-g4-k"]) < g4_full
    assert float(glued_solutions["ch06-sol-p7-hbm-speedup"]) == pytest.approx(2.6, abs=0.05)
