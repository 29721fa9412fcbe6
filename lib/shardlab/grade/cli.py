"""``shardlab-grade``（``make grade``）：评一个目录里的全部提交，写出成绩册与反馈

    shardlab-grade 提交目录 --out 输出目录 [--roster 花名册 --secret-file 密钥] [--chapter 5] [-j 2] …
    shardlab-grade gradescope --secret-file 密钥 --roster 花名册 --chapter 5 --out autograder.zip
    shardlab-grade gradescope-dry-run autograder.zip 笔记本.ipynb --sid 学号

- 每份提交在它自己的线程里评（``-j``），在自己的错误边界里评分、记录和写出：一份出了什么事，其余照评；
- 结果一份一份地原子写出；内容、答案表、评分代码、隐藏输入的种子和权重都没变的提交直接用缓存的结果；
  种子没给时沿用这个输出目录上次的种子（第一次随机选），所以重跑能用缓存，而隐藏输入仍是种子的确定函数；
- 章由 ``--chapter`` 指定；没给时只在所有提交都属于同一章时自动推断；别的章的提交记为 ``other-chapter``，不评；
- 按个人版评分时（``--roster`` + ``--secret-file``）：先把每个文件对上学生（``identify``），再核对笔记本里的参数与密钥推出的
  是否一致（大多数对不上时什么也不写就停下：“密钥不对？”）；同一个学生有几份时都评，取分数最高的一份计入成绩；
  评完之后统计抄袭的证据（``integrity``），只写进 ``ta/``；
- 输出目录上有一把锁（``OUT/.lock``）：同一个输出目录同时只能有一个评分器；临时文件都在 ``OUT/.work/`` 下，
  每次运行开始时清掉上次（哪怕是被杀掉的那次）留下的；
- 第一次 Ctrl-C：不再启动新的沙箱，结束正在运行的，保存已评的结果，退出码 130；第二次：立即退出（130），
  已经写出的文件都是完整的（原子写）。
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, CancelledError, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shardlab import atomic
from shardlab.exercise import answers, problems, roster, variants
from shardlab.grade import gradescope, identify, inject, integrity, outputs, per_student, personal, report
from shardlab.grade import status as st
from shardlab.grade.course import Course, CourseError
from shardlab.grade.folder import Found, Scan, Unreadable, read_submission, scan
from shardlab.grade.folder import show as folder_show
from shardlab.grade.judge import hidden_inputs
from shardlab.grade.key import AnswerKeyError, load_key
from shardlab.grade.sandbox import Interrupted, Limits, Sandbox, bwrap_problem, stage_library
from shardlab.grade.submission import RESULT_VERSION, Context, failed_result, grade_submission
from shardlab.untrusted import terminal

LOCK = ".lock"
WORK = ".work"
SUBCOMMANDS = {
    "gradescope": "写出 Gradescope 的自动评分器 zip（见 shardlab-grade gradescope --help）",
    "gradescope-dry-run": "在本机用与 Gradescope 容器里相同的隔离试运行这个 zip（见 shardlab-grade gradescope-dry-run --help）",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shardlab-grade",
        description="在沙箱里评分学生提交的练习笔记本",
        epilog="另外两个子命令：\n" + "\n".join(f"  shardlab-grade {k:<19} {v}" for k, v in SUBCOMMANDS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("submissions", nargs="+", help="提交所在目录（可以每个学生一个子目录）、通配符或文件")
    p.add_argument("-o", "--out", type=Path, required=True, help="输出目录")
    p.add_argument("-j", "--jobs", type=_positive(int), default=1, help="同时评几份（默认 1）")
    p.add_argument("--force", action="store_true", help="重评已经评过的提交")
    p.add_argument("--chapter", type=int, help="练习的章（没给时：所有提交都属于同一章才自动推断）")
    p.add_argument("--course", type=Path, help="课程目录（默认：从当前目录向上找含 solutions/ 与 exercises/ 的目录）")
    p.add_argument("--key", type=Path, help="答案表（默认 <课程目录>/build/answer_key.json，过期时由解答重建）")
    p.add_argument(
        "--seed", type=int, help="选隐藏输入的种子（默认：有密钥时由密钥决定，否则沿用这个输出目录上次的，第一次随机）"
    )
    p.add_argument(
        "--roster", type=Path, help="花名册 CSV（id,name[,lms_id,email]）：按每个学生的个人版评分，需要 --secret-file"
    )
    p.add_argument("--secret-file", type=Path, help="生成个人版时用的教师密钥文件（shardlab-assign 的同一个）")
    p.add_argument("--weights", type=Path, help="每道题的权重：CSV problem,weight（默认都是 1）")
    p.add_argument(
        "--trust-key",
        action="store_true",
        help="笔记本里的参数大多对不上密钥时也照样评分（只在确认 --secret-file 没错时用，例如只收到几份改过参数的提交）",
    )
    p.add_argument(
        "--book-params",
        action="store_true",
        help="没有 --roster/--secret-file 时，即使提交大多带着个人版的元数据，也按书上的参数评分",
    )
    p.add_argument(
        "--allow-blank",
        action="store_true",
        help="大多数提交一道题也没有作答时也照样评分（默认停下：多半是提交目录指到了发给学生的笔记本）",
    )
    p.add_argument(
        "--canvas-column", help="canvas.csv 里作业那一列的名字（要与 Canvas 里的作业名一致；默认 shardlab chNN）"
    )
    p.add_argument(
        "--max-files",
        type=int,
        default=per_student.MAX_FILES,
        help=f"每个学生最多评几个内容不同的文件（默认 {per_student.MAX_FILES}；超过的列在忽略的文件里，写进给教师的说明）",
    )
    p.add_argument(
        "--zero-missing",
        action="store_true",
        help="这次给的是全班的提交：花名册里没有文件、也没有疑问的学生在 canvas.csv 与 grades_wide.csv 里记 0 分"
        "（不加时空着：只给了迟交或重评的一部分时，评分器分不出谁没交）",
    )
    p.add_argument(
        "--wall", type=_positive(float, DAY, WALL_MIN), default=Limits.wall_s, help="每份提交的墙钟时间上限（秒）"
    )
    p.add_argument(
        "--cell-timeout", type=_positive(float, DAY, CELL_MIN), default=Limits.cell_s, help="每个单元的时间上限（秒）"
    )
    p.add_argument(
        "--memory-mb", type=_positive(int), default=Limits.memory_bytes >> 20, help="每个进程的地址空间上限（MiB）"
    )
    p.add_argument("--nproc", type=_positive(int), default=Limits.nproc, help="沙箱里进程 + 线程数上限")
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "uid", "rlimit"],
        default="auto",
        help="auto/bwrap：bubblewrap（用不了就拒绝运行）；uid：只换成非特权 uid 加资源限制（需要 root）；"
        "rlimit：只有资源限制（只用于可信的提交）",
    )
    p.add_argument("--no-progress", action="store_true", help="不显示进度条")
    return p


class UsageError(RuntimeError):
    """评分器不能开始：给出中文原因，退出码 2"""


def _fail(message: str) -> int:
    print(f"评分器：{message}", file=sys.stderr)
    return 2


@dataclass
class Personal:
    """按个人版评分时的东西"""

    students: list[roster.Student]
    secret: bytes
    key: personal.PersonalKey | None = None


def _positive(kind, most: float = float("inf"), least: float = 0.0):
    """argparse 的类型：大于 0、不超过 most 的数（以前 --wall 0、--cell-timeout 0、-j 0 照样评，全班超时、0 分，退出码 0；
    --cell-timeout 1e9 在 nbval 里溢出，每个单元都失败，全班 0 分）"""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} 不是{'整数' if kind is int else '数'}") from None
        if not value > 0 or value != value or value > most or value < least:
            low = f"不小于 {least:g}" if least else "大于 0"
            raise argparse.ArgumentTypeError(
                f"要{low}、不超过 {most:g} 的数（给的是 {text}）；没有“0 表示不限”这种写法"
            )
        return value

    return parse


DAY = 86400.0  # 时间上限最多一天：nbval 的单元超时按毫秒存进 32 位整数，约 24.8 天就溢出
WALL_MIN, CELL_MIN = 10.0, 1.0  # 更小的上限连内核都起不来、课程的设置单元都跑不完：每个学生都超时或出错


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["gradescope"]:  # shardlab-grade gradescope --secret-file SECRET --out autograder.zip
        return gradescope.main(argv[1:])
    if argv[:1] == ["gradescope-dry-run"]:
        return gradescope.dry_run_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        ready = prepare(args)
    except KeyboardInterrupt:
        print("评分器：收到中断，还没有开始评分：什么也没有写", file=sys.stderr)
        return 130
    except (CourseError, AnswerKeyError, inject.CourseOrderError, UsageError, roster.RosterError, ValueError,
            variants.VariantError) as exc:  # fmt: skip
        hint = variants.edited_key_hint(args.secret_file) if isinstance(exc, personal.KeyDisproved) else ""
        return _fail(str(exc) + hint)
    out: Path = args.out.absolute()  # 沙箱的工作目录在它下面：相对路径到了沙箱里就不对了
    created = not out.exists()  # 只有评分器自己建的输出目录才交还给 sudo 的调用者
    out.mkdir(parents=True, exist_ok=True)
    try:
        lock = _lock(out)
    except UsageError as exc:
        return _fail(str(exc))
    try:
        with _Interrupts() as interrupts:
            return _main_locked(args, ready, out, interrupts)
    except UsageError as exc:
        return _fail(str(exc))
    finally:
        lock.close()
        _hand_back(out, created)


@dataclass
class Ready:
    """prepare 的结果：评分需要的一切"""

    course: Course
    key: object  # AnswerKey 或 PersonalKey
    orders: dict  # 章 → 练习笔记本的单元顺序
    mode: str  # 沙箱方式
    found: Scan  # 要评的提交与忽略的文件
    chapter: int | None


def prepare(args) -> Ready:
    """评分之前的一切：读课程、答案表、花名册与密钥，找出提交，认出学生，每个学生留哪几个文件，核对密钥；
    不写任何文件。输入不对时抛出 UsageError 等"""
    course = Course.from_option(args.course)
    base_key = load_key(args.key, course)
    args.personal = _personal(args)
    args.weight_map = outputs.read_weights(args.weights)
    if args.max_files < 1:
        raise UsageError(f"--max-files 要至少是 1（给的是 {args.max_files}）")
    args.roster_notes = list(variants.secret_warnings(args.secret_file)) if args.personal else []
    orders = {
        ch: inject.exercise_order(course.exercise(ch), ch)
        for ch in sorted({a.chapter for a in answers.ANSWERS.values()})
    }
    mode = _sandbox_mode(args.sandbox)
    args.roster_notes += _check_submission_args(args.submissions, args.out)  # 评分开始时与别的说明一起打印
    table = identify.Roster(args.personal.students) if args.personal is not None else None
    is_student = (lambda name: table.exact(name) is not None) if table is not None else None
    found = scan(args.submissions, skip=args.out, is_student=is_student)
    args.roster_notes += found.notes
    _peek_all(found, args.personal.secret if args.personal else None)
    _drop_answer_notebooks(found)
    if args.personal is None:
        if not args.book_params:
            _refuse_personal_without_key(found)
    else:
        _identify(found, args.personal, args.trust_key, args.roster_notes)
        found.partial = _partial(args.submissions, table, found.found)
    _refuse_nothing_to_grade(found)
    chapter = _choose_chapter(found.found, args.chapter)
    key = base_key
    if args.personal is not None and chapter is not None:
        assignment = f"ch{chapter:02d}"
        args.personal.key = personal.PersonalKey.build(
            base_key, args.personal.students, args.personal.secret, (assignment,)
        )
        for f in found.found:
            f.written_params = _written(assignment, f)
        _group_member_by_signature(found, args.personal.key, assignment)
        # 先扔掉伪造的，再数上限：伪造的不占名额
        dropped = _drop_unsigned_claims(found, args.personal.key, assignment)
        book = problems.published(assignment)  # 笔记本里写的就是书上的参数：交的是网站上公开的练习
        found.book_params = sorted(
            {
                f.rel
                for f in found.found
                # 带着对得上书上参数的签名的也算：个人版从不发书上的参数，这样的签名是拿到密钥的人自己签的（personal.reconcile）
                if f.written_params == book and not _signed_personal(f, args.personal.key, assignment)
            }
        )
    over = per_student.limit(found, args.max_files, chapter, _signed_for_other(args.personal, chapter))
    if over:
        args.roster_notes.append(
            f"{len(over)} 名学生名下内容不同的文件超过 {args.max_files} 个，多的没有评（列在忽略的文件里），"
            f"他们的成绩标为“待核对”、canvas.csv 里不给分：{'、'.join(over[:10])}{'…' if len(over) > 10 else ''}。"
            "请核对这些文件是不是他们自己交的，再加大 --max-files 重评"
        )
    if args.personal is not None and chapter is not None:
        problem, notes = personal.reconcile(found.found + dropped, args.personal.key, assignment)
        args.roster_notes += notes
        if problem and not args.trust_key:
            raise UsageError(
                problem + "（确认密钥没错时，加 --trust-key 照样评分）" + variants.edited_key_hint(args.secret_file)
            )
        if problem:
            args.roster_notes.append("加了 --trust-key：" + problem.replace("什么也没有写。", "照样评分了。"))
        key = args.personal.key  # reconcile 可能按签名改了几个学生的参数，指纹也跟着变
        _assign_ids(found)
    if chapter is not None:
        _check_weights(args.weight_map, chapter)
        if not args.allow_blank:
            _refuse_mostly_blank(found, course, chapter)
    _check_out(args.out.absolute(), chapter)
    return Ready(course, key, orders, mode, found, chapter)


def _check_submission_args(specs: list[str], out: Path) -> list[str]:
    """提交参数的常见错误：路径不存在；--out 就是提交目录（以前整个目录被当成输出目录跳过，全班 0 分）；
    没加引号的 export/* 把 Gradescope 导出拆开了（submission_metadata.yml 成了一个参数，小组与文件夹都认不出）。
    返回给教师的提醒（一个目录在另一个里面：能评，但输出和提交混在一起）"""
    out_real = os.path.realpath(out)
    warnings: list[str] = []
    for spec in specs:
        if any(ch in spec for ch in "*?["):
            continue
        if not os.path.lexists(spec):
            raise UsageError(
                f"提交目录或文件 {terminal(spec, 200)} 不存在：请检查路径（通配符要加引号）。什么也没有写。"
            )
        if os.path.isdir(spec) and os.path.realpath(spec) == out_real:
            raise UsageError(
                f"--out 与提交目录是同一个目录（{terminal(spec, 200)}）：请给一个另外的输出目录。什么也没有写。"
            )
        spec_real = os.path.realpath(spec)
        if os.path.isdir(spec) and out_real.startswith(spec_real + os.sep):
            warnings.append(
                f"--out 在提交目录 {terminal(spec, 200)} 里面：评分时跳过了它，但助教用的参考值（ta/）和每个人的反馈"
                "就放在收作业的目录里了；如果学生能看到这个目录，请换一个输出目录"
            )
        elif spec_real.startswith(out_real + os.sep):
            warnings.append(
                f"提交目录 {terminal(spec, 200)} 在 --out 里面：成绩和反馈与学生交的文件混在一个目录里，"
                "清理输出目录时容易把提交一起删掉；建议把两者分开"
            )
        if os.path.basename(os.path.normpath(spec)) == "submission_metadata.yml":
            raise UsageError(
                "参数里有 submission_metadata.yml：这是 Gradescope 的导出，请给整个导出文件夹（不要写成没加引号的 export/*，"
                "shell 会把它拆成一个个文件夹），评分器才认得小组和提交者。什么也没有写。"
            )
    return warnings


def _hand_back(out: Path, created: bool) -> None:
    """经 sudo 运行时，把评分器建的目录交还给调用 sudo 的教师（文件在写的时候已经交还了，见 shardlab.atomic）；
    只动评分器自己的那几个名字，输出目录里别人的文件不碰"""
    if atomic.sudo_owner() is None:
        return
    mine = ([out] if created else []) + [out / LOCK]
    for name in OUT_DIRS:  # 评分器自己的目录：里面 root 的文件（以前以 root 运行时写的、这次缓存着没重写的）也交还
        folder = out / name
        if folder.is_dir() and not folder.is_symlink():
            mine.append(folder)
            mine += [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    for path in mine:
        try:
            if path.exists() and not path.is_symlink() and path.stat().st_uid == 0:
                atomic.hand_back(path)
        except OSError:
            pass


def _check_weights(weights: dict[str, float], chapter: int) -> None:
    bad = outputs.weight_problems(weights, chapter)
    if bad:
        raise UsageError("；".join(bad))


OUT_DIRS = ("results", "feedback", outputs.TA_DIR, WORK, "stale-feedback")


def _check_out(out: Path, chapter: int | None) -> None:
    """输出目录：里面的子目录与锁不能是符号链接（别人放的链接会把结果引到别处）；以前评的是另一章时拒绝（每章一个输出目录）"""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {terminal(out, 200)} 是一个文件，不是目录：请给一个输出目录。什么也没有写。")
    for name in (*OUT_DIRS, LOCK):
        path = out / name
        if path.is_symlink() or (path.exists() and name != LOCK and not path.is_dir()):
            raise UsageError(f"输出目录里的 {path} 是符号链接或不是目录：不往里写，请删掉它，或换一个 --out")
    try:
        meta = json.loads((out / "gradebook.json").read_text(encoding="utf-8")).get("meta", {})
    except (OSError, ValueError, AttributeError):
        return
    before = meta.get("chapter") if isinstance(meta, dict) else None
    if chapter is not None and isinstance(before, int) and before != chapter:
        raise UsageError(
            f"输出目录 {out} 里是第 {before} 章的成绩，这次评第 {chapter} 章：每章用一个输出目录（换一个 --out），"
            "不然两章的结果和反馈会混在一起"
        )


def _personal(args) -> Personal | None:
    """--roster 与 --secret-file；都没有给时 None"""
    if args.roster is None and args.secret_file is None:
        return None
    if args.roster is None or args.secret_file is None:
        raise UsageError("按个人版评分要同时给 --roster（花名册）和 --secret-file（生成个人版时的密钥）")
    return Personal(roster.read(args.roster), variants.read_secret(args.secret_file))


def _sandbox_mode(choice: str) -> str:
    if choice in ("rlimit", "uid"):
        if choice == "uid" and os.geteuid() != 0:
            raise UsageError("--sandbox uid 需要以 root 运行（要换成非特权 uid）")
        return choice
    problem = bwrap_problem()
    if problem is not None:
        raise UsageError(
            f"用不了 bubblewrap 沙箱：{problem}。没有 pid 命名空间和非特权 uid，学生的代码能读到机器上的文件、"
            "杀掉或拖垮整台机器。请以 root 运行并安装 bubblewrap（apt-get install bubblewrap），"
            "或者以 root 运行并加 --sandbox uid（只换 uid，没有命名空间），只对可信的提交才用 --sandbox rlimit。"
        )
    return "bwrap"


def _peek_all(found: Scan, secret: bytes | None = None) -> None:
    """每份提交先读一次：内容的 sha256、章、笔记本里写的学生 id、参数单元，有密钥时还有签名是不是对得上笔记本里写的 id
    （读不了的留给评分时报告）"""
    public: dict[str, bytes] = {}  # 作业 → 验证签名的公钥（每章只推一次）
    for f in found.found:
        f.peek, f.sha, f.own_signed = None, None, False
        try:
            data = read_submission(f.path)
        except (Unreadable, OSError):
            continue
        f.sha = hashlib.sha256(data).hexdigest()
        try:
            f.peek = inject.peek(inject.read_notebook(data))
        except inject.SubmissionError:
            continue
        f.own_signed = secret is not None and _signed_for_its_own_id(f.peek, secret, public)


def _drop_answer_notebooks(found: Scan) -> None:
    """shardlab-assign 写给教师的参考答案（``kind: solutions``）不是学生的提交：不评（以前：指错目录时全班满分）"""
    keep = []
    for f in found.found:
        if f.peek is not None and f.peek.kind == "solutions":
            found.ignored.append(
                {"file": f.rel, "reason": "这是 shardlab-assign 写给教师的参考答案（solutions），不是学生的提交"}
            )
            # 放在学生名下时他待核对
            found.skipped_raw.append((f.raw_rel, "是写给教师的参考答案（solutions），不是练习"))
        else:
            keep.append(f)
    found.found[:] = keep


def _refuse_personal_without_key(found: Scan) -> None:
    """没有 --roster/--secret-file 时按书上的参数评分；大多数学生交的是个人版（笔记本里有 shardlab-assign 写的学生 id 和签名）时，
    这样评几乎每道题都会判错：停下。按学生数（per_student.student_of），不按文件数：一个学生的文件夹里多放几份别的文件冲不淡它，
    散放的、写着同一个 id 和签名的几份副本只算一个学生"""
    personal_: dict[tuple, Found] = {}
    students: set[tuple] = set()
    for f in found.found:
        if f.peek is None:
            continue
        tagged = bool(f.peek.student and f.peek.tag)
        who = _who(f, ("signed", f.peek.student, f.peek.tag) if tagged else None)
        students.add(who)
        if tagged:
            personal_.setdefault(who, f)
    if personal_ and len(personal_) > KEY_SHARE * len(students):
        example = next(iter(personal_.values())).rel
        raise UsageError(
            f"{len(students)} 名学生里有 {len(personal_)} 名交的是个人版（笔记本里写着学生 id 和参数签名，"
            f"例如 {terminal(example, 80)}）：请加 --roster（花名册）和 --secret-file（生成个人版时的密钥），"
            "按每个学生自己的参数评分。不加时按书上的参数判，个人版的答案几乎都会判错。"
            "确实要按书上的参数评（提交的是公开的练习，这些元数据是别人加的）时加 --book-params。什么也没有写。"
        )


def _who(f: Found, loose_as: tuple | None) -> tuple:
    """两道“大多数学生……”的检查按学生数：没有花名册时，散放在顶层、属于同一类的文件（写着同一个签名、都是空白的）算一个学生
    （不然一个人丢几份副本就顶得上几个学生）；别的按 per_student.student_of"""
    loose = not f.roster_id and per_student.place_of(f) == b""
    return loose_as if loose and loose_as is not None else per_student.student_of(f)


KEY_SHARE = personal.KEY_MISMATCH_SHARE  # 一半以上才算“大多数”：与核对密钥用同一个比例


def _refuse_mostly_blank(found: Scan, course: Course, chapter: int) -> None:
    """大多数提交的每个答案单元都与发下去的练习一模一样（一道题也没有作答）：多半是提交目录指到了发给学生的笔记本
    （shardlab-assign 的输出），评下去就是全班 0 分、rc 0。停下（--allow-blank 照样评）"""
    try:
        blank = inject.answer_digests(inject.read_notebook(course.exercise(chapter).read_bytes()))
    except (OSError, inject.SubmissionError):
        return
    students: dict[object, list[bool]] = {}  # 按学生数，不按文件数：一个学生交几份空白草稿拦不住全班
    example = None
    for f in found.found:
        if f.peek is None or f.peek.chapter != chapter:
            continue
        empty = bool(f.peek.answer_cells) and all(blank.get(t) == h for t, h in f.peek.answer_cells.items())
        example = example or (f.rel if empty else None)
        # 没有花名册时，散放在顶层、内容相同的空白文件算一个（不然一个人丢几份空白副本就顶得上几个学生）
        students.setdefault(_who(f, ("blank",) if empty else None), []).append(empty)
    nothing = sum(all(v) for v in students.values())
    if len(students) >= 2 and nothing > KEY_SHARE * len(students):
        raise UsageError(
            f"{len(students)} 名学生里有 {nothing} 名交的笔记本一道题也没有作答（答案单元与发下去的练习一模一样，"
            f"例如 {terminal(example or '', 80)}）：提交目录是不是指到了发给学生的个人版（shardlab-assign 的输出）？"
            "确实要评时加 --allow-blank。什么也没有写。"
        )


def _refuse_nothing_to_grade(found: Scan) -> None:
    """一份能评的提交也没有：多半是目录给错了（例如 Gradescope 导出多了一层、给了空目录），不写全班 0 分的成绩表"""
    if found.found:
        return
    if not found.ignored:
        raise UsageError("提交目录里没有找到任何 .ipynb 笔记本：目录给对了吗？（教师指南“收作业”一节）。什么也没有写。")
    examples = "；".join(f"{terminal(i['file'], 60)}：{i['reason']}" for i in found.ignored[:3])
    raise UsageError(
        f"没有一份可以评的提交：{len(found.ignored)} 个文件或文件夹都被忽略了（例如 {examples}）。"
        "请确认提交目录是对的（教师指南“收作业”一节）。什么也没有写。"
    )


def _signed_for_other(who: Personal | None, chapter: int | None):
    """per_student.limit 用的：一份文件的签名是不是发给花名册里另一位学生的（没有密钥或章时不问）"""
    if who is None or who.key is None or chapter is None:
        return None
    assignment = f"ch{chapter:02d}"

    def check(f: Found) -> bool:
        tag = getattr(f.peek, "tag", None)
        return bool(
            tag and f.written_params and personal.signed_for(who.key, assignment, f.written_params, tag, f.roster_id)
        )

    return check


def _group_member_by_signature(found: Scan, key: personal.PersonalKey, assignment: str) -> None:
    """小组提交（Gradescope 导出）按签名定是哪位组员的个人版，与 Gradescope 容器里一样（gradescope.group_member）。
    以前按笔记本里写的 id（谁都能改）：写着另一位组员的 id，就按那位组员的参数评"""
    for f in found.found:
        if len(f.members) < 2 or f.peek is None or not f.peek.tag:
            continue
        signer = key.owner(f.members, assignment, f.peek.tag, f.written_params)
        if signer is None:
            continue
        f.roster_id = signer
        f.how = f"{identify.EXPORT_HOW}（小组：{'、'.join(f.members)}；签名表明笔记本是 {signer} 的个人版）"
        f.notes = [n for n in f.notes if not n.startswith(identify.GROUP_NOTE)]


def _identify(found: Scan, who: Personal, trust_key: bool = False, notes: list[str] | None = None) -> None:
    """对上花名册；认不出的移到忽略（附原因）。花名册明显不对时停下（trust_key 时只写进 notes）"""
    notes = notes if notes is not None else []
    table = identify.Roster(who.students)
    exports = {}
    keep = []
    for f in found.found:
        parts = identify.rel_parts(f.raw_rel)
        root = Path(os.fsdecode(f.path)).parents[len(parts) - 1] if len(parts) >= 1 else Path(".")
        if root not in exports:
            exports[root] = identify.gradescope_export(root)
        ident = identify.identify(parts, table, f.peek.student if f.peek else None, exports[root])
        if ident.sid is None:
            found.ignored.append({"file": f.rel, "reason": ident.reason})
            continue
        other = table.exact(f.peek.student) if f.own_signed else None
        if other is not None and other != ident.sid and ident.how.startswith(identify.LMS_KINDS) and len(parts) == 1:
            # 名字是 LMS 的格式（学生在自己收的目录里也能这样起名），签名却证明这是发给另一位同学的个人版：不算到名字上的学生头上
            # （以前他没交别的时，就按他的参数评出一个 0 分，作为“已评分”导出）；他的成绩待核对
            why = f"文件名按 {ident.how} 是 {ident.sid} 的，笔记本却是用这个密钥发给 {other} 的个人版（签名对得上）：没有评，请助教核对"
            found.ignored.append({"file": f.rel, "reason": why})
            found.owned_ignored.setdefault(ident.sid, f"{f.rel}（{why}）")
            continue
        f.roster_id, f.how, f.notes, f.members, f.strong = (
            ident.sid,
            ident.how,
            list(ident.notes),
            ident.group,
            ident.strong,
        )
        keep.append(f)
    unmatched = [f for f in found.found if f not in keep]
    # 花名册给错的证据：对不上的文件是用这个密钥生成的个人版（签名对得上笔记本里写的 id）。没有签名的对不上的文件不算：
    # 谁都能往散放的提交目录里丢几个文件，以前丢得比真提交多就能让整班的评分停下
    # 按笔记本里写的学生 id 去重：同一个人的笔记本复制几份（改了答案、起了同学的名字）只算一份证据，与对上的学生数比
    evidence: dict[str, Found] = {}
    for f in unmatched:
        if not f.own_signed or table.exact(f.peek.student) is not None:
            continue  # 写着花名册里的 id：花名册没错，只是文件名认不出（学生自己的笔记本起了怪名字）
        evidence.setdefault(roster.normalize(f.peek.student), f)
    # 一份真的个人版写着 0101，花名册里却只有 101：Excel 去掉了开头的 0（哪怕只有一个学生这样，他也会被当成“没有提交”；
    # 文件由 LMS 的用户号对上 101 时，以前按 101 的参数评，得分很低）。对上了和没对上的文件都看
    signed_off_roster = [f for f in found.found if f.own_signed and table.exact(f.peek.student) is None]
    zeros = [
        (f, sid)
        for f in signed_off_roster
        if f.peek.student.startswith("0") and (sid := roster.without_leading_zeros(table.by_id, f.peek.student))
    ]
    if zeros:
        examples = "；".join(
            f"{terminal(f.rel, 60)} 是为 {f.peek.student!r} 生成的，花名册里只有 {sid!r}" for f, sid in zeros[:3]
        )
        problem = (
            f"花名册里的 id 被改过？{len(zeros)} 份用这个密钥生成的个人版写着开头是 0 的 id，花名册里是去掉 0 的 id"
            f"（{examples}）。Excel 打开再保存 CSV 会去掉开头的 0：请用生成个人版时的那份花名册（或在 Excel 里把 id 列设为文本）。"
        )
        if not trust_key:
            raise UsageError(problem + "什么也没有写。（确认花名册没错时，加 --trust-key 照样评分）")
        notes.append("加了 --trust-key：" + problem + "这几份没有评。")
    matched = {f.roster_id for f in keep}
    if len(found.found) >= 2 and len(unmatched) > len(found.found) / 2 and len(evidence) > len(matched):
        examples = "；".join(f"{terminal(i['file'], 60)}：{i['reason']}" for i in found.ignored[-len(unmatched) :][:2])
        raise UsageError(
            f"花名册不对？{len(found.found)} 份提交里有 {len(unmatched)} 份对不上 --roster 里的学生"
            f"（其中 {len(evidence)} 份是用这个密钥为不在花名册里的 id 生成的个人版；例如 {examples}）。"
            "请确认花名册是这个班的、文件是按教师指南“收作业”一节的方式放的。什么也没有写。"
        )
    found.found[:] = keep
    found.unidentified = [f.rel for f in unmatched]
    for raw, why in found.skipped_raw:  # 认得出是谁的、却评不了的文件（交了 .md、.zip、.ipynb.json）：他不是“没有提交”
        sid = identify.identify(identify.rel_parts(raw), table, None, None).sid
        if sid is not None:
            found.owned_ignored.setdefault(sid, f"{folder_show(raw)}（{why}）")
    found.off_roster = sorted({f.peek.student for f in evidence.values()})
    if found.off_roster:
        shown = "、".join(repr(terminal(i, 40)) for i in found.off_roster[:5])
        notes.append(
            f"{len(found.off_roster)} 个不在花名册里的 id 有用这个密钥生成的个人版（{shown}），没有评："
            "花名册里的 id 改过或写错了（或这位学生退了课）？花名册里这次没有文件的学生标为“待核对”（canvas.csv 里不给分），核对花名册后重评"
        )


def _partial(specs: list[str], table: identify.Roster, found: list[Found] = ()) -> str:
    """提交参数只是班上的一部分时说明是哪部分（一个个文件、名字是学生 id 的文件夹），否则是空串。
    这时没有找到文件的学生不能当成没交（以前重评一个学生时别的学生在 canvas.csv 里都是 0 分）"""
    globs = [s for s in specs if any(ch in s for ch in "*?[")]
    if globs:  # 通配符只选了一部分（"subs/202400[12]/*.ipynb"）；选全了的照样当一部分：宁可待核对，不给交了的人 0 分
        return f"这次给的是通配符 {terminal(globs[0], 100)}，不是整个提交目录"
    files = [s for s in specs if os.path.isfile(s)]
    own = [s for s in specs if os.path.isdir(s) and table.exact(os.path.basename(os.path.normpath(s)))]
    if own:
        return f"这次给的是学生的文件夹 {terminal(own[0], 100)}{' 等' if len(own) > 1 else ''}，不是整个提交目录"
    if files:
        return f"这次给的是 {len(files)} 个文件，不是整个提交目录"
    have, everyone = {f.roster_id for f in found}, len(table.students)
    if everyone >= 3 and len(have) < everyone / 2:
        return f"这次只找到花名册里 {len(have)} / {everyone} 名学生的文件（给的是一部分提交？）"
    return ""


def _signed_for_its_own_id(peek, secret: bytes, public: dict[str, bytes]) -> bool:
    """笔记本带着这个密钥为它里面写的学生 id 签的参数（一份真的个人版）；public 缓存每章的公钥"""
    if peek is None or not (peek.student and peek.tag and peek.chapter):
        return False
    assignment = f"ch{peek.chapter:02d}"
    try:
        if assignment not in public:
            public[assignment] = variants.public_key(secret, assignment)
        written = problems.written(assignment, peek.param_sources)
        return personal.signed(public[assignment], assignment, peek.student, written, peek.tag)
    except Exception:  # noqa: BLE001  不可信的输入；未知的章
        return False


def _written(assignment: str, f: Found) -> dict | None:
    """参数单元里写的参数；学生写的东西出什么错都只影响这一份（以前：一个几千位的数让整班的评分停下）"""
    try:
        return problems.written(assignment, f.peek.param_sources) if f.peek else None
    except Exception:  # noqa: BLE001  不可信的输入
        return None


def _signed_personal(f: Found, key: personal.PersonalKey, assignment: str) -> bool:
    """笔记本带着这个密钥为它的主人（或笔记本里写的花名册上的学生）签的个人版签名，只是参数单元被改过。
    它不是网站上公开的练习：有人把书上的参数贴进自己的个人版，就照样按签名的（发给他的）参数评分，评分结果里说明参数被改过
    （以前算成“交的是公开练习”，成绩待核对、让他重做：贴几行书上的参数就能换来一次重做）"""
    tag = f.peek.tag if f.peek is not None else None
    if not tag:
        return False
    return key.owner((f.roster_id, f.peek.student), assignment, tag) is not None


def _drop_unsigned_claims(found: Scan, key: personal.PersonalKey, assignment: str) -> list[Found]:
    """只凭笔记本里写的学生 id 认出的文件，签名必须证明它是发给这个学生的个人版；不然谁都能把一份笔记本写上同学的 id
    放进来，让那位同学“交”了一份抄来的作业。返回扔掉的文件里带着签名的那些：密钥不对时一份真个人版也是这样，
    核对密钥（``personal.reconcile``）要看到它们（以前只评一个文件时说是文件的签名不对，密钥错了也照样“评完”）"""
    keep, signed_dropped = [], []
    for f in found.found:
        if f.how.startswith(identify.BY_EMBEDDED_ID):
            derived = dict(key.params[f.roster_id][assignment])
            tag = f.peek.tag if f.peek else None
            signed = f.written_params is not None and (
                key.authentic(f.roster_id, assignment, f.written_params, tag)
                or key.authentic(f.roster_id, assignment, derived, tag)
            )
            if not signed:
                found.ignored.append(
                    {"file": f.rel, "reason": f"只凭笔记本里写的学生 id（{f.roster_id}）认出，签名却不是发给他的：不评"}
                )
                if tag:
                    signed_dropped.append(f)
                continue
        keep.append(f)
    found.found[:] = keep
    return signed_dropped


def _assign_ids(found: Scan) -> None:
    """按个人版评分时，结果文件以学生 id 命名；同一个学生有几份时加上 ~ 和路径的短哈希"""
    count: dict[str, int] = {}
    for f in found.found:
        count[f.roster_id] = count.get(f.roster_id, 0) + 1
    for f in found.found:
        if count[f.roster_id] == 1:
            f.sid = f.roster_id
        else:
            f.sid = f"{f.roster_id}~{hashlib.sha256(f.raw_rel).hexdigest()[:8]}"


def _lock(out: Path):
    """输出目录的锁：同一个输出目录同时只能有一个评分器（进程结束时锁自动释放，哪怕是被杀掉的）"""
    try:
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o640)
    except OSError as exc:
        raise UsageError(f"打不开输出目录的锁 {out / LOCK}（{exc.strerror}）：它是符号链接吗？请删掉它") from None
    f = os.fdopen(fd, "a+", encoding="utf-8")  # noqa: SIM115  锁要一直拿到运行结束；不跟随符号链接
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = terminal(f.read(), 100).strip() or "?"
        f.close()
        raise UsageError(
            f"另一个评分器（pid {holder}）正在使用输出目录 {out}；等它结束，或换一个 --out。"
            "两个评分器同时写同一个成绩册会互相覆盖结果。"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def _clean_leftovers(out: Path) -> list[str]:
    """清掉以前的运行（被 Ctrl-C 两次或被杀掉的）留下的临时目录和写了一半的临时文件；拿到锁之后才调用"""
    removed = []
    if (out / WORK).exists():
        shutil.rmtree(out / WORK, ignore_errors=True)
        removed.append(WORK)
    for folder in (out, out / "results", out / "feedback"):
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
            tmp.unlink(missing_ok=True)
            removed.append(str(tmp.relative_to(out)))
    return removed


def _previous_seed(out: Path) -> int | None:
    try:
        meta = json.loads((out / "gradebook.json").read_text(encoding="utf-8")).get("meta", {})
    except (OSError, ValueError, AttributeError):
        return None
    seed = meta.get("seed") if isinstance(meta, dict) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def _choose_chapter(found: list[Found], explicit: int | None) -> int | None:
    """--chapter；没给时由提交推断：每份能读的提交都属于同一章才行（有别的章的，哪怕只有一份，也要教师用 --chapter 说明：
    不猜，花名册模式与没有花名册时一样）"""
    known = sorted({a.chapter for a in answers.ANSWERS.values()})
    if explicit is not None:
        if explicit not in known:
            raise UsageError(f"没有第 {explicit} 章的练习（有：{'、'.join(map(str, known))}）")
        seen = sorted({f.peek.chapter for f in found if f.peek is not None and f.peek.chapter is not None})
        if seen and explicit not in seen:
            raise UsageError(
                f"这些提交都是第 {'、'.join(map(str, seen))} 章的练习，没有一份是第 {explicit} 章的：--chapter {explicit} 对吗？"
                "什么也没有写。"
            )
        # 按学生数：一份放错或别人放进来的第 6 章笔记本，不能让 --chapter 6 的笔误评下去（全班都成了“别的章”）
        owners: dict[int, set] = {}
        for f in found:
            if f.peek is not None and f.peek.chapter is not None:
                owners.setdefault(f.peek.chapter, set()).add(per_student.student_of(f))
        mine, others = len(owners.get(explicit, ())), len(set().union(*owners.values()) - owners.get(explicit, set()))
        if others >= 2 and others > 2 * mine:
            raise UsageError(
                f"只有 {mine} 名学生交了第 {explicit} 章的练习，{others} 名交的是别的章：--chapter {explicit} 对吗？"
                "什么也没有写。（确实是这一章时，把别的章的文件移出提交目录再评）"
            )
        return explicit
    seen: dict[int, list[str]] = {}
    for f in found:
        chapter = f.peek.chapter if f.peek is not None else None
        if chapter is not None:
            seen.setdefault(chapter, []).append(f.rel)
    if len(seen) == 1:
        return next(iter(seen))
    if not seen:
        if found:
            raise UsageError("没有一份提交带有答案 id 标签，推断不出是哪一章；请用 --chapter 指定")
        return None
    parts = [f"第 {ch} 章 {len(files)} 份（例如 {terminal(files[0], 80)}）" for ch, files in sorted(seen.items())]
    raise UsageError(
        "提交里有不止一章的练习："
        + "；".join(parts)
        + "。请用 --chapter 指定这次评哪一章（别的章的提交会列出来，不评）"
    )


class _Interrupts:
    """SIGINT / SIGTERM / SIGHUP，从评分器拿到输出目录的锁起直到退出：第一次停止启动新的沙箱并结束正在运行的；第二次立即退出"""

    def __init__(self):
        self.stop = threading.Event()
        self.sandbox: Sandbox | None = None
        self.count, self.old = 0, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            # SIGHUP：终端关掉、SSH 断了（以前进程直接死掉，什么也不打印，上一次的成绩表留在原处）
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                self.old[sig] = signal.signal(sig, self)
        return self

    def __exit__(self, *exc):
        if self.count:
            # 已经中断过，结果也都存好了，剩下的只是退出（返回 130）。Python 退出时会把它自己的信号处理器换回默认的，
            # 那时再按一次 Ctrl-C 进程就死于 SIGINT（退出码 -2）；SIG_IGN 不会被换回，所以这段时间里忽略它们
            for sig in self.old:
                signal.signal(sig, signal.SIG_IGN)
            return False
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False

    def __call__(self, signum, frame):
        self.count += 1
        self.stop.set()
        if signum == getattr(signal, "SIGHUP", None):
            _detach_from_terminal()
        if self.sandbox is not None:
            self.sandbox.kill_all()
        if self.count > 1:
            os._exit(130)  # 已经写出的文件都是原子写的；临时文件下次运行时清掉
        try:  # 终端已经关掉（SIGHUP）时写不出来
            print("评分器：收到中断：不再启动新的沙箱，正在保存已评的结果（再按一次 Ctrl-C 立即退出）", file=sys.stderr)
        except (OSError, ValueError):
            pass


def _detach_from_terminal() -> None:
    """终端关掉了（SIGHUP）：往它写会出错（EIO），保存结果的路上一句打印就会让评分器半途退出。
    接着终端的 stdout、stderr 改成 /dev/null；重定向到文件的照旧写"""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            if os.isatty(fd):
                os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass


def _main_locked(args, ready: Ready, out: Path, interrupts) -> int:
    course, key, orders, mode, found, chapter = (
        ready.course, ready.key, ready.orders, ready.mode, ready.found, ready.chapter
    )  # fmt: skip
    removed = _clean_leftovers(out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    seed = args.seed
    if seed is None and args.personal is not None:
        seed = personal.hidden_seed(args.personal.secret)
    seed = seed if seed is not None else _previous_seed(out)
    seed = seed if seed is not None else secrets.randbits(63)
    inputs = hidden_inputs(seed)
    limits = Limits(wall_s=args.wall, cell_s=args.cell_timeout, memory_bytes=args.memory_mb << 20, nproc=args.nproc)
    work = out / WORK / str(os.getpid())
    work.mkdir(parents=True)
    try:
        staged = stage_library(work / "stage" / "lib")
        for path in (out / WORK, work, work / "stage"):
            path.chmod(0o755)
        sandbox = Sandbox(staged, limits, mode=mode, workdir=work)
        problem = sandbox.probe()
        if problem:
            raise UsageError(problem)
        interrupts.sandbox = sandbox
        if interrupts.stop.is_set():
            sandbox.kill_all()
        ctx = Context(key, seed, inputs, sandbox, chapter, orders, workdir=work, stop=interrupts.stop,
                      weights=args.weight_map)  # fmt: skip
        meta = {
            "isolation": sandbox.mode,
            "limits": limits.as_dict(),
            "chapter": chapter,
            "seed": seed,
            "hidden_inputs": {k: [list(a) for a in v] for k, v in inputs.items()},
            "key": key.fingerprint,
            "code": ctx.code,
            "cache_key": ctx.cache_key,
            "course": str(course.root),
            "ignored": found.ignored,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "personal_variants": args.personal is not None,
            "weights": args.weight_map,
            "selection_rule": SELECTION_RULE,
            "roster_notes": args.roster_notes,
            "doubts": {
                "off_roster": found.off_roster,
                "unidentified": found.unidentified,
                "owned_ignored": found.owned_ignored,
                "partial": found.partial,
                "book_params": found.book_params,
            },
        }
        if removed:
            meta["cleaned_up"] = removed
        for item in found.ignored:
            print(f"评分器：忽略 {terminal(item['file'])}：{item['reason']}", file=sys.stderr)
        for note in args.roster_notes:
            print(f"评分器：{note}", file=sys.stderr)
        return _run(found.found, ctx, out, args, meta)
    finally:
        shutil.rmtree(out / WORK, ignore_errors=True)  # 拿着锁：没有别的评分器在用它


SELECTION_RULE = (
    "同一个学生有几份提交时全部评分，取总分最高的一份计入成绩（同分取路径排在前面的）；"
    "笔记本里写着另一个学生 id 的文件、签名是发给另一位同学的个人版的文件，只在这个学生没有别的文件时才计入；"
    "有带着他自己签名的文件（从发给他的个人版改出来的）时，参数单元不是他的数的文件不计入"
)


def select_counted(results: list[dict]) -> None:
    """每个学生（roster_id）只有一份计入成绩（counted = True），规则见 SELECTION_RULE；没有花名册时每份都计入"""
    by: dict[str, list[dict]] = {}
    for r in results:
        r["counted"] = True
        if r.get("roster_id"):
            by.setdefault(r["roster_id"], []).append(r)
    for group in by.values():
        if len(group) < 2:
            continue
        # 别人放进来的文件（写着别的 id，或签名是发给别人的个人版）不能挤掉他自己的文件：以前同分时按路径排序，
        # 一份发给同学的个人版（元数据改成他的 id）就成了计入的那份，他的成绩被标成待核对
        clean = [r for r in group if not r.get("identity_conflict") and not r.get("signed_for")] or group
        # 有带着他自己签名的文件时，参数单元不是他的数的文件（删了签名的别人的笔记本、公开的练习）不算：以前同分或分更高时
        # 会挤掉他自己的文件，让他待核对或在 ta/ 里像抄了别人。参数是他的数、只是没有签名的文件照样参加比分
        # （以前只认带签名的，他丢了签名的满分终稿输给一份空白的个人版）
        if any(r.get("own_version") for r in clean):
            clean = [r for r in clean if r.get("own_version") or r.get("own_params")]
        best = min(clean, key=lambda r: (-r.get("points", 0.0), r.get("file", "")))
        for r in group:
            r["counted"] = r is best


def _cached(previous: dict | None, sha: str | None, cache_key: str, found: Found) -> dict | None:
    """上次的结果还能用时返回它：同样的提交、答案表、评分代码、种子与权重，并且对上的还是同一个学生"""
    if previous is None or sha is None:
        return None
    if previous.get("cache_key") != cache_key or previous.get("sha256") != sha:
        return None
    if previous.get("roster_id") != found.roster_id:
        return None
    if previous.get("file") != found.rel and not _same_student_moved(previous, found):
        return None
    if sorted(previous.get("group", [])) != sorted(found.members):
        return None  # 小组的组员变了（重新导出了 Gradescope）：以前照样用缓存，退出小组的人还拿着小组的分
    if not _final(previous):
        return None  # 与别的提交同时评时超时、还没单独重评过（那次运行被中断了）：再评
    if previous.get("status") in st.NO_SCORE:
        return None  # 崩溃可能是评分环境的错（以前：环境修好之后照样用缓存里全班的“崩溃”）：再评
    if previous.get("file") != found.rel:
        return {**previous, "file": found.rel, "how": found.how}  # 这次的路径与认出的方式
    return previous


def _same_student_moved(previous: dict, found: Found) -> bool:
    """同一个花名册学生、内容相同的文件只是这次的给法不同（只给这一个文件 subs/ch05/s001/ch05.ipynb 时路径是 ch05.ipynb，
    给整个目录时是 s001/ch05.ipynb）：结果只由内容、他的参数和评分设置决定，照样用缓存（以前重评）。
    另一个学生一模一样的副本不算：花名册 id 不同（结果也存在他自己的 id 下）。没有花名册时没有稳定的身份，路径要相同；
    有身份问题的（笔记本写着别的学生，结果里有给助教的说明）也要相同：说明是按当时的认法写的"""
    return bool(found.roster_id) and not found.notes and not previous.get("identity_conflict")


def _previous(out: Path, meta: dict, wanted: set[str]) -> dict[str, dict]:
    """上次写下的结果（只读这次找到的提交的）；读不了的结果文件报告出来，不悄悄跳过"""
    results: dict[str, dict] = {}
    for path in sorted((out / "results").glob("*.json")):
        if path.stem not in wanted:
            meta.setdefault("not_in_this_run", []).append(path.name)
            continue
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            meta.setdefault("unreadable_results", []).append(f"{path.name}: {terminal(exc)}")
            print(f"评分器：读不了以前的结果 {terminal(path)}（{terminal(exc)}），这份提交会重评", file=sys.stderr)
            continue
        if isinstance(old, dict) and old.get("version") == RESULT_VERSION and old.get("student") == path.stem:
            results[path.stem] = old
    return results


def _run(found: list[Found], ctx: Context, out: Path, args, meta: dict) -> int:
    previous = _previous(out, meta, {f.sid for f in found})
    results: dict[str, dict] = {}
    todo: list[Found] = []
    for f in found:
        cached = None if args.force else _cached(previous.get(f.sid), f.sha, ctx.cache_key, f)
        if cached is not None:
            results[f.sid] = cached
        else:
            todo.append(f)
    newly: list[str] = []

    def record(f: Found, res: dict) -> None:
        """写出一份结果；写不出来时记为 grader-error（附原因），再写不出来就只留在内存里的成绩册中"""
        try:
            report.atomic_write(out / "results" / f"{f.sid}.json", json.dumps(res, ensure_ascii=False, indent=1))
            report.write_feedback(out, res)
        except Exception as exc:  # noqa: BLE001
            res = failed_result(f, ctx, st.GRADER_ERROR, f"写结果时出错：{type(exc).__name__}: {exc}")
            try:
                report.atomic_write(out / "results" / f"{f.sid}.json", json.dumps(res, ensure_ascii=False, indent=1))
            except Exception as exc2:  # noqa: BLE001
                meta.setdefault("write_errors", []).append(f"{f.rel}: {terminal(exc2)}")
        results[f.sid] = res
        if f.sid not in newly:  # 超时后单独重评的那一份只算一次
            newly.append(f.sid)
        _write_gradebook(out, results, meta)

    _mark_unfinished(out, todo, meta)
    _write_gradebook(out, results, meta)
    skipped = len(found) - len(todo)
    progress = _progress(args.no_progress, sys.stderr.isatty())
    with progress, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        task = progress.add_task("评分", total=len(todo))
        futures = {} if ctx.stop.is_set() else {pool.submit(grade_submission, f, ctx): f for f in todo}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in done:
                f = futures[fut]
                try:
                    res = fut.result()
                except (Interrupted, CancelledError):
                    continue
                except Exception as exc:  # noqa: BLE001  grade_submission 本不该抛出；万一抛出也只影响这一份
                    res = failed_result(f, ctx, st.GRADER_ERROR, f"{type(exc).__name__}: {exc}")
                if args.jobs <= 1:
                    res["graded_alone"] = True
                record(f, res)
                progress.advance(task)
            if ctx.stop.is_set():
                for fut in pending:
                    fut.cancel()
    retried = _retry_timeouts_alone(todo, results, ctx, record, args.jobs)
    if retried:
        meta["retried_alone"] = retried
    interrupted = ctx.stop.is_set()
    meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    meta["counts"] = {
        "found": len(found),
        "graded_now": len(newly),
        "cached": skipped,
        "not_graded": len(todo) - len(newly),
        "ignored": len(meta["ignored"]),
    }
    meta["interrupted"] = interrupted
    # 名下还有文件没评的学生（被中断时；谁算同一个学生见 per_student.student_of）：他的成绩还没定，整个人“还没有评”，
    # 已评的那几份不计入成绩、不进统计，反馈也不放进 feedback/（以前按先评完的一份空白草稿的 0 分算进平均分）
    # 与别的提交同时评时超时、还没单独重评的（被中断了）也算还没评完：评分器本要单独重评它（_retry_timeouts_alone），
    # 这个超时不是定论（以前算进统计，反馈也放进 feedback/）；下次运行不用缓存，会再评
    again = {f.sid for f in todo if f.sid in results and not _final(results[f.sid])}
    waiting = {per_student.student_of(f) for f in todo if f.sid not in results or f.sid in again}
    unfinished = {f.sid for f in found if per_student.student_of(f) in waiting}
    later = {f.roster_id or f.sid for f in found if f.sid in unfinished}
    final = {sid: r for sid, r in results.items() if sid not in unfinished}
    select_counted(list(results.values()))  # 待核对的原因看计入的那一份（_write_gradebook 里再选一次，结果相同）
    for sid in unfinished & results.keys():
        results[sid]["counted"] = False
    held = {f.roster_id or f.sid for f in found if f.over_cap} - later
    earlier = _earlier_students(out, meta)  # 输出目录里以前的、这次没有的结果属于谁（读一次）
    held_why = dict.fromkeys(held, outputs.HELD)
    students = args.personal.students if args.personal else None
    if students:
        held_why |= _held_without_file(earlier, students, results, meta.get("doubts", {}))
        held_why |= _held_unreadable(final.values())
        held_why |= _held_book_params(final.values(), meta.get("doubts", {}).get("book_params", []))
        held_why |= _held_signed_for_other(final.values())
    held_why |= _held_broken(final.values())
    held_why |= _held_group_members(final.values(), held_why)
    held_why = {sid: why for sid, why in held_why.items() if sid not in later}
    # 成绩册、反馈都标出待核对的学生（以前只有 canvas.csv、grades_wide.csv 与 summary.md 标了：totals.csv 与他的反馈里是一个
    # 看起来已定的分数）
    _write_gradebook(out, results, meta, unfinished, held_why)
    # 这次的每份结果（缓存的也算）都重写反馈：以前只有新评的才写，上一次只评了一部分或被中断时移到 stale-feedback/ 的反馈
    # 就再也回不来，重跑整个班之后 feedback/ 里只剩新评的几份
    failed: set[str] = set()
    written = _write_all_feedback(out, list(final.values()), held_why, failed)
    _set_aside_stale_feedback(out, _feedback_not_of_this_run(out, written))
    _drop_superseded_stale(out, written)
    withheld = _withheld(results, bool(newly), {f.sid: per_student.student_of(f) for f in found})
    ignored = [(i["file"], i["reason"]) for i in meta["ignored"]]
    try:
        evidence = None
        if args.personal is not None and ctx.chapter is not None:
            counted = [r for r in final.values() if r.get("counted")]
            evidence = integrity.analyze(counted, args.personal.key.values, f"ch{ctx.chapter:02d}")
            _not_copying_the_book(evidence, meta.get("doubts", {}).get("book_params", []))
        overview = outputs.write_all(
            out, list(final.values()), students, ctx.chapter, ignored, report.atomic_write,
            args.canvas_column, args.weight_map, evidence, meta.get("roster_notes", []), interrupted,
            later, held_why, withheld, args.zero_missing,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001  汇总写不出来不影响已经写出的成绩册
        overview = f"评分器：写汇总（grades_wide.csv、canvas.csv、summary.md、ta/）失败：{terminal(exc)}"
    # 只查结果都齐了的学生：还没评完的学生本来就没有这次的反馈（以前把他们算成“写反馈失败”）
    missing = _without_feedback(out, list(final.values()))
    for names, why in (
        ([m for m in missing if m in failed], "写的时候出错了，原因见上面"),
        ([m for m in missing if m not in failed], "写出之后又不见了（被移走或删掉了？）"),
    ):
        if names:
            print(
                f"评分器：{len(names)} 份有成绩的反馈不在 feedback/ 里（{'、'.join(terminal(m, 40) for m in names[:10])}"
                f"{'…' if len(names) > 10 else ''}）：{why}；再运行一次会重写（不重评）",
                file=sys.stderr,
            )
    done = "评分被中断" if interrupted else ("评分结束，但反馈不全" if missing else "评分完成")
    print(
        f"{done}：新评 {len(newly)} 份，跳过已评 {skipped} 份，"
        f"没有评 {len(todo) - len(newly)} 份，忽略 {len(meta['ignored'])} 个文件；"
        f"隔离方式 {ctx.sandbox.mode}；共 {len(results)} 份。结果在 {terminal(out)}/gradebook.csv 与 grades_wide.csv",
        file=sys.stderr,
    )
    print(overview, file=sys.stderr)
    if meta.get("not_in_this_run"):
        stems = ({Path(n).stem for n in meta["not_in_this_run"]} | set(earlier)) - written
        aside = sum((out / STALE / f"{stem}.md").is_file() for stem in stems)
        print(
            f"评分器：输出目录里有 {len(meta['not_in_this_run'])} 份以前的结果不属于这次的提交，没有进成绩册（结果还在 results/；"
            f"它们的 {aside} 份反馈在 {STALE}/ 里，免得当成这次的发给学生）",
            file=sys.stderr,
        )
    if withheld and not interrupted:
        print(f"评分器：{withheld}", file=sys.stderr)
        return 1
    if interrupted:
        # 还没评的提交上一次的反馈已经移开（不是这次写的），不能当成这次的发出去；数的是现在在 stale-feedback/ 里的
        # （以前数的是最后这一步又移了几份，总是 0）
        left = sum(f.sid not in results or f.sid in again for f in todo)
        aside = sum((out / STALE / f"{name}.md").is_file() for name in unfinished | later)
        print(
            f"评分被中断：已评的结果都已保存，再运行一次会接着评剩下的（还没评完的 {len(waiting)} 人"
            f"（还有 {left} 份没评）；他们的 {aside} 份反馈在 {STALE}/ 里，不会当成这次的发出去）",
            file=sys.stderr,
        )
        return 130
    return 1 if missing else 0


UNFINISHED = "评分中/未完成"


def _mark_unfinished(out: Path, todo: list[Found], meta: dict) -> None:
    """写出第一份新结果之前：删掉上一次的能导入的成绩表（canvas.csv、grades_wide.csv），summary.md 写成“评分中/未完成”，
    要重评的学生上一次的反馈移到 stale-feedback/；评完（或第一次中断后保存完）时照常重写。以前第二次 Ctrl-C、终端关掉
    （SIGHUP）、被杀掉时，上一次的这些文件留在原处，看起来是这次的，而 gradebook.csv 与 results/ 只更新了一部分"""
    for name in ("grades_wide.csv", "canvas.csv"):
        (out / name).unlink(missing_ok=True)
    stems = {f.sid for f in todo} | {f.roster_id for f in todo if f.roster_id}
    stems |= {m for f in todo for m in f.members}
    _set_aside_stale_feedback(out, stems)
    text = (
        f"# 评分概况\n\n**{UNFINISHED}**：{meta.get('started', '')} 开始的一次评分还没有结束"
        "（或者被强行中断了：第二次 Ctrl-C、终端关掉、进程被杀）。results/ 与 gradebook.csv 只更新了一部分，"
        "所以 canvas.csv 和 grades_wide.csv 已经删掉，要重评的学生上一次的反馈移到了 stale-feedback/。"
        "请等评分器结束，或再运行一次（已评的用缓存）。\n"
    )
    report.atomic_write(out / "summary.md", text)


def _earlier_students(out: Path, meta: dict) -> dict[str, str]:
    """输出目录里以前的、这次没有的结果属于谁：{花名册 id（没有花名册时是提交的 id）: 文件}"""
    owners: dict[str, str] = {}
    for name in meta.get("not_in_this_run", []):
        try:
            old = json.loads((out / "results" / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(old, dict) and isinstance(old.get("roster_id") or old.get("student"), str):
            owners.setdefault(old.get("roster_id") or old["student"], str(old.get("file", "")))
    return owners


UNGRADABLE = (st.TOO_LARGE, st.OTHER_CHAPTER, st.NOT_JSON, st.NOT_NOTEBOOK, st.UNREADABLE, st.UNRELATED)


def _held_unreadable(results) -> dict:
    """计入成绩的那一份根本没法评（太大、别的章、不是笔记本、读不了）：他交了，0 分不是评出来的，成绩待核对"""
    return {
        r["roster_id"]: f"待核对：交了文件，但{st.text(r['status'])}；请他重交，或由助教核对"
        for r in results
        if r.get("counted") and r.get("roster_id") and r.get("status") in UNGRADABLE
    }


def _held_broken(results) -> dict:
    """计入成绩的那一份评分器出错（grader-error）或评分进程崩溃（crashed，没有给出报告）：0 分不是评出来的，成绩待核对、
    canvas.csv 里空着（以前记 0 分）。崩溃也这样算：评分器分不清是评分环境的问题，还是学生的代码结束了评分进程；
    两种都不用缓存，再运行一次会重评，仍然崩溃时由助教看 results/ 里的记录核对"""
    why = {
        st.GRADER_ERROR: "待核对：评分器出错（grader-error），这不是评出来的分数；修好之后再运行会重评",
        st.CRASHED: "待核对：评分进程崩溃、没有给出报告（crashed），0 分不是评出来的；再运行一次会重评，"
        "仍然崩溃时请助教看 results/ 里的记录核对",
    }
    return {
        r.get("roster_id") or r["student"]: why[r["status"]]
        for r in results
        if r.get("counted", True) and r.get("status") in st.NO_SCORE
    }


def _withheld(results: dict[str, dict], graded_now: bool, student_of: dict | None = None) -> str | None:
    """不写能导入的成绩表（grades_wide.csv、canvas.csv）的原因：全部崩溃或超时、或一大半超时，多半是评分环境或时间上限的问题，
    不是学生的问题（以前照样写 canvas.csv，全班 0 分）。只重评了缓存之外的几份时不算（缓存里好的结果也在 results 里）。
    student_of：每份结果属于哪个学生（``per_student.student_of``，没有列出的一份算一个人）"""
    if not graded_now or len(results) < 2:
        return None
    broken = [s for s, r in results.items() if r.get("status") in (*st.NO_SCORE, st.TIMEOUT)]
    if len(broken) == len(results):
        return (
            f"全部 {len(results)} 份都崩溃或超时了（例如 {results[broken[0]].get('message', '')[:120]}）：多半是评分环境"
            "或时间上限（--wall、--cell-timeout）的问题，不是学生的问题，所以没有写 grades_wide.csv 和 canvas.csv；"
            "修好之后再运行会重评这些提交"
        )
    failed = (st.ERROR, st.NO_EXPORT, st.TIMEOUT)
    if all(r.get("problems") and all(p.get("status") in failed for p in r["problems"]) for r in results.values()):
        return (
            f"全部 {len(results)} 份提交的每一道题都出错、超时或没有导出：多半是评分环境或选项"
            "（--memory-mb、--cell-timeout、--wall）的问题，例如课程自己的设置单元没有跑完，不是学生的问题，"
            "所以没有写 grades_wide.csv 和 canvas.csv"
        )
    # 按学生数：一个学生交几份都超时的笔记本（sleep、死循环）不能让全班的成绩表写不出来
    by_student: dict[str, list[dict]] = {}
    for sid, r in results.items():
        by_student.setdefault((student_of or {}).get(sid, sid), []).append(r)
    timeouts = [who for who, rs in by_student.items() if all(timed_out(r) for r in rs)]
    if len(timeouts) >= 2 and len(timeouts) >= len(by_student) / 2:
        return (
            f"{len(by_student)} 名学生里有 {len(timeouts)} 名的提交全都超时：多半是 --wall 或 --cell-timeout 给得太小"
            "（或机器太忙），所以没有写 grades_wide.csv 和 canvas.csv；放宽上限后再运行会重评超时的提交"
        )
    return None


def _held_book_params(results, book_files: list[str]) -> dict:
    """计入成绩的那一份写着书上的参数（没有签名）：他做的是网站上公开的练习，不是发给他的个人版。按他的参数判几乎全错，
    但这不是评出来的分数：成绩待核对（让他用自己的个人版重做，或由教师决定按书上的参数给分）"""
    return {
        r[
            "roster_id"
        ]: "待核对：交的是网站上公开的练习（笔记本里是书上的参数），不是发给他的个人版；请他用自己的个人版重做"
        for r in results
        if r.get("counted") and r.get("roster_id") and r.get("file") in book_files
    }


def _held_signed_for_other(results) -> dict:
    """计入成绩的那一份是用这个密钥发给另一位同学的个人版（签名对得上那位同学）：按他自己的参数评出的分数里，
    与参数无关的答案是那位同学的。不导出这个分数（散放的 LMS 文件名也是这样处理的，见 _identify），成绩待核对"""
    return {
        r["roster_id"]: f"待核对：交的是发给 {r['signed_for']} 的个人版（签名对得上），不是他自己的；请助教核对"
        for r in results
        if r.get("counted") and r.get("roster_id") and r.get("signed_for")
    }


def _not_copying_the_book(evidence: integrity.Report, book_files: list[str]) -> None:
    """用书上的参数做公开的练习，答案自然等于书上的答案：这不是抄袭的证据（以前列在 ta/integrity.md 的“需要核对”里）"""
    for finding in evidence.findings:
        if finding.file in book_files and finding.source == integrity.PUBLISHED:
            finding.flagged = False


def _held_without_file(earlier: dict[str, str], students, results: dict[str, dict], doubts: dict) -> dict:
    """花名册里这次没有文件的学生，有理由相信他们交了的：成绩“待核对”、canvas.csv 里不给分，而不是“没有提交”记 0 分。
    理由（doubts 的键，见 folder.Scan）：
    - 输出目录里有他以前的结果（这次只给了几份迟交的文件，别的学生的文件不在这次的路径里）；
    - 认得出是他的文件没有评（交了 .md、.zip 或符号链接）；
    - 这次只给了一部分提交（一个个文件、某个学生的文件夹）；
    - 有用这个密钥为不在花名册里的 id 生成的个人版（花名册里的 id 改过或写错了）；
    - 有认不出是谁交的笔记本（可能就是他的）"""
    graded = {r.get("roster_id") for r in results.values()} | {m for r in results.values() for m in r.get("group", [])}
    owned = doubts.get("owned_ignored", {})
    off_roster, unknown = doubts.get("off_roster", []), doubts.get("unidentified", [])
    why = {}
    for sid in (s.id for s in students if s.id not in graded):
        if sid in owned:
            why[sid] = f"待核对：交了文件但没有评：{owned[sid]}；请他交 .ipynb 笔记本，或由助教核对"
        elif sid in earlier:
            why[sid] = (
                f"待核对：以前评过（{earlier[sid]}，结果在 results/），这次给的路径里没有他的文件；"
                "重评一个学生时请照样给全班的提交目录（没变的提交用缓存，不重跑）"
            )
        elif doubts.get("partial"):
            why[sid] = f"待核对：{doubts['partial']}，没有看到他的文件：是没交，还是不在给的路径里？"
        elif off_roster:
            why[sid] = (
                f"待核对：没有对上的文件，而有 {len(off_roster)} 份用这个密钥生成的个人版写着不在花名册里的 id"
                f"（{'、'.join(off_roster[:5])}）：花名册里的 id 改过或写错了？核对花名册后重评"
            )
        elif unknown:
            why[sid] = (
                f"待核对：没有对上的文件，而有 {len(unknown)} 个笔记本认不出是谁交的（例如 {unknown[0]}，见 summary.md 的忽略的文件）："
                "可能有他的；核对后把文件放进 <id>/ 文件夹重评"
            )
    return why


def timed_out(res: dict) -> bool:
    """整份或某道题超时"""
    return res.get("status") == st.TIMEOUT or any(p.get("status") == st.TIMEOUT for p in res.get("problems", []))


def _final(res: dict) -> bool:
    """这份结果是不是定论：与别的提交同时评时超时、还没有单独重评过的不是（与 ``_cached`` 不用它作缓存是同一条规则）"""
    return not (timed_out(res) and not res.get("graded_alone"))


def _retry_timeouts_alone(todo: list[Found], results: dict[str, dict], ctx, record, jobs: int) -> list[str]:
    """几份同时评（-j > 1）时超时的提交，等别的都评完再单独重评一次：同时在评的另一份提交（比如一个占满 CPU 的学生）
    可能把它拖慢到超时。单独重评的结果取代第一次的（缓存的是它）；单独评也超时，才是它自己慢"""
    if jobs <= 1:
        return []
    again = [f for f in todo if f.sid in results and timed_out(results[f.sid])]
    done = []
    for f in again:
        if ctx.stop.is_set():
            break
        try:
            res = grade_submission(f, ctx)
        except Interrupted:
            break
        except Exception as exc:  # noqa: BLE001
            res = failed_result(f, ctx, st.GRADER_ERROR, f"{type(exc).__name__}: {exc}")
        res.setdefault("notes", []).append("第一次与别的提交同时评时超时，等别的评完后单独重评了一次：这是单独评的结果")
        res["graded_alone"] = True
        record(f, res)
        done.append(f.sid)
    return done


STALE = "stale-feedback"


def _set_aside_stale_feedback(out: Path, stems: set[str]) -> int:
    """以前评过、这次不在的提交的反馈移到 OUT/stale-feedback/（不删：它们由 results/ 里的结果写出，还能重新生成）"""
    moved = 0
    for stem in sorted(stems):
        path = out / "feedback" / f"{stem}.md"
        if path.is_file() and not path.is_symlink():
            (out / STALE).mkdir(exist_ok=True)
            os.replace(path, out / STALE / path.name)
            moved += 1
    return moved


def _feedback_not_of_this_run(out: Path, written: set[str]) -> set[str]:
    """feedback/ 里不是这次写的反馈（以前评过、这次不在的提交；以前是小组的组员、重新导出后不再是；被中断时还没评的）：
    要移开，免得当成这次的发出去。written 是这次写了反馈的名字（``_write_all_feedback``）"""
    folder = out / "feedback"
    if not folder.is_dir() or folder.is_symlink():
        return set()
    return {p.stem for p in folder.glob("*.md") if p.stem not in written}


def _drop_superseded_stale(out: Path, written: set[str]) -> None:
    """这次重写了反馈的学生，stale-feedback/ 里上一次移开的那份已经过时：删掉（不然同一个学生两边各有一份）"""
    folder = out / STALE
    if not folder.is_dir() or folder.is_symlink():
        return
    for stem in written:
        path = folder / f"{stem}.md"
        if path.is_file() and not path.is_symlink():
            path.unlink()


def _write_all_feedback(
    out: Path, results: list[dict], held: dict | set = frozenset(), failed: set[str] | None = None
) -> set[str]:
    """为这次的每份结果写 ``feedback/<id>.md``，缓存里的也重新写（由 results/ 里的结果生成，不重评），
    再写每个学生的（``_feedback_per_student``）；返回写出的名字，写不出来的名字加进 failed"""
    failed = failed if failed is not None else set()
    written: set[str] = set()
    for r in results:
        if r.get("counted") and (r.get("roster_id") or r.get("student")) in held:  # 以前：像已定的成绩
            r = {**r, "notes": [_held_note(held, r.get("roster_id") or r.get("student")), *r.get("notes", [])]}
        _feedback(out, r, written, failed)
    return written | _feedback_per_student(out, results, held, failed)


def _held_group_members(results, held_why: dict) -> dict[str, str]:
    """待核对的小组提交：拿同一份成绩的组员（自己没有文件的）也待核对（以前 canvas.csv 里照样给他们这份分）"""
    results = list(results)
    own = {r.get("roster_id") for r in results}
    out = {}
    for r in results:
        sid = r.get("roster_id")
        if not (r.get("counted") and sid in held_why):
            continue
        for member in r.get("group", []):
            if member not in own and member not in held_why:
                out[member] = held_why[sid]
    return out


def _held_note(held: dict | set, sid: str) -> str:
    """给学生的待核对说明：不点名、不说原因的细节（原因里可能有同学的 id），细节在助教的 totals.csv 里"""
    return HELD_FEEDBACK.get(held.get(sid) if isinstance(held, dict) else outputs.HELD, HELD_GENERIC)


def _feedback(out: Path, res: dict, written: set[str], failed: set[str]) -> None:
    """写 ``feedback/<res["student"]>.md``：写出的名字加进 written，写不出来的加进 failed 并说明（一份写不出来不影响别的）"""
    name = res.get("student")
    try:
        report.write_feedback(out, res)
        written.add(name)
    except Exception as exc:  # noqa: BLE001
        failed.add(name)
        print(f"评分器：写 {terminal(name)} 的反馈失败：{terminal(exc)}", file=sys.stderr)


def _without_feedback(out: Path, results: list[dict]) -> list[str]:
    """成绩表里有成绩、feedback/ 里却没有反馈文件的名字（每份结果、计入成绩的学生和组员）"""
    need = {r.get("student") for r in results}
    need |= {r.get("roster_id") for r in results if r.get("counted")}
    need |= {m for r in results if r.get("counted") for m in r.get("group", [])}
    return sorted(s for s in need if isinstance(s, str) and s and not (out / "feedback" / f"{s}.md").is_file())


HELD_GENERIC = "这次的成绩待老师核对后再定（不是最终成绩）；下面每道题的分数是评出来的，但还没有计入成绩"
HELD_FEEDBACK = {
    outputs.HELD: "你名下内容不同的文件超过了上限，有的没有评：这次的成绩待老师核对后再定（不是最终成绩）",
}
HELD_NOTES = {HELD_GENERIC, *HELD_FEEDBACK.values()}


def _feedback_per_student(
    out: Path, results: list[dict], held: dict | set = frozenset(), failed: set[str] | None = None
) -> set[str]:
    """同一个学生有几份提交时，``feedback/<学生 id>.md`` 是计入成绩的那一份的反馈，并列出别的文件；
    held 里的学生（成绩待核对：花名册 id → 原因）另外说明成绩待老师核对。返回写出的名字"""
    failed = failed if failed is not None else set()
    written: set[str] = set()
    groups: dict[str, list[dict]] = {}
    for r in results:
        if r.get("roster_id"):
            groups.setdefault(r["roster_id"], []).append(r)
    for sid, group in groups.items():
        counted = [r for r in group if r.get("counted")]
        if (len(group) < 2 and sid not in held) or not counted:
            continue
        others = "、".join(f"{r['file']}（{r['points']:g} 分）" for r in group if r is not counted[0])
        note = f"你名下有 {len(group)} 个文件评了分：计入的是 {counted[0]['file']}（总分最高）" + (
            f"，另外的 {others} 也评了" if others else ""
        )
        notes = [note] if len(group) > 1 else []
        notes += [n for n in counted[0].get("notes", []) if n not in HELD_NOTES]
        if sid in held:
            notes.insert(0, _held_note(held, sid))
        _feedback(out, {**counted[0], "student": sid, "notes": notes}, written, failed)
    # 小组提交里自己没有文件的组员：拿同一份成绩，也拿同一份反馈（以前他们没有反馈文件）
    for r in results:
        if not r.get("counted"):
            continue
        for member in r.get("group", []):
            if member in groups:
                continue
            note = f"小组提交：按 {r.get('roster_id')} 交的笔记本评分，组员拿同一份成绩"
            notes = [note, *(n for n in r.get("notes", []) if n not in HELD_NOTES)]
            if member in held:
                notes.insert(0, _held_note(held, member))
            _feedback(out, {**r, "student": member, "notes": notes}, written, failed)
    return written


def _write_gradebook(
    out: Path, results: dict[str, dict], meta: dict, unfinished: set[str] = frozenset(), held: dict | None = None
) -> None:
    """unfinished：还没评完的学生的结果（被中断时）：照样列出，但不计入成绩；held：待核对的学生 → 原因（review 一列）"""
    try:
        select_counted(list(results.values()))
        for sid in unfinished & results.keys():
            results[sid]["counted"] = False
        report.write_gradebook(out, list(results.values()), meta, held or {})
    except Exception as exc:  # noqa: BLE001  成绩册写不出来不能让别的提交丢掉结果；每份的 results/*.json 都在
        print(f"评分器：写成绩册失败：{terminal(exc)}", file=sys.stderr)


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
