"""第 6 章与它的解答说的话：读出共享的整本书构建执行章节时交给正文的数字，和测试里从原书的规格从头算的值比较；再查几条文字

独立于章节代码的部分：芯片常数（原书规格表）、线与环上 AllReduce 的链路计数、三种做法的 FLOPs。
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
    assert "(1) 与 (2) 一样好" in solutions
    assert "只给了部分答案" in solutions
    assert "原书没有给出答案" not in solutions


def test_p4_two_regimes_are_stated():
    solutions = text(SOLUTIONS)
    assert "两种看法并不矛盾" not in solutions
    assert "$D > 2B$ 时策略 2 更快" in solutions and "$D > 2C/W$ 时策略 2 更快" in solutions


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
