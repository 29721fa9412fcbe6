"""个人版的撞车与抄袭证据的基准：全班分配能保证什么，诚实的常见失误会不会被当成抄袭，真的抄袭认不认得出

    .venv/bin/python benchmarks/integrity_bench.py [--students 30 300] [--secrets 2]

不运行笔记本：学生“交的数”直接由参考算法和常见失误算出，再走评分器同样的判定（``shardlab.exercise.judge``）
和同样的证据统计（``shardlab.grade.integrity``）。对每个班级大小、每章、每个密钥：

1. 撞车：``variants.for_class`` 分配全班的参数，报告任意两人共有的随参数变化的答案数（最大、平均）与 ``MAX_SHARED``；
   作为对照，也报告不检查撞车（每人取第 0 次抽取）时的最大值；
2. 诚实的学生犯**每一种**有名字的失误（登记表里每个答案的失误、单位失误、单位失误叠加一个别的失误）：
   第 k 轮里每个学生的每道题都交第 k 种失误的错误值（这道题的失误不够 k 种时交正确答案）。报告这些错误值里有多少
   恰好等于某位同学的正确答案（以前会被说成“另一位同学的答案”），以及被标为需要核对的提交数（应为 0）；
3. 诚实的学生犯没有名字的错误：每道题的答案乘一个随机的因子（0.3–3 之间、不落在任何失误上），报告被标记的提交数；
4. 抄袭：每人交班上另一个人的全部答案、交书上的答案、只抄一半的题：报告被认出的比例。

任何一条诚实的学生被标记、或撞车超过上限时，退出码 1。
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from shardlab.exercise import judge, problems, variants  # noqa: E402
from shardlab.grade import integrity  # noqa: E402


def _result(sid: str, submitted: dict[str, float], right: dict[str, float], params) -> dict:
    probs = []
    for spec in variants.varying(params["__assignment"]):
        value = submitted[spec.id]
        v = judge.judge_value(spec, value, right[spec.id], params)
        probs.append({"id": spec.id, "status": v.status, "verdict": v.status, "slip": v.slip, "submitted": value})
    return {"student": sid, "roster_id": sid, "file": f"{sid}.ipynb", "problems": probs}


def _isclose(right: np.ndarray, value: float, rtol: float) -> np.ndarray:
    """judge.close(value, right, rtol) 逐个：参考值为 0 时看绝对值，否则 math.isclose 的相对容差"""
    rel = np.abs(right - value) <= rtol * np.maximum(np.abs(right), abs(value))
    return np.where(right == 0, abs(value) <= judge.ZERO_ATOL, rel)


def _equals_a_classmate(spec, wrong: float, mine: float, others: np.ndarray) -> bool:
    """wrong 在容差内等于某位同学的正确答案（那位同学的答案与自己的不同）：judge.close 与 variants.distinct 的向量化写法"""
    near_wrong = _isclose(others, wrong, spec.rtol)
    same_as_me = _isclose(others, mine, 2 * spec.rtol)
    return bool(np.any(near_wrong & ~same_as_me))


def _flags(results: list[dict], values, assignment: str) -> set[tuple[str, str]]:
    return {(f.student, f.source) for f in integrity.analyze(results, values, assignment).flagged}


def run(n: int, assignment: str, secret: bytes, rng: random.Random) -> dict:
    ids = [f"s{k:03d}" for k in range(n)]
    t0 = time.perf_counter()
    drawn = variants.for_class(secret, assignment, ids)
    t_assign = time.perf_counter() - t0
    specs = variants.varying(assignment)
    vals = {sid: {s.id: s.value(p) for s in specs} for sid, p in drawn.items()}
    vecs = {sid: [vals[sid][s.id] for s in specs] for sid in ids}
    pairs = list(itertools.combinations(ids, 2))
    shared = [variants.shared(assignment, vecs[a], vecs[b]) for a, b in pairs]
    raw = {sid: variants.answer_vector(assignment, variants.for_student(secret, assignment, sid)) for sid in ids}
    raw_max = max(variants.shared(assignment, raw[a], raw[b]) for a, b in pairs)
    params = {sid: {**drawn[sid], "__assignment": assignment} for sid in ids}

    # 2. 每一种有名字的失误
    arrays = {s.id: np.array([vals[o][s.id] for o in ids]) for s in specs}
    slips = {
        sid: {s.id: [w for _, w in judge.slip_values(s, vals[sid][s.id], drawn[sid])] for s in specs} for sid in ids
    }
    rounds = max(len(v) for per in slips.values() for v in per.values())
    n_slips = coincide = 0
    honest_flags: set = set()
    for k in range(rounds):
        results = []
        for sid in ids:
            sub = {}
            for s in specs:
                options = slips[sid][s.id]
                sub[s.id] = options[k] if k < len(options) else vals[sid][s.id]
                if k < len(options):
                    n_slips += 1
                    coincide += _equals_a_classmate(s, options[k], vals[sid][s.id], arrays[s.id])
            results.append(_result(sid, sub, vals[sid], params[sid]))
        honest_flags |= _flags(results, vals, assignment)

    # 3. 没有名字的错误
    results = []
    for sid in ids:
        sub = {}
        for s in specs:
            while True:
                f = rng.uniform(0.3, 3.0)
                w = vals[sid][s.id] * f
                if abs(f - 1) > 0.05 and not any(
                    judge.close(w, x, judge.SLIP_RTOL) for _, x in judge.slip_values(s, vals[sid][s.id], drawn[sid])
                ):
                    break
            sub[s.id] = w
        results.append(_result(sid, sub, vals[sid], params[sid]))
    random_flags = _flags(results, vals, assignment)

    # 4. 抄袭
    pub = {s.id: s.value() for s in specs}
    copy_pairs = [(sid, ids[(k + 1) % n]) for k, sid in enumerate(ids)]
    whole = [_result(me, vals[src], vals[me], params[me]) for me, src in copy_pairs]
    flagged = _flags(whole, vals, assignment)
    caught_whole = sum((me, src) in flagged for me, src in copy_pairs)
    book = [_result(me, pub, vals[me], params[me]) for me in ids]
    flagged = _flags(book, vals, assignment)
    caught_book = sum((me, integrity.PUBLISHED) in flagged for me in ids)
    half = []
    for me, src in copy_pairs:
        chosen = set(rng.sample([s.id for s in specs], len(specs) // 2))
        half.append(
            _result(me, {a: (vals[src][a] if a in chosen else vals[me][a]) for a in vals[me]}, vals[me], params[me])
        )
    flagged = _flags(half, vals, assignment)
    caught_half = sum((me, src) in flagged for me, src in copy_pairs)
    return {
        "n": n,
        "assignment": assignment,
        "t_assign": t_assign,
        "max_shared": max(shared),
        "mean_shared": statistics.mean(shared),
        "bound": variants.MAX_SHARED[assignment],
        "n_varying": len(specs),
        "raw_max": raw_max,
        "slips": n_slips,
        "slips_equal_classmate": coincide,
        "honest_flags": len(honest_flags),
        "random_flags": len(random_flags),
        "caught_whole": caught_whole / n,
        "caught_book": caught_book / n,
        "caught_half": caught_half / n,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[30, 300])
    parser.add_argument("--secrets", type=int, default=2, help="每个班级大小用几个不同的密钥")
    args = parser.parse_args(argv)
    bad = []
    print(
        "| 人数 | 章 | 密钥 | 分配 (s) | 两人共有的答案：最大 / 平均（上限；不检查时的最大） | 有名字的失误 | 其中等于同学答案 | 诚实被标记 | 随机错误被标记 | 抄整本 / 抄书 / 抄一半 认出 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.students:
        for assignment in problems.ASSIGNMENTS:
            for k in range(args.secrets):
                secret = f"integrity-bench-secret-{k:02d}-{n}".encode()
                r = run(n, assignment, secret, random.Random(f"{n}-{assignment}-{k}"))
                print(
                    f"| {n} | {assignment} | {k} | {r['t_assign']:.1f} | {r['max_shared']} / {r['mean_shared']:.2f} of "
                    f"{r['n_varying']}（≤ {r['bound']}；{r['raw_max']}） | {r['slips']} | {r['slips_equal_classmate']} "
                    f"| {r['honest_flags']} | {r['random_flags']} | {r['caught_whole']:.0%} / {r['caught_book']:.0%} "
                    f"/ {r['caught_half']:.0%} |",
                    flush=True,
                )
                if r["honest_flags"] or r["random_flags"]:
                    bad.append(f"{n} 人 {assignment}：诚实的学生被标记")
                if r["max_shared"] > r["bound"]:
                    bad.append(f"{n} 人 {assignment}：撞车超过上限")
    print("检查：" + ("全部满足" if not bad else "；".join(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
