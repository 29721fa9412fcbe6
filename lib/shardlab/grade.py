"""教师用评分器：``make grade SUBMISSIONS=<目录或通配符> OUT=<目录>``，或 ``shardlab-grade``

每份提交：
1. 读入并检查结构（``grade_inject``），在每个答案单元后注入只导出这个答案的单元（纯数据；函数答案导出它在
   评分时随机选的输入上的结果），不含任何参考值；
2. 在沙箱里用 ``pytest --nbval-lax`` 运行（``grade_sandbox``），得到 JUnit 报告，导出的答案是报告里的属性；
3. 在本进程里用答案表（``build/answer_key.json``，由解答笔记本算出）和 ``shardlab.answers`` 的参考函数判定，
   复用自检的判定与提示（``shardlab.check.judge_value``）；
4. 写出 ``OUT/gradebook.csv``、``OUT/gradebook.json``、``OUT/feedback/<学生>.md``，每份提交的结果缓存在
   ``OUT/results/<学生>.json``：再运行时跳过已评的提交（提交或答案表变了才重评），``--force`` 全部重评。
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import math
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from shardlab import answers
from shardlab import grade_inject as inj
from shardlab import grade_report as report
from shardlab.check import CORRECT, INVALID, MISSING, Verdict, judge_value
from shardlab.export import MARKER
from shardlab.grade_sandbox import Limits, RunResult, Sandbox, detect_mode, stage_library

ROOT = Path(__file__).resolve().parents[2]
LIB_DIR = Path(__file__).resolve().parents[1]
DEFAULT_KEY = ROOT / "build" / "answer_key.json"
N_HIDDEN = 5
RESULT_VERSION = 1


# ---- 答案表 ----
class KeyError_(RuntimeError):
    """答案表缺失、过期且无法重建，或与参考函数不一致"""


def _key_is_fresh(path: Path, root: Path) -> bool:
    if not path.exists():
        return False
    sources = list((root / "solutions").glob("ch*_solutions.md")) + [LIB_DIR / "shardlab" / "answers.py"]
    newest = max((p.stat().st_mtime for p in sources if p.exists()), default=0)
    return path.stat().st_mtime >= newest


def load_key(path: Path | None = None, root: Path = ROOT, rebuild_to: Path | None = None) -> dict:
    """读答案表。没有给路径时用 build/answer_key.json（或 rebuild_to）；它不存在或比解答旧时先运行
    tools/answer_key.py（即 make answer-key）由解答笔记本重建"""
    if path is None:
        path = rebuild_to or root / "build" / "answer_key.json"
        if not _key_is_fresh(path, root):
            if not list((root / "solutions").glob("ch*_solutions.md")):
                raise KeyError_(f"没有答案表 {path}，也没有解答笔记本可以用来生成它（make answer-key）")
            proc = subprocess.run(
                [sys.executable, str(root / "tools" / "answer_key.py"), "--out", str(path)],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise KeyError_(f"生成答案表失败：{proc.stderr.strip()[-2000:]}")
    try:
        key = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise KeyError_(f"读不了答案表 {path}：{exc}") from None
    _check_key(key)
    return key


def _check_key(key: dict) -> None:
    """函数答案在评分时用参考函数算；先确认参考函数在公开示例上与解答笔记本一致"""
    for aid, entry in key.items():
        spec = answers.ANSWERS.get(aid)
        if spec is None or spec.kind != "function":
            continue
        for case in entry.get("cases", []):
            right = spec.reference(*case["args"])
            if not math.isclose(float(case["value"]), right, rel_tol=spec.rtol, abs_tol=1e-12):
                raise KeyError_(f"{aid}：解答笔记本在 {case['args']} 上得 {case['value']}，参考函数得 {right}")


def key_fingerprint(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


# ---- 评分时选的输入 ----
def draw_inputs(spec: answers.Answer, rng: random.Random, n: int = N_HIDDEN) -> list[tuple]:
    """函数答案的隐藏输入：由每次运行的随机种子在评分器进程里选出，参数的范围仿照公开示例"""
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


# ---- 学生 id ----
def student_id(path: Path) -> str:
    """由文件名得到学生 id：保留字母（含中文）、数字、. _ -；改动过或不是 UTF-8 时加上短哈希防止重名"""
    raw = os.fsencode(path.name)
    stem = raw[:-6] if raw.lower().endswith(b".ipynb") else raw
    try:
        text, changed = stem.decode("utf-8"), False
    except UnicodeDecodeError:
        text, changed = stem.decode("utf-8", "backslashreplace"), True
    safe = re.sub(r"[^\w.-]", "_", text).lstrip(".")[:80] or "_"
    if changed or safe != text:
        safe += "-" + hashlib.sha1(raw).hexdigest()[:6]
    return safe


def display_name(path: Path) -> str:
    return os.fsencode(path.name).decode("utf-8", "backslashreplace")


def collect_submissions(specs: list[str]) -> list[Path]:
    found: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            entries = sorted(os.listdir(os.fsencode(path)))
            found += [path / os.fsdecode(e) for e in entries if e.lower().endswith(b".ipynb")]
        elif any(ch in spec for ch in "*?["):
            found += [Path(p) for p in sorted(glob.glob(spec)) if Path(p).is_file()]
        else:
            found.append(path)
    seen, unique = set(), []
    for p in found:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


# ---- JUnit ----
_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*m")


@dataclass
class CellOutcome:
    outcome: str  # 'passed' | 'failed' | 'skipped'
    message: str = ""
    export: dict | None = None
    died: bool = False  # 插件发现内核在这个单元里退出了


def parse_junit(xml: str) -> dict[int, CellOutcome]:
    root = ET.fromstring(xml)
    cells: dict[int, CellOutcome] = {}
    for case in root.iter("testcase"):
        m = re.fullmatch(r"Cell (\d+)", case.get("name", ""))
        if not m:
            continue
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = _ANSI.sub("", (node.text or "") or node.get("message", ""))
                break
        export, died = None, False
        for prop in case.iter("property"):
            value = prop.get("value", "")
            died = died or (prop.get("name") == "shardlab-kernel" and value == "died")
            if prop.get("name") == "shardlab-export" and value.startswith(MARKER):
                try:
                    export = json.loads(value[len(MARKER) :])
                except json.JSONDecodeError:
                    export = None
        cells[int(m.group(1))] = CellOutcome(outcome, message, export if isinstance(export, dict) else None, died)
    return cells


def short_traceback(message: str, lines: int = 12) -> tuple[str, str]:
    """(一行摘要, 最后几行 traceback)"""
    text = message.split("Traceback:", 1)[-1].strip("\n")
    rows = [r.rstrip() for r in text.splitlines() if r.strip() and not set(r.strip()) <= {"-"}]
    summary = rows[-1].strip() if rows else "出错"
    if "Timeout of" in message:
        summary = "超时：" + re.search(r"Timeout of [^\n]*", message).group(0)
    elif "Kernel dead" in message:
        summary = "内核已经退出（Kernel dead）：前面的单元结束了 Python 进程"
    return summary[:300], "\n".join(rows[-lines:])[-3000:]


# ---- 判定 ----
def _judge_plain(spec: answers.Answer, rec, right: float) -> Verdict:
    if not isinstance(rec, dict):
        return Verdict(spec.id, INVALID, "导出的记录格式不对")
    if rec.get("missing"):
        return judge_value(spec, None, right)
    if "error" in rec:
        status = INVALID if "不是一个数" in str(rec["error"]) else "error"
        return Verdict(spec.id, status, str(rec["error"])[:300])
    value = rec.get("value")
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Verdict(spec.id, INVALID, "导出的值不是数")
    return judge_value(spec, float(value), right)


def judge_record(spec: answers.Answer, rec: dict, key: dict, inputs: list[tuple]) -> Verdict:
    if spec.kind != "function":
        entry = key.get(spec.id)
        if entry is None:
            return Verdict(spec.id, "no-key", "答案表里没有这道题")
        return _judge_plain(spec, rec, float(entry["value"]))
    if "error" in rec:
        return Verdict(spec.id, "error", str(rec["error"])[:300])
    cases = rec.get("cases")
    if not isinstance(cases, list) or len(cases) != len(inputs):
        return Verdict(spec.id, INVALID, "导出的函数结果数目不对")
    for args, case in zip(inputs, cases):
        verdict = _judge_plain(spec, case, spec.reference(*args))
        if not verdict.ok:
            return Verdict(spec.id, verdict.status, f"输入 {tuple(args)}：{verdict.message}")
    return Verdict(spec.id, CORRECT, f"正确（检查了评分时另选的 {len(inputs)} 组输入）")


@dataclass
class Context:
    key: dict
    key_fp: str
    inputs: dict[str, list[tuple]]
    sandbox: Sandbox
    chapter: int | None
    orders: dict[int, list[str]] | None = None


def _problem(aid: str, status: str, message: str, points: float = 0.0, cell: int | None = None, verdict=None):
    return {
        "id": aid,
        "points": points,
        "max_points": 1.0,
        "status": status,
        "verdict": verdict or status,
        "message": message,
        "cell": cell,
    }


def _whole_submission(res: dict, status: str, detail: str, chapter: int | None) -> dict:
    message = inj.SUBMISSION_MESSAGES.get(status, status) + (f"（{detail}）" if detail else "")
    res.update(status=status, message=message)
    if chapter is not None:
        res["problems"] = [_problem(a.id, status, message) for a in inj.chapter_answers(chapter)]
    else:
        res["problems"] = [dict(_problem("*", status, message), max_points=0.0)]
    return res


def grade_submission(path: Path, ctx: Context) -> dict:
    """评一份提交，返回结果字典（永不抛出异常：意外错误记为 grader-error）"""
    res = {
        "version": RESULT_VERSION,
        "student": student_id(path),
        "file": display_name(path),
        "status": "graded",
        "message": "",
        "chapter": ctx.chapter,
        "problems": [],
        "errors": [],
        "notes": [],
        "wall_s": 0.0,
        "key": ctx.key_fp,
        "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    start = time.monotonic()
    try:
        data = Path(path).read_bytes()
        res["sha256"] = hashlib.sha256(data).hexdigest()
        _grade(data, res, ctx)
    except inj.SubmissionError as exc:
        _whole_submission(res, exc.status, exc.detail, ctx.chapter)
    except OSError as exc:
        _whole_submission(res, "unreadable", str(exc), ctx.chapter)
    except Exception as exc:  # noqa: BLE001  评分器自己出错也不能中断整批评分
        _whole_submission(res, "grader-error", f"{type(exc).__name__}: {exc}", ctx.chapter)
    res["points"] = sum(p["points"] for p in res["problems"])
    res["max_points"] = sum(p["max_points"] for p in res["problems"])
    res["wall_s"] = round(time.monotonic() - start, 3)
    return res


def _grade(data: bytes, res: dict, ctx: Context) -> None:
    raw = inj.read_notebook(data)
    prep = inj.prepare(raw, ctx.chapter, ctx.inputs, ctx.orders)
    res["chapter"] = prep.chapter
    if prep.dropped:
        res["notes"].append(f"删掉了提交里 {prep.dropped} 个冒充评分单元的单元（autograder 标签或导出标记）")
    with tempfile.TemporaryDirectory(prefix="shardlab-graded-") as tmp:
        nb_path = Path(tmp) / "graded.ipynb"
        nbformat.write(prep.notebook, nb_path)
        nb_path.chmod(0o644)
        run = ctx.sandbox.run(nb_path)
    res["wall_s_sandbox"] = round(run.wall_s, 3)
    _collect(prep, run, res, ctx)


def _collect(prep: inj.Prepared, run: RunResult, res: dict, ctx: Context) -> None:
    cells: dict[int, CellOutcome] = {}
    if run.junit:
        try:
            cells = parse_junit(run.junit)
        except ET.ParseError as exc:
            res["notes"].append(f"JUnit 报告解析失败：{exc}")
    if run.output_truncated:
        res["notes"].append("沙箱的输出超过上限，被截断")
    if run.timed_out:
        res["status"] = "timeout"
        res["message"] = f"整份提交超过 {ctx.sandbox.limits.wall_s:g} s 的时间上限，被终止"
    elif not cells:
        res["status"] = "crashed"
        tail = (run.log_tail or run.stderr_tail)[-800:]
        res["message"] = f"评分进程没有给出报告（退出码 {run.rc if run.rc is not None else run.sandbox_rc}）"
        res["notes"].append("pytest 输出的最后几行：\n" + tail)

    export_of: dict[str, tuple[int, CellOutcome | None, str]] = {}
    state = ""  # 到目前为止最先发生的：'' | 'timeout' | 'kernel-died'
    died_at = -1
    for n, ref in enumerate(prep.cells):
        out = cells.get(n)
        if out is not None and (out.died or (out.outcome != "passed" and "Kernel dead" in out.message)):
            if not state:
                state = "kernel-died"
                died_at = n
        elif out is not None and out.outcome != "passed" and "Timeout of" in out.message and not state:
            state = "timeout"
        if ref.kind == "student" and out is not None and out.outcome == "failed" and "Kernel dead" not in out.message:
            summary, tb = short_traceback(out.message)
            if out.died:
                summary = "内核在这个单元里退出了（sys.exit / os._exit / 杀掉进程）"
            ids = [aid for aid, c in prep.problem_cell.items() if c == ref.orig]
            res["errors"].append({"cell": ref.orig, "answer_ids": ids, "summary": summary, "traceback": tb})
        if ref.kind == "export":
            for aid in ref.answer_ids:
                export_of[aid] = (n, out, state)
    if state == "kernel-died" and not cells[died_at].died:  # 只从下一个单元的 "Kernel dead" 得知
        ref = prep.cells[died_at - 1] if died_at > 0 else None
        res["errors"].append(
            {
                "cell": ref.orig if ref is not None and ref.kind == "student" else None,
                "answer_ids": [],
                "summary": "内核在这个单元里（或之后）退出了：sys.exit / os._exit / 杀掉进程 / 内存耗尽",
                "traceback": "",
            }
        )

    for spec in sorted(inj.chapter_answers(prep.chapter), key=lambda a: prep.order.get(a.id, 0)):
        aid = spec.id
        cell = prep.problem_cell.get(aid)
        structural = prep.problem_status.get(aid)
        if structural == inj.MISSING_CELL:
            res["problems"].append(_problem(aid, structural, f"找不到带标签 {aid} 的代码单元（变量 {spec.var}）"))
            continue
        if structural == inj.DUPLICATE_TAG:
            res["problems"].append(
                _problem(aid, structural, f"有不止一个单元带标签 {aid}，不知道评哪一个；请只保留一个", cell=cell)
            )
            continue
        _, out, state = export_of.get(aid, (None, None, ""))
        rec = out.export.get(aid) if out is not None and out.export else None
        if rec is None:
            status, message = _why_no_export(out, state, res)
            res["problems"].append(_problem(aid, status, message, cell=cell))
            continue
        verdict = judge_record(spec, rec, ctx.key, ctx.inputs.get(aid, []))
        if verdict.status != CORRECT and state and verdict.status in ("error", MISSING, INVALID):
            status = state
            message = {"timeout": "前面的单元超时，答案没有算出来", "kernel-died": "内核已经退出"}[state]
            message += f"（{verdict.message}）"
        else:
            status, message = verdict.status, verdict.message
        points = 1.0 if verdict.ok else 0.0
        if structural == inj.REORDERED:
            message = f"答案单元的位置与练习里的顺序不同（按它所在的位置评分，结果：{message}）"
            res["problems"].append(_problem(aid, inj.REORDERED, message, points, cell, verdict.status))
        else:
            res["problems"].append(_problem(aid, status, message, points, cell, verdict.status))


def _why_no_export(out: CellOutcome | None, state: str, res: dict) -> tuple[str, str]:
    if res["status"] == "timeout":
        return "timeout", res["message"]
    if res["status"] == "crashed":
        return "crashed", res["message"]
    if state == "kernel-died" or (out is not None and "Kernel dead" in out.message):
        return "kernel-died", "内核在算出这个答案之前已经退出（sys.exit / os._exit / 杀掉进程 / 内存耗尽）"
    if state == "timeout" or (out is not None and "Timeout of" in out.message):
        return "timeout", "单元超时，答案没有导出"
    if out is None:
        return "crashed", "没有这个评分单元的报告"
    return "no-export", "评分单元没有导出答案（是不是改掉了 print 或 json？）"


# ---- 命令行 ----
def _cached(path: Path, sha: str | None, key_fp: str) -> dict | None:
    try:
        res = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if res.get("version") != RESULT_VERSION or res.get("key") != key_fp or res.get("sha256") != sha:
        return None
    return res


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardlab-grade", description="在沙箱里评分学生提交的练习笔记本")
    p.add_argument("submissions", nargs="+", help="提交所在目录、通配符或文件")
    p.add_argument("-o", "--out", type=Path, required=True, help="输出目录")
    p.add_argument("-j", "--jobs", type=int, default=1, help="同时评几份（默认 1）")
    p.add_argument("--force", action="store_true", help="重评已经评过的提交")
    p.add_argument("--chapter", type=int, help="练习的章（默认按答案标签推断）")
    p.add_argument("--key", type=Path, help="答案表（默认 build/answer_key.json，过期时由解答重建）")
    p.add_argument("--seed", type=int, help="选隐藏输入的随机种子（默认每次随机）")
    p.add_argument("--wall", type=float, default=Limits.wall_s, help="每份提交的墙钟时间上限（秒）")
    p.add_argument("--cell-timeout", type=float, default=Limits.cell_s, help="每个单元的时间上限（秒）")
    p.add_argument("--memory-mb", type=int, default=Limits.memory_bytes >> 20, help="每个进程的地址空间上限（MiB）")
    p.add_argument("--nproc", type=int, default=Limits.nproc, help="沙箱里进程 + 线程数上限")
    p.add_argument("--sandbox", choices=["auto", "bwrap", "rlimit"], default="auto")
    p.add_argument("--no-progress", action="store_true", help="不显示进度条")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        key = load_key(args.key)
    except KeyError_ as exc:
        print(f"评分器：{exc}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    rng = random.Random(seed)
    inputs = {a.id: draw_inputs(a, rng) for a in answers.ANSWERS.values() if a.kind == "function"}
    limits = Limits(wall_s=args.wall, cell_s=args.cell_timeout, memory_bytes=args.memory_mb << 20, nproc=args.nproc)
    out: Path = args.out
    (out / "results").mkdir(parents=True, exist_ok=True)
    subs = collect_submissions(args.submissions)
    stage = Path(tempfile.mkdtemp(prefix="shardlab-stage-"))
    try:
        stage_library(LIB_DIR, stage / "lib")
        stage.chmod(0o755)
        mode = detect_mode() if args.sandbox == "auto" else args.sandbox
        if mode == "rlimit" and os.geteuid() == 0 and args.sandbox == "auto":
            print(
                "评分器：以 root 运行却用不了 bubblewrap 沙箱；没有 pid 命名空间和非特权 uid，学生的代码能杀掉或"
                "拖垮整台机器。请安装 bubblewrap（apt-get install bubblewrap），或明确地加 --sandbox rlimit。",
                file=sys.stderr,
            )
            return 2
        sandbox = Sandbox(LIB_DIR, stage / "lib", limits, mode=mode)
        orders = {
            ch: inj.exercise_order(ROOT / "exercises" / f"ch{ch:02d}_exercises.ipynb", ch)
            for ch in sorted({a.chapter for a in answers.ANSWERS.values()})
        }
        ctx = Context(key, key_fingerprint(key), inputs, sandbox, args.chapter, orders)
        meta = {
            "isolation": sandbox.mode,
            "limits": limits.as_dict(),
            "seed": seed,
            "hidden_inputs": {k: [list(a) for a in v] for k, v in inputs.items()},
            "key": ctx.key_fp,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        return _run(subs, ctx, out, args, meta)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _run(subs: list[Path], ctx: Context, out: Path, args, meta: dict) -> int:
    results: dict[str, dict] = {}
    for path in sorted((out / "results").glob("*.json")):  # 以前评过的（也许这次没列出的）提交都留在成绩册里
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(old, dict) and old.get("version") == RESULT_VERSION and old.get("student") == path.stem:
            results[path.stem] = old
    todo: list[tuple[str, Path]] = []
    ids: dict[str, int] = {}
    for path in subs:
        sid = student_id(path)
        if sid in ids:  # 两个文件得到同一个 id：加序号
            ids[sid] += 1
            sid = f"{sid}-{ids[sid]}"
        ids.setdefault(sid, 1)
        cached = None if args.force else _cached(out / "results" / f"{sid}.json", _sha(path), ctx.key_fp)
        if cached is not None:
            cached["student"] = sid
            results[sid] = cached
        else:
            todo.append((sid, path))
    lock = threading.Lock()

    def finish(sid: str, res: dict) -> None:
        res["student"] = sid
        with lock:
            results[sid] = res
            newly.append(sid)
            report.atomic_write(out / "results" / f"{sid}.json", json.dumps(res, ensure_ascii=False, indent=1))
            report.write_feedback(out, res)
            report.write_gradebook(out, list(results.values()), meta)

    report.write_gradebook(out, list(results.values()), meta)
    skipped = len(subs) - len(todo)
    newly = []
    progress = _progress(args.no_progress, sys.stderr.isatty())
    interrupted = False
    with progress, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        task = progress.add_task("评分", total=len(todo))
        futures = {pool.submit(grade_submission, path, ctx): sid for sid, path in todo}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    finish(futures[fut], fut.result())
                    progress.advance(task)
        except KeyboardInterrupt:
            interrupted = True
            for fut in pending:
                fut.cancel()
            ctx.sandbox.kill_all()
    meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report.write_gradebook(out, list(results.values()), meta)
    graded = len(newly)
    total = sum(r["points"] for r in results.values())
    print(
        f"评分完成：新评 {graded} 份，跳过已评 {skipped} 份；隔离方式 {ctx.sandbox.mode}；"
        f"共 {len(results)} 份，总分 {total:g}。结果在 {out}/gradebook.csv",
        file=sys.stderr,
    )
    if interrupted:
        print("评分被中断：已评的结果都已保存，再运行一次会接着评剩下的", file=sys.stderr)
        return 130
    return 0


class _LineProgress:
    """不是终端时的进度：每评完一份打印一行（quiet 时什么也不打印）"""

    def __init__(self, quiet: bool):
        self.quiet, self.total, self.done = quiet, 0, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, description, total=0, **k):
        self.total = total
        return 0

    def advance(self, *a, **k):
        self.done += 1
        if not self.quiet:
            print(f"评分 {self.done}/{self.total}", file=sys.stderr, flush=True)


def _progress(quiet: bool, tty: bool):
    if quiet or not tty:
        return _LineProgress(quiet)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )


if __name__ == "__main__":
    sys.exit(main())
