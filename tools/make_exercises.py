"""由解答笔记本生成练习笔记本（make exercises）：solutions/chNN_solutions.md → exercises/chNN_exercises.md

解答笔记本里的标记（见 solutions/README.md）：
- 带 ``solution`` 标签的单元：整个删掉；
- 代码里 ``# BEGIN SOLUTION`` 与 ``# END SOLUTION`` 之间的行删掉；``# STUB: `` 开头的行去掉前缀留给学生
  （通常是 ``p1a = ...``）；删掉解答后没有留下任何代码时补一行 ``...``；
- Markdown 里 ``<!-- BEGIN SOLUTION -->`` 与 ``<!-- END SOLUTION -->`` 之间的行删掉；
  ``<!-- EXERCISE: 文本 -->`` 在练习里变成“文本”（例如练习版的标题）。

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


def _strip_markdown(source: str, where: str) -> str:
    out, inside = [], False
    for line in source.splitlines():
        token = line.strip()
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
