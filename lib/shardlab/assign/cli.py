"""``shardlab-assign ROSTER.csv --secret-file SECRET --out DIR [--solutions] [--force]``（``make assign``）

为花名册里的每个学生写出个人版练习 ``DIR/<id>/ch05_exercises.ipynb``、``DIR/<id>/ch06_exercises.ipynb``；
``--solutions`` 再写出每个学生的解答 ``DIR/<id>/ch05_solutions.ipynb`` …（给教师和助教，不要发给学生）。
``DIR/variants.json`` 记下每个学生每一章的参数（教师用，便于核对）。
个人版的参数是（密钥, 作业, 学生 id）的确定函数（``shardlab.variants``）：再运行一次得到逐字节相同的文件。
已经存在的输出文件不会被覆盖，除非加 ``--force``；花名册有问题时什么也不写。
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import nbformat

from shardlab import problems, roster, variants
from shardlab.assign.personalize import PersonalizeError, personalize

KINDS = ("exercises", "solutions")


class AssignError(RuntimeError):
    """不能写出个人版（输出已存在、找不到练习笔记本 …）"""


def source_notebook(course: Path, assignment: str, kind: str) -> Path:
    """发布版笔记本：仓库里与 .md 配对、不含输出的 .ipynb（单元 id 固定，所以输出逐字节可复现）"""
    return course / kind / f"{assignment}_{kind}.ipynb"


def _note(kind: str, student: roster.Student, assignment: str, params: dict) -> str:
    who = f"{student.name}（{student.id}）"
    if kind == "exercises":
        return (
            f"**个人版**：这份练习是为 {who} 生成的。\n"
            "题目里的数字是你自己的，与书上和网站上的练习不同：请按这份笔记本里的数作答，自检（`check`）也按这些数判定。\n"
            "不要改带 `parameters` 标签的单元里的数：评分按花名册为你生成的数判定。"
        )
    listed = "，".join(f"`{k} = {v!r}`" for k, v in params.items())
    return (
        f"**个人版解答**：{who} 的参数是 {listed}。\n"
        "代码单元按这些参数计算；讲解文字里“原书的数字”以及个别举例的数指书上的发布版。"
    )


def _render(nb, assignment: str, kind: str, student: roster.Student, params: dict) -> str:
    out = personalize(nb, assignment, params, note=_note(kind, student, assignment, params))
    if (out.nbformat, out.nbformat_minor) >= (4, 5):
        out.cells[1]["id"] = "shardlab-personal-note"  # 固定的 id：两次运行逐字节相同
    else:
        out.cells[1].pop("id", None)  # nbformat 4.4 的单元没有 id
    out.metadata["shardlab"] = {"assignment": assignment, "student": student.id, "kind": kind}
    return nbformat.writes(out) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def plan(students, secret: bytes, course: Path, assignments, solutions: bool) -> dict[Path, str]:
    """{相对路径: 内容}：全部先在内存里生成，出错时一个文件也不写"""
    kinds = KINDS if solutions else KINDS[:1]
    sources = {}
    for assignment in assignments:
        for kind in kinds:
            src = source_notebook(course, assignment, kind)
            try:
                sources[assignment, kind] = nbformat.read(src, as_version=4)
            except (OSError, ValueError) as exc:
                raise AssignError(
                    f"读不了发布版笔记本 {src}（{exc}）：请在课程仓库的根目录运行，或用 --course 指定；"
                    "它由 make exercises / make sync 生成"
                ) from None
    files: dict[Path, str] = {}
    record: dict[str, dict] = {}
    for student in students:
        record[student.id] = {"name": student.name}
        for assignment in assignments:
            params = variants.for_student(secret, assignment, student.id)
            record[student.id][assignment] = params
            for kind in kinds:
                name = f"{assignment}_{kind}.ipynb"
                try:
                    files[Path(student.id) / name] = _render(
                        sources[assignment, kind], assignment, kind, student, params
                    )
                except PersonalizeError as exc:
                    raise AssignError(f"{name}：{exc}") from None
    files[Path("variants.json")] = json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    return files


def assign(
    students, secret: bytes, out: Path, course: Path, assignments=problems.ASSIGNMENTS, solutions=False, force=False
):
    """写出全部个人版，返回写出的文件（绝对路径）"""
    files = plan(students, secret, course, assignments, solutions)
    existing = [rel for rel in files if (out / rel).exists()]
    if existing and not force:
        shown = "、".join(str(p) for p in existing[:5]) + ("…" if len(existing) > 5 else "")
        raise AssignError(
            f"输出目录 {out} 里已经有 {len(existing)} 个要写的文件（如 {shown}）：不会覆盖（overwrite），确认要重写请加 --force"
        )
    written = []
    for rel, text in files.items():
        _write(out / rel, text)
        written.append(out / rel)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="shardlab-assign", description="为花名册里的每个学生写出个人版练习笔记本")
    parser.add_argument("roster", type=Path, help="花名册 CSV（至少有 id,name 两列，UTF-8）")
    parser.add_argument("--secret-file", type=Path, required=True, help="教师密钥文件（任意字节；不要公开）")
    parser.add_argument("--out", type=Path, required=True, help="输出目录：<id>/ch05_exercises.ipynb …")
    parser.add_argument("--solutions", action="store_true", help="同时写出每个学生的解答（给教师和助教）")
    parser.add_argument("--force", action="store_true", help="覆盖已经存在的输出")
    parser.add_argument("--assignment", action="append", choices=problems.ASSIGNMENTS, help="只写这一章（可重复）")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="课程仓库的根目录（默认：当前目录）")
    args = parser.parse_args(argv)
    try:
        students = roster.read(args.roster)
        secret = variants.read_secret(args.secret_file)
        assignments = tuple(args.assignment or problems.ASSIGNMENTS)
        written = assign(students, secret, args.out, args.course, assignments, args.solutions, args.force)
    except (roster.RosterError, AssignError, ValueError) as exc:
        print(f"shardlab-assign：{exc}", file=sys.stderr)
        return 2
    notebooks = sum(p.suffix == ".ipynb" for p in written)
    print(
        f"为 {len(students)} 名学生写出了 {notebooks} 个笔记本：{args.out}（参数记录在 {args.out / 'variants.json'}）"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
