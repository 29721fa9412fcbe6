"""判定（judging）：自检（``shardlab.check``）与评分器（``shardlab.grade``）共用的唯一一条路

- ``close``：唯一的接近规则（相对容差；参考值为 0 时要求绝对值不超过 1e-12）；个人版的撞车检查、评分器认出的“与谁的答案相同”也用它；
- ``as_number``：什么算一个数（评分器把它的源码原样放进导出单元）；
- ``judge_value`` / ``judge_function``：把一个答案与参考值比较，不对时先看它能不能由这个学生**自己的参数**上的常见失误解释
  （``Verdict.slip`` 为真），给出提示；从不给出参考值；
- ``evaluate``：按答案 id 和一组题目参数（``shardlab.exercise.problems``）判定。
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from shardlab.exercise import answers

MISSING = "missing"
CORRECT = "correct"
WRONG = "wrong"
INVALID = "invalid"
ZERO_ATOL = 1e-12  # 参考值为 0 时允许的绝对误差
SLIP_RTOL = answers.SLIP_RTOL  # 认出常见失误时的相对容差
# 没有认出失误时的提示：按答案的单位（答案自己的 hint 优先）
FALLBACK_HINTS = {
    "s": "回到公式，检查 V 的取法、带宽的方向（W_单向 还是 W_双向）和单位",
    "B": "检查数组的形状、哪些维度仍是分片的，以及每个元素的字节数",
    "FLOP": "检查矩阵乘法的 FLOPs（每次乘加算两次）和分到几个芯片上",
    "1": "比值没有单位：检查分子和分母各是什么",
}


@dataclass(frozen=True)
class Verdict:
    """一次判定：status 为 correct / wrong / missing / invalid，message 是给学生看的中文说明；
    slip 为真表示这个错误答案由一种常见失误解释了（它的提示在 message 里）"""

    answer_id: str
    status: str
    message: str
    slip: bool = False

    @property
    def ok(self) -> bool:
        return self.status == CORRECT

    def __str__(self) -> str:
        mark = {CORRECT: "✓", MISSING: "…"}.get(self.status, "✗")
        return f"{mark} {self.answer_id}：{self.message}"


def close(value: float, right: float, rtol: float) -> bool:
    """唯一的接近规则：value 与 right 的相对差不超过 rtol；right 为 0 时 |value| ≤ 1e-12"""
    if right == 0:
        return abs(value) <= ZERO_ATOL
    return math.isclose(value, right, rel_tol=rtol)


def as_number(value) -> float | None:
    """类型规则（自检与评分器共用一份）：实数标量（布尔除外）或整数/浮点的 0 维数组是数，别的（字符串、列表……）都不是

    评分器把这个函数的源码原样放进导出单元（``shardlab.grade.export``），所以它只用内置名字和 ``Real``。
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, Real):
        try:
            return float(value)
        except OverflowError:  # 例如 10**400：是数，只是超出了浮点数的范围
            return float("inf") if value > 0 else float("-inf")
    if getattr(value, "shape", None) == () and getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u", "f"):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def slip_values(spec: answers.Answer, right: float, params=None) -> list[tuple[str, float]]:
    """这个答案的常见失误在参数 params（默认发布版；函数答案是一组输入）下给出的错误值：[(提示, 错误值)]，
    含单位失误与“单位失误 + 一个别的失误”；同一个错误值的几种原因按登记表的顺序（可能性从大到小）"""
    params = spec.params(params)
    if not right:  # 正确答案是 0 时倍数失误没有意义，只有直接给出错误值的失误（alt）
        return [
            (s.hint, w) for s in spec.slips if s.alt is not None and (w := s.wrong_value(right, params)) is not None
        ]
    unit_slips = answers.UNIT_SLIPS.get(spec.unit, ())
    own = [(s.hint, w) for s in spec.slips if (w := s.wrong_value(right, params)) is not None]
    out = own + [(u.hint, u.wrong_value(right)) for u in unit_slips]
    out += [(f"{u.hint}；另外，{hint}", u.wrong_value(w)) for u in unit_slips for hint, w in own]
    return out


def slip_hints(spec: answers.Answer, value: float, right: float, params=None) -> list[str]:
    """value 能由哪些常见失误解释（单个失误优先；都不是时再看单位失误叠加一个别的失误）"""
    single, compound = _split(slip_values(spec, right, params))
    found = [hint for hint, w in single if close(value, w, SLIP_RTOL)]
    if not found:
        found = [hint for hint, w in compound if close(value, w, SLIP_RTOL)]
    return list(dict.fromkeys(found))


def _split(candidates: list[tuple[str, float]]) -> tuple[list, list]:
    """(单个失误, 单位失误叠加一个别的失误)：后者的提示里有“；另外，”"""
    single = [c for c in candidates if "；另外，" not in c[0]]
    return single, [c for c in candidates if "；另外，" in c[0]]


def tolerance_text(spec: answers.Answer) -> str:
    """判对的容差，写给学生看：估算的答案“相差 2% 以内”，能精确算出的答案“要精确”"""
    if spec.rtol >= 1e-3:
        return f"与参考值相差 {spec.rtol:.0%} 以内算对"
    return "这个答案能精确算出，要与参考值相等"


def judge_value(spec: answers.Answer, value, right: float, params=None) -> Verdict:
    """把一个数值答案与参考值 right 比较；params 是这个学生的题目参数（认出与参数有关的失误；默认发布版）"""
    if value is Ellipsis or value is None:
        return Verdict(spec.id, MISSING, "未作答（把 ... 换成你的答案）")
    number = as_number(value)
    if number is None:
        return Verdict(spec.id, INVALID, f"答案应当是一个数（单位 {spec.unit}），收到的是 {type(value).__name__}")
    if math.isnan(number):
        return Verdict(spec.id, WRONG, "答案是 NaN（not a number）：检查是不是有 0/0 或者用了还没算出来的变量")
    if math.isinf(number):
        return Verdict(spec.id, WRONG, "答案是无穷大，或者大到超出了浮点数的范围（比如 10**400）：检查单位和指数")
    if close(number, right, spec.rtol):
        return Verdict(spec.id, CORRECT, "正确")
    if number < 0 <= right:
        what = {"s": "时间", "B": "字节数", "FLOP": "FLOPs"}.get(spec.unit, "这个比值")
        return Verdict(spec.id, WRONG, f"不对：答案是负数，而{what}不会小于 0。检查减法的顺序和正负号。")
    hints = slip_hints(spec, number, right, params)
    if hints:
        return Verdict(spec.id, WRONG, "不对。" + "；或者，".join(hints) + "。", slip=True)
    direction = "偏大" if number > right else "偏小"
    hint = spec.hint or FALLBACK_HINTS.get(spec.unit, FALLBACK_HINTS["1"])
    return Verdict(spec.id, WRONG, f"不对（{direction}；{tolerance_text(spec)}）。{hint}。")


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
        verdict = judge_value(spec, got, right, tuple(args))  # 函数答案的失误按这一组输入来认
        if not verdict.ok:
            return Verdict(spec.id, verdict.status, f"输入 {tuple(args)}：{verdict.message}", verdict.slip)
    return Verdict(spec.id, CORRECT, f"正确（检查了 {len(inputs)} 组输入）")


def evaluate(answer_id: str, value, params=None) -> Verdict:
    """按答案 id 判定，不打印；params 是本章的题目参数（默认发布版）"""
    spec = answers.get(answer_id)
    if spec.kind == "function":
        return judge_function(spec, value)
    return judge_value(spec, value, spec.value(params), params)
