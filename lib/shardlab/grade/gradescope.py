"""Gradescope 的自动评分器（autograder）：``shardlab-grade gradescope --secret-file SECRET --out autograder.zip``

Gradescope 为每份提交启动一个容器：先在构建镜像时运行一次 ``setup.sh``，评分时运行 ``run_autograder``。
目录约定（``$AUTOGRADER_ROOT``，默认 ``/autograder``，测试里指向一个临时目录）：

- ``source/``：zip 的内容（课程库 ``lib/shardlab``、锁定的 ``requirements.txt``、练习笔记本、答案表、密钥、可选的花名册）；
- ``submission/``：学生上传的文件；``submission_metadata.json``：提交的信息，学生 id 取 ``users[0].sid``（Gradescope 的学号，
  没有时取 ``email``），它必须是生成个人版时花名册里的 id；
- ``results/results.json``：结果，按 Gradescope 的格式：``score``、``output``、``visibility``、``stdout_visibility``，
  ``tests`` 里每道题一项（``name``、``score``、``max_score``、``status``、``output``、``visibility``）。

隔离：在 Gradescope 里，每份提交自己的容器就是隔离边界，容器里没有别的学生的文件；所以这里明确地用 rlimit 模式
（只有资源限制：时间、内存、进程数、文件大小），不需要也不尝试 bubblewrap。答案表和密钥在容器里，
但评分时学生的代码运行在去掉了参考算法的库副本上，参考值只在评分进程里。
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from shardlab import answers, problems, roster, variants
from shardlab.grade import inject, judge, personal, report
from shardlab.grade import status as st
from shardlab.grade.course import Course, CourseError
from shardlab.grade.folder import Found, Unreadable, read_submission
from shardlab.grade.key import AnswerKeyError, load_key, read_key
from shardlab.grade.sandbox import PACKAGE, Limits, Sandbox, stage_library
from shardlab.grade.submission import Context, grade_submission

SETUP_SH = """#!/usr/bin/env bash
# Gradescope 构建镜像时运行一次：安装锁定的依赖和 Jupyter 内核
set -euo pipefail
cd /autograder/source
apt-get update -q && apt-get install -y -q python3 python3-pip python3-venv
python3 -m venv /autograder/venv
/autograder/venv/bin/python -m pip install -q -r requirements.txt
/autograder/venv/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope 为每份提交运行一次；AUTOGRADER_ROOT 默认 /autograder（测试用临时目录代替）
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="${SHARDLAB_PYTHON:-$ROOT/venv/bin/python}"
export PYTHONPATH="$ROOT/source/lib${PYTHONPATH:+:$PYTHONPATH}"
export COURSE_PROFILE=cpu
export JUPYTER_PATH="${JUPYTER_PATH:-$ROOT/venv/share/jupyter}"
mkdir -p "$ROOT/results"
exec "$PY" -m shardlab.grade.gradescope run --root "$ROOT"
"""


CHAPTERS = (5, 6)


def build_zip(course: Course, secret_file: Path, out: Path, roster_file: Path | None, chapter: int | None) -> Path:
    """写出 autograder.zip：setup.sh、run_autograder、课程库、依赖、练习笔记本、答案表、密钥、（可选）花名册

    chapter 为 None 时两章的练习都放进去，评分时按提交里的答案标签认出是哪一章。
    """
    secret = variants.read_secret(secret_file)
    students = roster.read(roster_file) if roster_file else []
    key = load_key(None, course)
    config = {"chapter": chapter, "roster": bool(students)}
    files: dict[str, bytes] = {
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        "requirements.txt": (course.root / "requirements.txt").read_bytes(),
        "config.json": json.dumps(config).encode(),
        "key/answer_key.json": json.dumps(key.entries, ensure_ascii=False).encode(),
        "key/secret": secret,
    }
    for ch in CHAPTERS if chapter is None else (chapter,):
        files[f"exercises/ch{ch:02d}_exercises.ipynb"] = course.exercise(ch).read_bytes()
    if roster_file:
        files["key/roster.csv"] = Path(roster_file).read_bytes()
        # 每个学生的参数先算好（抽参数要几十毫秒一个人），容器里只读
        known = {s.id: {a: variants.for_student(secret, a, s.id) for a in problems.ASSIGNMENTS} for s in students}
        files["key/variants.json"] = json.dumps(known, ensure_ascii=False, sort_keys=True).encode()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[f"lib/shardlab/{path.relative_to(PACKAGE).as_posix()}"] = path.read_bytes()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # 固定时间：同样的输入得到同样的 zip
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, out)
    return out


# ---- 容器里：评一份提交 ----
def student_of(metadata: dict) -> str | None:
    users = metadata.get("users") if isinstance(metadata, dict) else None
    if not isinstance(users, list) or not users or not isinstance(users[0], dict):
        return None
    user = users[0]
    for field in ("sid", "email"):
        value = user.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _results(score: float, output: str, tests: list[dict]) -> dict:
    return {
        "score": score,
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def _fail(root: Path, message: str) -> dict:
    res = _results(0.0, message, [])
    _write(root, res)
    return res


def _write(root: Path, res: dict) -> None:
    report.atomic_write(root / "results" / "results.json", json.dumps(res, ensure_ascii=False, indent=1))


def run(root: Path) -> dict:
    """评 root/submission 里的笔记本，写出 root/results/results.json，返回它的内容"""
    source = root / "source"
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    chapter = config.get("chapter")
    chapters = CHAPTERS if chapter is None else (int(chapter),)
    what = f"ch{int(chapter):02d}_exercises.ipynb" if chapter else "练习笔记本"
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _fail(root, f"读不了 submission_metadata.json（{exc}）：没法知道这是哪位学生的提交")
    sid = student_of(metadata)
    if sid is None:
        return _fail(root, "submission_metadata.json 里没有学号（users[0].sid）或邮箱：没法找到这位学生的个人版")
    secret = (source / "key" / "secret").read_bytes()
    roster_path = source / "key" / "roster.csv"
    students = roster.read(roster_path) if roster_path.exists() else [roster.Student(sid, "", 0)]
    if sid not in {s.id for s in students}:
        return _fail(root, f"学号 {sid!r} 不在花名册里：请联系教师（个人版按花名册生成）")
    notebooks = sorted(p for p in (root / "submission").rglob("*") if p.is_file() and p.name.lower().endswith(".ipynb"))
    if not notebooks:
        return _fail(root, f"提交里没有 .ipynb 笔记本：请上传你的 {what}")
    known_path = source / "key" / "variants.json"
    known = json.loads(known_path.read_text(encoding="utf-8")) if known_path.exists() else None
    key = personal.PersonalKey.build(read_key(source / "key" / "answer_key.json"), students, secret, known)
    seed = personal.hidden_seed(secret)
    inputs = judge.hidden_inputs(seed)
    orders = {ch: inject.exercise_order(source / "exercises" / f"ch{ch:02d}_exercises.ipynb", ch) for ch in chapters}
    path = notebooks[0]
    if chapter is None:  # 两章都放进了 zip：按提交里的答案标签认出是哪一章
        try:
            chapter = inject.detect_chapter(inject.read_notebook(read_submission(path)))
        except (inject.SubmissionError, Unreadable, OSError):
            chapter = None
        chapter = chapter if chapter in chapters else chapters[0]
    rel = path.relative_to(root / "submission").as_posix()
    found = Found(path, rel, os.fsencode(rel), os.fsencode(sid), sid)
    stage = Path(tempfile.mkdtemp(prefix="shardlab-stage-"))
    try:
        staged = stage_library(stage / "lib")
        stage.chmod(0o755)
        sandbox = Sandbox(staged, Limits(), mode="rlimit", workdir=stage)  # 容器本身是隔离边界
        ctx = Context(key, seed, inputs, sandbox, int(chapter), orders, workdir=stage, roster_of={sid: sid})
        res = grade_submission(found, ctx)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    tests = []
    for prob in res["problems"]:
        spec = answers.ANSWERS.get(prob["id"])
        name = f"{prob['id']}：{spec.meaning}" if spec else prob["id"]
        ok = prob["points"] >= prob["max_points"] > 0
        tests.append(
            {
                "name": name,
                "score": prob["points"],
                "max_score": prob["max_points"],
                "status": "passed" if ok else "failed",
                "output": f"{st.text(prob['status'])}。{prob.get('message', '')}",
                "visibility": "visible",
            }
        )
    notes = [f"学号 {sid}，第 {res.get('chapter') or '?'} 章；评分的文件：{notebooks[0].name}"]
    if len(notebooks) > 1:
        notes.append(f"提交里有 {len(notebooks)} 个笔记本，只评了第一个（按文件名排序）")
    if res["status"] != st.GRADED:
        notes.append(f"整份提交：{st.text(res['status'])}。{res.get('message', '')}")
    for err in res.get("errors", [])[:5]:
        notes.append(f"出错的单元 {err.get('cell')}：{err.get('summary')}")
    out = _results(res["points"], "\n".join(notes), tests)
    _write(root, out)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        p = argparse.ArgumentParser(prog="python -m shardlab.grade.gradescope run")
        p.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
        args = p.parse_args(argv[1:])
        try:
            run(args.root)
        except Exception as exc:  # noqa: BLE001  Gradescope 里任何失败都要写出 results.json
            _fail(args.root, f"评分器出错（不是你的错，请告诉教师）：{type(exc).__name__}: {exc}")
        return 0
    p = argparse.ArgumentParser(prog="shardlab-grade gradescope", description="写出 Gradescope 的自动评分器 zip")
    p.add_argument("--secret-file", type=Path, required=True, help="生成个人版时用的教师密钥文件")
    p.add_argument("--out", type=Path, required=True, help="输出的 zip，例如 autograder.zip")
    p.add_argument("--chapter", type=int, choices=CHAPTERS, help="这个 Gradescope 作业是哪一章（默认按提交认出）")
    p.add_argument("--roster", type=Path, help="花名册：给出时也能认出别的同学的答案（other-variant）")
    p.add_argument("--course", type=Path, help="课程目录（默认：从当前目录向上找）")
    args = p.parse_args(argv)
    try:
        course = Course.from_option(args.course)
        out = build_zip(course, args.secret_file, args.out, args.roster, args.chapter)
    except (CourseError, AnswerKeyError, roster.RosterError, ValueError, OSError) as exc:
        print(f"shardlab-grade gradescope：{exc}", file=sys.stderr)
        return 2
    print(f"Gradescope 自动评分器：{out}（上传到 Gradescope 作业的 Configure Autograder）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
