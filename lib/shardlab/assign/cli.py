"""``shardlab-assign``（``make assign``）：为花名册里的每个学生写出个人版练习

    shardlab-assign --new-secret ~/course-admin/secret.key          # 生成一个强密钥（32 个随机字节，权限 0600）
    shardlab-assign ROSTER.csv --secret-file SECRET --out DIR [--solutions] [--force]

- ``DIR/<id>/ch05_exercises.ipynb``、``ch06_exercises.ipynb``：发给学生的个人版练习（0640）；
- ``--solutions``：每个学生的解答 ``DIR/<id>/ch05_solutions.ipynb`` …（给教师和助教，0600，不要发给学生）；
- ``DIR/variants.json``：每个学生每一章的参数（0600：里面有全班的数）。

参数由（密钥, 作业, 学生 id）与花名册的顺序决定（``shardlab.exercise.variants.for_class``）：全班一起检查撞车，
再运行一次得到逐字节相同的文件；在花名册末尾加人不改变已有学生的数。
已经存在的输出文件不会被覆盖，除非加 ``--force``；花名册或密钥有问题时什么也不写。
写文件用临时文件（``mkstemp``，不跟随符号链接）再 ``os.replace``；输出目录里的学生文件夹是符号链接时拒绝。
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path

import nbformat

from shardlab import atomic
from shardlab.assign.personalize import PersonalizeError, personalize
from shardlab.exercise import problems, roster, variants
from shardlab.untrusted import md_inline

KINDS = ("exercises", "solutions")
PUBLIC_MODE = 0o640  # 发给学生的练习
SECRET_MODE = 0o600  # 含全班参数的 variants.json、解答


class AssignError(RuntimeError):
    """不能写出个人版（输出已存在、找不到练习笔记本 …）"""


def source_notebook(course: Path, assignment: str, kind: str) -> Path:
    """发布版笔记本：仓库里与 .md 配对、不含输出的 .ipynb（单元 id 固定，所以输出逐字节可复现）"""
    return course / kind / f"{assignment}_{kind}.ipynb"


def _note(kind: str, student: roster.Student, params: dict) -> str:
    who = f"{md_inline(student.name, 200)}（{md_inline(student.id)}）"  # 花名册里的名字可能含 Markdown 或 HTML
    if kind == "exercises":
        return (
            f"**个人版**：这份练习是为 {who} 生成的。\n"
            "题目里的数字是你自己的，与书上和网站上的练习不同：请按这份笔记本里的数作答，自检（`check`）也按这些数判定。\n"
            "不要改第一行是 `# 题目参数` 的单元里的数：评分按花名册为你生成的数判定。"
        )
    listed = "，".join(f"`{k} = {v!r}`" for k, v in params.items())
    return (
        f"**个人版解答**：{who} 的参数是 {listed}。\n"
        "代码单元按这些参数计算；讲解文字里“原书的数字”、个别举例的数以及第 6 章问题 8 讲解里 (a)(b)(c) 的顺序指书上的发布版。"
    )


def _render(nb, assignment: str, kind: str, student: roster.Student, params: dict, tag: str) -> str:
    """tag：这组参数的签名（variants.sign）；评分器用它确认参数单元里的数是这个密钥发给这个学生的"""
    out = personalize(nb, assignment, params, note=_note(kind, student, params))
    if (out.nbformat, out.nbformat_minor) >= (4, 5):
        out.cells[1]["id"] = "shardlab-personal-note"  # 固定的 id：两次运行逐字节相同
    else:
        out.cells[1].pop("id", None)  # nbformat 4.4 的单元没有 id
    out.metadata["shardlab"] = {"assignment": assignment, "student": student.id, "kind": kind, "tag": tag}
    return nbformat.writes(out) + "\n"


def safe_write(path: Path, data: str | bytes, mode: int) -> None:
    """原子地写一个文件（``shardlab.atomic``）；上级目录是符号链接、或 path 已经是符号链接或目录时拒绝
    （别人放进输出目录的链接不能把文件引到别处）"""
    parent = path.parent
    if parent.is_symlink():
        raise AssignError(f"{parent} 是符号链接（symlink）：不往里写，请删掉它再运行")
    parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or (path.exists() and not stat.S_ISREG(os.lstat(path).st_mode)):
        raise AssignError(f"{path} 已经存在而且不是普通文件（符号链接、目录……）：不覆盖，请先删掉它")
    atomic.write(path, data, mode)


def plan(students, secret: bytes, course: Path, assignments, solutions: bool) -> dict[Path, tuple[str, int]]:
    """{相对路径: (内容, 权限)}：全部先在内存里生成，出错时一个文件也不写"""
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
    ids = [s.id for s in students]
    try:
        drawn = {assignment: variants.for_class(secret, assignment, ids) for assignment in assignments}
    except variants.VariantError as exc:
        raise AssignError(str(exc)) from None
    files: dict[Path, tuple[str, int]] = {}
    record: dict[str, dict] = {}
    for student in students:
        record[student.id] = {"name": student.name}
        for assignment in assignments:
            params = drawn[assignment][student.id]
            record[student.id][assignment] = params
            tag = variants.sign(secret, assignment, student.id, params)
            for kind in kinds:
                name = f"{assignment}_{kind}.ipynb"
                try:
                    text = _render(sources[assignment, kind], assignment, kind, student, params, tag)
                except PersonalizeError as exc:
                    raise AssignError(f"{name}：{exc}") from None
                files[Path(student.id) / name] = (text, PUBLIC_MODE if kind == "exercises" else SECRET_MODE)
    text = json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    files[Path("variants.json")] = (text, SECRET_MODE)
    return files


def assign(
    students, secret: bytes, out: Path, course: Path, assignments=problems.ASSIGNMENTS, solutions=False, force=False
):
    """写出全部个人版，返回写出的文件（绝对路径）"""
    files = plan(students, secret, course, assignments, solutions)
    existing = [rel for rel in files if os.path.lexists(out / rel)]
    if existing and not force:
        shown = "、".join(str(p) for p in existing[:5]) + ("…" if len(existing) > 5 else "")
        raise AssignError(
            f"输出目录 {out} 里已经有 {len(existing)} 个要写的文件（如 {shown}）：不会覆盖（overwrite），确认要重写请加 --force"
        )
    for rel in files:  # 先全部检查，再写：不会写到一半才发现某个学生的文件夹是符号链接
        for parent in (out / rel).parents:
            if parent == out or out not in parent.parents:
                break
            if parent.is_symlink():
                raise AssignError(f"{parent} 是符号链接（symlink）：不往里写，请删掉它再运行")
    written = []
    for rel, (text, mode) in files.items():
        safe_write(out / rel, text, mode)
        written.append(out / rel)
    return written


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardlab-assign",
        description="为花名册里的每个学生写出个人版练习笔记本；或用 --new-secret 生成教师密钥",
    )
    parser.add_argument("roster", type=Path, nargs="?", help="花名册 CSV（至少有 id,name 两列，UTF-8）")
    parser.add_argument(
        "--new-secret", type=Path, metavar="FILE", help="生成一个新的教师密钥（32 个随机字节，0600）后退出"
    )
    parser.add_argument("--secret-file", type=Path, help="教师密钥文件（至少 16 个字节；不要公开，不要提交进仓库）")
    parser.add_argument("--out", type=Path, help="输出目录：<id>/ch05_exercises.ipynb …")
    parser.add_argument("--solutions", action="store_true", help="同时写出每个学生的解答（给教师和助教，0600）")
    parser.add_argument("--force", action="store_true", help="覆盖已经存在的输出")
    parser.add_argument("--assignment", action="append", choices=problems.ASSIGNMENTS, help="只写这一章（可重复）")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="课程仓库的根目录（默认：当前目录）")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.new_secret is not None:
        try:
            path = variants.new_secret(args.new_secret)
        except ValueError as exc:
            print(f"shardlab-assign：{exc}", file=sys.stderr)
            return 2
        print(f"新的教师密钥：{path}（32 个随机字节，只有你能读）。备份它，不要公开，也不要提交进仓库")
        return 0
    missing = [flag for flag, value in (("ROSTER", args.roster), ("--secret-file", args.secret_file),
                                        ("--out", args.out)) if value is None]  # fmt: skip
    if missing:
        parser.print_usage(sys.stderr)
        print(f"shardlab-assign：缺少 {'、'.join(missing)}（生成密钥只要 --new-secret FILE）", file=sys.stderr)
        return 2
    try:
        students = roster.read(args.roster)
        secret = variants.read_secret(args.secret_file)
        for warning in variants.secret_warnings(args.secret_file):
            print(f"shardlab-assign：警告：{warning}", file=sys.stderr)
        assignments = tuple(args.assignment or problems.ASSIGNMENTS)
        written = assign(students, secret, args.out, args.course, assignments, args.solutions, args.force)
    except (roster.RosterError, AssignError, ValueError, OSError) as exc:
        print(f"shardlab-assign：{exc}", file=sys.stderr)
        return 2
    notebooks = sum(p.suffix == ".ipynb" for p in written)
    print(
        f"为 {len(students)} 名学生写出了 {notebooks} 个笔记本：{args.out}（参数记录在 {args.out / 'variants.json'}）"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
