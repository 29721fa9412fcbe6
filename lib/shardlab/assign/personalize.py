"""把一组题目参数写进笔记本：个人版的读者看到的是普通的数字，不是查表

- 带 ``parameters`` 标签的代码单元：顶层赋值 ``B, D = 1024, 4096``、``mesh = {...}`` 里属于本章参数的值换成新的值
  （按语法树定位，注释和其他变量原样保留）；
- 第 k 题范围内（从 ``## 问题 k`` 到下一题）的文字与代码：``problems.TEXT`` 列出的发布版原文换成由参数写出的文字。

找不到应当替换的原文、或某个参数没有在参数单元里赋值时抛出 ``PersonalizeError``：题目的文字改了，
``problems.TEXT`` 也要跟着改，而不是悄悄地留下书上的数。
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import nbformat

from shardlab.exercise import problems

PARAM_TAG = problems.PARAM_TAG
_PROBLEM = re.compile(r"^##\s*问题\s*(\d+)", re.MULTILINE)


class PersonalizeError(ValueError):
    """笔记本与题目参数的声明（problems.PARAMS / problems.TEXT）对不上"""


def literal(value: Any) -> str:
    """参数值在代码里的写法：1024、13e9、1.3e9、{"X": 8, "Y": 4, "Z": 4}、("A[I_X, J]", "B[J, K_Y]")"""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f'"{k}": {literal(v)}' for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float) and value >= 1e8:
        short = f"{value / 1e9:g}e9"  # 13e9、1.3e9：与书里写模型参数量的方式一样
        if float(short) == value:
            return short
    if isinstance(value, float):
        return repr(value)
    return repr(value)


def sections(nb) -> list[int]:
    """每个单元属于第几题（第一题之前为 0）"""
    out, current = [], 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = _PROBLEM.search(cell.source)
            if m:
                current = int(m.group(1))
        out.append(current)
    return out


def set_parameters(source: str, values: Mapping[str, Any]) -> tuple[str, set[str]]:
    """把 source 里给 values 中变量的顶层赋值换成新值；返回（新源码, 换掉的变量名）"""
    lines = [line.encode("utf-8") for line in source.split("\n")]
    edits, done = [], set()
    for name, node in problems.assignment_nodes(source):
        if name in values:
            edits.append((node.lineno - 1, node.col_offset, node.end_lineno - 1, node.end_col_offset, name))
    for l0, c0, l1, c1, name in sorted(edits, reverse=True):  # 从后往前换，前面的位置不受影响
        text = literal(values[name]).encode("utf-8")
        head, tail = lines[l0][:c0], lines[l1][c1:]
        lines[l0 : l1 + 1] = [head + text + tail]
        done.add(name)
    return "\n".join(line.decode("utf-8") for line in lines), done


def personalize(nb, assignment: str, params: Mapping[str, Any], note: str | None = None):
    """返回写进了参数 params 的笔记本副本（不修改输入）；note 不为空时在标题后插入一段说明"""
    out = copy.deepcopy(nb)
    names = {p.name for p in problems.params_of(assignment)}
    assigned: set[str] = set()
    for cell in out.cells:
        if cell.cell_type == "code" and PARAM_TAG in cell.metadata.get("tags", []):
            cell.source, done = set_parameters(cell.source, {k: params[k] for k in names})
            assigned |= done
    if names - assigned:
        raise PersonalizeError(
            f"{assignment}：这些参数没有在带 parameters 标签的单元里赋值：{'、'.join(sorted(names - assigned))}"
        )
    where = sections(out)
    for sub in problems.TEXT[assignment]:
        found = False
        for cell, k in zip(out.cells, where):
            if k == sub.problem and sub.published in cell.source:
                cell.source = cell.source.replace(sub.published, sub.render(params))
                found = True
        if not found:
            raise PersonalizeError(
                f"{assignment} 第 {sub.problem} 题里找不到要替换的原文 {sub.published!r}（problems.TEXT）"
            )
    if note:
        out.cells.insert(1, nbformat.v4.new_markdown_cell(note))
    return out
