"""个人版的基准：为 N 名学生写出个人版，再按个人版评分（每个学生填自己的正确答案；再全部填书上的答案）

    .venv/bin/python benchmarks/assign_bench.py [--students 30] [--chapter 5] [-j 2] [--keep DIR]

报告：写出个人版的时间；按个人版评分的总时间与每份的时间（含沙箱）；检查
(1) 填自己正确答案的提交全部满分，没有一份被标为需要核对；(2) 填书上（发布版）答案的提交，每个随参数变化的答案都是 0 分
（状态 wrong），每份都在 ta/integrity.csv 里对发布版标为需要核对；
(3) 两次 --force 得到逐字节相同的 gradebook.csv 与 grades_wide.csv。任何一条不满足时退出码 1。
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
GRADE = Path(sys.executable).with_name("shardlab-grade")


def answer_cells(nb) -> dict[str, int]:
    from shardlab.exercise import answers

    return {t: k for k, c in enumerate(nb.cells) for t in c.metadata.get("tags", []) if t in answers.ANSWERS}


def fill(exercise, solution, values: dict[str, float]):
    """把练习笔记本的每个答案单元换成答案：数值答案写成 values 里的数，函数答案用解答里的函数"""
    from shardlab.exercise import answers

    sol = answer_cells(solution)
    for aid, k in answer_cells(exercise).items():
        spec = answers.get(aid)
        if spec.kind == "function":
            exercise.cells[k].source = solution.cells[sol[aid]].source
        else:
            exercise.cells[k].source = f"{spec.var} = {values[aid]!r}"
    return exercise


def make_class(work: Path, n: int, assignment: str, published: bool = True) -> tuple[Path, Path, Path, Path, float]:
    """花名册、密钥、个人版；两个提交目录：own/<id>/…（自己的答案）与 published/<id>_….ipynb（书上的答案，published=False 时不写）"""
    from shardlab.assign import cli
    from shardlab.exercise import answers, roster, variants

    roster_path = work / "roster.csv"
    roster_path.write_text("id,name\n" + "".join(f"s{k:03d},学生{k}\n" for k in range(n)), encoding="utf-8")
    secret = work / "secret"
    variants.new_secret(secret)  # 与教师指南一样：32 个随机字节，0600
    start = time.perf_counter()
    students = roster.read(roster_path)
    cli.assign(students, secret.read_bytes(), work / "assigned", ROOT, (assignment,))
    t_assign = time.perf_counter() - start
    solution = nbformat.read(ROOT / "solutions" / f"{assignment}_solutions.ipynb", 4)
    book = {a.id: a.value() for a in answers.chapter_answers(assignment) if a.kind == "value"}
    drawn = variants.for_class(secret.read_bytes(), assignment, [s.id for s in students])
    for s in students:
        nb = nbformat.read(work / "assigned" / s.id / f"{assignment}_exercises.ipynb", 4)
        params = drawn[s.id]
        own = {a.id: a.value(params) for a in answers.chapter_answers(assignment) if a.kind == "value"}
        (work / "own" / s.id).mkdir(parents=True)
        nbformat.write(fill(nb, solution, own), work / "own" / s.id / f"{assignment}_exercises.ipynb")
        (work / "published").mkdir(exist_ok=True)
        if published:
            nb = nbformat.read(work / "assigned" / s.id / f"{assignment}_exercises.ipynb", 4)
            nbformat.write(fill(nb, solution, book), work / "published" / f"{s.id}_{assignment}.ipynb")
    return roster_path, secret, work / "own", work / "published", t_assign


def grade(subs: Path, out: Path, roster_path: Path, secret: Path, chapter: int, jobs: int, *extra) -> float:
    cmd = [str(GRADE), str(subs), "--out", str(out), "--course", str(ROOT), "--roster", str(roster_path)]
    cmd += ["--secret-file", str(secret), "--chapter", str(chapter), "-j", str(jobs), "--no-progress", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"评分失败（{proc.returncode}）：{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def gradebook(out: Path) -> list[dict]:
    with open(out / "gradebook.csv", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def flagged(out: Path) -> list[dict]:
    """ta/integrity.csv 里标为需要核对的行"""
    with open(out / "ta" / "integrity.csv", encoding="utf-8-sig") as f:
        return [r for r in csv.DictReader(f) if r["flagged"] == "yes"]


def check_class(own_out: Path, pub_out: Path, assignment: str) -> list[str]:
    """(1)、(2) 两条；返回不满足之处"""
    from shardlab.exercise import answers

    bad = []
    for row in gradebook(own_out):
        if row["status"] != "correct":
            bad.append(f"自己的答案：{row['student']} {row['problem']} {row['status']} {row['message']}")
    if flagged(own_out):
        bad.append(f"自己的答案被标为需要核对：{flagged(own_out)[:3]}")
    varies = {a.id for a in answers.chapter_answers(assignment) if a.kind == "value" and a.varies}
    for row in gradebook(pub_out):
        if row["problem"] in varies and (row["status"] != "wrong" or float(row["points"]) != 0):
            bad.append(f"书上的答案：{row['student']} {row['problem']} {row['status']}")
        if row["problem"] not in varies and row["status"] != "correct":
            bad.append(f"书上的答案（与参数无关的题）：{row['student']} {row['problem']} {row['status']}")
    students = {r["student"] for r in gradebook(pub_out)}
    caught = {r["student"] for r in flagged(pub_out) if r["source"] == "发布版"}
    if caught != students:
        bad.append(f"抄书上答案的提交没有全部标为需要核对：{sorted(students - caught)[:5]}")
    return bad


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--chapter", type=int, default=5)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="把工作目录留在这里（默认用完删除）")
    args = parser.parse_args(argv)
    assignment = f"ch{args.chapter:02d}"
    work = Path(tempfile.mkdtemp(prefix="shardlab-assign-bench-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        roster_path, secret, own, pub, t_assign = make_class(work, args.students, assignment)
        n = args.students
        t_own = grade(own, work / "out-own", roster_path, secret, args.chapter, args.jobs)
        t_pub = grade(pub, work / "out-pub", roster_path, secret, args.chapter, args.jobs)
        first = {f: (work / "out-own" / f).read_bytes() for f in ("gradebook.csv", "grades_wide.csv")}
        t_force = grade(own, work / "out-own", roster_path, secret, args.chapter, args.jobs, "--force")
        same = all((work / "out-own" / f).read_bytes() == b for f, b in first.items())
        walls = [r["wall_s"] for r in json.loads((work / "out-own" / "gradebook.json").read_text())["summary"]]
        bad = check_class(work / "out-own", work / "out-pub", assignment)
        if not same:
            bad.append("两次 --force 的成绩册不同")
        print(f"学生 {n} 名，第 {args.chapter} 章，-j {args.jobs}，机器 {os.cpu_count()} 核")
        print(f"写出个人版：{t_assign:.2f} s（{1000 * t_assign / n:.0f} ms/人）")
        print(
            f"评分（自己的答案）：{t_own:.1f} s，{t_own / n:.2f} s/份（-j {args.jobs} 的墙钟）；"
            f"每份在评分器里 中位数 {statistics.median(walls):.2f} s，最长 {max(walls):.2f} s"
        )
        print(f"评分（书上的答案）：{t_pub:.1f} s；--force 重评：{t_force:.1f} s；两次成绩册相同：{same}")
        print("检查：" + ("全部满足" if not bad else f"{len(bad)} 处不满足：\n  " + "\n  ".join(bad[:20])))
        return 1 if bad else 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
