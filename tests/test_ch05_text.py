"""第 5 章正文与解答的措辞：不用构建，直接读 .md（快）

每一条对应一处曾经误导读者的写法；数值的期望在这里按题目写明的常数独立地算，不调用章节里的代码。
"""

import math
import re
from pathlib import Path

from shardlab import cost, hardware, megatron, ring, units
from shardlab.exercise import answers, problems
from shardlab.torus import Ring

ROOT = Path(__file__).resolve().parent.parent
CH05 = (ROOT / "book" / "ch05_collectives.md").read_text(encoding="utf-8")
SOL05 = (ROOT / "solutions" / "ch05_solutions.md").read_text(encoding="utf-8")
EX05 = (ROOT / "exercises" / "ch05_exercises.md").read_text(encoding="utf-8")
H100 = hardware.H100


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def test_primitive_table_is_bandwidth_only_and_names_the_gpu_formula():
    cell = _between(CH05, "### 所有原语一览", "v_q3 = ")
    assert "双向环时间" not in cell  # 列名不再让人把 H100 一列也按环的公式读
    assert cell.count(".bandwidth_term_s") == 2 and ".time_s" not in cell  # 两列都只算带宽项
    assert r"$V(N-1)/(N\,W_\text{GPU})$" in cell and "8×H100（NVSwitch）" in cell
    # 独立地算：1 GB 的 AllGather 在 8×H100 上只算带宽项是 V·7/8 / 450 GB/s，不是 V / 900 GB/s
    assert units.fmt_time(1e9 * 7 / 8 / 450e9) == "1.94 ms"
    assert units.fmt_time(1e9 / 900e9) != "1.94 ms"


def test_fsdp_counts_per_microbatch():
    sec = _between(CH05, "## 5.10 ", "### 推理引擎里的 TP")
    assert "DP、ZeRO、FSDP 按每个训练步计" not in sec
    assert "每个微批次送出约 $3V$" in sec and "no_sync" in sec
    row = _between(sec, '"ZeRO-3 / FSDP",', "),")
    assert '"每个微批次"' in row and '"每步"' not in row
    assert "FSDP / ZeRO-3 每个微批次约 $3\\times$" in CH05
    for text in (SOL05, EX05):  # 问题 6 写明每步只有一个微批次
        p6 = _between(text, "## 问题 6", "## 问题 7")
        assert "每步只有一个微批次" in p6


def test_problem_statements_do_not_give_the_answer_away():
    assert "**P2：延迟受限的情形。**" not in CH05 and "**P2：很小的 AllGather。**" in CH05
    p3 = _between(CH05, "**P3：", "练习：")
    assert "1/4" not in p3 and "1/2" not in p3
    p3_ex = _between(EX05, "## 问题 3", "```{code-cell}")
    assert "1/4" not in p3_ex


def test_nccl_simple_bandwidth_is_a_ceiling_and_480_is_the_books_wording():
    assert "恰好就是 Simple" not in SOL05 and "Simple 至多是" in SOL05
    lib = (ROOT / "lib" / "shardlab" / "hardware.py").read_text(encoding="utf-8")
    assert "正是书中" not in lib
    for text in (CH05, SOL05, (ROOT / "lib" / "shardlab" / "cost.py").read_text(encoding="utf-8")):
        assert "480 GB/s 的 busbw" not in text
        assert "有效集合通信带宽" in text


def test_no_whole_book_schedule_wording():
    for text in (CH05, SOL05, EX05):
        assert "全书" not in text  # 读起来像“原书”；本书的调度是正对面整块走正向的那一种


def test_tp_quiz_bytes_use_the_same_ring_factor_as_the_time():
    answer = _between(CH05, "小测验：普通 TP 一个微批次要花多少通信时间？", "```{tip}")
    assert "$2V(N-1)/N$" in answer
    assert "units.fmt_bytes(n_ar * 2 * v_q6 * 7 / 8)" in CH05


def test_alltoall_quarter_is_only_on_a_bidirectional_ring():
    for text in (CH05, SOL05):
        assert "环上的 AllToAll 只要 AllGather 的 1/4" not in text
    assert CH05.count("大的双向环上 AllToAll 只要 AllGather 的 1/4") == 1  # 小结里


def test_section_5_3_tip_does_not_give_problem_3s_limits():
    """5.3 节末的提示只讲道理（每一片只送到一个目的地、走较短的方向），不写出习题 P3 的两个极限比值"""
    tip = _between(CH05, "小测验：规约散射一个部分和", "(sec-ch05-regimes)=").split("```{tip}", 1)[1]
    assert "AllToAll" in tip and not re.search(r"1/4|1/2|四分之一|一半", tip)


def test_solution_pointers_point_the_right_way():
    assert "上表第二列" not in SOL05 and "“不重叠的分层”一列" in SOL05
    assert "在 prefill 时只差一点（上面打印）" in SOL05


def test_p5_states_the_cross_node_latency_model():
    # 题目写出的常数与库里的一致，按它们独立地算 64 张卡的延迟项：6.6 + 14 × 2.7 + 112 × 1 µs
    assert (H100.nccl_base_latency, H100.net_step_latency, cost.NCCL_NET_OVERHEAD) == (6.6e-6, 2.7e-6, 1e-6)
    assert H100.nvlink_step_latency == 0.6e-6
    lat64 = 6.6e-6 + 2 * 7 * 2.7e-6 + (2 * 63 - 2 * 7) * 1e-6
    assert math.isclose(cost.gpu_ring_latency("all_reduce", 64, 8, H100), lat64)
    for text in (SOL05, EX05):
        p5 = _between(text, "## 问题 5", "```{code-cell}")
        assert all(s in p5 for s in ("6.6 µs", "2.7 µs", "1 µs", "0.6 µs", "$2(M-1)$", "扁平环"))
    p5 = _between(CH05, "**P5：", "练习：")
    assert all(k in p5 for k in ("ch05-p5-base", "ch05-p5-net-step", "ch05-p5-nvl-step", "扁平环"))


def test_one_nic_ring_ratio_is_glued_and_agrees():
    for text in (CH05, SOL05):
        assert "慢一个数量级" not in text and "慢好几倍" not in text
    assert "one-nic" not in _between(CH05, "**P5：", "练习：")  # 比值是解答的结论，不在题面里给出
    assert SOL05.count("{glue:text}`ch05-sol-p5-one-nic`") == 2
    # 独立地算：只经过一块 50 GB/s 网卡的扁平环 / （流水线分层的带宽项 + NCCL 延迟项）
    v = 2 * 7e9
    ratios = []
    for n in (64, 512):
        m = n // 8
        hier = 2 * v * max(7 / 8 / 450e9, (m - 1) / m / 400e9)
        lat = 6.6e-6 + 2 * (m - 1) * 2.7e-6 + (2 * (n - 1) - 2 * (m - 1)) * 1e-6
        ratios.append(2 * v * (n - 1) / n / 50e9 / (hier + lat))
    assert f"{min(ratios):.0f}–{max(ratios):.0f}" == "8–9"


def test_ring_and_mpi_wording():
    assert "每个块只搬一次" not in CH05
    assert "缓冲区内容不确定" not in CH05 and "只在根设备上有意义" in CH05


def test_ratio_words_say_what_is_multiplied():
    # “慢 X 倍”“快 X 倍”可以读成 1 + X 倍；写成“用时是……的 X 倍”或“速度是……的 X 倍”
    for text in (CH05, SOL05):
        assert not re.search(r"[慢快]了? ?\{glue:text\}", text)
        assert not re.search(r"[慢快]约? ?\{glue:text\}`[^`]+` 倍", text)
        assert "慢一倍" not in text and "约快 $k$ 倍" not in text


def test_ingress_bound_is_limited_to_the_gathered_axes_and_p1_borrows_the_idle_axis():
    """入口下界只约束只用被收集的轴的链路的调度；数组沿 Z 复制时 Z 轴闲着，可以借来用"""
    sec = _between(CH05, "以及只用被收集的轴的链路时", "(eq-ch05-ingress)")
    assert "复制" in sec and "借来用" in sec
    p1 = _between(SOL05, "## 问题 1", "## 问题 2")
    assert "它与最优调度只差" not in p1 and "每个设备要从 $2k$ 条入链路收下" not in p1
    for key in ("ch05-sol-p1b-xyz", "ch05-sol-p1a-xz", "ch05-sol-p1b-bound6"):
        assert "{glue:text}`" + key + "`" in p1
    # 独立地算（4×4×4，bf16[1024, 4096]，W_双向 = 90 GB/s）：先丢掉 Z 方向的 3/4，再沿 X、Y、Z 收集
    v = 1024 * 4096 * 2
    assert round(v / (3 * 90e9) * 1e6, 1) == 31.1 and round(v / 4 / (2 * 90e9) * 1e6, 1) == 11.7
    assert round(15 / 16 * v / (3 * 90e9) * 1e6, 1) == 29.1  # 6 条入链路，已持有 1/16


def test_zero_saves_memory_not_communication():
    sec = _between(CH05, "如果后面的计算本来就只需要分片的结果", "### AllToAll")
    assert "省通信" not in sec and "省内存" in sec and "ZeRO-3 / FSDP 还更多" in sec


def test_sharp_480_is_busbw_and_caption_label_is_flagged():
    for text in (CH05, SOL05):
        assert "它的图称之为算法带宽" not in text
    assert "总线带宽" in _between(CH05, "原书开着 SHARP 测到约 480 GB/s", "NVLS。")
    assert "busbw" in _between(SOL05, "原书开着 SHARP 测到约 480 GB/s", "）。")


def test_chapter_nits():
    assert "流水线并行用点对点" in _between(CH05, "后面的并行策略大多", "ppermute")
    assert "通常不能与计算重叠" not in CH05 and "难以与计算重叠" in CH05
    assert "Intel x86" in _between(CH05, "**P5：", "练习：") and "Intel x86" in _between(
        SOL05, "## 问题 5", "```{code-cell}"
    )
    assert "ch05-inf-cross-v" in CH05 and "ch05-inf-cross-b" in CH05 and "$V = b\\times D\\times 2$" in CH05
    assert "{glue:text}`ch05-n7-w-plus-g`" in CH05
    assert "1 GB（大 N 极限）" not in CH05 and "1 GB（(N−1)/N → 1）" in CH05


def test_sharp_480_is_compared_like_with_like():
    """480 GB/s 读作 busbw 时与 busbw 比（450 与 787.5），读作 algbw 时与 algbw 比（450）；不拿 busbw 去比 algbw 的上限"""
    sec = _between(CH05, "原书开着 SHARP 测到约 480 GB/s", "NVLS。")
    assert "折成总线带宽要再乘" not in sec
    for key in ("ring-busbw", "busbw", "algbw", "book-as-busbw", "book-as-algbw", "gain"):
        assert "{glue:text}`ch05-sharp480-" + key + "`" in sec
    sol = _between(SOL05, "原书开着 SHARP 测到约 480 GB/s", "）。")
    assert "{glue:text}`ch05-sol-sharp-as-busbw`" in sol and "{glue:text}`ch05-sol-sharp-busbw`" in sol
    # 独立地算：8 卡 AllReduce 的 busbw = 1.75 × algbw；SHARP 的 algbw 上限 450 GB/s，即 busbw 787.5 GB/s
    assert 450e9 < 480e9 < 1.75 * 450e9 < 1.75 * 480e9


def test_small_wording_fixes():
    assert "总流量只有 AllGather 的一半" not in CH05  # 说的是每条链路的负载
    assert "在 8 个和 16 个设备的环上" in CH05  # 表里有 N = 8 与 16
    assert "lengths = [2," not in CH05  # 长度 2 的“环”两条链路连着同一对设备
    assert "{glue:text}`ch05-m5-lat`" in CH05 and "1.04 ms" in CH05  # 1.05 ms 含 LL 的延迟项，原书的 1.04 ms 不含
    assert "原书给出的公式是它在轴很长时的极限" not in CH05  # 大 N 极限是本课程的读法，不是原书的话
    for text in (_between(CH05, "**P5：", "练习："), _between(SOL05, "## 问题 5", "```{code-cell}")):
        assert "LL128" in text and "Simple" in text  # 每步 1 µs 的下限只用于 LL、LL128
    assert "{glue:text}`ch05-sol-p1c-4`" in SOL05  # 原书的 11.6 µs 与我们打印的 11.7 µs 是同一个 11.65 µs


def test_p3_and_p6_answers_are_not_in_the_body():
    """正文不再给出习题 P3 的逐链路推导；P6 另问训练状态的字节数，正文没有这组数"""
    assert "推导：单向环 1/2，双向环 1/4" not in CH05
    p6 = _between(CH05, "**P6：", "练习：")
    assert "哪一个更大？哪一个更省内存？" not in p6 and "16 字节" in p6 and "64 张 H100" in p6


def test_megatron_regather_points_to_the_megatron_section_by_label():
    """Megatron-LM 反向再收集一次输入的讨论在第 6 章“Megatron 的张量并行”一节：用标签引用，改节号也不会断"""
    assert "6.8 节" not in CH05
    assert "{ref}`sec-ch06-megatron`" in _between(CH05, "Megatron-LM 为了省显存", "每层的通信次数如下")
    ch06 = (ROOT / "book" / "ch06_sharded_matmul.md").read_text(encoding="utf-8")
    sec = _between(ch06, "(sec-ch06-megatron)=", "(sec-ch06-strategies)=")
    assert "Megatron 的张量并行" in sec.splitlines()[1] and "反向算权重梯度之前再" in sec


def test_alltoall_ratio_compares_like_with_like():
    """5.3 节：AllGather 整块走、AllToAll 拆半相除得到的 1/4 是混合约定；同一约定下 N = 8 要大于 1/4"""
    sec = _between(CH05, "AllToAll 比 AllGather 便宜得多。", "这个 1/4 是单个有回绕的轴")
    assert "表中的偶数 $N$ 恰好如此" not in sec and "负载再减一半" not in sec
    assert "混在一起" in sec and "split_opposite=True" in sec
    for key in ("mixed", "shrink-ag", "shrink-a2a"):
        assert "{glue:text}`ch05-a2a-" + key + "`" in sec
    # 同一约定下的精确比值是习题 P3 要推的：正文只说它更大，不在题目之前给出数或式子
    assert "约定一致时比值更大" in sec and "习题 P3" in sec
    for spoiler in ("ch05-a2a-both-split", "ch05-a2a-both-whole", "2(N-1)/N\n", "4(N-1)/N"):
        assert spoiler not in sec
    # 独立地算 N = 8 的最忙有向链路（以 V 为单位，每片 V/64）
    n = 8
    ag_whole, ag_split = 0.5, ring.count("all_gather", Ring(n), 1.0, split_opposite=True).max_link_bytes
    a2a_split = ring.count("all_to_all", Ring(n), 1.0).max_link_bytes
    assert math.isclose(a2a_split, (1 + 2 + 3 + 4 / 2) / 64)  # 正对面的那一片两个方向各走一半
    a2a_whole = (1 + 2 + 3 + 4) / 64  # 正对面的那一片整块走正向
    assert math.isclose(a2a_split / ag_whole, 0.25)  # 混合约定
    assert f"{a2a_split / ag_split:.3g}" == "0.286" and a2a_whole / ag_whole == 0.3125
    # “减半、再减一半”只在大 N 时成立：N = 8 时是 ÷1.75 与 ÷3.5
    assert (0.875 / ag_whole, (7 / 16) / a2a_split) == (1.75, 3.5)
    p3 = _between(CH05, "**P3：", "练习：")
    assert "两种算法里都拆成两半" in p3


def test_p1_states_the_whole_block_convention_and_the_hint_does_not_call_the_split_schedule_a_mistake():
    for text, end in ((CH05, "练习："), (SOL05, "```{code-cell}"), (EX05, "```{code-cell}")):
        start = "**P1：" if text is CH05 else "## 问题 1"
        assert "整块走一个方向" in _between(text, start, end)
    hint = answers.MINUS_ONE_P1A.hint
    assert answers.MINUS_ONE_P1C.hint == hint
    assert "物理上成立" in hint and "约定" in hint and "失误" not in hint
    assert "物理上成立" in answers.MINUS_ONE_P1B.hint
    # 拆半的调度在 4 个设备的环上正好是整块调度的 (N-1)/N = 0.75 倍：提示认的就是这个值
    ratio = ring.count("all_gather", Ring(4), 1.0, split_opposite=True).time(1.0) / ring.count(
        "all_gather", Ring(4), 1.0
    ).time(1.0)
    assert ratio == 0.75
    assert answers.MINUS_ONE_P1A.factor(problems.published("ch05")) == 0.75


def test_peak_comparison_is_like_for_like():
    """5.7 节：TPU 的 AllGather 与 H100 的 AllReduce 不能直接比；写出各自占额定带宽的比例"""
    sec = _between(CH05, "## 5.7 ", "### 自己测一测")
    assert "两种硬件达到峰值所需的消息大小相差很远" not in sec
    for key in ("h100-ag-frac", "h100-ar-frac", "h100-ar58-frac", "v-h100-ag"):
        assert "{glue:text}`ch05-m-" + key + "`" in sec
    tip = _between(CH05, "每跳的块小于 $W_\\text{单向}\\,t_\\text{hop}$（v5e 上", "```\n")
    summary = _between(CH05, "- 环形算法的实测比模型慢", "\n")
    for text in (tip, summary):
        assert "尤其需要很大的消息" not in text and "{glue:text}`ch05-m-h100-ag-frac`" in text
    # 独立地算：8×H100 AllGather bf16[4096, 65536] 的带宽项 V·7/8 / 450 GB/s，原书测得约 1.5 ms
    t_bw = 4096 * 65536 * 2 * 7 / 8 / 450e9
    assert (f"{t_bw / 1.5e-3:.0%}", f"{370 / 450:.0%}", f"{150 / 450:.0%}") == ("70%", "82%", "33%")


def test_cost_model_is_the_ideal_time_of_one_schedule_not_a_lower_bound():
    opening = _between(CH05, "## 5.7 ", "```{code-cell}")
    assert "它是下限" not in opening
    assert "{glue:text}`ch05-m-split-ring4`" in opening and "入口下界" in opening
    assert "{glue:text}`ch05-ma-4x4-split`" in opening


def test_line_and_ring_factors_are_exact():
    """没有回绕的线、单向环：用时是有回绕的双向环的 2(N-1)/N 倍，只在大 N 时约 2 倍"""
    assert "约是有回绕时的 2 倍" not in CH05 and "单向环约为它的 2 倍" not in CH05
    assert CH05.count("单向环是它的 $2(N-1)/N$ 倍") == 2
    assert "{glue:text}`ch05-line4-vs-ring`" in _between(CH05, "## 小结", "## 进一步阅读")
    # 独立地算：v5e 4×4 上长度 4 的线（3 跳，每跳 V/4 走 W_单向）对 V/W_双向
    assert math.isclose((3 * 0.25 / 45e9) / (1 / 90e9), 1.5)


def test_chapter_nits_round_4():
    assert "8×H100 一列用的不是环的公式" not in CH05 and "不是双向环那一列的公式" in CH05
    sec = _between(CH05, "（`cost.allgather_multi_axis_limit`", "所以“$k$ 个轴")
    assert "既不是极限也不是下界" in sec and "{glue:text}`ch05-ma-2x2-lib-over`" in sec
    assert "AllReduce 加倍" in _between(CH05, "header = [", "]\n")
    assert "Simple 的延迟最大" not in CH05
    for key in ("simple-base", "ll128-base", "simple-lat2", "ll128-lat2", "simple-lat8", "ll128-lat8"):
        assert "{glue:text}`ch05-nccl-" + key + "`" in CH05
    assert "S = V/N" in _between(CH05, "### 自己测一测", "```{code-cell}")
    line = _between(CH05, "线的损失对 AllGather 与 ReduceScatter 是固有的", "\n")
    assert "出链路" in line and "入链路" in line
    assert "https://jax-ml.github.io/scaling-book/gpus/" in CH05
    assert "How to Think About GPUs" in _between(CH05, "本章的事实与问题来自", "\n")
    assert "“InfiniBand 上约 560 ms” =" not in CH05
    assert "扁平环（IB）" not in SOL05


def test_tp_quiz_time_uses_the_chapters_gpu_model():
    """小测验按每个微批次计，时间与 P7 一样用 cost.estimate（带宽项 + NCCL 的延迟项）"""
    assert "普通 TP 一步要做多少次" not in CH05
    answer = _between(CH05, "小测验：普通 TP 一个微批次要花多少通信时间？", "```{tip}")
    for key in ("ch05-q6-bw1", "ch05-q6-lat1", "ch05-q6-call", "ch05-q6-t", "ch05-q6-t-bw"):
        assert "{glue:text}`" + key + "`" in answer
    assert 'cost.estimate("all_reduce", v_q6, {"TP": 8}, H100)' in CH05
    # 独立地算：V = 8192·4096·2，带宽项 2V·7/8 / 450 GB/s，NCCL LL 的延迟项 6.6 + 14 × 0.6 µs
    v = 8192 * 4096 * 2
    call = 2 * v * 7 / 8 / 450e9 + 6.6e-6 + 14 * 0.6e-6
    assert (units.fmt_time(128 * call), units.fmt_time(128 * 2 * v * 7 / 8 / 450e9)) == ("35.3 ms", "33.4 ms")


def test_tp_quiz_is_not_problem_7s_prefill():
    """以前小测验的 V（4096 词元 × 4096）与习题 P7 的 prefill（2048 词元 × 8192）恰好都是 33.6 MB：答案就是 P7 的答案"""
    answer = _between(CH05, "小测验：普通 TP 一个微批次要花多少通信时间？", "```{tip}")
    assert "8192 个词元" in answer
    assert units.fmt_bytes(8192 * 4096 * 2) != units.fmt_bytes(2048 * 8192 * 2)


def test_p5_values_are_not_printed_in_the_body():
    """习题 P5 的 8 卡精确值与用满八块网卡的时间留给习题；正文只给大 N 极限与比例"""
    for key in ("ch05-n7-t-nvl-exact", "ch05-n7-t-node"):
        assert key not in CH05
    assert '（7B，bf16）"], rows)' not in CH05  # 核心数字表不再有 14 GB 那一列
    assert "units.fmt_time(exact(v7))" not in CH05


def test_layers_are_stated_before_the_patterns_table():
    """5.10 节的表按 4L 数次数：L（层数）在表之前就由代码 glue 给出"""
    stated = CH05.index("$L$ = {glue:text}`ch05-pat-layers` 层")
    assert stated < CH05.index("P_PARAMS, L_LAYERS, D_MODEL, T_TOKENS") < CH05.index('f"4L = {4 * L_LAYERS}"')
    assert 'glue_text("ch05-pat-layers", str(L_LAYERS))' in CH05


def _megatron_extra_claims(text: str) -> list[tuple[str, str]]:
    """每处 Megatron-LM 序列并行“多出多少”的 glue 引用：(键, 它前面同一分句的文字)"""
    claims = []
    for m in re.finditer(r"\{glue:text\}`(ch0[56]-sp-(?:megatron|lm)-extra(?:-bwd)?)`", text):
        start = max(text.rfind(c, 0, m.start()) for c in "，。；：（\n") + 1
        claims.append((m.group(1), text[start : m.start()]))
    return claims


def test_megatron_sp_extra_says_which_phase_it_counts():
    """Megatron-LM 的序列并行：反向本身多 50%（6V 对 4V），前向加反向合计多 25%（10V 对 8V，即 5.10 节表里的字节之比）

    同一个百分数不能时而说成“反向多”、时而说成合计；每个引用的分句要写明它算的是哪一段。
    """
    v = {"all-reduce": 2, "all-gather": 1, "reduce-scatter": 1}  # 每次搬几个 V = 2TD 字节

    def units_of(table, phases):
        return sum(k * v[op] for ph in phases for op, k in table["layer"][ph].items())

    tp, lm = megatron.collectives_per_layer("tp"), megatron.collectives_per_layer("tp_sp", "megatron-lm")
    assert (units_of(tp, ["forward"]), units_of(tp, ["backward"])) == (4, 4)
    assert (units_of(lm, ["forward"]), units_of(lm, ["backward"])) == (4, 6)  # 4 AG + 2 RS
    # 5.10 节的表：普通 TP 4L 次 AllReduce、每次 2V；Megatron-LM RS 4L + AG 6L，每次 V
    assert 10 / 8 - 1 == 0.25 and 6 / 4 - 1 == 0.5
    ch06 = (ROOT / "book" / "ch06_sharded_matmul.md").read_text(encoding="utf-8")
    claims = _megatron_extra_claims(CH05) + _megatron_extra_claims(ch06)
    for key, clause in claims:
        if key.endswith("-bwd"):
            assert "反向" in clause and "前向加反向" not in clause and "合计" not in clause, (key, clause)
        else:
            assert "前向加反向" in clause and "合计" in clause, (key, clause)
    assert len(claims) >= 8  # 5.8 节、5.10 节的 TP 一段与小测验、小结各两处，第 6 章的提示两处


def test_small_message_quiz_does_not_ask_what_the_table_above_says():
    """5.9 节环与树的表（“适合：中小消息、很多节点”）在“512 张卡上的小消息”之前：问题不再问 NCCL 为什么选树"""
    quiz = CH05.index("小测验：512 张卡上的小消息")
    assert CH05.index("| 适合 | 大消息、节点内 | 中小消息、很多节点 |") < quiz
    question = _between(CH05, "小测验：512 张卡上的小消息", "```{admonition} 答案")
    assert "为什么" not in question and "环的用时是树的几倍" in question
    assert "ch05-nccl-ratio-512" in _between(CH05, "小测验：512 张卡上的小消息", "```{tip}")


def test_reader_facing_notation_and_terms():
    """表里的记号按数学式显示；解码、预填充在表里先写中文；图 5.5 的图注里数学式后面不紧跟逗号"""
    assert "（2V/W_双向）" not in CH05 and r"（$2V/W_\text{双向}$）" in CH05
    assert '("decode", 1)' not in CH05 and '"解码（decode）"' in CH05 and '"预填充（prefill）"' in CH05
    caption = _between(CH05, ":name: fig-ch05-overlap", "```")
    assert "$D=8192$，" not in caption and "$D=32768$，" not in caption
    assert " “All” " not in CH05


def test_cross_node_bottleneck_moves_only_from_five_nodes():
    """以前：“一旦跨节点，瓶颈就从 NVLink 换成了节点出口”；按题目自己的式子 2–4 个节点时慢的仍是 NVLink"""
    p5 = _between(SOL05, "## 问题 5", "## 问题 6")
    assert "一旦跨节点，瓶颈就" not in p5 and "{glue:text}`ch05-sol-p5-m-cross`" in p5
    assert "实测的 NCCL 通常介于两者之间" not in p5 and "{glue:text}`ch05-sol-p5-meas8`" in p5
