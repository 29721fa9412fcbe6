"""评分第一步：读入一份提交、检查它的结构，生成注入了导出单元的评分笔记本

一切有上限，而且在任何耗时的处理之前检查：文件大小、JSON 的嵌套深度、整数的位数、单元数、源码长度、标签数；
生成评分笔记本有时间上限（``PREPARE_S``）。代码单元的源码或标签里有孤立的代理项（surrogate）或 NUL 时，
整份提交记为 ``invalid-text``；位数过多的整数记为 ``invalid-number``。

只用提交里代码单元的源码和标签，别的（输出、元数据、markdown）一律丢掉；学生自己放进去的 ``autograder*`` 单元、
含导出标记的单元也删掉。每个答案单元后面紧跟一个导出单元，只导出这一个单元里的答案，所以后面的单元改不了它。
导出单元里只有答案 id、变量名和（函数答案的）输入，没有任何参考值。
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from shardlab.exercise import answers, problems
from shardlab.grade.export import EXPORT_TAG, MARKER, ExportItem, export_source
from shardlab.grade.folder import MAX_SUBMISSION_BYTES
from shardlab.grade.status import (
    DUPLICATE_TAG,
    INVALID_NUMBER,
    INVALID_TEXT,
    MISSING_CELL,
    NBFORMAT_3,
    NOT_JSON,
    NOT_NOTEBOOK,
    OTHER_CHAPTER,
    REORDERED,
    TOO_LARGE,
    UNRELATED,
)

MAX_DEPTH = 64  # JSON 的嵌套层数（正常的笔记本不到 10 层）
MAX_CELLS = 2000  # 单元数（练习笔记本约 100 个）
MAX_CELL_SOURCE = 1 << 20  # 一个代码单元的源码（字符）
MAX_SOURCE = 4 << 20  # 全部代码单元的源码
MAX_TAGS = 32  # 一个单元的标签数
MAX_TAG_CHARS = 200
PREPARE_S = 10.0  # 生成评分笔记本的时间上限
MAX_PARAM_SOURCE = 4000  # 一个参数单元的源码（读参数之前；正常的不到 300 个字符）
MAX_PARAM_CELLS = 20
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")


MAX_NODES = 200_000  # JSON 里的值（数组与对象的元素）总数；练习笔记本约 3000 个


def _too_complex(value) -> str:
    """JSON 值嵌套太深或元素太多时说明原因（不递归；超限就停，所以花的时间有上限）"""
    stack, nodes = [(value, 1)], 0
    while stack:
        node, d = stack.pop()
        if d > MAX_DEPTH:
            return f"JSON 嵌套超过 {MAX_DEPTH} 层"
        children = node.values() if isinstance(node, dict) else node
        nodes += len(children)
        if nodes > MAX_NODES:
            return f"JSON 里的值超过 {MAX_NODES} 个"
        stack.extend((child, d + 1) for child in children if isinstance(child, dict | list))
    return ""


class CourseOrderError(RuntimeError):
    """练习笔记本读不了，或缺少某些答案单元：不知道“调换了顺序”以什么为准"""


class SubmissionError(Exception):
    def __init__(self, status: str, detail: str = ""):
        super().__init__(status)
        self.status = status
        self.detail = detail


@dataclass
class CellRef:
    """评分笔记本里的一个代码单元：学生的（orig 是它在提交里是第几个**代码**单元，从 1 起，不数 Markdown 单元）或导出单元"""

    kind: str  # 'student' | 'export'
    orig: int | None = None
    answer_ids: tuple[str, ...] = ()


@dataclass
class Prepared:
    chapter: int
    notebook: nbformat.NotebookNode
    cells: list[CellRef]  # 与 nbval 的 "Cell N" 一一对应
    problem_status: dict[str, str] = field(default_factory=dict)  # 结构问题：missing-cell / duplicate-tag / reordered
    problem_cell: dict[str, int] = field(default_factory=dict)  # 答案 id → 提交里第几个代码单元
    dropped: int = 0  # 删掉的 autograder 单元数
    order: dict[str, int] = field(default_factory=dict)  # 答案 id → 标准顺序里的位置
    notes: list[str] = field(default_factory=list)  # 给学生看的结构提示（同一个单元里重复的标签等）


def read_notebook(data: bytes) -> dict:
    """解析并做结构检查，全部上限都在这里；出问题时抛出 SubmissionError"""
    if len(data) > MAX_SUBMISSION_BYTES:
        raise SubmissionError(TOO_LARGE, f"超过 {MAX_SUBMISSION_BYTES >> 20} MB")
    if data.count(b"[") + data.count(b"{") > 2 * MAX_NODES:  # 在解析之前：这么多括号，结构不会更少
        raise SubmissionError(TOO_LARGE, f"JSON 里的数组与对象超过 {2 * MAX_NODES} 个")
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except RecursionError:
        raise SubmissionError(TOO_LARGE, f"JSON 嵌套太深（上限 {MAX_DEPTH} 层）") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SubmissionError(NOT_JSON, str(exc)[:200]) from None
    except ValueError as exc:  # 不是 JSONDecodeError 的 ValueError：整数的位数超过 Python 的上限（约 4300 位）
        raise SubmissionError(INVALID_NUMBER, str(exc)[:200]) from None
    if isinstance(raw, dict) and isinstance(raw.get("cells"), list) and len(raw["cells"]) > MAX_CELLS:
        raise SubmissionError(TOO_LARGE, f"有 {len(raw['cells'])} 个单元（上限 {MAX_CELLS}）")
    problem = _too_complex(raw) if isinstance(raw, dict | list) else ""
    if problem:
        raise SubmissionError(TOO_LARGE, problem)
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise SubmissionError(NOT_NOTEBOOK, "顶层没有 nbformat 字段")
    version = raw.get("nbformat")
    if isinstance(version, bool) or not isinstance(version, int):
        raise SubmissionError(NOT_NOTEBOOK, f"nbformat 字段是 {type(version).__name__}")
    if version < 4:
        raise SubmissionError(NBFORMAT_3, f"nbformat {version}")
    if version > 4:
        raise SubmissionError(NOT_NOTEBOOK, f"不认识的 nbformat {version}")
    cells = raw.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and "cell_type" in c for c in cells):
        raise SubmissionError(NOT_NOTEBOOK, "cells 不是单元列表")
    if len(cells) > MAX_CELLS:
        raise SubmissionError(TOO_LARGE, f"有 {len(cells)} 个单元（上限 {MAX_CELLS}）")
    total = 0
    for k, cell in enumerate(cells, 1):
        tags = _tags(cell)
        if len(tags) > MAX_TAGS or any(len(t) > MAX_TAG_CHARS for t in tags):
            raise SubmissionError(TOO_LARGE, f"第 {k} 个单元的标签太多或太长")
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and not all(isinstance(s, str) for s in src):
            raise SubmissionError(NOT_NOTEBOOK, f"第 {k} 个单元的 source 不是文字")
        size = sum(len(s) for s in src) if isinstance(src, list) else len(src) if isinstance(src, str) else 0
        total += size
        if size > MAX_CELL_SOURCE or total > MAX_SOURCE:
            raise SubmissionError(TOO_LARGE, f"第 {k} 个单元的源码太长（每个单元上限 {MAX_CELL_SOURCE} 个字符）")
        if _BAD_CHARS.search(_source(cell)) or any(_BAD_CHARS.search(t) for t in tags):
            raise SubmissionError(INVALID_TEXT, f"第 {k} 个单元")
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


@dataclass
class Peek:
    """评分之前从笔记本里读出的东西：属于哪一章、笔记本里写的学生 id 与作业、参数单元的源码"""

    chapter: int | None
    student: str | None
    assignment: str | None
    param_sources: list[str]
    tag: str | None = None  # shardlab-assign 写的参数签名
    kind: str | None = None  # shardlab-assign 写的 exercises（发给学生的）或 solutions（教师的参考答案）
    answer_cells: dict[str, str] = field(default_factory=dict)  # 答案 id → 那个单元源码的 sha256（看是不是还没作答）


def peek(raw: dict) -> Peek:
    """读 ``metadata.shardlab``（``shardlab-assign`` 写的）和带 parameters 标签的代码单元；都是不可信的输入，只取字符串"""
    meta = raw.get("metadata")
    info = meta.get("shardlab") if isinstance(meta, dict) else None
    info = info if isinstance(info, dict) else {}
    student, assignment = info.get("student"), info.get("assignment")
    params = [
        _source(c)
        for c in raw["cells"]
        if c.get("cell_type") == "code" and problems.PARAM_TAG in _tags(c) and len(_source(c)) <= MAX_PARAM_SOURCE
    ]
    tag = info.get("tag")
    return Peek(
        detect_chapter(raw),
        student[:MAX_TAG_CHARS] if isinstance(student, str) and student else None,
        assignment[:MAX_TAG_CHARS] if isinstance(assignment, str) else None,
        params[:MAX_PARAM_CELLS],
        tag[:MAX_TAG_CHARS] if isinstance(tag, str) else None,
        info["kind"][:MAX_TAG_CHARS] if isinstance(info.get("kind"), str) else None,
        answer_digests(raw),
    )


def answer_digests(raw: dict) -> dict[str, str]:
    """每个带答案 id 标签的代码单元的代码（去掉注释与空白：个人版改写了注释里的数）的 sha256；同一个 id 有几个单元时取第一个"""
    out: dict[str, str] = {}
    for cell in raw.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        for t in _tags(cell):
            if t in answers.ANSWERS and t not in out:
                code = "".join(re.sub(r"#.*", "", _source(cell)).split())
                out[t] = hashlib.sha256(code.encode("utf-8", "replace")).hexdigest()
    return out


def chapter_answers(chapter: int) -> list[answers.Answer]:
    return answers.chapter_answers(f"ch{chapter:02d}")


def chapters_in(raw: dict) -> set[int]:
    """笔记本里的答案 id 标签属于哪些章"""
    return {answers.ANSWERS[t].chapter for cell in raw["cells"] for t in _tags(cell) if t in answers.ANSWERS}


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
    raw: dict,
    chapter: int | None,
    inputs: dict[str, list[tuple]],
    orders: dict[int, list[str]] | None = None,
    deadline_s: float = PREPARE_S,
) -> Prepared:
    """生成评分笔记本。inputs：函数答案 id → 评分时选的输入；orders：章 → 答案单元的标准顺序（没给时用登记表的顺序）

    chapter 给定而笔记本里只有别的章的答案标签时抛出 other-chapter；超过 deadline_s 秒时抛出 too-large。
    """
    deadline = time.monotonic() + deadline_s
    present = chapters_in(raw)
    chapter = chapter if chapter is not None else detect_chapter(raw)
    if chapter is None:
        raise SubmissionError(UNRELATED)
    if chapter not in present and present:
        raise SubmissionError(
            OTHER_CHAPTER, f"笔记本里是第 {'、'.join(map(str, sorted(present)))} 章的答案标签，这次评第 {chapter} 章"
        )
    ids = (orders or {}).get(chapter) or [a.id for a in chapter_answers(chapter)]
    order = {aid: k for k, aid in enumerate(ids)}

    # 第几个代码单元（Jupyter 里数得出来的序号：不数 Markdown 单元）
    code_no: dict[int, int] = {}
    for idx, cell in enumerate(raw["cells"]):
        if cell.get("cell_type") == "code":
            code_no[idx] = len(code_no) + 1
    # 答案 id 出现在哪些单元
    where: dict[str, list[int]] = {}
    notes = []
    for idx, cell in enumerate(raw["cells"]):
        tags = _tags(cell)
        for tag in dict.fromkeys(tags):
            if tag in order:
                where.setdefault(tag, []).append(idx)
                if tags.count(tag) > 1 and idx in code_no:
                    notes.append(f"第 {code_no[idx]} 个代码单元的标签 {tag} 写了 {tags.count(tag)} 次（按一次算）")
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
            problem_cell[aid] = code_no[cells[0]]
        else:
            problem_cell[aid] = code_no[cells[0]]
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
        if idx % 64 == 0 and time.monotonic() > deadline:
            raise SubmissionError(TOO_LARGE, f"生成评分笔记本超过 {deadline_s:g} s")
        if cell.get("cell_type") != "code":
            continue
        source, tags = _source(cell), list(dict.fromkeys(_tags(cell)))
        if any(t.startswith("autograder") for t in tags) or MARKER in source or "__shardlab_export" in source:
            dropped += 1
            continue
        keep_tags = [t for t in tags if t in order]
        student = nbformat.v4.new_code_cell(source, metadata={"tags": keep_tags} if keep_tags else {})
        student.pop("id", None)
        nb.cells.append(student)
        refs.append(CellRef("student", code_no[idx]))
        mine = tuple(t for t in keep_tags if status.get(t) in (None, REORDERED))
        if mine:
            items = [
                ExportItem(aid, answers.get(aid).var, answers.get(aid).kind, tuple(inputs.get(aid, ()))) for aid in mine
            ]
            export = nbformat.v4.new_code_cell(export_source(items), metadata={"tags": [EXPORT_TAG]})
            export.pop("id", None)
            nb.cells.append(export)
            refs.append(CellRef("export", None, mine))
    return Prepared(chapter, nb, refs, status, problem_cell, dropped, order, notes)
