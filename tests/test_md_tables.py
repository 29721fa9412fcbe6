"""Markdown 表格里的行内数学：单元格里的 ``|`` 会被当作列分隔符，把 ``$2 \\cdot (I/|X|) \\cdot K$`` 拆成两半

快速的文本检查，覆盖 book/、solutions/、exercises/ 下全部 .md：代码块（``` 与 ~~~）之外的每一行表格，
每个单元格里未转义的 ``$`` 必须成对，列数必须与表头相同。数学里的绝对值写 ``\\lvert X\\rvert``。
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p for d in ("book", "solutions", "exercises") for p in (ROOT / d).glob("*.md"))
FENCE = re.compile(r"^(`{3,}|~{3,})")


def table_blocks(text: str) -> list[list[tuple[int, str]]]:
    """代码块之外、连续以 ``|`` 开头的行，按表分组：[[(行号, 行), ...], ...]"""
    blocks, current, fence = [], [], None
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = FENCE.match(s)
        if m and (fence is None or m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)):
            fence = None if fence is not None else m.group(1)
        if fence is None and s.startswith("|"):
            current.append((no, s))
            continue
        if current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def cells(row: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", row)
    return parts[1:-1] if row.endswith("|") and not row.endswith("\\|") else parts[1:]


def problems(text: str) -> list[str]:
    found = []
    for block in table_blocks(text):
        width = len(cells(block[0][1]))
        for no, row in block:
            cs = cells(row)
            if len(cs) != width:
                found.append(f"第 {no} 行有 {len(cs)} 列，表头是 {width} 列：{row}")
            for c in cs:
                if len(re.findall(r"(?<!\\)\$", c)) % 2:
                    found.append(f"第 {no} 行的单元格里 $ 不成对（数学里的 | 被当成了列分隔符？）：{c.strip()}")
    return found


def test_checker_catches_a_pipe_inside_math():
    bad = "| 方案 | V |\n|---|---|\n| (a) | $2 \\cdot (I/|X|) \\cdot K$ |\n"
    assert problems(bad)
    good = "| 方案 | V |\n|---|---|\n| (a) | $2 \\cdot (I/\\lvert X\\rvert) \\cdot K$ |\n"
    assert not problems(good)
    fenced = "```python\n| (a) | $x |\n```\n"
    assert not problems(fenced)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_table_cells_keep_math_whole(page):
    assert not problems(page.read_text(encoding="utf-8"))
