"""Gradescope 的自动评分器（autograder）

    shardlab-grade gradescope --secret-file 密钥 --roster 花名册 --chapter 5 --out autograder.zip [--weights w.csv]
    shardlab-grade gradescope-dry-run autograder.zip 笔记本.ipynb --sid 学号      # 上传之前在本机试一遍

**zip 里没有密钥。** 容器需要的东西在生成 zip 时就算好：花名册上每个学生这一章的参数（``grader/variants.json``，
只有学号、邮箱和参数，没有姓名）、函数答案隐藏输入的种子、权重和章（``grader/config.json``）、发布版的答案表。
这些文件在容器里只有 root 能读（``setup.sh`` 与 ``run_autograder`` 都把 ``grader/`` 设成 0700、文件 0600）。

**学生的代码不是以 root 运行。** ``setup.sh`` 建一个专用的非特权用户 ``shardlab-student``；评分时先试 bubblewrap
（容器允许时用它：另加 pid、网络命名空间），不行就只换成这个用户（``sandbox`` 的 uid 模式），资源限制与本机相同；
两样都做不到（不是 root、没有 setpriv）时不评分，结果里写明原因。``results.json`` 的 output 里写着用的是哪种隔离。
笔记本跑完后，这个用户的每一个进程都被杀掉并等到一个不剩，评分器之后才（原子地）写 ``results.json``；
结果目录属于 root，学生的进程本来也写不进去。

**花名册改过也不冤枉人。** 个人版的元数据里有参数的 Ed25519 签名（``variants.sign``）；zip 里带着这一章的验证公钥
（``grader/public_key.json``，只能验证，签不了名）。笔记本里的参数与 zip 里的不同、但签名对得上时，按笔记本里的数评分。

**一个 zip 只评一章**（``--chapter`` 必须给）：别的章的笔记本得 0 分并说明原因，满分仍是这一章的满分。

**选哪个文件。** ``submission/`` 下所有 ``.ipynb``，不看以 ``.`` 开头的（``.ipynb_checkpoints``、macOS 的 ``._x``）
和 ``__MACOSX``；有几个时，优先笔记本元数据里写着这一章、这位学生（或组员之一）的，其次含这一章答案标签的，
同一级里先取作答了的题多的（与发下去的练习不同的答案单元），再按路径排序；output 里写明评的是哪个文件、为什么。

**小组提交。** ``users`` 里有几个人时，按笔记本的签名是哪位组员的个人版就按谁的评分；没有一位组员的签名对得上时，
按笔记本里写的学生 id 是哪位组员；都没有时按第一位在花名册里的组员评分，并说明（``group_member``）。
小组是提交者自己填的，所以结果里另有一项只有教师看得到的核对说明（``group_review_note``）；
生成 zip 时给 ``--groups hold``，小组提交一律不给分、待助教核对。

目录约定（``$AUTOGRADER_ROOT``，默认 ``/autograder``）：``source/`` 是 zip 的内容，``submission/`` 是学生上传的文件，
``submission_metadata.json`` 是提交信息（学号取 ``users[i].sid``，没有时取 ``email``），结果写到 ``results/results.json``。
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from shardlab import atomic
from shardlab.exercise import answers, problems, roster, variants
from shardlab.grade import inject, judge, outputs, personal, report
from shardlab.grade import status as st
from shardlab.grade.course import Course, CourseError
from shardlab.grade.folder import MAX_SUBMISSION_BYTES, Found, Unreadable, read_submission
from shardlab.grade.key import AnswerKey, AnswerKeyError, load_key, read_key
from shardlab.grade.sandbox import PACKAGE, Limits, Sandbox, bwrap_problem, free_uid, reap_uid, stage_library
from shardlab.grade.submission import Context, grade_submission
from shardlab.untrusted import terminal

STUDENT_USER = "shardlab-student"
PRIVATE = "grader"  # zip 里只有 root 能读的目录
CHAPTERS = (5, 6)
GROUPS = ("shared", "hold")  # 小组提交：全组拿签名所属组员的分（教师在结果里看到一项核对说明）/ 一律不给分、待核对
ZIP_MODE = 0o600  # zip 里有全班的参数
SANDBOX_ENV = "SHARDLAB_GRADESCOPE_SANDBOX"  # 只在本机试运行时用：强制某种隔离（容器里没有人会设它）

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope 构建镜像时运行一次：Python 3.11、锁定的依赖、Jupyter 内核、bubblewrap 与 setpriv、学生代码用的专用用户
set -euo pipefail
cd /autograder/source
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends bubblewrap util-linux ca-certificates software-properties-common
if ! command -v python3.11 >/dev/null; then
  apt-get install -y -q python3.11 python3.11-venv || {{
    add-apt-repository -y ppa:deadsnakes/ppa && apt-get update -q && apt-get install -y -q python3.11 python3.11-venv; }}
fi
python3.11 -m venv /autograder/venv
/autograder/venv/bin/python -m pip install -q -r requirements.txt
/autograder/venv/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3"
id -u {STUDENT_USER} >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \\
  --shell /usr/sbin/nologin {STUDENT_USER}
chown -R root:root /autograder/source/{PRIVATE}
chmod 700 /autograder/source/{PRIVATE}
chmod 600 /autograder/source/{PRIVATE}/*
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope 为每份提交运行一次（以 root）；AUTOGRADER_ROOT 默认 /autograder（本机试运行用临时目录代替）
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="${SHARDLAB_PYTHON:-$ROOT/venv/bin/python}"
export PYTHONPATH="$ROOT/source/lib"
export COURSE_PROFILE=cpu
export JUPYTER_PATH="${JUPYTER_PATH:-$ROOT/venv/share/jupyter}"
mkdir -p "$ROOT/results"
exec "$PY" -m shardlab.grade.gradescope run --root "$ROOT"
"""


class GradescopeError(RuntimeError):
    """zip 写不出来（缺参数、花名册或密钥有问题）"""


class IsolationError(RuntimeError):
    """容器里没法安全地运行学生的笔记本"""


# ---- 生成 zip（教师的机器上） ----
def build_zip(
    course: Course,
    secret_file: Path,
    out: Path,
    roster_file: Path,
    chapter: int,
    weights_file: Path | None = None,
    groups: str = "shared",
) -> Path:
    """写出 autograder.zip（0600）：脚本、课程库、依赖、练习笔记本、发布版答案表、算好的参数与种子；没有密钥"""
    if groups not in GROUPS:
        raise GradescopeError(f"--groups 必须是 {'、'.join(GROUPS)} 之一，收到 {groups!r}")
    if chapter not in CHAPTERS:
        raise GradescopeError(f"--chapter 必须是 {'、'.join(map(str, CHAPTERS))} 之一：一个 Gradescope 作业只评一章")
    secret = variants.read_secret(secret_file)
    students = roster.read(roster_file)
    weights = outputs.read_weights(weights_file)
    bad = outputs.weight_problems(weights, chapter)
    if bad:
        raise GradescopeError("；".join(bad))
    key = load_key(None, course)
    assignment = f"ch{chapter:02d}"
    # 与本机评分同一道核对（PersonalKey.build）：解答笔记本的答案与参考算法在发布版上相差超过 1e-9 时不写 zip
    # （以前照样写出，容器里建答案表时才出错，全班每份提交都是“评分器出错”）
    personal.PersonalKey.build(key, students, secret, (assignment,))
    drawn = variants.for_class(secret, assignment, [s.id for s in students])
    config = {
        "chapter": chapter,
        "seed": personal.hidden_seed(secret),
        "weights": weights,
        "student_user": STUDENT_USER,
        "groups": groups,
    }
    people = [{"id": s.id, "email": s.email} for s in students]  # 只有学号和邮箱：姓名、LMS 用户号容器里用不到
    files: dict[str, bytes] = {
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        "requirements.txt": (course.root / "requirements.txt").read_bytes(),
        f"exercises/ch{chapter:02d}_exercises.ipynb": course.exercise(chapter).read_bytes(),
        f"{PRIVATE}/config.json": json.dumps(config, sort_keys=True).encode(),
        f"{PRIVATE}/answer_key.json": json.dumps(key.entries, ensure_ascii=False, sort_keys=True).encode(),
        f"{PRIVATE}/roster.json": json.dumps(people, ensure_ascii=False).encode(),
        f"{PRIVATE}/variants.json": json.dumps(
            {sid: {assignment: p} for sid, p in drawn.items()}, ensure_ascii=False, sort_keys=True
        ).encode(),
        # 这一章验证参数签名的公钥：容器里能确认笔记本里的参数是当初发给这个学生的（花名册后来改过时）；伪造不出签名
        f"{PRIVATE}/public_key.json": json.dumps({assignment: variants.public_key(secret, assignment).hex()}).encode(),
    }
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[f"lib/shardlab/{path.relative_to(PACKAGE).as_posix()}"] = path.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # 固定时间：同样的输入得到同样的 zip
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o600 if name.startswith(PRIVATE) else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    atomic.write(out, buf.getvalue(), ZIP_MODE)
    return out


# ---- 容器里：评一份提交 ----
def members(metadata: dict) -> list[tuple[str, ...]]:
    """每位提交者能用来对花名册的值（学号在前，邮箱在后；空的不要），按 users 的顺序；小组提交有几个"""
    users = metadata.get("users") if isinstance(metadata, dict) else None
    out = []
    for user in users if isinstance(users, list) else []:
        if not isinstance(user, dict):
            continue
        values = tuple(
            value.strip()[:200]
            for value in (user.get("sid"), user.get("email"))
            if isinstance(value, str) and value.strip()
        )
        if values:
            out.append(values)
    return out


def student_of(metadata: dict) -> str | None:
    """第一位提交者的学号（没有时邮箱）"""
    found = members(metadata)
    return found[0][0] if found else None


def on_roster(group: list[tuple[str, ...]], people: list[dict]) -> list[str]:
    """提交者（members 的结果）对上的花名册 id，去重、按提交者的顺序：学号对不上时再试邮箱（与本机评 Gradescope 导出时相同）"""
    ids = {roster.normalize(p["id"]): p["id"] for p in people}
    emails = {roster.normalize(p["email"]): p["id"] for p in people if p.get("email")}
    found = []
    for values in group:
        match = next((ids[roster.normalize(v)] for v in values if roster.normalize(v) in ids), None)
        match = match or next((emails[roster.normalize(v)] for v in values if roster.normalize(v) in emails), None)
        # Gradescope 的花名册经过 Excel 时学号开头的 0 没了（0101 → 101）：去掉开头的 0 之后只对上一个人时也算
        match = match or next((m for v in values if (m := roster.without_leading_zeros(ids, v))), None)
        if match is not None and match not in found:
            found.append(match)
    return found


def _results(score: float, output: str, tests: list[dict]) -> dict:
    return {"score": score, "output": output, "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def _write(root: Path, res: dict) -> None:
    report.atomic_write(root / "results" / "results.json", json.dumps(res, ensure_ascii=False, indent=1), 0o644)


def _fail(root: Path, message: str, chapter: int | None = None, weights: dict | None = None) -> dict:
    """学生的提交里没有可评的东西（没有笔记本）：0 分；每道题一项（0 分，满分照旧），Gradescope 上不会显示成 0 / 0

    评分器自己的问题不走这里，见 ``_grader_error``"""
    tests = []
    for spec in answers.chapter_answers(f"ch{chapter:02d}") if chapter else ():
        tests.append({"name": f"{spec.id}：{spec.meaning}", "score": 0.0, "max_score": (weights or {}).get(spec.id, 1.0),
                      "status": "failed", "output": message, "visibility": "visible"})  # fmt: skip
    res = _results(0.0, message, tests)
    _write(root, res)
    return res


def _grader_error(root: Path, message: str) -> dict:
    """评分器自己出了问题（配置、提交信息、花名册、隔离、异常）：不给分，而不是 0 分

    results.json 里没有 ``score``，也没有一项测试（Gradescope 文档：``score`` 只在每项测试都有分时可以省略，
    没有测试就没有可加的分）：Gradescope 记不下一个数。学生看到的 output 说评分器出错、请联系教师；
    同一段话打印到 stdout（Gradescope 的 “Autograder Output”，教师总能看到）。修好 zip 之后教师用 “Regrade” 重评。
    """
    text = (
        f"评分器出错（autograder error），这次没有给分：{message}。"
        "这不是你的作业的问题，分数不是 0：请联系教师或助教（contact course staff），修好之后会重新评分"
    )
    print(f"shardlab autograder error: {text}", flush=True)
    res = {"output": text, "visibility": "visible", "stdout_visibility": "visible", "tests": []}
    _write(root, res)
    return res


HELD_MARK = "held for review"
STAFF_TEST = "助教核对（staff only）"


HELD_OTHER = "你交的笔记本是发给另一位同学的个人版，不是发给你的那一份。请交发给你的个人版"
HELD_GROUP = "这个作业的个人版是每人一份，教师设定小组提交要先核对（按哪位组员的个人版评、其余组员算不算交了）"


def _held(root: Path, staff_note: str, why: str = HELD_OTHER) -> dict:
    """提交要助教核对：不给分（results.json 里没有 score，与 _grader_error 相同），学生看到的话不点名、不指控"""
    text = f"这次没有给分，成绩待助教核对（{HELD_MARK}）：{why}；如有疑问请联系助教（contact course staff）"
    print(f"shardlab autograder: held for review: {staff_note}", flush=True)  # Autograder Output：只有教师看得到
    res = {"output": text, "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    _write(root, res)
    return res


def lock_down(root: Path) -> None:
    """只有 root 能读 grader/ 和提交信息；结果目录属于 root、别人写不进去（setup.sh 已经做过；每次再做一遍）"""
    private = root / "source" / PRIVATE
    if private.is_dir():
        private.chmod(0o700)
        for path in private.iterdir():
            path.chmod(0o600)
    meta = root / "submission_metadata.json"
    if meta.exists():
        meta.chmod(0o600)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    results.chmod(0o755)


def choose_isolation(config: dict) -> tuple[str | None, int | None, str]:
    """(模式, uid, 说明)：bubblewrap 能用就用；否则以 root 运行时换成专用用户；都不行时模式为 None"""
    forced = os.environ.get(SANDBOX_ENV)
    if forced == "rlimit":
        return "rlimit", None, "只有资源限制（本机试运行时明确要求的；Gradescope 里不会这样）"
    user = config.get("student_user", STUDENT_USER)
    try:
        uid = pwd.getpwnam(user).pw_uid
        who = f"用户 {user}（uid {uid}）"
    except KeyError:
        uid, who = None, "一个随机的非特权 uid（没有找到 setup.sh 建的用户）"
    if forced != "uid":
        problem = bwrap_problem()
        if problem is None:
            return "bwrap", uid, f"bubblewrap（pid、网络命名空间）+ {who} + 资源限制"
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None, None, "评分器不是以 root 运行，或没有 setpriv：不能把学生的代码换成非特权用户"
    return "uid", uid if uid is not None else free_uid(), f"{who} + 资源限制（没有命名空间）"


def _candidates(submission: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(submission):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__MACOSX")
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.startswith(".") or not name.lower().endswith(".ipynb") or path.is_symlink():
                continue
            out.append(path)
    return out


def choose_notebook(
    submission: Path, chapter: int, group: list[str], blank: dict[str, str] | None = None
) -> tuple[Path | None, inject.Peek | None, str]:
    """(文件, 读出的元数据, 说明)；规则见模块说明。blank：发下去的练习每个答案单元的摘要（``inject.answer_digests``）：
    同一级里先取作答了的题多的（以前按路径：一起传上来的空白副本 ``ch05_exercises (1).ipynb`` 排在真文件前面，得 0 分）"""
    assignment = f"ch{chapter:02d}"
    folded = {roster.normalize(g) for g in group}
    blank = blank or {}
    scored = []
    for path in _candidates(submission):
        try:
            peek = inject.peek(inject.read_notebook(read_submission(path)))
        except (inject.SubmissionError, Unreadable, OSError):
            peek = None
        rank = 3
        if peek is not None and peek.chapter == chapter:
            rank = 1
            if peek.assignment == assignment and peek.student and roster.normalize(peek.student) in folded:
                rank = 0
        elif peek is not None and peek.chapter is not None:
            rank = 2
        answered = sum(blank.get(t) != h for t, h in peek.answer_cells.items()) if peek is not None else 0
        scored.append((rank, -answered, path.relative_to(submission).as_posix(), path, peek))
    if not scored:
        return None, None, ""
    scored.sort(key=lambda t: t[:3])
    rank, _, rel, path, peek = scored[0]
    why = {
        0: "元数据写着这一章和你的学号",
        1: "含这一章的答案标签",
        2: "不是这一章的练习，但没有更合适的",
        3: "没有更合适的",
    }
    tie = ""
    if len(scored) > 1 and scored[1][0] == rank:
        tie = "，与别的文件作答的题一样多，取路径排在前面的" if scored[1][1] == scored[0][1] else "，作答的题最多"
    note = f"评分的文件：{rel}（{why[rank]}{tie}）"
    if len(scored) > 1:
        others = "、".join(t[2] for t in scored[1:6]) + ("…" if len(scored) > 6 else "")
        note += f"；另外 {len(scored) - 1} 个笔记本没有评：{others}"
    return path, peek, note


def run(root: Path) -> dict:
    """评 root/submission 里的笔记本，写出 root/results/results.json，返回它的内容"""
    lock_down(root)
    source = root / "source"
    private = source / PRIVATE
    try:
        config = json.loads((private / "config.json").read_text(encoding="utf-8"))
        chapter = int(config["chapter"])
        weights = {k: float(v) for k, v in (config.get("weights") or {}).items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return _grader_error(root, f"评分器的配置读不了（{exc}），教师要重新生成 autograder.zip")
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _grader_error(root, f"读不了 submission_metadata.json（{exc}），没法知道这是哪位学生的提交")
    group = members(metadata)
    if not group:
        return _grader_error(root, "submission_metadata.json 里没有学号（users[].sid）或邮箱，没法找到这位学生的个人版")
    people = json.loads((private / "roster.json").read_text(encoding="utf-8"))
    known = on_roster(group, people)
    if not known:
        shown = "、".join(terminal(" / ".join(values), 80) for values in group)
        return _grader_error(root, f"学号 {shown} 不在 zip 的花名册（roster）里，个人版按花名册生成")
    try:
        blank = inject.answer_digests(
            inject.read_notebook((source / "exercises" / f"ch{chapter:02d}_exercises.ipynb").read_bytes())
        )
    except (OSError, inject.SubmissionError):
        blank = {}
    path, peek, file_note = choose_notebook(root / "submission", chapter, known, blank)
    if path is None:
        return _fail(root, f"提交里没有 .ipynb 笔记本：请上传你的 ch{chapter:02d}_exercises.ipynb", chapter, weights)
    assignment = f"ch{chapter:02d}"
    variants_doc = json.loads((private / "variants.json").read_text(encoding="utf-8"))
    public = json.loads((private / "public_key.json").read_text(encoding="utf-8"))
    public_keys = {a: bytes.fromhex(h) for a, h in public.items()}
    students = [roster.Student(p["id"], "", 0) for p in people]
    base = read_key(private / "answer_key.json")
    key = personal.PersonalKey.build(
        base, students, None, (assignment,), variants_doc, int(config["seed"]), public_keys
    )
    sid, group_note, group_staff = known[0], "", ""
    if len(group) > 1:
        sid, group_note = group_member(known, peek, key, assignment, len(group))
        group_staff = group_review_note(sid, known, len(group))
        if config.get("groups") == "hold":
            return _held(root, group_staff, HELD_GROUP)
    mode, uid, isolation = choose_isolation(config)
    if mode is None:
        return _grader_error(root, f"评分器不能安全地运行你的笔记本（{isolation}）")
    issued_note = ""
    if peek is not None and peek.chapter == chapter:
        written = problems.written(assignment, peek.param_sources)
        if written != key.params[sid][assignment] and key.authentic(sid, assignment, written, peek.tag):
            key.issue(sid, assignment, dict(written))  # 花名册在生成个人版之后改过：按当初发给这个学生的数评分
            issued_note = "按你的笔记本里（由教师的密钥生成、签名对得上）的题目参数评分"
    try:
        res = _grade(root, path, sid, chapter, key, int(config["seed"]), weights, mode, uid, source)
    except IsolationError as exc:
        return _grader_error(root, f"评分器不能安全地运行你的笔记本（{exc}）")
    if uid is not None:
        reap_uid(uid)  # 评分器写结果之前，学生的进程一个不剩
    if res.get("status") in st.NO_SCORE:  # 没有评出分数：不记 0 分（与本机评分的“待核对”相同）
        return _grader_error(root, st.describe(res["status"], res.get("message", "")))
    if res.get("signed_for"):  # 整份是发给另一位同学的个人版：与参数无关的答案是他的，不记分（与本机评分相同）
        return _held(root, f"学号 {sid}：交的是发给 {res['signed_for']} 的个人版（签名对得上）")
    return _report(root, res, chapter, weights, [f"学号 {sid}，第 {chapter} 章", group_note, file_note, issued_note,
                                                   f"隔离：{isolation}"], group_staff)  # fmt: skip


def group_member(known: list[str], peek, key: personal.PersonalKey, assignment: str, size: int) -> tuple[str, str]:
    """小组提交按哪位组员的个人版评分：(花名册 id, 给学生的说明)。签名（教师的密钥为某位组员签的参数）说了算；
    没有一位组员的签名对得上时，才看笔记本元数据里写的学生 id（谁都能改），再没有就按第一位组员。
    以前只看元数据里写的 id：组员的笔记本写着另一位组员的 id 时按错的人评，学生看到“你交的笔记本是发给另一位同学的个人版”"""
    if peek is not None and peek.tag and peek.chapter is not None and f"ch{peek.chapter:02d}" == assignment:
        try:
            written = problems.written(assignment, peek.param_sources)
        except Exception:  # noqa: BLE001  不可信的输入
            written = None
        k = key.owner(known, assignment, peek.tag, written)
        if k is not None:
            return k, f"小组提交（{size} 人）：笔记本的签名表明它是组员 {k} 的个人版，按 {k} 的个人版评分"
    claimed = peek.student if peek is not None else None
    match = next((k for k in known if claimed and roster.normalize(claimed) == roster.normalize(k)), None)
    if match:
        return match, f"小组提交（{size} 人）：笔记本里写的学生 id 是组员 {match}，按 {match} 的个人版评分"
    return known[0], f"小组提交（{size} 人）：笔记本里没有写组员的 id，按第一位组员 {known[0]} 的个人版评分"


def group_review_note(sid: str, known: list[str], size: int) -> str:
    """给教师的小组说明（results.json 里一项 hidden 的测试，学生看不到）：全组拿谁的个人版的分，其余组员的个人版没交

    Gradescope 上小组是提交者自己填的：拿一位同学的个人版、把他加进小组，全组（包括提交者）就拿这份分数。
    签名只能说明笔记本是谁的个人版，说明不了组员真的一起做了；要助教看一眼"""
    others = [k for k in known if k != sid]
    off = size - len(known)
    rest = "、".join(others) if others else "没有"
    tail = f"；另有 {off} 位组员不在花名册上" if off else ""
    return (
        f"小组提交（{size} 人）：按组员 {sid} 的个人版评分，全组拿这份成绩；其余组员（{rest}）自己的个人版没有评{tail}。"
        "小组是提交者在 Gradescope 上自己填的：请确认这几位确实一起做了这份作业；"
        "想让小组提交一律先核对，用 shardlab-grade gradescope --groups hold 重新生成 zip"
    )


def _grade(root, path, sid, chapter, key: AnswerKey, seed: int, weights, mode, uid, source: Path) -> dict:
    inputs = judge.hidden_inputs(seed)
    orders = {chapter: inject.exercise_order(source / "exercises" / f"ch{chapter:02d}_exercises.ipynb", chapter)}
    stage = Path(tempfile.mkdtemp(prefix="shardlab-stage-"))
    try:
        staged = stage_library(stage / "lib")
        stage.chmod(0o755)
        sandbox = Sandbox(staged, Limits(), mode=mode, workdir=stage, uid=uid)
        problem = sandbox.probe()
        if problem:
            raise IsolationError(problem)
        ctx = Context(key, seed, inputs, sandbox, chapter, orders, workdir=stage, weights=weights)
        rel = path.relative_to(root / "submission").as_posix()
        found = Found(path, rel, os.fsencode(rel), os.fsencode(sid), sid, roster_id=sid, how="Gradescope 的学号")
        return grade_submission(found, ctx)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _report(root: Path, res: dict, chapter: int, weights: dict, notes: list[str], staff: str = "") -> dict:
    tests = []
    for prob in res["problems"]:
        spec = answers.ANSWERS.get(prob["id"])
        tests.append(
            {
                "name": f"{prob['id']}：{spec.meaning}" if spec else prob["id"],
                "score": prob["points"],
                "max_score": prob["max_points"],
                "status": "passed" if prob.get("verdict") == st.CORRECT else "failed",
                "output": st.describe(prob["status"], prob.get("message", "")),
                "visibility": "visible",
            }
        )
    lines = [n for n in notes if n]
    if res["status"] != st.GRADED:
        lines.append(f"整份提交：{st.describe(res['status'], res.get('message', ''))}")
    lines += res.get("notes", [])[:5]
    for err in res.get("errors", [])[:5]:
        where = f"第 {err['cell']} 个代码单元" if err.get("cell") else "评分单元"
        lines.append(f"{where}出错：{err.get('summary')}")
    if staff:  # 只给教师看的一项（Gradescope 的 hidden：学生永远看不到），0 分、满分 0，不影响总分
        print(f"shardlab autograder: {staff}", flush=True)
        tests.append({"name": STAFF_TEST, "score": 0.0, "max_score": 0.0, "status": "passed", "output": staff,
                      "visibility": "hidden"})  # fmt: skip
    out = _results(res["points"], "\n".join(lines), tests)
    _write(root, out)
    return out


# ---- 本机试运行 ----
def _safe_extract(zip_path: Path, dest: Path) -> None:
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():
            name = Path(info.filename)
            if name.is_absolute() or ".." in name.parts or info.file_size > 64 * MAX_SUBMISSION_BYTES:
                raise GradescopeError(f"zip 里有不安全的路径或过大的文件：{info.filename!r}")
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (info.external_attr >> 16) & 0o777
            target.chmod(mode or 0o644)


def dry_run(zip_path: Path, notebooks: list[Path], users: list[dict], keep: Path | None = None,
            sandbox: str | None = None) -> dict:  # fmt: skip
    """像 Gradescope 那样在一个临时的 /autograder 目录里运行 zip 里的 run_autograder，返回 results.json 的内容"""
    names = [Path(nb).name for nb in notebooks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # Gradescope 的提交里一个名字只有一个文件：后一个会悄悄盖掉前一个
        raise GradescopeError(f"几个笔记本同名（{'、'.join(twice)}）：一次试运行每个名字只能给一个，请改名或分几次试")
    if keep is not None and os.path.lexists(keep):  # 以前：沿用上一次留下的笔记本，还把教师给的目录改成 0755
        raise GradescopeError(
            f"--keep 的目录 {keep} 已经存在：试运行要一个新的目录（它会建出来），请换一个名字或先删掉它"
        )
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="autograder-"))
    try:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        _safe_extract(zip_path, root / "source")
        (root / "submission").mkdir(exist_ok=True)
        for nb in notebooks:
            shutil.copy(nb, root / "submission" / Path(nb).name)
        (root / "submission_metadata.json").write_text(json.dumps({"users": users}), encoding="utf-8")
        env = dict(os.environ, AUTOGRADER_ROOT=str(root), SHARDLAB_PYTHON=sys.executable,
                   JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))  # fmt: skip
        env.pop(SANDBOX_ENV, None)
        if sandbox:
            env[SANDBOX_ENV] = sandbox
        proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                              text=True, timeout=900)  # fmt: skip
        path = root / "results" / "results.json"
        if not path.exists():
            raise GradescopeError(
                f"run_autograder 没有写出 results.json（退出码 {proc.returncode}）：{proc.stderr[-1500:]}"
            )
        return json.loads(path.read_text(encoding="utf-8"))
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def signature_warnings(zip_path: Path, notebooks: list[Path], sids: list[str]) -> list[str]:
    """教师试运行时：个人版笔记本的签名与 zip 里（为这些学号）算好的对不上，说明生成 zip 的密钥或花名册不是生成个人版时的那个"""
    with zipfile.ZipFile(zip_path) as z:
        config = json.loads(z.read(f"{PRIVATE}/config.json"))
        public = json.loads(z.read(f"{PRIVATE}/public_key.json"))
        issued = json.loads(z.read(f"{PRIVATE}/variants.json"))
    assignment = f"ch{int(config['chapter']):02d}"
    key = bytes.fromhex(public[assignment])
    by_id = {roster.normalize(k): k for k in issued}
    peeks = []
    for nb in notebooks:
        try:
            peeks.append((nb, inject.peek(inject.read_notebook(read_submission(Path(nb))))))
        except (inject.SubmissionError, Unreadable, OSError):
            continue
    right_chapter = any(p.chapter is not None and f"ch{p.chapter:02d}" == assignment for _, p in peeks)
    out = []
    for nb, peek in peeks:
        if peek.chapter is not None and f"ch{peek.chapter:02d}" != assignment and right_chapter:
            continue  # 评的会是那份本章的笔记本
        if peek.chapter is not None and f"ch{peek.chapter:02d}" != assignment:
            out.append(f"{Path(nb).name} 是第 {peek.chapter} 章的练习，这个 zip 评第 {assignment[2:].lstrip('0')} 章")
            continue
        sid = by_id.get(roster.normalize(peek.student or ""))
        wanted = {by_id.get(roster.normalize(s)) for s in sids}
        if _signed_by_one_of(key, assignment, issued, [by_id.get(roster.normalize(s)) for s in sids], peek):
            continue  # 签名是哪位 --sid 的，容器就按谁评（group_member）：笔记本里写的 id 谁都能改，不看它
        if peek.student and sid is None:
            out.append(
                f"{Path(nb).name} 是发给 {peek.student} 的个人版，但这个学号不在 zip 的花名册里：生成 zip 用的 --roster 对吗？"
            )
            continue
        if sid is not None and sid not in wanted:  # 以前只是结果里的一句说明，退出码 0
            out.append(
                f"{Path(nb).name} 是发给 {sid} 的个人版，--sid 给的是 {'、'.join(sids)}：按 --sid 的参数评，分数不是这份笔记本该得的"
            )
            continue
        if not peek.tag or sid is None or sid not in wanted:
            continue
        written = problems.written(assignment, peek.param_sources)
        derived = problems.from_values(assignment, issued[sid][assignment])
        if not (
            variants.verify(key, assignment, sid, derived, peek.tag)
            or variants.verify(key, assignment, sid, written, peek.tag)
        ):
            out.append(
                f"{Path(nb).name} 是发给 {sid} 的个人版，但它的签名与这个 zip 对不上："
                "生成 zip 用的 --secret-file 或 --roster 与生成个人版（shardlab-assign）时的不同？学生会按错的数被评分"
            )
    return out


def _signed_by_one_of(key: bytes, assignment: str, issued: dict, candidates: list, peek) -> str | None:
    """candidates 里第一位签名对得上的学生（签的是发给他的参数，或笔记本里写的参数）"""
    if not peek.tag:
        return None
    try:
        written = problems.written(assignment, peek.param_sources)
    except Exception:  # noqa: BLE001  不可信的输入
        written = None
    for sid in candidates:
        if sid is None or assignment not in issued.get(sid, {}):
            continue
        derived = problems.from_values(assignment, issued[sid][assignment])
        if variants.verify(key, assignment, sid, derived, peek.tag) or (
            written is not None and variants.verify(key, assignment, sid, written, peek.tag)
        ):
            return sid
    return None


def dry_run_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="shardlab-grade gradescope-dry-run",
        description="在本机用与 Gradescope 容器里相同的隔离运行 autograder.zip，打印学生会看到的结果",
    )
    p.add_argument("zip", type=Path, help="shardlab-grade gradescope 写出的 autograder.zip")
    p.add_argument("notebooks", type=Path, nargs="+", help="当作学生上传的笔记本")
    p.add_argument("--sid", action="append", required=True, help="提交者的学号（小组提交时重复给出）")
    p.add_argument("--keep", type=Path, help="把模拟的 /autograder 目录留在这里（默认用完删掉）")
    p.add_argument(
        "--sandbox", choices=["uid", "rlimit"], help="强制一种隔离（默认与容器里相同：bubblewrap，不行就 uid）"
    )
    args = p.parse_args(argv)
    try:
        res = dry_run(args.zip, args.notebooks, [{"sid": s, "email": ""} for s in args.sid], args.keep, args.sandbox)
    except (GradescopeError, OSError, zipfile.BadZipFile, subprocess.SubprocessError) as exc:
        print(f"shardlab-grade gradescope-dry-run：{exc}", file=sys.stderr)
        return 2
    warnings = signature_warnings(args.zip, args.notebooks, args.sid)
    held = "score" not in res and HELD_MARK in res["output"]
    if held:  # 交的是发给另一位同学的个人版：没有分数，待助教核对（不是评分器出错）
        warnings.append(f"这份提交没有分数，待助教核对：{res['output']}")
    elif "score" not in res:  # 评分器出错（学号不在花名册里、隔离不行……）：Gradescope 上没有分数
        warnings.append(f"评分器出错，这份提交没有分数（不是 0 分）：{res['output']}")
    elif all(t["output"] == res["output"] and not t["score"] for t in res["tests"]):  # 整份 0 分（没有笔记本）
        warnings.append(f"这份提交没有评分：{res['output']}")
    for warning in warnings:
        print(f"警告：{warning}", file=sys.stderr)
    total = sum(t["max_score"] for t in res["tests"])
    score = (
        f"{res['score']:g} / {total:g}"
        if "score" in res
        else "没有分数（待核对）"
        if held
        else "没有分数（评分器出错）"
    )
    print(f"得分 {score}\n{res['output']}")
    for t in res["tests"]:
        if t.get("visibility") == "hidden":  # 只给教师看的核对说明：学生在 Gradescope 上看不到
            print(f"（只有教师看得到）{t['name']}：{t['output']}")
            continue
        print(
            f"{'✓' if t['status'] == 'passed' else '✗'} {t['name']}：{t['score']:g}/{t['max_score']:g}  {t['output']}"
        )
    return 1 if warnings else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        p = argparse.ArgumentParser(prog="python -m shardlab.grade.gradescope run")
        p.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
        args = p.parse_args(argv[1:])
        try:
            run(args.root)
        except Exception as exc:  # noqa: BLE001  Gradescope 里任何失败都要写出 results.json
            _grader_error(args.root, f"{type(exc).__name__}: {exc}")
        return 0
    p = argparse.ArgumentParser(
        prog="shardlab-grade gradescope", description="写出 Gradescope 的自动评分器 zip（不含密钥）"
    )
    p.add_argument("--secret-file", type=Path, required=True, help="生成个人版时用的教师密钥文件（不会放进 zip）")
    p.add_argument("--roster", type=Path, required=True, help="生成个人版时的花名册（同样的行、同样的顺序）")
    p.add_argument("--chapter", type=int, choices=CHAPTERS, required=True, help="这个 Gradescope 作业是哪一章")
    p.add_argument("--out", type=Path, required=True, help="输出的 zip，例如 autograder.zip（0600）")
    p.add_argument("--weights", type=Path, help="每道题的权重：CSV problem,weight（与 shardlab-grade 的同一个）")
    p.add_argument("--course", type=Path, help="课程目录（默认：从当前目录向上找）")
    p.add_argument(
        "--groups",
        choices=GROUPS,
        default="shared",
        help="小组提交：shared（默认）全组拿按签名所属组员的个人版评出的分，结果里有一项只有教师看得到的核对说明；"
        "hold 一律不给分、待助教核对",
    )
    args = p.parse_args(argv)
    if args.out.is_dir():
        print(
            f"shardlab-grade gradescope：--out {args.out} 是一个目录；请给 zip 文件的路径，例如 autograder.zip",
            file=sys.stderr,
        )
        return 2
    try:
        course = Course.from_option(args.course)
        out = build_zip(course, args.secret_file, args.out, args.roster, args.chapter, args.weights, args.groups)
    except (CourseError, AnswerKeyError, roster.RosterError, GradescopeError, ValueError, OSError) as exc:
        print(f"shardlab-grade gradescope：{exc}", file=sys.stderr)
        return 2
    for warning in variants.secret_warnings(args.secret_file):
        print(f"shardlab-grade gradescope：警告：{warning}", file=sys.stderr)
    print(
        f"Gradescope 自动评分器：{out}（第 {args.chapter} 章；上传到 Gradescope 作业的 Configure Autograder）。"
        f"上传之前可以先试：shardlab-grade gradescope-dry-run {out} 笔记本.ipynb --sid 学号"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
