"""第 5 章的模型与说法：读出共享的整本书构建执行正文时 glue 的数字，核对它们与几处关键的文字

每一条都对应一个曾经错过的地方；期望值在这里独立地算（不调用章节里的代码），或与原书 / NCCL 源码的事实比较。
"""

import math
import re
from pathlib import Path

import pytest

from shardlab import units
from shardlab.exercise import answers, judge

ROOT = Path(__file__).resolve().parent.parent
CH05 = ROOT / "book" / "ch05_collectives.md"
SOL05 = ROOT / "solutions" / "ch05_solutions.md"
EX05 = ROOT / "exercises" / "ch05_exercises.md"
pytestmark = pytest.mark.slow
TEXT = CH05.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def glued(glued_text) -> dict[str, str]:
    """第 5 章在共享的整本书构建里 glue 交给正文的文字（键 → 字符串）"""
    return glued_text("book/ch05_collectives")


def _admonition(title: str) -> str:
    """标题为 title 的小测验后面紧跟的“答案”块"""
    i = TEXT.index(title)
    j = TEXT.index("```{admonition} 答案", i)
    return TEXT[j : TEXT.index("\n```\n", j)]


def test_allgather_through_a_root_is_n_times_slower(glued):
    # 根收下 7 GB，再发出 7 × 7 = 49 GB；AllGather 每张卡收 7 GB：(7 + 49) / 7 = 8 = N
    assert glued["ch05-q1-ratio"] == "8"
    assert glued["ch05-q1-bcast-bytes"] == "49 GB"


def test_quiz4_is_not_problem_2_and_crosses_the_threshold(glued):
    """16 长、有回绕的 v5e 轴（不是习题 2 的 4 长的线）：bf16[1536, 512] 每块 98.3 kB > 45 kB，
    8 跳 × 98,304 B / 45 GB/s ≈ 17.5 µs；缩小到 1/4 后每块 24.6 kB < 45 kB，8 跳 × 1 µs = 8 µs"""
    question = TEXT[
        TEXT.index("小测验：带宽受限还是延迟受限？") : TEXT.index(
            "```{admonition} 答案", TEXT.index("小测验：带宽受限还是延迟受限？")
        )
    ]
    assert "bf16[128]" not in question and "长度为 16 的轴" in question
    chunk = 1536 * 512 * 2 / 16
    assert glued["ch05-q4-chunk"] == units.fmt_bytes(chunk) == "98.3 kB"
    assert glued["ch05-q4-hops"] == "8"
    assert glued["ch05-q4-t"] == units.fmt_time(8 * chunk / 45e9) == "17.5 µs"
    assert glued["ch05-q4-small-t"] == units.fmt_time(8 * 1e-6) == "8 µs"
    assert glued["ch05-q4-saving"] == f"{1 - 8e-6 / (8 * chunk / 45e9):.0%}"


def test_nccl_latency_model_names_its_release_and_is_a_lower_envelope(glued):
    assert glued["ch05-nccl-release"] == "NCCL 2.30.3"
    assert glued["ch05-nccl-lat-ar8"] == "15 µs"  # 6.6 + 14 × 0.6
    assert glued["ch05-h100-ag-latency"] == "10.8 µs"  # 6.6 + 7 × 0.6
    assert glued["ch05-nccl-simple-bw"] == units.fmt_bw(18 * 20.6e9)  # 与实测的约 370 GB/s 相符
    assert "下包络" in TEXT
    assert "上限 {glue:text}`ch05-nccl-simple-bw` 与实测的约 370 GB/s 相符" in TEXT  # 上限是算出来的，不是打上去的


def test_h100_crossover_is_solved_exactly(glued):
    exact = (6.6e-6 + 7 * 0.6e-6) * 8 * 450e9 / 7  # 延迟项 = V(N-1)/(N·W)
    assert glued["ch05-h100-ag-crossover"] == units.fmt_bytes(exact)


def test_nccl_tree_steps_chain_inside_a_node(glued):
    assert glued["ch05-nccl-tree-8"] == "14"  # 一个节点：链上 7 步，上下各一遍
    assert glued["ch05-nccl-tree-512"] == "26"  # 2·(7 + log2 64)
    assert "每个 GPU 在一棵树里是叶子" not in TEXT and "每个节点在一棵树里是叶子" in TEXT


def test_multi_axis_rule_follows_the_simulator(glued):
    assert glued["ch05-ma-4x4-ratio"] == "1.25"
    assert glued["ch05-ma-2x2-speedup"] == units.fmt_num(4 / 3)


def test_overlap_threshold_states_the_line(glued):
    # v5e 上长度 4 的轴是线：AllReduce 慢 1.5 倍，阈值 1.5 × 17,511
    assert glued["ch05-ov-dstar"] == "17,511"
    assert glued["ch05-ov-dstar-line"] == "26,267"
    # 小测验换到 v5p 的 N = 2：2·2·4.59e14 / 1.8e11 = 10,200，高于 D = 8192，遮不住
    assert glued["ch05-q5-dstar"] == "10,200" and glued["ch05-q5-verdict"] == "不能"


def test_patterns_table_uses_the_chapter_definitions(glued):
    act = 6144 * 4096 * 2  # 不是 4096 × 4096：那恰好等于习题 P7 预填充的 V（2048 × 8192）
    assert glued["ch05-pat-act"] == units.fmt_bytes(act) != units.fmt_bytes(2048 * 8192 * 2)
    assert glued["ch05-pat-layers"] == "32"
    assert glued["ch05-pat-moe-local"] == units.fmt_bytes(2 * act)  # top-2
    assert glued["ch05-pat-moe-v"] == units.fmt_bytes(8 * 2 * act)  # AllToAll 的 V 是整个组的总字节数
    assert glued["ch05-moe-v"] == units.fmt_bytes(8 * 2 * 8192 * 4096 * 2)  # 5.11 节也计入 top-2
    assert "计数单位" in TEXT and "每个微批次" in TEXT


def test_section_structure_and_definitions():
    heads = re.findall(r"^## (5\.\d+) ", TEXT, re.M)
    assert heads == [f"5.{i}" for i in range(1, 13)]  # 原来的 5.4 拆成了 5.4–5.7
    definition = TEXT.index("总线带宽（bus bandwidth，busbw）")
    assert TEXT.index("总线带宽") == definition and TEXT.index("busbw") > definition  # 第一次出现就定义
    first = TEXT.index("对分截面")
    assert "被切断" in TEXT[first - 80 : first]  # 第一次出现时就说明它是什么
    assert "环要首尾相连" in TEXT[: TEXT.index("单向环（unidirectional ring）")]


def test_claims_about_the_book_are_current():
    sol = SOL05.read_text(encoding="utf-8")
    assert "11.6 µs" in sol and "早期版本" in sol and "28b1988" in sol
    assert "原书给出的 NVLink 上" not in TEXT  # 62 ms 不是原书的数字
    for path in (CH05, SOL05, EX05, ROOT / "solutions" / "README.md", ROOT / "README.md"):
        body = path.read_text(encoding="utf-8")
        assert "种子材料" not in body, path
        assert "第一套完整" not in body, path


def test_exercise_statements_carry_their_assumptions():
    ex = EX05.read_text(encoding="utf-8")
    p5 = ex[ex.index("## 问题 5") : ex.index("## 问题 6")]
    assert "八块网卡都用上" in p5 and "流水线" in p5
    p3 = ex[ex.index("## 问题 3") : ex.index("## 问题 4")]
    assert "两种" in p3 and "拆成两半" in p3
    p7 = ex[ex.index("## 问题 7") :]
    assert "**一次** AllReduce" in p7


def test_p3_consistent_splitter_passes_and_the_mixed_convention_is_named():
    spec = answers.get("ch05-p3-fn")
    consistent = lambda n, bi: (n * n // 4) / (n * (n - 1)) if bi else 0.5  # noqa: E731
    assert judge.judge_function(spec, consistent).ok
    mixed = lambda n, bi: ((n * n // 4) / n**2) / ((n // 2) / n) / 2 if bi else 0.5  # noqa: E731
    verdict = judge.judge_function(spec, mixed)
    assert not verdict.ok and "正文的约定" in verdict.message


def test_p5_other_valid_models_are_named():
    right = answers.expected_value("ch05-p5-64")
    v = 2 * 7e9
    eight_rail = 2 * v * 63 / 64 / 400e9
    assert math.isclose(eight_rail, 68.9e-3, rel_tol=1e-3)
    message = judge.evaluate("ch05-p5-64", eight_rail).message
    assert "8 轨环" in message and "大 N" in message
    assert "(N-1)/N" not in message.split("也可能是")[0].split("8 轨环")[0]  # 不再误报“用了大 N 极限”
    assert "一块 50 GB/s 网卡" in judge.evaluate("ch05-p5-64", 2 * v * 63 / 64 / 50e9).message
    assert judge.evaluate("ch05-p5-64", right).ok


def test_p7_time_counts_one_allreduce():
    right = answers.expected_value("ch05-p7-decode-time")
    assert "每层两次" in judge.evaluate("ch05-p7-decode-time", 2 * right).message
    assert "80 层 × 2 次" in judge.evaluate("ch05-p7-decode-time", 160 * right).message


def test_multi_axis_gap_names_the_opposite_block(glued):
    # 多出来的时间来自正对面整块走正向：拆半的调度 5.21 ms，低于式 (多轴) 的 5.56 ms
    v, w_bidir = 1e9, 9e10
    assert glued["ch05-ma-4x4-split"] == units.fmt_time(15 / 16 * v / (2 * w_bidir))
    assert glued["ch05-ma-4x4-printed"] == units.fmt_time(v / (2 * w_bidir))
    assert glued["ch05-ma-2x2-ratio"] == "1.5"  # 对照照印出来的 V/(k·W_双向)
    assert glued["ch05-ma-2x2-printed"] == units.fmt_time(v / (2 * w_bidir))
    assert "第一阶段转发的片很小" not in TEXT and "10\\cdot V/32" in TEXT


def test_line_allreduce_penalty_depends_on_the_algorithm(glued):
    assert glued["ch05-ov-line-ratio-chain"] == "1"
    assert "流水线化的链式" in TEXT


def test_cross_node_alltoall_at_fixed_per_gpu_buffer(glued):
    per_gpu = 1e9 / 8
    one = 7 / 64 * 8 * per_gpu / 450e9
    eight = 7 / 8 * per_gpu / 50e9
    assert glued["ch05-a2a-1node"] == units.fmt_time(one)
    assert glued["ch05-a2a-8nodes"] == units.fmt_time(eight)
    assert glued["ch05-a2a-8nodes-ratio"] == units.fmt_num(eight / one)
    assert "ch05-gpu-a2a-cross-ratio" not in TEXT


def test_lower_envelope_is_qualified_and_sp_bytes_agree_with_ch06(glued):
    sol = SOL05.read_text(encoding="utf-8")
    for body in (TEXT, sol):
        # 不加限定的说法（开着 SHARP / NVLS 时实测可以超过下包络）
        assert "下包络（lower envelope），真实时间只会更长" not in body and "实测总比模型慢" not in body
        assert "SHARP" in body[body.index("下包络") :]
    assert "480 GB/s" in TEXT and "480 GB/s" in sol
    # Megatron-LM 反向多收集一次输入（第 6 章）。5.10 节的表：普通 TP 每层 4 次 AllReduce × 2V = 8V，
    # Megatron-LM 每层 4 次 RS + 6 次 AG，各 V，共 10V；反向本身 4 AG + 2 RS = 6V 对 2 AR = 4V
    assert glued["ch05-sp-megatron-extra"] == f"{10 / 8 - 1:.0%}" == "25%"
    assert glued["ch05-sp-megatron-extra-bwd"] == f"{6 / 4 - 1:.0%}" == "50%"
    assert "NCCL 的树形算法、NVLink SHARP（NVLS）" not in sol
    assert "15.2 µs" not in sol  # 数字由代码 glue，不手写


def test_primitive_table_and_p5_ratio_glue(glued):
    assert glued["ch05-prim-h100-ag"] == units.fmt_time(1e9 * 7 / 8 / 450e9)  # NVSwitch：V(N-1)/(N·W_GPU)
    assert glued["ch05-prim-h100-wrong"] == units.fmt_time(1e9 / 900e9)  # 误用“双向 900 GB/s”代进环的公式
    assert glued["ch05-q6-total"] == units.fmt_bytes(128 * 2 * 8192 * 4096 * 2 * 7 / 8)  # 与时间同用 (N-1)/N
    assert "ch05-p5-one-nic" not in glued  # 这个比值是解答的结论，题面不给
    assert (glued["ch05-p5-base"], glued["ch05-p5-net-step"], glued["ch05-p5-nvl-step"]) == ("6.6 µs", "2.7 µs", "1 µs")
