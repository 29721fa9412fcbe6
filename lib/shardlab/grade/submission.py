"""评一份提交：读入、生成评分笔记本、在沙箱里运行、判定

``grade_submission`` 是每份提交的错误边界：除了“评分被中断”（``Interrupted``，这份不记录），它从不抛出异常；
评分器自己的意外错误记为 ``grader-error``，写明原因。返回的结果里每个字符串都已经过 ``text.clean``。
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import shardlab
from shardlab.exercise import answers, problems
from shardlab.grade import inject, judge, personal
from shardlab.grade import status as st
from shardlab.grade.folder import Found, Unreadable, read_submission
from shardlab.grade.junit import ReportError, parse_junit
from shardlab.grade.key import AnswerKey
from shardlab.grade.sandbox import Interrupted, Sandbox
from shardlab.untrusted import clean_tree

RESULT_VERSION = 6
_GRADER_DIR = Path(__file__).resolve().parent


def code_fingerprint() -> str:
    """评分所用代码的指纹：shardlab 的版本、评分器的全部源码与整个练习系统（参考算法、容差、判定、个人版的分配）"""
    h = hashlib.sha256(shardlab.__version__.encode())
    files = sorted(_GRADER_DIR.rglob("*.py")) + sorted(Path(answers.__file__).parent.glob("*.py"))
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class Context:
    """一次评分运行里所有提交共用的东西"""

    key: AnswerKey
    seed: int  # 隐藏输入由它决定（judge.hidden_inputs）
    inputs: dict[str, list[tuple]]
    sandbox: Sandbox
    chapter: int
    orders: dict[int, list[str]] | None = None
    workdir: Path | None = None  # 临时文件放在这里（评分器的输出目录下，下次运行会清理）
    code: str = field(default_factory=lambda: code_fingerprint())
    stop: threading.Event = field(default_factory=threading.Event)
    weights: dict[str, float] = field(default_factory=dict)  # 答案 id → 权重（满分）；没列出的是 1

    @property
    def cache_key(self) -> str:
        """结果何时仍然有效：答案表、评分代码、隐藏输入的种子、权重、资源上限与隔离方式都没变
        （以前改了 --cell-timeout / --wall / --memory-mb 再运行，超时或内存不够的结果照样从缓存里拿）"""
        w = hashlib.sha256(json.dumps(self.weights, sort_keys=True).encode()).hexdigest()[:8]
        limits = {**self.sandbox.limits.as_dict(), "mode": self.sandbox.mode}
        lim = hashlib.sha256(json.dumps(limits, sort_keys=True, default=str).encode()).hexdigest()[:8]
        return f"{self.key.fingerprint}:{self.code}:{self.seed}:{w}:{lim}"


def new_result(found: Found, ctx: Context) -> dict:
    return {
        "version": RESULT_VERSION,
        "student": found.sid,
        "file": found.rel,
        "status": st.GRADED,
        "message": "",
        "chapter": ctx.chapter,
        "problems": [],
        "errors": [],
        "notes": [],
        "wall_s": 0.0,
        "key": ctx.key.fingerprint,
        "code": ctx.code,
        "seed": ctx.seed,
        "cache_key": ctx.cache_key,
        "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **({"roster_id": found.roster_id, "how": found.how} if found.roster_id else {}),
        **({"group": list(found.members)} if found.members else {}),
        "ta_notes": list(found.notes),  # 只给助教看：身份问题（笔记本里写的是另一个学生……）
        "identity_conflict": bool(found.notes),
    }


def finalize(res: dict, start: float | None = None) -> dict:
    res["points"] = sum(p["points"] for p in res["problems"])
    res["max_points"] = sum(p["max_points"] for p in res["problems"])
    if start is not None:
        res["wall_s"] = round(time.monotonic() - start, 3)
    return clean_tree(res)


def failed_result(found: Found, ctx: Context, status: str, detail: str) -> dict:
    """整份提交的一个状态（0 分，满分是本章的满分）"""
    res = new_result(found, ctx)
    judge.whole_submission(res, status, detail, ctx.chapter, ctx.weights)
    return finalize(res)


def grade_submission(found: Found, ctx: Context) -> dict:
    """评一份提交，返回（已清理的）结果字典；评分被中断时抛出 Interrupted"""
    res = new_result(found, ctx)
    start = time.monotonic()
    try:
        data = read_submission(found.path)
        res["sha256"] = hashlib.sha256(data).hexdigest()
        _grade(data, res, ctx)
    except Interrupted:
        raise
    except inject.SubmissionError as exc:
        judge.whole_submission(res, exc.status, exc.detail, ctx.chapter, ctx.weights)
    except Unreadable as exc:
        status = st.TOO_LARGE if exc.too_large else st.UNREADABLE
        judge.whole_submission(res, status, exc.reason, ctx.chapter, ctx.weights)
    except OSError as exc:
        judge.whole_submission(res, st.UNREADABLE, str(exc), ctx.chapter, ctx.weights)
    except Exception as exc:  # noqa: BLE001  评分器自己出错也不能中断整批评分
        judge.whole_submission(res, st.GRADER_ERROR, f"{type(exc).__name__}: {exc}", ctx.chapter, ctx.weights)
    return finalize(res, start)


def _grade(data: bytes, res: dict, ctx: Context) -> None:
    raw = inject.read_notebook(data)
    prep = inject.prepare(raw, ctx.chapter, ctx.inputs, ctx.orders)
    res["chapter"] = prep.chapter
    res["notes"] += prep.notes
    if prep.dropped:
        res["notes"].append(f"删掉了提交里 {prep.dropped} 个冒充评分单元的单元（autograder 标签或导出标记）")
    if ctx.stop.is_set():
        raise Interrupted
    with tempfile.TemporaryDirectory(prefix="graded-", dir=ctx.workdir) as tmp:
        nb_path = Path(tmp) / "graded.ipynb"
        # 评分笔记本是评分器自己按 nbformat 4 拼出来的；直接写 JSON（纯 ASCII），不再对几千个单元做一遍模式校验
        nb_path.write_text(json.dumps(prep.notebook, ensure_ascii=True, indent=1), encoding="ascii")
        nb_path.chmod(0o644)
        run = ctx.sandbox.run(nb_path)
    if ctx.stop.is_set():
        raise Interrupted  # 沙箱是被 Ctrl-C 结束的：结果不算数
    res["wall_s_sandbox"] = round(run.wall_s, 3)
    cells = {}
    if run.junit:
        try:
            cells = parse_junit(run.junit)
        except ReportError as exc:
            res["notes"].append(f"沙箱送回的 JUnit 报告不能用：{exc}")
    if run.output_truncated:
        res["notes"].append("沙箱的输出超过上限，被截断")
    judge.collect(prep, run, cells, res, ctx.key, ctx.inputs, ctx.sandbox.limits.wall_s, ctx.weights)
    _param_note(raw, prep.chapter, res, ctx)


def _param_note(raw: dict, chapter: int, res: dict, ctx: Context) -> None:
    """参数单元里的数与为这个学生生成的不同（改过参数单元，或拿了别人的笔记本）：照样按生成的数评分，告诉学生和助教"""
    params = getattr(ctx.key, "params", {}).get(res.get("roster_id") or "")
    if not params:
        return
    assignment = f"ch{chapter:02d}"
    peek = inject.peek(raw)
    written = problems.written(assignment, peek.param_sources)
    derived = params.get(assignment, {})
    sid = res.get("roster_id") or ""
    # 这份文件是不是从这个学生自己的个人版改出来的（他的签名）：给助教判断整份是不是别人的、或别人以他的名字放进来的
    res["own_version"] = bool(peek.tag) and (
        ctx.key.authentic(sid, assignment, dict(derived), peek.tag)
        or ctx.key.authentic(sid, assignment, written, peek.tag)
    )
    changed = sorted(name for name, value in written.items() if value != derived.get(name))
    res["own_params"] = not changed  # 参数单元是他自己的数（没有签名也算）：选计入的文件时用（cli.select_counted）
    if not changed:
        return
    listed = "、".join(changed)
    if peek.tag and ctx.key.authentic(sid, assignment, dict(derived), peek.tag):
        note = f"参数单元里的 {listed} 被改过（与发给你的数不同）：评分按发给你的数判定，不按改过的数"
        ta = f"参数单元里的 {listed} 被学生改过（签名对得上发给他的数）：按发给他的数评分"
    elif peek.tag and (owner := personal.signed_for(ctx.key, assignment, written, peek.tag, sid)):
        note = f"你交的笔记本是发给另一位同学的个人版（参数 {listed} 不是你的）：按你自己的数判定"  # 待核对与否由计入的那一份定，另有说明
        ta = f"交的是发给 {owner} 的个人版（签名对得上 {owner}）：按 {sid} 自己的数评分；这一份计入成绩时待核对"
        res["signed_for"] = owner  # 整份是别人的个人版：成绩待核对，不导出（cli._held_signed_for_other）
    elif peek.tag:  # 签名对哪一组参数都对不上：也可能是评分器那边配错了密钥或花名册，不能说是学生改的
        note = (
            f"参数单元里的 {listed} 与评分器为你准备的数不同，笔记本的签名也对不上：按评分器的数判定。"
            "如果你没有改过参数单元，多半是评分器的配置有误，请告诉教师"
        )
        ta = (
            f"参数单元里的 {listed} 与花名册推出的不同，签名也对不上：可能是交了别人的笔记本、改过签名，"
            "或者评分用的密钥与花名册不是生成个人版时的那一套"
        )
    else:
        note = f"参数单元里的 {listed} 与为你生成的数不同：评分按为你生成的数（花名册）判定，不按笔记本里的数"
        ta = f"参数单元里的 {listed} 与花名册推出的不同（笔记本没有签名）：按花名册的数评分"
    res["notes"].append(note)
    res["ta_notes"].append(ta)
