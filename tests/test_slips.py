"""每个答案的常见失误（Slip）：自己的错误值触发自己的提示，别的值不触发不相干的提示

对每个值类答案（函数类答案对每组公开输入）：

1. 正确答案判为正确；
2. 每个失误的错误值判为错，并且提示里有这个失误的提示（错误值落在正确答案的容差之内的失误永远不会触发，是死的）；
3. 这个错误值不触发别的失误的提示，除非那个失误的错误值与它重合（2% 以内），那样的两个失误无法区分，应当合并成一条；
4. 正确答案的倒数只触发错误值与倒数重合的失误（例如“比值倒过来了”）。

第 6 章的失误由第 6 章维护：已知不满足的列在 CH06_KNOWN 里（xfail，写明原因），修好后删掉对应的一行。
"""

import math

import pytest

from shardlab import answers, check, problems

TOL = 0.02  # 与 check._slip_hints 的容差相同

# 第 6 章已知的问题：(答案 id, 失误序号) → 原因（现在没有）
CH06_KNOWN: dict[tuple[str, int], str] = {}


def _cases():
    for spec in answers.ANSWERS.values():
        if spec.kind == "value":
            yield spec, None, answers.expected_value(spec.id)
        else:
            for args in spec.examples:
                yield spec, args, spec.reference(*args)


def _params(spec):
    return problems.published(spec.assignment)


def _close(a, b):
    return b != 0 and math.isclose(a, b, rel_tol=TOL)


def _hints(spec, value, right):
    verdict = check.judge_value(spec, value, right, _params(spec))
    return verdict, [s.hint for s in spec.slips if s.hint in verdict.message]


def _slip_params():
    for spec, args, right in _cases():
        for i, _slip in enumerate(spec.slips):
            cid = f"{spec.id}{'' if args is None else list(args)}-slip{i}"
            marks = []
            if (spec.id, i) in CH06_KNOWN:
                marks = [pytest.mark.xfail(reason=CH06_KNOWN[(spec.id, i)], strict=False)]
            yield pytest.param(spec, args, right, i, id=cid, marks=marks)


@pytest.mark.parametrize("spec,args,right,i", list(_slip_params()))
def test_slip_value_triggers_its_own_hint_only(spec, args, right, i):
    slip, params = spec.slips[i], _params(spec)
    wrong = slip.wrong_value(right, params)
    verdict, hints = _hints(spec, wrong, right)
    assert verdict.status == check.WRONG, (
        f"失误 {slip.hint!r} 的错误值 {wrong!r} 落在正确答案的容差之内：这条提示永远不会出现"
    )
    assert slip.hint in hints, f"错误值 {wrong!r} 没有触发自己的提示 {slip.hint!r}：{verdict.message}"
    stray = [s.hint for s in spec.slips if s.hint in hints and not _close(wrong, s.wrong_value(right, params))]
    assert not stray, f"错误值 {wrong!r} 触发了不相干的提示：{stray}"
    twins = [s.hint for s in spec.slips if s is not slip and _close(wrong, s.wrong_value(right, params))]
    assert not twins, f"失误 {slip.hint!r} 与 {twins} 给出同一个错误值，学生无法区分：合并成一条提示"


@pytest.mark.parametrize(
    "spec,args,right", [pytest.param(*c, id=f"{c[0].id}{'' if c[1] is None else list(c[1])}") for c in _cases()]
)
def test_right_answer_and_its_inverse(spec, args, right):
    assert check.judge_value(spec, right, right, _params(spec)).status == check.CORRECT
    if right == 0:
        return
    inverse = 1 / right
    verdict, hints = _hints(spec, inverse, right)
    if _close(inverse, right):
        return  # 比值为 1 附近时倒数就是答案本身
    params = _params(spec)
    stray = [s.hint for s in spec.slips if s.hint in hints and not _close(inverse, s.wrong_value(right, params))]
    assert not stray, f"正确答案的倒数 {inverse!r} 触发了不相干的提示：{stray}"
