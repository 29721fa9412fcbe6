"""练习的自检（self-check）：``check("ch05-p1a", p1a)`` 用中文告诉你对不对，并认出常见失误

自检只为学习：它运行在你自己的内核里，当然可以被绕过；正式评分由评分器（``shardlab.grade``）完成。
它从不打印参考答案；参考值由 ``shardlab.answers`` 现算，不写在练习笔记本里。
参考值按笔记本里参数单元（``B``、``mesh`` …）的当前值计算，所以个人版的笔记本按自己的数判定。
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from numbers import Real

from shardlab import answers, problems

MISSING = "missing"
CORRECT = "correct"
WRONG = "wrong"
INVALID = "invalid"


@dataclass(frozen=True)
class Verdict:
    """一次判定：status 为 correct / wrong / missing / invalid，message 是给学生看的中文说明"""

    answer_id: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == CORRECT

    def __str__(self) -> str:
        mark = {CORRECT: "✓", MISSING: "…"}.get(self.status, "✗")
        return f"{mark} {self.answer_id}：{self.message}"


def _close(value: float, right: float, rtol: float) -> bool:
    if right == 0:
        return abs(value) <= 1e-12
    return math.isclose(value, right, rel_tol=rtol)


def as_number(value) -> float | None:
    """类型规则（自检与评分器共用一份）：实数标量（布尔除外）或整数/浮点的 0 维数组是数，别的（字符串、列表……）都不是

    评分器把这个函数的源码原样放进导出单元（``shardlab.grade.export``），所以它只用内置名字和 ``Real``。
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, Real):
        return float(value)
    if getattr(value, "shape", None) == () and getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u", "f"):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def _slip_hints(spec: answers.Answer, value: float, right: float, params=None) -> list[str]:
    """value 能由哪些常见失误（单个，或单位失误叠加一个别的失误）解释；params 是本章的参数（默认发布版）"""
    params = spec.params(params)
    unit_slips = answers.UNIT_SLIPS.get(spec.unit, ())
    wrongs = [(s.hint, s.wrong_value(right, params)) for s in spec.slips] if right else []
    found = [hint for hint, w in wrongs if _close(value, w, 0.02)]
    found += [s.hint for s in unit_slips if right and _close(value, s.wrong_value(right), 0.02)]
    if not found:
        for u in unit_slips:
            for hint, w in wrongs:
                if _close(value, u.wrong_value(w), 0.02):
                    found.append(f"{u.hint}；另外，{hint}")
    return list(dict.fromkeys(found))


def judge_value(spec: answers.Answer, value, right: float, params=None) -> Verdict:
    """把一个数值答案与参考值 right 比较（评分器也用它，right 来自答案表）；params 用来认出与参数有关的失误"""
    if value is Ellipsis or value is None:
        return Verdict(spec.id, MISSING, "未作答（把 ... 换成你的答案）")
    number = as_number(value)
    if number is None:
        return Verdict(spec.id, INVALID, f"答案应当是一个数（单位 {spec.unit}），收到的是 {type(value).__name__}")
    if math.isnan(number) or math.isinf(number):
        return Verdict(spec.id, WRONG, "答案是 NaN 或无穷大")
    if _close(number, right, spec.rtol):
        return Verdict(spec.id, CORRECT, "正确")
    hints = _slip_hints(spec, number, right, params)
    if hints:
        return Verdict(spec.id, WRONG, "不对。" + "；或者，".join(hints) + "。")
    direction = "偏大" if number > right else "偏小"
    hint = spec.hint or "回到公式，检查 V 的取法、带宽的方向和单位"
    return Verdict(spec.id, WRONG, f"不对（{direction}）。{hint}。")


def judge_function(spec: answers.Answer, func, inputs=None, expected=None) -> Verdict:
    """在一组输入上调用学生的函数，逐个与参考函数（或给定的 expected）比较"""
    inputs = spec.examples if inputs is None else inputs
    if func is Ellipsis or func is None:
        return Verdict(spec.id, MISSING, "未作答（请实现这个函数）")
    if not callable(func):
        return Verdict(spec.id, INVALID, f"{spec.var} 应当是一个函数")
    for k, args in enumerate(inputs):
        try:
            got = func(*args)
        except Exception as exc:  # noqa: BLE001  学生代码可能抛出任何异常
            return Verdict(spec.id, WRONG, f"调用 {spec.var}{tuple(args)} 时出错：{type(exc).__name__}: {exc}")
        if got is None or got is Ellipsis:
            return Verdict(spec.id, MISSING, f"未作答：{spec.var}{tuple(args)} 返回了 {got!r}")
        right = spec.reference(*args) if expected is None else expected[k]
        verdict = judge_value(spec, got, right)
        if not verdict.ok:
            return Verdict(spec.id, verdict.status, f"输入 {tuple(args)}：{verdict.message}")
    return Verdict(spec.id, CORRECT, f"正确（检查了 {len(inputs)} 组输入）")


def evaluate(answer_id: str, value, params=None) -> Verdict:
    """自检的判定，不打印；params 是本章的题目参数（默认发布版）"""
    spec = answers.get(answer_id)
    if spec.kind == "function":
        return judge_function(spec, value)
    return judge_value(spec, value, spec.value(params), params)


def check(answer_id: str, value) -> None:
    """打印一行中文判定：✓ 正确、✗ 不对（附提示）或 … 未作答；从不打印参考答案

    参考值按调用处（笔记本）的参数变量计算（``problems.from_namespace``）：个人版的笔记本写着自己的数，
    自检就按这些数判定；没有定义的参数取发布版的值。
    """
    spec = answers.get(answer_id)
    frame = inspect.currentframe()
    caller = frame.f_back.f_globals if frame is not None and frame.f_back is not None else {}
    print(evaluate(answer_id, value, problems.from_namespace(spec.assignment, caller)))
