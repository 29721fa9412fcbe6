"""抄袭的证据（只给助教看）：按个人版评分之后，全班一起统计，每份提交一行，从不写进学生的反馈

规则（README 与教师指南里写着同样的话）：

1. 一道题答错了，先按这个学生**自己的参数**认常见失误（单位、bf16 的因子 2、单向与双向带宽……）；认出来的失误不是证据，
   哪怕它碰巧等于别人的答案（个人版的参数取值有限，这种巧合很常见）。
2. 剩下的错答案（认不出的失误）如果在容差内等于某位同学的正确答案，或等于书上（发布版）的答案，记为一次“对上”。
   学生自己的正确答案与那位同学的相同的题不算（那样的题照抄也是对的，看不出来）。
3. 偶然对上的概率按一个对学生有利的假设估计：把每个认不出的错答案当成从全班（加上发布版）的正确答案里随机挑一个，
   对上来源 X 的概率是全班与 X 答案相同的人所占的比例。对上次数不少于 ``MIN_MATCHES`` 次，而且在这个假设下
   “偶然对上这么多次”的概率（泊松二项分布的尾概率）小于 ``ALPHA`` 除以比较过的来源数（Bonferroni 校正）时，标为“需要核对”。
4. 标记只是请助教去看这份提交，不扣分（分数只由判定决定：错的题本来就是 0 分）。

这个模块只读评分结果与答案表，不运行学生的代码。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shardlab.exercise import answers, variants
from shardlab.exercise.judge import WRONG, close

PUBLISHED = "发布版"
MIN_MATCHES = 3
ALPHA = 1e-3


@dataclass
class Finding:
    """一份提交与一个来源（某位同学，或发布版）之间的证据"""

    student: str  # 花名册 id
    file: str
    source: str  # 同学的花名册 id，或 PUBLISHED
    matches: list[str]  # 对上的答案 id
    opportunities: int  # 这个来源与学生自己答案不同的题数（照抄才看得出来的题）
    unexplained: int  # 学生认不出失误的错答案数
    expected: float  # 偶然对上的期望次数
    p_value: float
    flagged: bool


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    answer_rows: list[dict] = field(default_factory=list)  # 每个学生每道题：交的数、参考值、状态、对上了谁

    @property
    def flagged(self) -> list[Finding]:
        return [f for f in self.findings if f.flagged]


def tail_probability(probs: list[float], m: int) -> float:
    """独立的伯努利试验（成功概率 probs）至少成功 m 次的概率（泊松二项分布，动态规划，精确）"""
    dist = [1.0]
    for p in probs:
        nxt = [0.0] * (len(dist) + 1)
        for k, q in enumerate(dist):
            nxt[k] += q * (1 - p)
            nxt[k + 1] += q * p
        dist = nxt
    return min(1.0, sum(dist[m:]))


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def analyze(results: list[dict], values: dict[str, dict[str, float]], assignment: str) -> Report:
    """results：计入成绩的结果（带 roster_id）；values：{学生 id: {答案 id: 参考值}}（PersonalKey.values）"""
    specs = {s.id: s for s in variants.varying(assignment)}
    published = {aid: spec.value() for aid, spec in specs.items()}
    pool = {**{sid: v for sid, v in values.items()}, PUBLISHED: published}
    report = Report()
    # 每个来源的每道题：全班（含发布版）有几个人的答案与它相同（规则 3 的比例）；只在有对上的来源时才算，算过的记下
    same_cache: dict[tuple[str, str], int] = {}

    def same(src: str, a: str) -> int:
        if (src, a) not in same_cache:
            target = pool[src][a]
            same_cache[src, a] = sum(not variants.distinct(specs[a], other[a], target) for other in pool.values())
        return same_cache[src, a]

    for res in results:
        me = res.get("roster_id")
        if me not in values:
            continue
        unexplained: dict[str, float] = {}
        for prob in res.get("problems", []):
            spec = specs.get(prob["id"])
            sub = _number(prob.get("submitted"))
            right = values[me].get(prob["id"])
            matched = []
            if spec and sub is not None and prob.get("verdict") == WRONG and not prob.get("slip"):
                unexplained[spec.id] = sub
                matched = [
                    src
                    for src, v in pool.items()
                    if src != me and variants.distinct(spec, v[spec.id], right) and close(sub, v[spec.id], spec.rtol)
                ]
            report.answer_rows.append(
                {
                    "student": me,
                    "file": res.get("file", ""),
                    "problem": prob["id"],
                    "status": prob.get("status", ""),
                    "slip": "yes" if prob.get("slip") else "",
                    "submitted": "" if prob.get("submitted") is None else prob["submitted"],
                    "expected": "" if right is None else right,
                    "matches": "; ".join(matched),
                }
            )
        if not unexplained:
            continue
        sources = [src for src in pool if src != me]
        for src in sources:
            mine, theirs = values[me], pool[src]
            opportunities = sum(variants.distinct(specs[a], theirs[a], mine[a]) for a in specs)
            hits = [
                a
                for a, sub in unexplained.items()
                if variants.distinct(specs[a], theirs[a], mine[a]) and close(sub, theirs[a], specs[a].rtol)
            ]
            if not hits:
                continue
            probs = [_chance(specs[a], theirs[a], mine[a], same(src, a), len(pool)) for a in unexplained]
            p = tail_probability(probs, len(hits))
            flagged = len(hits) >= MIN_MATCHES and p < ALPHA / max(1, len(sources))
            report.findings.append(
                Finding(me, res.get("file", ""), src, hits, opportunities, len(unexplained), sum(probs), p, flagged)
            )
    report.findings.sort(key=lambda f: (not f.flagged, f.p_value, f.student))
    return report


def _chance(spec: answers.Answer, target: float, mine: float, same: int, pool: int) -> float:
    """规则 3：一个认不出失误的错答案恰好等于来源的答案 target 的概率（全班除了自己，答案与 target 相同的比例）；
    target 就是学生自己的正确答案时，那道题对上了也不算，概率记 0"""
    if not variants.distinct(spec, target, mine):
        return 0.0
    return same / (pool - 1)
