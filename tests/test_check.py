"""答案登记表、自检的判定与常见失误的提示"""

import math

import numpy as np
import pytest

from shardlab import cost, hardware
from shardlab.check import CORRECT, INVALID, MISSING, WRONG, check, evaluate
from shardlab.exercise import answers

VALUE_IDS = [a.id for a in answers.ANSWERS.values() if a.kind == "value"]
FUNCTION_IDS = [a.id for a in answers.ANSWERS.values() if a.kind == "function"]


def test_registry_has_every_required_id():
    required = {
        "ch05-p1a", "ch05-p1b", "ch05-p1c", "ch06-p2a", "ch06-p2b", "ch06-p2c", "ch05-p2", "ch06-p3",
        "ch05-p3-uni", "ch05-p3-bi", "ch06-p6-uni", "ch06-p6-bi", "ch05-p4", "ch06-p1",
        "ch05-p5-8", "ch05-p5-64", "ch05-p5-512", "ch05-p6-dp", "ch05-p6-fsdp",
        "ch05-p7-decode-bytes", "ch05-p7-prefill-bytes", "ch05-p7-decode-time", "ch05-p7-prefill-time",
        "ch06-p5-weight-bytes-per-chip", "ch06-p5-t-math", "ch06-p5-t-comms",
        "ch06-p8a-bytes", "ch06-p8b-bytes", "ch06-p8c-bytes", "ch06-p8a-time", "ch06-p8b-time", "ch06-p8c-time",
    }  # fmt: skip
    assert required <= set(answers.ANSWERS)
    assert {a.unit for a in answers.ANSWERS.values()} <= {"s", "B", "FLOP", "1"}
    assert len({a.var for a in answers.ANSWERS.values() if a.chapter == 5}) == sum(
        a.chapter == 5 for a in answers.ANSWERS.values()
    )


def test_readme_documents_every_id():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "solutions" / "README.md").read_text(encoding="utf-8")
    for aid, spec in answers.ANSWERS.items():
        assert f"`{aid}` | `{spec.var}` | {spec.unit}" in readme, aid


def test_reference_values_agree_with_the_book():
    """与原书公开答案一致的部分（sharding.md Q2/Q3）和第 5 章的直觉数字"""
    assert answers.expected_value("ch05-p1a") == pytest.approx(2.097152e6 / 9e10)  # 23.3 µs
    assert answers.expected_value("ch05-p1b") == pytest.approx(8.388608e6 / (2 * 9e10))  # 46.6 µs
    assert answers.expected_value("ch05-p2") == pytest.approx(2e-6)  # 2 跳 × 1 µs
    assert answers.expected_value("ch05-p4") == 16
    assert answers.expected_value("ch05-p5-8") == pytest.approx(2 * 14e9 * 7 / 8 / 450e9, rel=1e-3)  # + 约 10 µs 延迟项
    assert answers.expected_value("ch05-p7-decode-bytes") == 8192 * 2
    assert answers.expected_value("ch06-p8c-time") == 0.0


def test_function_references_have_the_documented_limits():
    assert answers.alltoall_over_allgather(64, False) == pytest.approx(0.5)
    assert answers.alltoall_over_allgather(64, True) == pytest.approx(64 / (4 * 63))  # 大环趋于 1/4
    assert answers.alltoall_over_allgather(5, True) == pytest.approx(6 / 20)
    assert answers.alltoall_over_allgather(4, True) == pytest.approx(1 / 3)  # 两种算法都拆开正对面的块
    assert answers.case2_comm_ratio(1, 4096, 1024) == pytest.approx(0.5)
    assert answers.strategy_comm_ratio(128, 8192, 1) == pytest.approx(2 * 128 / 8192)


def test_unknown_id_lists_the_known_ones():
    with pytest.raises(KeyError, match="未知的答案 id.*ch05-p1a"):
        answers.get("ch05-p99")
    with pytest.raises(TypeError, match="函数答案"):
        answers.expected_value("ch05-p3-fn")


@pytest.mark.parametrize("aid", VALUE_IDS)
def test_right_answer_passes_and_missing_is_reported(aid):
    right = answers.expected_value(aid)
    assert evaluate(aid, right).status == CORRECT
    assert evaluate(aid, np.float64(right)).status == CORRECT
    assert evaluate(aid, ...).status == MISSING
    assert evaluate(aid, "23 µs").status == INVALID
    assert evaluate(aid, float("nan")).status == WRONG


@pytest.mark.parametrize("aid", [a for a in VALUE_IDS if answers.expected_value(a) != 0])
def test_messages_never_reveal_the_expected_value(aid):
    right = answers.expected_value(aid)
    for wrong in (right * 3.7, right * 1e6, right * 0.5, 1.0):
        msg = evaluate(aid, wrong).message
        for text in (repr(right), f"{right:g}", f"{right:.3g}", f"{right:.2e}"):
            assert text not in msg


@pytest.mark.parametrize(
    ("aid", "transform", "hint"),
    [
        ("ch05-p1a", lambda r: r * 1e6, "微秒（µs）"),
        ("ch05-p1a", lambda r: r * 1e3, "毫秒（ms）"),
        ("ch05-p1a", lambda r: r / 2, "bf16 的因子 2"),
        ("ch05-p1a", lambda r: r * 2, "单向带宽"),
        ("ch05-p1a", lambda r: r * 4, "V 用了整个数组"),
        ("ch05-p1a", lambda r: r * 1.5, "wraparound"),
        ("ch05-p1a", lambda r: r / 2 * 1e6, "微秒（µs）"),
        ("ch05-p1c", lambda r: r / 2, "AllReduce = ReduceScatter + AllGather"),
        ("ch05-p5-8", lambda r: 2 * 14e9 / 450e9, "(N-1)/N"),
        ("ch05-p5-64", lambda r: 2 * 14e9 / 400e9, "8 轨环"),
        ("ch05-p2", lambda r: 256 / hardware.TPU_V4P.ici_bidir_bw, "延迟"),
        ("ch05-p2", lambda r: 3e-6, "⌊N/2⌋"),
        ("ch05-p3-bi", lambda r: 0.5, "单向环"),
        ("ch05-p4", lambda r: 4, "|Y|·|Z|"),
        ("ch05-p6-fsdp", lambda r: 2 * 140e9, "反向传播"),
        ("ch05-p7-decode-bytes", lambda r: r * 1e-3, "kB"),
        ("ch05-p7-decode-time", lambda r: cost.gpu_allreduce_in_node(16384, 8, 450e9), "带宽项"),
        ("ch06-p8a-time", lambda r: r * 2, "ReduceScatter"),
        ("ch06-p5-weight-bytes-per-chip", lambda r: r / 2, "bf16"),
    ],
)
def test_classic_slips_get_named(aid, transform, hint):
    verdict = evaluate(aid, transform(answers.expected_value(aid)))
    assert verdict.status == WRONG
    assert hint in verdict.message


def test_unexplained_wrong_answer_gets_a_generic_hint():
    verdict = evaluate("ch05-p1a", answers.expected_value("ch05-p1a") * 3.7)
    assert verdict.status == WRONG and "偏大" in verdict.message


@pytest.mark.parametrize("aid", FUNCTION_IDS)
def test_function_answers(aid):
    spec = answers.get(aid)
    assert evaluate(aid, spec.reference).status == CORRECT
    assert evaluate(aid, ...).status == MISSING

    def stub(*args): ...

    assert evaluate(aid, stub).status == MISSING
    assert evaluate(aid, 3.0).status == INVALID

    def boom(*args):
        raise ZeroDivisionError("division by zero")

    assert "ZeroDivisionError" in evaluate(aid, boom).message
    wrong = evaluate(aid, lambda *a: spec.reference(*a) * 2 + 1)
    assert wrong.status == WRONG and "输入" in wrong.message


def test_check_prints_one_line(capsys):
    check("ch05-p1a", answers.expected_value("ch05-p1a"))
    check("ch05-p1a", ...)
    out = capsys.readouterr().out.splitlines()
    assert out == ["✓ ch05-p1a：正确", "… ch05-p1a：未作答（把 ... 换成你的答案）"]


def test_close_handles_zero_and_tolerance():
    assert evaluate("ch06-p8c-bytes", 0).status == CORRECT
    assert evaluate("ch06-p8c-bytes", 1e-3).status == WRONG
    r = answers.expected_value("ch05-p1a")
    assert evaluate("ch05-p1a", r * 1.01).status == CORRECT
    assert evaluate("ch05-p1a", r * 1.05).status == WRONG
    assert not math.isnan(r)


def test_readme_lists_every_problem_parameter():
    from pathlib import Path

    from shardlab.exercise import problems

    readme = (Path(__file__).resolve().parent.parent / "solutions" / "README.md").read_text(encoding="utf-8")
    for assignment in problems.ASSIGNMENTS:
        for p in problems.params_of(assignment):
            assert f"| {assignment} | `{p.name}` |" in readme, (assignment, p.name)
