"""评一份提交：读入、生成评分笔记本、在沙箱里运行、判定；永不抛出异常（意外错误记为 grader-error）"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from shardlab.grade import inject, judge
from shardlab.grade import status as st
from shardlab.grade.junit import ParseError, parse_junit
from shardlab.grade.key import AnswerKey
from shardlab.grade.sandbox import Sandbox

RESULT_VERSION = 1


@dataclass
class Context:
    """一次评分运行里所有提交共用的东西"""

    key: AnswerKey
    seed: int  # 隐藏输入由它决定（judge.hidden_inputs）
    inputs: dict[str, list[tuple]]
    sandbox: Sandbox
    chapter: int | None
    orders: dict[int, list[str]] | None = None


def new_result(sid: str, file: str, ctx: Context) -> dict:
    return {
        "version": RESULT_VERSION,
        "student": sid,
        "file": file,
        "status": st.GRADED,
        "message": "",
        "chapter": ctx.chapter,
        "problems": [],
        "errors": [],
        "notes": [],
        "wall_s": 0.0,
        "key": ctx.key.fingerprint,
        "seed": ctx.seed,
        "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def grade_submission(path: Path, ctx: Context, sid: str, file: str) -> dict:
    """评一份提交，返回结果字典"""
    res = new_result(sid, file, ctx)
    start = time.monotonic()
    try:
        data = Path(path).read_bytes()
        res["sha256"] = hashlib.sha256(data).hexdigest()
        _grade(data, res, ctx)
    except inject.SubmissionError as exc:
        judge.whole_submission(res, exc.status, exc.detail, ctx.chapter)
    except OSError as exc:
        judge.whole_submission(res, st.UNREADABLE, str(exc), ctx.chapter)
    except Exception as exc:  # noqa: BLE001  评分器自己出错也不能中断整批评分
        judge.whole_submission(res, st.GRADER_ERROR, f"{type(exc).__name__}: {exc}", ctx.chapter)
    res["points"] = sum(p["points"] for p in res["problems"])
    res["max_points"] = sum(p["max_points"] for p in res["problems"])
    res["wall_s"] = round(time.monotonic() - start, 3)
    return res


def _grade(data: bytes, res: dict, ctx: Context) -> None:
    raw = inject.read_notebook(data)
    prep = inject.prepare(raw, ctx.chapter, ctx.inputs, ctx.orders)
    res["chapter"] = prep.chapter
    if prep.dropped:
        res["notes"].append(f"删掉了提交里 {prep.dropped} 个冒充评分单元的单元（autograder 标签或导出标记）")
    with tempfile.TemporaryDirectory(prefix="shardlab-graded-") as tmp:
        nb_path = Path(tmp) / "graded.ipynb"
        nbformat.write(prep.notebook, nb_path)
        nb_path.chmod(0o644)
        run = ctx.sandbox.run(nb_path)
    res["wall_s_sandbox"] = round(run.wall_s, 3)
    cells = {}
    if run.junit:
        try:
            cells = parse_junit(run.junit)
        except ParseError as exc:
            res["notes"].append(f"JUnit 报告解析失败：{exc}")
    if run.output_truncated:
        res["notes"].append("沙箱的输出超过上限，被截断")
    judge.collect(prep, run, cells, res, ctx.key, ctx.inputs, ctx.sandbox.limits.wall_s)
