"""由解答笔记本生成练习笔记本（make exercises）：solutions/chNN_solutions.md → exercises/chNN_exercises.md

解答笔记本里的标记（见 solutions/README.md）：
- 带 ``solution`` 标签的单元：整个删掉；
- 代码里 ``# BEGIN SOLUTION`` 与 ``# END SOLUTION`` 之间的行删掉；``# STUB: `` 开头的行去掉前缀留给学生
  （通常是 ``p1a = ...``）；删掉解答后没有留下任何代码时补一行 ``...``；
- Markdown 里 ``<!-- BEGIN SOLUTION -->`` 与 ``<!-- END SOLUTION -->`` 之间的行删掉；
  ``<!-- EXERCISE: 文本 -->`` 在练习里变成“文本”（例如练习版的标题）；
- 每道题标题前的锚点 ``(ch05-sol-p1)=`` 只属于解答：练习里删掉它，在标题后面加一行指向它的链接；
- 答案单元在网站上折叠解答的标签（``hide-input``、``hide-cell``）在练习里去掉；自检单元（``check(...)``）加上
  ``remove-output``：网站上的练习页不显示一排“未作答”，笔记本里照常显示。

网站上的解答页不显示这些标记行（``without_markers``，由 tools/site_cells.py 在构建时删掉）。

用法：
    python tools/make_exercises.py           # 重新生成 exercises/ 并同步配对的 .ipynb
    python tools/make_exercises.py --check   # 只比较，不一致时退出码 1
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import nbsync  # noqa: E402

MD = "md:myst"
_BEGIN, _END, _STUB = "# BEGIN SOLUTION", "# END SOLUTION", "# STUB: "
_MD_BEGIN, _MD_END = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
_MD_EXERCISE = re.compile(r"^<!-- EXERCISE: (.*) -->$")
_SOLUTION_LABEL = re.compile(r"^\((ch\d\d-sol-p(\d+))\)=$")
FOLD_TAGS = ("hide-input", "hide-cell")
_ANSWER_TAG = re.compile(r"^ch\d\d-p\d")
CHECK_TAG = "remove-output"


class MarkupError(ValueError):
    """解答笔记本的标记不成对或位置不对"""


def _strip_code(source: str, where: str) -> str:
    out, inside, removed = [], False, False
    for line in source.splitlines():
        token = line.strip()
        if token == _BEGIN:
            if inside:
                raise MarkupError(f"{where}：BEGIN SOLUTION 嵌套了")
            inside, removed = True, True
        elif token == _END:
            if not inside:
                raise MarkupError(f"{where}：END SOLUTION 之前没有 BEGIN SOLUTION")
            inside = False
        elif token.startswith(_STUB):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + token[len(_STUB) :])
        elif not inside:
            out.append(line)
    if inside:
        raise MarkupError(f"{where}：BEGIN SOLUTION 没有对应的 END SOLUTION")
    text = "\n".join(out).strip("\n")
    return text if text.strip() or not removed else "..."


def is_marker(line: str) -> bool:
    """这一行是标记（BEGIN/END SOLUTION、STUB、EXERCISE），不是解答本身"""
    token = line.strip()
    return token in (_BEGIN, _END, _MD_BEGIN, _MD_END) or token.startswith(_STUB) or bool(_MD_EXERCISE.match(token))


def without_markers(source: str) -> str:
    """解答在网站上的样子：删掉标记行，解答的代码与文字原样留下（tools/site_cells.py 用）"""
    return "\n".join(line for line in source.splitlines() if not is_marker(line)).strip("\n")


def solution_link(label: str, problem: str) -> str:
    """练习里每道题标题后面的一行：指向解答页上这道题的锚点"""
    return f"做完以后，可以对照[问题 {problem} 的解答](#{label})。"


def _strip_markdown(source: str, where: str) -> str:
    out, inside, link = [], False, None
    for line in source.splitlines():
        token = line.strip()
        if link and token.startswith("#"):
            out += [line, "", link]
            link = None
            continue
        label = _SOLUTION_LABEL.match(token)
        if label and not inside:
            link = solution_link(label.group(1), label.group(2))
            continue
        if token == _MD_BEGIN:
            if inside:
                raise MarkupError(f"{where}：Markdown 的 BEGIN SOLUTION 嵌套了")
            inside = True
        elif token == _MD_END:
            if not inside:
                raise MarkupError(f"{where}：Markdown 的 END SOLUTION 之前没有 BEGIN SOLUTION")
            inside = False
        elif not inside:
            match = _MD_EXERCISE.match(token)
            out.append(match.group(1) if match else line)
    if inside:
        raise MarkupError(f"{where}：Markdown 的 BEGIN SOLUTION 没有对应的 END SOLUTION")
    if link:
        raise MarkupError(f"{where}：锚点之后没有标题")
    return "\n".join(out).strip("\n")


def strip(nb, name: str = "notebook"):
    """返回去掉解答后的笔记本（不修改输入）"""
    out = copy.deepcopy(nb)
    out.cells = []
    for k, cell in enumerate(copy.deepcopy(nb.cells)):
        if "solution" in cell.metadata.get("tags", []):
            continue
        where = f"{name} 第 {k + 1} 个单元"
        if cell.cell_type == "code":
            cell.source = _strip_code(cell.source, where)
            tags = cell.metadata.get("tags", [])
            if any(_ANSWER_TAG.match(t) for t in tags):  # 答案单元在解答里折叠，在练习里要看得见
                tags = [t for t in tags if t not in FOLD_TAGS]
            if cell.source.lstrip().startswith("check(") and CHECK_TAG not in tags:
                tags.append(CHECK_TAG)
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
        elif cell.cell_type == "markdown":
            cell.source = _strip_markdown(cell.source, where)
            if not cell.source.strip():
                continue
        out.cells.append(cell)
    return out


def exercise_path(solution_md: Path) -> Path:
    stem = solution_md.stem.replace("_solutions", "_exercises")
    return ROOT / "exercises" / f"{stem}.md"


def solution_sources() -> list[Path]:
    return sorted(p for p in (ROOT / "solutions").glob("*_solutions.md") if nbsync.is_notebook_source(p))


def render(solution_md: Path) -> str:
    nb = jupytext.read(solution_md, fmt=MD)
    return jupytext.writes(strip(nb, solution_md.name), fmt=MD)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="由解答笔记本生成练习笔记本")
    parser.add_argument("--check", action="store_true", help="只检查 exercises/ 是否与生成结果一致")
    args = parser.parse_args(argv)
    stale = []
    for src in solution_sources():
        target, text = exercise_path(src), render(src)
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(target.relative_to(ROOT))
            continue
        target.write_text(text, encoding="utf-8")
        for line in nbsync.sync(target):
            print(line)
        print(f"{src.relative_to(ROOT)} → {target.relative_to(ROOT)}")
    if stale:
        print("这些练习笔记本与解答不一致，请运行 make exercises：" + "、".join(map(str, stale)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
