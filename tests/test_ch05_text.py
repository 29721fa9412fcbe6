"""第 5 章正文与解答的措辞：不用构建，直接读 .md（快）

每一条对应一处曾经误导读者的写法；数值的期望在这里按题目写明的常数独立地算，不调用章节里的代码。
"""

import math
import re
from pathlib import Path

from shardlab import cost, hardware, units

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
    answer = _between(CH05, "小测验：普通 TP 一步要做多少次 AllReduce？", "```{tip}")
    assert "$2V(N-1)/N$" in answer
    assert "units.fmt_bytes(n_ar * 2 * v_act * 7 / 8)" in CH05


def test_alltoall_quarter_is_only_on_a_bidirectional_ring():
    for text in (CH05, SOL05):
        assert "环上的 AllToAll 只要 AllGather 的 1/4" not in text
    assert CH05.count("大的双向环上 AllToAll 只要 AllGather 的 1/4") == 2


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
    assert "流水线并行除外" in _between(CH05, "后面所有的并行策略", "不同组合")
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
