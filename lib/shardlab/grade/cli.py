"""``shardlab-grade``（``make grade``）：评一个目录里的全部提交，写出成绩册与反馈

每份提交在它自己的线程里评（``-j``），结果一份一份地原子写出，进度显示在终端上；
已经评过、内容与答案表都没变的提交直接用缓存的结果。
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import shutil
import sys
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shardlab import answers
from shardlab.grade import inject, report
from shardlab.grade.course import Course, CourseError
from shardlab.grade.folder import collect_submissions, display_name, student_id
from shardlab.grade.judge import hidden_inputs
from shardlab.grade.key import AnswerKeyError, load_key
from shardlab.grade.sandbox import Limits, Sandbox, bwrap_problem, stage_library
from shardlab.grade.submission import RESULT_VERSION, Context, grade_submission


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardlab-grade", description="在沙箱里评分学生提交的练习笔记本")
    p.add_argument("submissions", nargs="+", help="提交所在目录、通配符或文件")
    p.add_argument("-o", "--out", type=Path, required=True, help="输出目录")
    p.add_argument("-j", "--jobs", type=int, default=1, help="同时评几份（默认 1）")
    p.add_argument("--force", action="store_true", help="重评已经评过的提交")
    p.add_argument("--chapter", type=int, help="练习的章（默认按答案标签推断）")
    p.add_argument("--course", type=Path, help="课程目录（默认：从当前目录向上找含 solutions/ 与 exercises/ 的目录）")
    p.add_argument("--key", type=Path, help="答案表（默认 <课程目录>/build/answer_key.json，过期时由解答重建）")
    p.add_argument("--seed", type=int, help="选隐藏输入的随机种子（默认每次随机）")
    p.add_argument("--wall", type=float, default=Limits.wall_s, help="每份提交的墙钟时间上限（秒）")
    p.add_argument("--cell-timeout", type=float, default=Limits.cell_s, help="每个单元的时间上限（秒）")
    p.add_argument("--memory-mb", type=int, default=Limits.memory_bytes >> 20, help="每个进程的地址空间上限（MiB）")
    p.add_argument("--nproc", type=int, default=Limits.nproc, help="沙箱里进程 + 线程数上限")
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "rlimit"],
        default="auto",
        help="auto：用 bubblewrap，用不了就拒绝运行；rlimit：只有资源限制（只用于可信的提交）",
    )
    p.add_argument("--no-progress", action="store_true", help="不显示进度条")
    return p


def _fail(message: str) -> int:
    print(f"评分器：{message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        course = Course.at(args.course) if args.course else Course.find()
        key = load_key(args.key, course)
        orders = {
            ch: inject.exercise_order(course.exercise(ch), ch)
            for ch in sorted({a.chapter for a in answers.ANSWERS.values()})
        }
    except (CourseError, AnswerKeyError, inject.CourseOrderError) as exc:
        return _fail(str(exc))
    mode = args.sandbox
    if mode in ("auto", "bwrap"):
        problem = bwrap_problem()
        if problem is not None:
            return _fail(
                f"用不了 bubblewrap 沙箱：{problem}。没有 pid 命名空间和非特权 uid，学生的代码能读到机器上的文件、"
                "杀掉或拖垮整台机器。请以 root 运行并安装 bubblewrap（apt-get install bubblewrap），"
                "或者只对可信的提交明确地加 --sandbox rlimit。"
            )
        mode = "bwrap"
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    inputs = hidden_inputs(seed)
    limits = Limits(wall_s=args.wall, cell_s=args.cell_timeout, memory_bytes=args.memory_mb << 20, nproc=args.nproc)
    out: Path = args.out
    (out / "results").mkdir(parents=True, exist_ok=True)
    subs = collect_submissions(args.submissions)
    stage = Path(tempfile.mkdtemp(prefix="shardlab-stage-"))
    try:
        staged = stage_library(stage / "lib")
        stage.chmod(0o755)
        sandbox = Sandbox(staged, limits, mode=mode)
        ctx = Context(key, seed, inputs, sandbox, args.chapter, orders)
        meta = {
            "isolation": sandbox.mode,
            "limits": limits.as_dict(),
            "seed": seed,
            "hidden_inputs": {k: [list(a) for a in v] for k, v in inputs.items()},
            "key": key.fingerprint,
            "course": str(course.root),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        return _run(subs, ctx, out, args, meta)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _cached(path: Path, sha: str | None, key_fp: str) -> dict | None:
    try:
        res = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # 读不了的缓存照样重评；_previous 已经报告过它
    if res.get("version") != RESULT_VERSION or res.get("key") != key_fp or res.get("sha256") != sha:
        return None
    return res


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _previous(out: Path, meta: dict) -> dict[str, dict]:
    """以前评过的（也许这次没列出的）提交都留在成绩册里；读不了的结果文件报告出来，不悄悄跳过"""
    results: dict[str, dict] = {}
    for path in sorted((out / "results").glob("*.json")):
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            meta.setdefault("unreadable_results", []).append(f"{path.name}: {exc}")
            print(f"评分器：读不了以前的结果 {path}（{exc}），这份提交会重评", file=sys.stderr)
            continue
        if isinstance(old, dict) and old.get("version") == RESULT_VERSION and old.get("student") == path.stem:
            results[path.stem] = old
    return results


def _run(subs: list[Path], ctx: Context, out: Path, args, meta: dict) -> int:
    results = _previous(out, meta)
    todo: list[tuple[str, Path]] = []
    ids: dict[str, int] = {}
    for path in subs:
        sid = student_id(path)
        if sid in ids:  # 两个文件得到同一个 id：加序号
            ids[sid] += 1
            sid = f"{sid}-{ids[sid]}"
        ids.setdefault(sid, 1)
        cached = None if args.force else _cached(out / "results" / f"{sid}.json", _sha(path), ctx.key.fingerprint)
        if cached is not None:
            cached["student"] = sid
            results[sid] = cached
        else:
            todo.append((sid, path))
    lock = threading.Lock()
    newly: list[str] = []

    def finish(sid: str, res: dict) -> None:
        with lock:
            results[sid] = res
            newly.append(sid)
            report.atomic_write(out / "results" / f"{sid}.json", json.dumps(res, ensure_ascii=False, indent=1))
            report.write_feedback(out, res)
            report.write_gradebook(out, list(results.values()), meta)

    report.write_gradebook(out, list(results.values()), meta)
    skipped = len(subs) - len(todo)
    progress = _progress(args.no_progress, sys.stderr.isatty())
    interrupted = False
    with progress, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        task = progress.add_task("评分", total=len(todo))
        futures = {pool.submit(grade_submission, path, ctx, sid, display_name(path)): sid for sid, path in todo}
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
    total = sum(r["points"] for r in results.values())
    print(
        f"评分完成：新评 {len(newly)} 份，跳过已评 {skipped} 份；隔离方式 {ctx.sandbox.mode}；"
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
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
