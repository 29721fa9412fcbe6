"""第 6 章与解答的几条文字（快速，不构建）：说法要与算出的数和原书对得上

数字本身在 test_ch06_claims.py（读整本书构建里 glue 的值）里核对；这里只查措辞。
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = (ROOT / "book" / "ch06_sharded_matmul.md").read_text(encoding="utf-8")
SOLUTIONS = (ROOT / "solutions" / "ch06_solutions.md").read_text(encoding="utf-8")


def exercise(n: int) -> str:
    """6.9 节习题列表里第 n 题的文字"""
    problems = CHAPTER.split("## 6.9 习题", 1)[1].split("## 小结", 1)[0]
    return re.split(r"\n(?=\d+\. \*\*)", problems)[n]


def test_exercise_2_names_the_formula_that_6_4_gives():
    """习题 2 的 AllGather_XY 用大 N 极限 V/(k·W_双向)，6.4 节要写出这个式子（不能只给 1.6 倍的加速比）"""
    formula = r"V/(k\,W_\text{双向})"
    assert formula in exercise(2)
    section = CHAPTER.split("## 6.4", 1)[1].split("## 6.5", 1)[0]
    assert formula in section and "习题 2" in section


def test_multi_axis_speedups_are_the_schedule_not_the_limit():
    """1.33/1.33/1.6 倍是课程这一种调度的时间；入口下界允许更快，不能说成“精确”或“远达不到”"""
    section = CHAPTER.split("## 6.4", 1)[1].split("## 6.5", 1)[0]
    assert "远达不到" not in section and "不是上限" in section and "ch06-multi-v5e24-bound" in section
    assert "精确调度" not in SOLUTIONS and "结论以精确调度的为准" not in SOLUTIONS
    assert "allgather_ingress_bound" in SOLUTIONS


def test_p5_explains_the_gap_by_both_factors():
    """2x2 的线：极限公式短了 1/3，是入口带宽（W_双向 对 W_单向）与 (N-1)/N 两项相反的因子合起来的结果"""
    assert "极限公式忽略了 $(N-1)/N$，在只有 4 个芯片的 2x2 上偏小" not in SOLUTIONS
    for key in ("ch06-sol-p5-bw-factor", "ch06-sol-p5-n-factor", "ch06-sol-p5-net"):
        assert f"{{glue:text}}`{key}`" in SOLUTIONS


def test_case2_tables_say_where_the_numbers_come_from():
    """6.2 节 Case 2 的大尺寸表：v5e 长度 4 的轴是线（表按线算），XLA 一列在本机后端上编译"""
    case2 = CHAPTER.split("### Case 2", 1)[1].split("### Case 3", 1)[0]
    assert "都是线" in case2 and "ch06-c2-row1-ag-line" in case2
    assert "不是 TPU 的编译器" in case2
    assert "它在 $D > 2B$ 时胜出" not in case2  # 习题 4 的答案留给习题


def test_reduce_scatter_on_tpu_is_an_expectation():
    assert "TPU 上同样会看到 reduce-scatter" not in CHAPTER and "无法验证" in CHAPTER


def test_roofline_threshold_is_for_one_matmul():
    """6.5 节的门槛是收缩维为 D 的一次乘法；整个 MLP 块的条件是 F > (N-1)·C/W_GPU"""
    assert "这一步的通信也比计算长" not in CHAPTER
    assert "它解释了一个经验：张量并行的规模通常不超过一台节点的 8 个设备" not in CHAPTER
    assert "eq-ch06-mlp-threshold" in CHAPTER and "ch06-mlp-nmax" in CHAPTER


def test_exercise_8_states_the_output_and_the_change():
    """原书 Q6(a) 要 C[I_X, K]（AllReduce_Y）；本章要 C[I_X, K_Y]，要写明并注明不同"""
    text = exercise(8)
    assert "C[I_X, K_Y]" in text and "与原书不同" in text and "C[I_X, K]" in text
    statement = SOLUTIONS.split("## 问题 8", 1)[1].split("BEGIN SOLUTION", 1)[0]
    assert "与原书不同" in statement and statement.count(r"\to C[I_X, K_Y]") == 3


def test_book_numbering_and_ranges_are_consistent():
    problems = CHAPTER.split("## 6.9 习题", 1)[1]
    assert "原书对 Q5、Q7" in problems and "Q6、Q8" in problems and "原书对第 5、7 题" not in problems
    assert "1 kB 到 100 MB" not in problems and "16 KiB 到 1 MiB" in problems
    sweep = re.search(
        r"sizes10 = \[16 \* 2\*\*10, 256 \* 2\*\*10, 1 \* 2\*\*20\] .* \[2\*\*20, 16 \* 2\*\*20, 256 \* 2\*\*20\]",
        SOLUTIONS,
    )
    assert sweep, "习题 10 写的范围要与解答实际扫的尺寸一致"


def test_reader_facing_wording():
    assert "好几倍" not in SOLUTIONS and "ch06-sol-p7-speedup" in SOLUTIONS
    assert "book/data/ 里还没有" not in CHAPTER
    assert "单个设备放不下一层的权重" not in CHAPTER
    assert "ch06-q8-nccl-release" in CHAPTER


def test_ring_threshold_is_not_attributed_to_the_book():
    """原书没有算过 v5e、N = 4 的门槛；2NC/W 的数是本章自己算的"""
    assert "那是原书按环算出的数字" not in CHAPTER
    assert "门槛与有回绕的环一样是 $2N\\,C_\\text{芯片}/W_\\text{双向}$，约 {glue:text}`ch06-v5e-n4-ring`" in CHAPTER


def test_exercise_8_does_not_give_away_the_answer():
    """习题 8(a) 只说输出的分片，不给出要用的集合通信与时间"""
    text = exercise(8)
    assert "ch06-p8a-rs" not in text and r"\text{ReduceScatter}_Y" not in text
    statement = SOLUTIONS.split("## 问题 8", 1)[1].split("BEGIN SOLUTION", 1)[0]
    assert "ReduceScatter" not in statement


def test_xla_choice_is_a_cpu_backend_observation():
    """开源 SPMD 切分器有代价钩子，默认返回 0；不能笼统说 XLA 按启发式、不估算时间"""
    assert "不估算时间" not in CHAPTER and "XLA 按启发式" not in CHAPTER
    assert CHAPTER.count("代价钩子") >= 2 and "CPU 后端" in CHAPTER


def test_tp_row_does_not_claim_all_activations_are_split():
    assert "只存 $1/N$ 的权重与激活值" not in CHAPTER
    assert "LayerNorm、dropout 的激活值是复制的" in CHAPTER


def test_alltoall_ratio_names_the_topology():
    """1/4 只在有回绕的双向环上；NVSwitch 节点上是 1/N；v5e-8 没有回绕"""
    assert "AllToAll ≈ AllGather / 4" not in exercise(10)
    assert "1/N" in exercise(10)
    p10 = SOLUTIONS.split("## 问题 10", 1)[1]
    assert "快约 4 倍" not in p10 and "ch06-sol-p10-h100-ratio" in p10
    p6 = SOLUTIONS.split("## 问题 6", 1)[1].split("## 问题 7", 1)[0]
    assert "ch06-sol-p6-n8-split" in p6


def test_h100_threshold_gap_names_its_factors():
    """H100 门槛低于 v5e/v5p：线的 4(N-1)、临界强度之比、环的调度约定，三者都要写出"""
    section = CHAPTER.split("## 6.5", 1)[1].split("## 6.6", 1)[0]
    assert "节点内的 AllReduce 带着 $(N-1)/N$" not in section
    for key in ("ch06-v5p-h100-n8-ratio", "ch06-v5p-h100-n-factor", "ch06-v5p-h100-ci-factor", "ch06-q6-v5p-n4-split"):
        assert f"{{glue:text}}`{key}`" in section


def test_nvlink_domain_premise_and_small_fixes():
    section = CHAPTER.split("## 6.5", 1)[1].split("## 6.6", 1)[0]
    assert "NVLink 域就是一台 8 卡节点，$N$ 最多就是 8" in section
    assert "3.5 到 4 倍" not in section and "ch06-ffn-ratio-low" in section
    assert "右边的门槛" not in section and "v5e 取 $N \\times 16$ 的切片" not in CHAPTER
    s66 = CHAPTER.split("## 6.6", 1)[1]
    assert not s66.startswith("\n\n前面的 roofline 默认总时间是") and "ch06-tl-naive-bidir-split" in s66
    assert "原书按轴很长时的极限估计它" not in CHAPTER


def test_solutions_small_fixes():
    assert "它搬的是 AllToAll 的一小部分加上整个输出" not in SOLUTIONS
    assert "AllReduce_X(C) 规约的是 Out" in SOLUTIONS
    p4 = SOLUTIONS.split("## 问题 4", 1)[1].split("## 问题 5", 1)[0]
    assert "X[B, D]" not in p4 and "Y[D_X, F]" not in p4  # 乘数不用与网格轴同名的 X、Y、Z
    assert "原书的 (1)、(2) 都对应下面的做法 2" in SOLUTIONS


def test_review_fixes():
    assert "选择不随形状变化" not in CHAPTER  # Case 4 的表里 XLA 的选择随形状变
    assert "如 NVL72 机柜" not in CHAPTER and "ch06-mlp-nmax-gb200" in CHAPTER  # NVL72 是 GB200，按它的常数算
    assert "Case 3 / Case 1" not in CHAPTER  # 解码那一行：列并行 Case 1 + 行并行 Case 3
    assert "ch06-q8-lat" in CHAPTER and "ch06-mlp-ar-lat" in CHAPTER  # 276 µs 含 LL 协议的延迟项
    assert "fmt_bw(bus_h, 4)" in CHAPTER  # 370.8 GB/s：读者照印出的带宽算门槛，得到同一个 16,003
    assert "ch06-q2-t" not in exercise(8)  # 280 µs 的一半就是答案
    assert "原书大 $N$ 极限" not in exercise(2) and "原书的大 N 极限" not in SOLUTIONS
    assert "习题 4 把两个乘数记作 $X$、$Y$" not in CHAPTER and r"\text{In}[B, D] \cdot_D W[D_X, F]" in exercise(4)
    p10 = SOLUTIONS.split("## 问题 10", 1)[1]
    assert "（模型 0.25）" not in p10 and "ch06-sol-p10-bw" in p10
    assert "ch06-sol-p2c-4" in SOLUTIONS


def section(title: str, end: str) -> str:
    return CHAPTER.split(title, 1)[1].split(end, 1)[0]


def test_line_allreduce_cost_names_the_algorithm():
    """线上 AllReduce 的 2(N-1)/N·V/W_单向 属于 ReduceScatter + AllGather；流水线化的链式算法只要 V/W_单向（与环相同）。
    依赖前者的说法（门槛、“上升得更快”、小结、6.2 的小测验、习题 8 的原书版本）都要写明算法，并给出链式的数"""
    s65 = section("## 6.5", "## 6.6")
    assert "没有回绕的 TPU 轴是一条线，AllReduce 要" not in s65
    assert "链式" in s65 and "cost.allreduce_line_pipelined" in s65 and "d_threshold_chain" in s65
    for key in ("ch06-v5e-n4-ring", "ch06-v5e-n8-chain", "ch06-v5e-h100-n4-ratio"):
        assert f"{{glue:text}}`{key}`" in s65
    assert "门槛随 $N$ 上升，没有回绕的轴上升得更快" not in s65
    assert "与 v5e 比，主要是 v5e 这几条轴是线" not in s65
    summary = section("## 小结", "## 进一步阅读")
    assert "在线上更高（" not in summary and "ch06-v5e-n4-ring" in summary
    case2 = section("### Case 2", "### Case 3")
    assert "AllReduce 是它的两倍）" not in case2 and "ReduceScatter + AllGather" in case2
    assert "ch06-q2-chain" in section("小测验：是哪一种情形", "(sec-ch06-cost)=")
    p8 = SOLUTIONS.split("## 问题 8", 1)[1].split("## 问题 9", 1)[0]
    assert "是这里 ReduceScatter 的两倍时间" not in p8 and "ch06-sol-p8-chain-ratio" in p8


def test_xla_on_mismatched_axes_is_not_one_gather():
    """收缩轴不一致时 XLA 把两个乘数都收集完整、输出复制；小结不能说它“只插入 all-gather，收集一个乘数”"""
    assert "只插入 all-gather，收集一个乘数" not in CHAPTER
    cross = section("### 四种情形之外", "```{admonition} 为什么切收缩维")
    for key in ("ch06-mis-xla", "ch06-mis-best", "ch06-mis-xla-ag-a", "ch06-mis-xla-ag-b", "ch06-cross-xla"):
        assert f"{{glue:text}}`{key}`" in cross
    assert "ch06-mis-xla" in section("## 小结", "## 进一步阅读")


def test_gathering_a_multiplicand_is_not_only_its_worst_form():
    """收集一个乘数之后可以本地切开、各算一份、再收集输出；6.2 的表、6.3 的文字与提示都要给出这一种"""
    case2 = section("### Case 2", "### Case 3")
    assert "沿 $Y$ 收集，各算 1/8" in case2 and "ch06-c2-row1-ag-split" in case2
    # 这一列的做法只收集每个设备要用的那一半 A：不能说成“收齐 A”（表里的数字不是收齐 A 的）
    assert "收齐 $A$ 之后" not in case2 and "ch06-c2-row1-ag-split-v" in case2
    s63 = section("## 6.3", "## 6.4")
    assert "ch06-c2-gather-split-total" in s63.split("```{tip}", 1)[1]
    assert "收集一个乘数可能搬的字节最少，却让每个设备把整个乘法算一遍。" not in s63


def test_cost_hooks_are_for_windowed_einsum():
    """SPMD 切分器的代价钩子用来判断要不要生成窗口化 einsum，不是在收集与切片之间选；6.6 要说 XLA 也能生成集合矩阵乘法"""
    assert "TPU、GPU 的编译器可以提供自己的代价估计，选择可能不同" not in CHAPTER
    assert "TPU、GPU 的编译器可能提供代价估计" not in CHAPTER
    assert "窗口化 einsum" in section("### Case 2", "### Case 3")
    s66 = section("## 6.6", "## 6.7")
    assert "窗口化 einsum" in s66 and "xla_gpu_threshold_for_windowed_einsum_mib" in s66


def test_case4_table_explains_interleaved_blocks():
    """从 K_YX 收集主轴 Y 留下的不是 K_X：表里标“交错”，正文解释，且说明收缩维不能交错"""
    case4 = section("### Case 4", "### 四种情形之外")
    assert "交错" in case4 and "收缩维不能这样交错" in case4


def test_p7_early_version_and_consistency():
    """原书早期的 Q5 写 C[B, F]：没有下标就是完全复制；P7 的结论与表用同一个调度，第一组受延迟限制"""
    p7 = SOLUTIONS.split("## 问题 7", 1)[1].split("## 问题 8", 1)[0]
    assert "不要求输出复制" not in p7 and "不带下标" in p7
    assert "C 又不至于小到受延迟限制时（前两组）" not in p7 and "ch06-sol-p7-g1-t" in p7
    assert "ch06-sol-p7-ag-ratio" in p7 and r"C_\text{芯片}" in p7


def test_exercises_are_not_answered_in_the_body():
    """习题 4、9 的通信与计算之比、习题 6 的 1/4 的解释、习题 8(b) 的分片不在正文里直接给出"""
    assert "（习题 8(b)）" not in CHAPTER
    assert "V_A > 2V_C" not in CHAPTER and "（即 $J > 2K$）" not in CHAPTER
    assert "平均走的距离也只有环长的" not in CHAPTER
    cross_table = section("odd_cases = [", "```")
    assert '("A[I_X, J]", "B[J_X, K_Y]", dict(I=4096, J=8192, K=4096))' not in cross_table


def test_small_wording_fixes():
    assert "红色块在设备 1" not in CHAPTER.replace("朱红色块在设备 1", "")
    assert "本书还没有收录 GPU 的实测数据" not in CHAPTER and "### 单芯片 roofline 的实测数据" not in CHAPTER
    assert "那相当于假设两段能完全重叠" not in CHAPTER
    assert 'f"{V5E.flops_bf16:.3g}"' not in CHAPTER and 'f"{GB200.flops_bf16:.3g}"' not in CHAPTER
    assert "数组只有几十 kB" not in CHAPTER and "ch06-c2demo-b-bytes" in CHAPTER
    assert "ch06-gb200-own-ci" in CHAPTER and "ch06-mlp-math3" in CHAPTER
    assert "原书的数字：16" not in SOLUTIONS


def test_crossover_quiz_is_not_answered_by_the_table_above_it():
    """6.8 节的决策表在小测验“交点在哪里”之前：解码一行不写出 F > 2B 这个不等式（它与 B = D/2 只差字母）"""
    before = section("## 6.8", "小测验：交点在哪里")
    assert "F > 2B" not in before and "前者就更少" not in before
    assert "$F > 2B$ 前者就更少" in section("小测验：交点在哪里", "## 6.9")


def test_flops_per_second_is_not_the_output_matrix():
    """C 是输出矩阵 C[I, K]；芯片的 FLOP/s 一律写 C_芯片（第 5、6 章与解答）"""
    for text in (CHAPTER, SOLUTIONS, (ROOT / "book" / "ch05_collectives.md").read_text(encoding="utf-8")):
        assert not re.search(r"NC\)|NC/W|N\\,C\}|\(4C\)|[^A-Za-z_{\\]C/W_\\text|\\frac\{C\}", text)


def _quiz_question(title: str) -> str:
    start = CHAPTER.index(f"```{{admonition}} 小测验：{title}")
    return CHAPTER[start : CHAPTER.index("```{admonition} 答案", start)]


def test_backward_quiz_comes_before_the_printed_reduce_scatter_and_the_proof():
    """“反向传播里的通信”：问题在证明、在打印出“反向：['reduce-scatter']”的单元、在说出“转置正是 ReduceScatter”之前"""
    quiz = CHAPTER.index("小测验：反向传播里的通信")
    sec = section("(sec-ch06-transpose)=", "(sec-ch06-roofline)=")
    assert "转置关系" not in sec.splitlines()[1]  # 节的标题不先说出答案
    for reveal in ("证明：把两者写成 Kronecker 积", 'print(f"反向：', "转置正是 ReduceScatter"):
        assert quiz < CHAPTER.index(reveal), reveal


def test_ring_quiz_comes_before_the_hlo_counts():
    """“环上要传几次”：问题在打印 collective-permute 条数的单元与“n - 1 条（双向环 2(n-1) 条）”之前"""
    quiz = CHAPTER.index("小测验：环上要传几次")
    assert quiz < CHAPTER.index("HLO 里的集合通信：{dict(hlo_counts[op])}")
    assert quiz < CHAPTER.index("只有 $n - 1$ 条（双向环 $2(n-1)$ 条）`collective-permute`")
    assert "上面 HLO 的计数" not in CHAPTER


def test_allreduce_or_reduce_scatter_quiz_does_not_ask_what_case_3_said():
    """Case 3 一节已经说了“只做 ReduceScatter 省下一半时间”；小测验不再问两者为什么不一样"""
    assert CHAPTER.index("只做 ReduceScatter 省下一半时间") < CHAPTER.index("小测验：AllReduce 还是 ReduceScatter")
    question = _quiz_question("AllReduce 还是 ReduceScatter")
    assert "为什么不一样" not in question and "为什么会变" in question


def test_printed_outputs_have_no_space_after_chinese_punctuation():
    """print 的多个参数之间有一个空格：“前向： [...]”。中文冒号、分号后面接参数的一律写成 f-string"""
    for text in (CHAPTER, (ROOT / "book" / "ch05_collectives.md").read_text(encoding="utf-8")):
        for call in re.findall(r"print\((.*)\)", text):
            if 'sep="\\n"' in call:  # 各占一行
                continue
            assert not re.search(r"[：；，。]\"\s*,|,\s*\"[：；，。]", call), call
            assert "：      " not in call, call


def test_tp_across_nodes_is_priced_by_the_cross_node_model():
    """以前：“跨出节点带宽只有 NVLink 的 1/9，这就是 TP 留在节点内的原因”。8 块网卡用满时两台节点的 AllReduce
    几乎不变，1/9 只属于整条环挤过一块网卡的情形；限制 TP 路数的是计算减半而通信不减"""
    assert "这就是张量并行留在节点内的原因" not in CHAPTER and "跨出节点后带宽骤降（见" not in CHAPTER
    quiz = CHAPTER.split("小测验：一层要通信多久", 1)[1].split("```{tip}", 1)[0]
    for key in ("ch06-q8-x-pipe", "ch06-q8-x-rail", "ch06-q8-x-seq", "ch06-q8-x-flat"):
        assert f"{{glue:text}}`{key}`" in quiz
    assert "用一块网卡还是八块" in quiz
    roofline = CHAPTER.split("## 6.5", 1)[1].split("## 6.6", 1)[0]
    assert "{glue:text}`ch06-tp16-ar`" in roofline and "{glue:text}`ch06-tp16-fmin-all`" in roofline
