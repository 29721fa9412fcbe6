"""每个答案的常见失误（Slip）：自己的错误值触发自己的提示，别的值不触发不相干的提示

对每个值类答案（在发布版和两组抽出的个人版参数上；函数类答案对每组公开输入）：

1. 正确答案判为正确；
2. 每个失误的错误值判为错，并且提示里有这个失误的提示（错误值落在正确答案的容差之内的失误永远不会触发，是死的）；
3. 这个错误值不触发别的失误的提示，除非那个失误的错误值与它重合（2% 以内），那样的两个失误无法区分，应当合并成一条；
4. 正确答案的倒数只触发错误值与倒数重合的失误（例如“比值倒过来了”）。

第 6 章的失误由第 6 章维护：已知不满足的列在 CH06_KNOWN 里（xfail，写明原因），修好后删掉对应的一行。
"""

import math
import random

import pytest

from shardlab.exercise import answers, judge, problems, variants

TOL = judge.SLIP_RTOL

# 第 6 章已知的问题：(答案 id, 失误序号) → 原因（现在没有）
CH06_KNOWN: dict[tuple[str, int], str] = {}


# 每章：发布版 + 两组抽出的个人版（第 6 章问题 8 的方案顺序不同，失误也随之不同）
PARAM_SETS = {
    a: [("pub", problems.published(a))]
    + [(f"v{k}", variants.draw(a, random.Random(f"slips-{a}-{k}"))) for k in range(2)]
    for a in problems.ASSIGNMENTS
}


def _cases():
    for spec in answers.ANSWERS.values():
        if spec.kind == "value":
            for name, params in PARAM_SETS[spec.assignment]:
                yield spec, name, params, spec.value(params)
        else:
            for args in spec.examples:
                yield spec, list(args), None, spec.reference(*args)


def _close(a, b):
    return a is not None and b is not None and b != 0 and math.isclose(a, b, rel_tol=TOL)


def _hints(spec, value, right, params):
    verdict = judge.judge_value(spec, value, right, params)
    return verdict, [s.hint for s in spec.slips if s.hint in verdict.message]


def _slip_params():
    for spec, label, params, right in _cases():
        for i, slip in enumerate(spec.slips):
            if right == 0 or slip.wrong_value(right, spec.params(params)) is None:
                continue  # 这组参数下没有这种失误（答案是 0，或失误只属于另一种方案）
            cid = f"{spec.id}[{label}]-slip{i}"
            marks = []
            if (spec.id, i) in CH06_KNOWN:
                marks = [pytest.mark.xfail(reason=CH06_KNOWN[(spec.id, i)], strict=False)]
            yield pytest.param(spec, params, right, i, id=cid, marks=marks)


@pytest.mark.parametrize("spec,params,right,i", list(_slip_params()))
def test_slip_value_triggers_its_own_hint_only(spec, params, right, i):
    params = spec.params(params)
    slip = spec.slips[i]
    wrong = slip.wrong_value(right, params)
    verdict, hints = _hints(spec, wrong, right, params)
    assert verdict.status == judge.WRONG, (
        f"失误 {slip.hint!r} 的错误值 {wrong!r} 落在正确答案的容差之内：这条提示永远不会出现"
    )
    assert slip.hint in hints, f"错误值 {wrong!r} 没有触发自己的提示 {slip.hint!r}：{verdict.message}"
    stray = [s.hint for s in spec.slips if s.hint in hints and not _close(wrong, s.wrong_value(right, params))]
    assert not stray, f"错误值 {wrong!r} 触发了不相干的提示：{stray}"
    twins = [s.hint for s in spec.slips if s is not slip and _close(wrong, s.wrong_value(right, params))]
    assert not twins, f"失误 {slip.hint!r} 与 {twins} 给出同一个错误值，学生无法区分：合并成一条提示"


@pytest.mark.parametrize(
    "spec,params,right", [pytest.param(c[0], c[2], c[3], id=f"{c[0].id}[{c[1]}]") for c in _cases()]
)
def test_right_answer_and_its_inverse(spec, params, right):
    params = spec.params(params)
    assert judge.judge_value(spec, right, right, params).status == judge.CORRECT
    if right == 0:
        return
    inverse = 1 / right
    verdict, hints = _hints(spec, inverse, right, params)
    if _close(inverse, right):
        return  # 比值为 1 附近时倒数就是答案本身
    stray = [s.hint for s in spec.slips if s.hint in hints and not _close(inverse, s.wrong_value(right, params))]
    assert not stray, f"正确答案的倒数 {inverse!r} 触发了不相干的提示：{stray}"
