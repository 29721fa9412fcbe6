"""答案登记表、自检的判定与常见失误的提示"""

import math

import numpy as np
import pytest

from shardlab import cost, hardware
from shardlab.check import CORRECT, INVALID, MISSING, WRONG, check, evaluate
from shardlab.exercise import answers, judge

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
        ("ch05-p2", lambda r: 3e-6, "N-1 跳"),
        ("ch05-p3-bi", lambda r: 0.5, "单向环"),
        ("ch05-p4", lambda r: 4, "X 轴的大小"),
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


def test_generic_hint_states_the_tolerance_and_fits_the_unit():
    """没有认出失误时说出判对的容差；比值的提示不谈 V 和带宽"""
    timing = evaluate("ch05-p1a", answers.expected_value("ch05-p1a") * 3.7).message
    assert "2%" in timing
    ratio = evaluate("ch05-p4", 7).message
    assert "精确" in ratio
    for aid in ("ch05-p4", "ch06-p1", "ch05-p3-uni"):
        msg = evaluate(aid, answers.expected_value(aid) * 3.7).message
        assert "V 的取法" not in msg and "带宽" not in msg, msg


@pytest.mark.parametrize("aid", ["ch05-p1a", "ch05-p4", "ch06-p8a-bytes", "ch05-p3-bi"])
def test_negative_answer_gets_its_own_message(aid):
    verdict = evaluate(aid, -answers.expected_value(aid))
    assert verdict.status == WRONG and "负数" in verdict.message and "偏小" not in verdict.message


@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_huge_integer_is_judged_not_crashed(value, capsys):
    verdict = evaluate("ch05-p1a", value)
    assert verdict.status == WRONG and "超出了浮点数的范围" in verdict.message
    check("ch05-p1a", value)
    assert "✗ ch05-p1a" in capsys.readouterr().out
    assert evaluate("ch05-p3-fn", lambda n, b: 10**400).status == WRONG


# 提示从不说出答案：这些说法就是（或直接给出）某道题的答案
ANSWER_GIVEAWAYS = {
    "ch05-p3-uni": ("AllGather 的一半", "1/2"),
    "ch05-p3-bi": ("再省一半", "1/4"),
    "ch06-p6-uni": ("AllGather 的一半", "1/2"),
    "ch06-p6-bi": ("再省一半", "1/4"),
    "ch05-p4": ("|Y|·|Z|", "|Y| · |Z|"),
    "ch06-p1": ("|Y|·|Z|", "|Y| · |Z|"),
    "ch06-p5-t-comms": ("3V/(8",),
    "ch05-p2": ("⌊N/2⌋ 跳",),
    "ch06-p3": ("⌊N/2⌋ 跳",),
}


@pytest.mark.parametrize("aid", sorted(ANSWER_GIVEAWAYS))
def test_hints_never_state_the_answer(aid):
    spec = answers.get(aid)
    texts = [s.hint for s in spec.slips] + [spec.hint]
    for phrase in ANSWER_GIVEAWAYS[aid]:
        assert not any(phrase in t for t in texts), (aid, phrase)


def test_more_likely_cause_comes_first():
    """2 倍的 p1a：先说单向带宽，再说 bf16 当成 4 字节；2 倍的 p1b：先说只用了一条轴"""
    r = answers.expected_value("ch05-p1a")
    assert evaluate("ch05-p1a", 2 * r).message.startswith("不对。用了单向带宽")
    r = answers.expected_value("ch05-p1b")
    assert evaluate("ch05-p1b", 2 * r).message.startswith("不对。只用了一条轴的带宽")
    r = answers.expected_value("ch05-p1c")
    assert evaluate("ch05-p1c", r / 2).message.startswith("不对。漏了 AllReduce 的因子 2")


def test_book_summary_formula_with_n_minus_one_over_n_is_recognised():
    """原书总结公式带 (N-1)/N：4x4x4 上 17.5 µs、43.7 µs、8.74 µs"""
    for aid, value in (("ch05-p1a", 17.5e-6), ("ch05-p1b", 43.7e-6), ("ch05-p1c", 8.74e-6)):
        verdict = evaluate(aid, value)
        assert verdict.slip and "(N-1)/N" in verdict.message, (aid, verdict.message)


def test_p7_bf16_slip_keeps_the_latency_term():
    """prefill：V 少了一半只让带宽项减半，延迟项不变（80.2 µs）；整个时间减半不是 bf16 的失误"""
    h = hardware.H100
    v = 2 * 2048 * 8192
    lat = h.nccl_base_latency + 2 * 7 * h.nvlink_step_latency
    slipped = lat + 2 * (v / 2) * 7 / (8 * 450e9)
    assert slipped == pytest.approx(80.2e-6, rel=1e-3)
    assert "bf16" in evaluate("ch05-p7-prefill-time", slipped).message
    assert "bf16" not in evaluate("ch05-p7-prefill-time", answers.expected_value("ch05-p7-prefill-time") / 2).message


def test_nvlink_900_names_one_way_and_two_way_bandwidth():
    v = 2 * 7e9
    lat = hardware.H100.nccl_base_latency + 2 * 7 * hardware.H100.nvlink_step_latency
    msg = evaluate("ch05-p5-8", lat + 2 * v * 7 / (8 * 900e9)).message
    assert msg.startswith("不对。用了 900 GB/s") and "W_双向" in msg and "W_单向" in msg


def test_p3_function_constant_quarter_is_not_called_the_chapter_convention_on_odd_n():
    def limit(n, bidirectional):
        return 0.25 if bidirectional else 0.5

    spec = answers.get("ch05-p3-fn")
    odd = judge.judge_function(spec, limit, inputs=[(5, True)])
    assert odd.slip and "极限" in odd.message and "正文的约定" not in odd.message
    even = judge.judge_function(spec, limit, inputs=[(4, True)])
    assert even.slip and "正文的约定" in even.message


def test_ch06_p5_weight_bytes_factors_name_the_right_causes():
    """一个矩阵（切好的）是 0.5 倍；2 倍是只切到 2 个芯片、bf16 当 4 字节或一个没切的矩阵"""
    d, f = 8192, 32768
    one_matrix = 2 * d * f / 4
    msg = evaluate("ch06-p5-weight-bytes-per-chip", one_matrix).message
    assert "只算了一个矩阵：" in msg and "bf16" in msg
    msg = evaluate("ch06-p5-weight-bytes-per-chip", 2 * d * f).message  # 一个矩阵，没有切分
    assert "只算了一个矩阵，而且没有切分" in msg and "只分到了 2 个芯片上" in msg


def test_half_values_in_ch06_name_every_plausible_cause():
    t = answers.expected_value("ch06-p5-t-math")
    msg = evaluate("ch06-p5-t-math", t / 2).message
    assert "FLOPs 的因子 2" in msg and "只算了一个矩阵乘法" in msg
    for aid in ("ch06-p8a-time", "ch06-p8b-time"):
        msg = evaluate(aid, answers.expected_value(aid) / 2).message
        assert "W_双向" in msg and "bf16" in msg


def test_p8_allgather_time_at_twice_never_speaks_of_allreduce():
    """发布版的 (b) 是 AllGather：2 倍的时间不是“用了 AllReduce”"""
    msg = evaluate("ch06-p8b-time", 2 * answers.expected_value("ch06-p8b-time")).message
    assert "AllReduce" not in msg and "ReduceScatter" not in msg and "4 字节" in msg
    msg = evaluate("ch06-p8a-time", 2 * answers.expected_value("ch06-p8a-time")).message
    assert "用了 AllReduce" in msg


def test_function_answers_have_slips_and_check_every_edge_case():
    for aid in FUNCTION_IDS:
        spec = answers.get(aid)
        assert len(spec.slips) >= 2, aid
        assert len(spec.examples) >= 4 and set(spec.edge_cases) <= set(spec.examples), aid
    verdict = evaluate("ch06-p4-fn", lambda b, d, f: b / d)
    assert verdict.slip and "AllReduce" in verdict.message


def test_exercise_preface_states_the_tolerance():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    tol = f"{judge.SLIP_RTOL:.0%}"
    assert {a.rtol for a in answers.ANSWERS.values() if a.kind == "value" and a.rtol >= 1e-3} == {judge.SLIP_RTOL}
    for c in (5, 6):
        for folder, kind in (("exercises", "exercises"), ("solutions", "solutions")):
            text = (root / folder / f"ch0{c}_{kind}.md").read_text(encoding="utf-8")
            preface = text.split("```{code-cell}")[0]
            assert f"{tol} 以内" in preface and "精确" in preface, (folder, c)


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
