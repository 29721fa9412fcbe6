"""判定：评分时选的隐藏输入，导出记录与答案表的比较，以及由沙箱的结果得到每道题的状态和分数

判定只在评分器进程里做，用自检的同一个判定（``shardlab.exercise.judge``）：不对的答案先按这个学生自己的参数认常见失误。
每道题的记录里有学生交的数（``submitted``，只进助教看的文件）；参考值从不写进结果或反馈。
分数按权重（``--weights``）：每道题的满分就是它的权重，成绩册、总分、反馈与 Gradescope 用同一个数。
"""

from __future__ import annotations

import math
import random

from shardlab.exercise import answers
from shardlab.exercise.judge import Verdict, judge_value
from shardlab.grade import status as st
from shardlab.grade.inject import Prepared, chapter_answers
from shardlab.grade.junit import CellOutcome, kernel_gone, short_traceback
from shardlab.grade.key import AnswerKey
from shardlab.grade.sandbox import RunResult

N_HIDDEN = 5


# ---- 评分时选的输入 ----
def draw_inputs(spec: answers.Answer, rng: random.Random, n: int = N_HIDDEN) -> list[tuple]:
    """函数答案的隐藏输入：参数的范围仿照公开示例"""
    if spec.id == "ch05-p3-fn":
        return [(rng.randint(2, 64), rng.random() < 0.5) for _ in range(n)]
    cases = []
    for _ in range(n):
        example = rng.choice(spec.examples)
        args = []
        for x in example:
            if isinstance(x, bool):
                args.append(rng.random() < 0.5)
            elif isinstance(x, int) and x > 64:
                e = round(math.log2(x))
                args.append(2 ** rng.randint(max(1, e - 3), e + 3))
            elif isinstance(x, int):
                args.append(rng.randint(2, 64))
            else:
                args.append(float(x) * rng.uniform(0.5, 2.0))
        cases.append(tuple(args))
    return cases


def hidden_inputs(seed: int) -> dict[str, list[tuple]]:
    """全部函数答案的隐藏输入：种子的确定函数（同一个种子总是同样的输入；种子记在每份结果里）

    每个答案：先是公开示例和题目说到的边界情形（``Answer.edge_cases``，如 N = 2、奇数 N），再加 N_HIDDEN 组随机输入；
    每个答案用自己的随机数流（种子与答案 id 一起决定），加一个答案不会改变别的答案的输入。
    """
    out = {}
    for a in answers.ANSWERS.values():
        if a.kind == "function":
            rng = random.Random(f"{seed}/{a.id}")
            fixed = list(dict.fromkeys((*a.examples, *a.edge_cases)))
            out[a.id] = fixed + [x for x in draw_inputs(a, rng) if x not in fixed]
    return out


# ---- 一条导出记录 ----
def _judge_plain(spec: answers.Answer, rec, right: float, params=None) -> Verdict:
    if not isinstance(rec, dict):
        return Verdict(spec.id, st.INVALID, "导出的记录格式不对")
    if rec.get("missing"):
        return judge_value(spec, None, right)
    if "invalid" in rec:
        return Verdict(spec.id, st.INVALID, f"答案应当是一个数（单位 {spec.unit}），收到的是 {rec['invalid']}")
    if "error" in rec:
        return Verdict(spec.id, st.ERROR, str(rec["error"])[:300])
    value = rec.get("value")
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Verdict(spec.id, st.INVALID, "导出的值不是数")
    return judge_value(spec, float(value), right, params)


def judge_record(
    spec: answers.Answer, rec, key: AnswerKey, inputs: list[tuple], submission: str | None = None
) -> Verdict:
    """一道题的导出记录 → 判定；submission 是提交的身份（按它查答案表）"""
    if not isinstance(rec, dict):
        return Verdict(spec.id, st.INVALID, "导出的记录格式不对")
    if spec.kind != "function":
        entry = key.entry(spec.id, submission)
        if entry is None:
            return Verdict(spec.id, st.NO_KEY, "答案表里没有这道题")
        return _judge_plain(spec, rec, float(entry["value"]), entry.get("params"))
    if "error" in rec:
        return Verdict(spec.id, st.ERROR, str(rec["error"])[:300])
    cases = rec.get("cases")
    if not isinstance(cases, list) or len(cases) != len(inputs):
        return Verdict(spec.id, st.INVALID, "导出的函数结果数目不对")
    for args, case in zip(inputs, cases):
        verdict = _judge_plain(spec, case, spec.reference(*args), tuple(args))  # 函数答案的失误按这一组输入来认
        if not verdict.ok:
            return Verdict(spec.id, verdict.status, f"输入 {tuple(args)}：{verdict.message}", verdict.slip)
    return Verdict(spec.id, st.CORRECT, f"正确（检查了 {len(inputs)} 组输入，含评分时另选的）")


def submitted_value(rec) -> float | str | None:
    """导出记录里学生交的数（给助教看；不是数时为 None）"""
    value = rec.get("value") if isinstance(rec, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    return value if not isinstance(value, str) or value.lower() in ("nan", "inf", "-inf") else None


# ---- 一份提交 ----
def problem(
    aid: str,
    status: str,
    message: str,
    weight: float = 1.0,
    ok: bool = False,
    cell: int | None = None,
    verdict: str | None = None,
    submitted=None,
    slip: bool = False,
) -> dict:
    return {
        "id": aid,
        "points": weight if ok else 0.0,
        "max_points": weight,
        "status": status,
        "verdict": verdict or status,
        "message": message,
        "cell": cell,
        "submitted": submitted,
        "slip": slip,
    }


def whole_submission(res: dict, status: str, detail: str, chapter: int | None, weights=None) -> dict:
    """整份提交出问题：每道题都记这个状态，0 分，满分仍是本章的满分（不知道章时记一行 0/0）"""
    weights = weights or {}
    message = st.SUBMISSION_MESSAGES.get(status, status) + (f"（{detail}）" if detail else "")
    res.update(status=status, message=message)
    if chapter is not None:
        res["problems"] = [problem(a.id, status, message, weights.get(a.id, 1.0)) for a in chapter_answers(chapter)]
    else:
        res["problems"] = [problem("*", status, message, 0.0)]
    return res


def _running_when_killed(prep: Prepared, n: int | None) -> str:
    """整份提交被杀时正在跑的单元（沙箱里的插件报的 nbval Cell N，即评分笔记本的第 N 个单元），写成学生看到的单元号"""
    if n is None or not 0 <= n < len(prep.cells):
        return ""
    ref = prep.cells[n]
    if ref.kind == "student" and ref.orig:
        return f"；当时在运行第 {ref.orig} 个代码单元"
    return "；当时在运行评分器读取答案的单元（你的代码已经跑完）"


def collect(
    prep: Prepared,
    run: RunResult,
    cells: dict[int, CellOutcome],
    res: dict,
    key: AnswerKey,
    inputs,
    wall_s,
    weights=None,
):
    """由沙箱的结果（每个单元的 JUnit 结果）填写 res 的 status、problems、errors"""
    if run.timed_out:
        res["status"] = st.TIMEOUT
        res["message"] = f"整份提交超过 {wall_s:g} s 的时间上限，被终止" + _running_when_killed(prep, run.running)
    elif not cells:
        res["status"] = st.CRASHED
        tail = (run.log_tail or run.stderr_tail)[-800:]
        res["message"] = f"评分进程没有给出报告（退出码 {run.rc if run.rc is not None else run.sandbox_rc}）"
        res["notes"].append("pytest 输出的最后几行：\n" + tail)

    export_of: dict[str, tuple[int, CellOutcome | None, str]] = {}
    state = ""  # 到目前为止最先发生的：'' | 'timeout' | 'kernel-died'
    died_at = -1
    for n, ref in enumerate(prep.cells):
        out = cells.get(n)
        if out is not None and (out.died or (out.outcome != "passed" and kernel_gone(out.message))):
            if not state:
                state = st.KERNEL_DIED
                died_at = n
        elif out is not None and out.outcome != "passed" and "Timeout of" in out.message and not state:
            state = st.TIMEOUT
        if ref.kind == "student" and out is not None and out.outcome == "failed" and not kernel_gone(out.message):
            summary, tb = short_traceback(out.message)
            if out.died:
                summary = "内核在这个单元里退出了（sys.exit / os._exit / 杀掉进程）"
            ids = [aid for aid, c in prep.problem_cell.items() if c == ref.orig]
            res["errors"].append({"cell": ref.orig, "answer_ids": ids, "summary": summary, "traceback": tb})
        if ref.kind == "export":
            for aid in ref.answer_ids:
                export_of[aid] = (n, out, state)
    if (
        cells
        and not any(c.outcome == "passed" for c in cells.values())
        and any(kernel_gone(c.message) for c in cells.values())
    ):  # 一个单元也没有跑过（评分器自己的设置单元也没有）：内核根本没有启动，是评分环境的问题
        res["status"] = st.CRASHED
        res["message"] = (
            "笔记本的内核没有启动起来（不是提交的问题）：多半是评分环境的问题，例如 --memory-mb 太小；修好之后再运行会重评"
        )
    if state == st.KERNEL_DIED and not cells[died_at].died:  # 只从下一个单元的 "Kernel dead" 得知
        ref = prep.cells[died_at - 1] if died_at > 0 else None
        res["errors"].append(
            {
                "cell": ref.orig if ref is not None and ref.kind == "student" else None,
                "answer_ids": [],
                "summary": "内核在这个单元里（或之后）退出了：sys.exit / os._exit / 杀掉进程 / 内存耗尽",
                "traceback": "",
            }
        )

    weights = weights or {}
    for spec in sorted(chapter_answers(prep.chapter), key=lambda a: prep.order.get(a.id, 0)):
        aid = spec.id
        w = weights.get(aid, 1.0)
        cell = prep.problem_cell.get(aid)
        structural = prep.problem_status.get(aid)
        if structural == st.MISSING_CELL:
            res["problems"].append(problem(aid, structural, f"找不到带标签 {aid} 的代码单元（变量 {spec.var}）", w))
            continue
        if structural == st.DUPLICATE_TAG:
            res["problems"].append(
                problem(aid, structural, f"有不止一个单元带标签 {aid}，不知道评哪一个；请只保留一个", w, cell=cell)
            )
            continue
        _, out, state = export_of.get(aid, (None, None, ""))
        rec = out.export.get(aid) if out is not None and out.export else None
        if rec is None:
            status, message = _why_no_export(out, state, res)
            res["problems"].append(problem(aid, status, message, w, cell=cell))
            continue
        verdict = judge_record(spec, rec, key, inputs.get(aid, []), res.get("roster_id") or res.get("student"))
        if verdict.status != st.CORRECT and state and verdict.status in (st.ERROR, st.MISSING, st.INVALID):
            status = state
            message = {st.TIMEOUT: "前面的单元超时，答案没有算出来", st.KERNEL_DIED: "内核已经退出"}[state]
            message += f"（{verdict.message}）"
        else:
            status, message = verdict.status, verdict.message
        extra = {"submitted": submitted_value(rec) if spec.kind == "value" else None, "slip": verdict.slip}
        if structural == st.REORDERED:
            message = f"答案单元的位置与练习里的顺序不同（按它所在的位置评分，结果：{message}）"
            res["problems"].append(problem(aid, st.REORDERED, message, w, verdict.ok, cell, verdict.status, **extra))
        else:
            res["problems"].append(problem(aid, status, message, w, verdict.ok, cell, verdict.status, **extra))


def _why_no_export(out: CellOutcome | None, state: str, res: dict) -> tuple[str, str]:
    if res["status"] == st.TIMEOUT:
        return st.TIMEOUT, res["message"]
    if res["status"] == st.CRASHED:
        return st.CRASHED, res["message"]
    if state == st.KERNEL_DIED or (out is not None and kernel_gone(out.message)):
        return st.KERNEL_DIED, "内核在算出这个答案之前已经退出（sys.exit / os._exit / 杀掉进程 / 内存耗尽）"
    if state == st.TIMEOUT or (out is not None and "Timeout of" in out.message):
        return st.TIMEOUT, "单元超时，答案没有导出"
    if out is None:
        return st.CRASHED, "没有这个评分单元的报告"
    if out.export_error:
        return st.NO_EXPORT, f"导出单元的输出损坏：{out.export_error}"
    if out.export is not None:
        return st.NO_EXPORT, "导出单元的记录里没有这道题"
    return st.NO_EXPORT, "评分单元没有导出答案（是不是改掉了 print 或 json？）"
