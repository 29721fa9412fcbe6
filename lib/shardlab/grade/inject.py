"""评分第一步：读入一份提交、检查它的结构，生成注入了导出单元的评分笔记本

只用提交里代码单元的源码和标签，别的（输出、元数据、markdown）一律丢掉；学生自己放进去的 ``autograder*`` 单元、
含导出标记的单元也删掉。每个答案单元后面紧跟一个导出单元，只导出这一个单元里的答案，所以后面的单元改不了它。
导出单元里只有答案 id、变量名和（函数答案的）输入，没有任何参考值。
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from shardlab import answers
from shardlab.grade.export import EXPORT_TAG, MARKER, ExportItem, export_source
from shardlab.grade.status import (
    DUPLICATE_TAG,
    MISSING_CELL,
    NBFORMAT_3,
    NOT_JSON,
    NOT_NOTEBOOK,
    REORDERED,
    TOO_LARGE,
    UNRELATED,
)

MAX_SUBMISSION_BYTES = 20 << 20


class CourseOrderError(RuntimeError):
    """练习笔记本读不了，或缺少某些答案单元：不知道“调换了顺序”以什么为准"""


class SubmissionError(Exception):
    def __init__(self, status: str, detail: str = ""):
        super().__init__(status)
        self.status = status
        self.detail = detail


@dataclass
class CellRef:
    """评分笔记本里的一个代码单元：学生的（orig 是它在提交里的单元序号，从 1 起）或导出单元"""

    kind: str  # 'student' | 'export'
    orig: int | None = None
    answer_ids: tuple[str, ...] = ()


@dataclass
class Prepared:
    chapter: int
    notebook: nbformat.NotebookNode
    cells: list[CellRef]  # 与 nbval 的 "Cell N" 一一对应
    problem_status: dict[str, str] = field(default_factory=dict)  # 结构问题：missing-cell / duplicate-tag / reordered
    problem_cell: dict[str, int] = field(default_factory=dict)  # 答案 id → 提交里的单元序号
    dropped: int = 0  # 删掉的 autograder 单元数
    order: dict[str, int] = field(default_factory=dict)  # 答案 id → 标准顺序里的位置


def read_notebook(data: bytes) -> dict:
    """解析并做最基本的结构检查；出问题时抛出 SubmissionError"""
    if len(data) > MAX_SUBMISSION_BYTES:
        raise SubmissionError(TOO_LARGE, f"超过 {MAX_SUBMISSION_BYTES >> 20} MB")
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise SubmissionError(NOT_JSON, str(exc)[:200]) from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise SubmissionError(NOT_NOTEBOOK, "顶层没有 nbformat 字段")
    version = raw.get("nbformat")
    if not isinstance(version, int):
        raise SubmissionError(NOT_NOTEBOOK, f"nbformat 字段是 {version!r}")
    if version < 4:
        raise SubmissionError(NBFORMAT_3, f"nbformat {version}")
    if version > 4:
        raise SubmissionError(NOT_NOTEBOOK, f"不认识的 nbformat {version}")
    cells = raw.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and "cell_type" in c for c in cells):
        raise SubmissionError(NOT_NOTEBOOK, "cells 不是单元列表")
    return raw


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def _tags(cell: dict) -> list[str]:
    meta = cell.get("metadata")
    tags = meta.get("tags", []) if isinstance(meta, dict) else []
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def chapter_answers(chapter: int) -> list[answers.Answer]:
    return [a for a in answers.ANSWERS.values() if a.chapter == chapter]


def detect_chapter(raw: dict) -> int | None:
    """笔记本里出现最多的答案 id 属于哪一章"""
    counts: dict[int, int] = {}
    for cell in raw["cells"]:
        for tag in _tags(cell):
            if tag in answers.ANSWERS:
                ch = answers.ANSWERS[tag].chapter
                counts[ch] = counts.get(ch, 0) + 1
    return max(counts, key=lambda c: (counts[c], -c)) if counts else None


def _longest_increasing(seq: list[int]) -> set[int]:
    """seq 的一个最长递增子序列的下标集合"""
    n = len(seq)
    best = [1] * n
    prev = [-1] * n
    for i in range(n):
        for j in range(i):
            if seq[j] < seq[i] and best[j] + 1 > best[i]:
                best[i], prev[i] = best[j] + 1, j
    if not n:
        return set()
    i = max(range(n), key=lambda k: best[k])
    keep = set()
    while i >= 0:
        keep.add(i)
        i = prev[i]
    return keep


def exercise_order(exercise: Path, chapter: int) -> list[str]:
    """练习笔记本里答案单元的顺序（“调换了顺序”以它为准）；读不了或缺少答案单元时抛出 CourseOrderError"""
    ids = [a.id for a in chapter_answers(chapter)]
    try:
        raw = json.loads(Path(exercise).read_text(encoding="utf-8"))
        found = [t for cell in raw["cells"] for t in _tags(cell) if t in ids]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CourseOrderError(f"读不了第 {chapter} 章的练习笔记本 {exercise}：{exc}（make exercises）") from None
    found = list(dict.fromkeys(found))
    lacking = [i for i in ids if i not in found]
    if lacking:
        raise CourseOrderError(f"练习笔记本 {exercise} 缺少答案单元：{'、'.join(lacking)}（make exercises）")
    return found


def prepare(
    raw: dict, chapter: int | None, inputs: dict[str, list[tuple]], orders: dict[int, list[str]] | None = None
) -> Prepared:
    """生成评分笔记本。inputs：函数答案 id → 评分时选的输入；orders：章 → 答案单元的标准顺序"""
    chapter = chapter if chapter is not None else detect_chapter(raw)
    if chapter is None:
        raise SubmissionError(UNRELATED)
    ids = (orders or {}).get(chapter) or [a.id for a in chapter_answers(chapter)]
    order = {aid: k for k, aid in enumerate(ids)}

    # 答案 id 出现在哪些单元
    where: dict[str, list[int]] = {}
    for idx, cell in enumerate(raw["cells"]):
        for tag in dict.fromkeys(_tags(cell)):
            if tag in order:
                where.setdefault(tag, []).append(idx)
    if not where:
        raise SubmissionError(UNRELATED)

    status: dict[str, str] = {}
    problem_cell: dict[str, int] = {}
    for aid in order:
        cells = where.get(aid, [])
        if not cells or raw["cells"][cells[0]].get("cell_type") != "code":
            status[aid] = MISSING_CELL
        elif len(cells) > 1:
            status[aid] = DUPLICATE_TAG
            problem_cell[aid] = cells[0] + 1
        else:
            problem_cell[aid] = cells[0] + 1
    graded = sorted((cell, aid) for aid, cell in problem_cell.items() if aid not in status)
    in_order = _longest_increasing([order[aid] for _, aid in graded])
    for k, (_, aid) in enumerate(graded):
        if k not in in_order:
            status[aid] = REORDERED

    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    nb.nbformat_minor = 4
    refs: list[CellRef] = []
    dropped = 0
    for idx, cell in enumerate(raw["cells"]):
        if cell.get("cell_type") != "code":
            continue
        source, tags = _source(cell), _tags(cell)
        if any(t.startswith("autograder") for t in tags) or MARKER in source or "__shardlab_export" in source:
            dropped += 1
            continue
        keep_tags = [t for t in tags if t in order]
        student = nbformat.v4.new_code_cell(source, metadata={"tags": keep_tags} if keep_tags else {})
        student.pop("id", None)
        nb.cells.append(student)
        refs.append(CellRef("student", idx + 1))
        mine = tuple(t for t in keep_tags if status.get(t) in (None, REORDERED))
        if mine:
            items = [
                ExportItem(aid, answers.get(aid).var, answers.get(aid).kind, tuple(inputs.get(aid, ()))) for aid in mine
            ]
            export = nbformat.v4.new_code_cell(export_source(items), metadata={"tags": [EXPORT_TAG]})
            export.pop("id", None)
            nb.cells.append(export)
            refs.append(CellRef("export", None, mine))
    return Prepared(chapter, nb, refs, status, problem_cell, dropped, order)
