"""读沙箱里 pytest 写的 JUnit 报告：每个 nbval 单元（``Cell N``）的结果、失败信息和导出单元的导出记录"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from shardlab.grade.export import MARKER

ParseError = ET.ParseError
_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*m")


@dataclass
class CellOutcome:
    outcome: str  # 'passed' | 'failed' | 'skipped'
    message: str = ""
    export: dict | None = None
    died: bool = False  # 插件发现内核在这个单元里退出了
    export_error: str = ""  # 导出行在，但读不出记录时的原因


def parse_junit(xml: str) -> dict[int, CellOutcome]:
    root = ET.fromstring(xml)
    cells: dict[int, CellOutcome] = {}
    for case in root.iter("testcase"):
        m = re.fullmatch(r"Cell (\d+)", case.get("name", ""))
        if not m:
            continue
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = _ANSI.sub("", (node.text or "") or node.get("message", ""))
                break
        export, died, export_error = None, False, ""
        for prop in case.iter("property"):
            value = prop.get("value", "")
            died = died or (prop.get("name") == "shardlab-kernel" and value == "died")
            if prop.get("name") == "shardlab-export" and value.startswith(MARKER):
                try:
                    export = json.loads(value[len(MARKER) :])
                except (json.JSONDecodeError, RecursionError) as exc:
                    export, export_error = None, f"导出行不是合法的 JSON（{exc}）"
                if export is not None and not isinstance(export, dict):
                    export, export_error = None, f"导出行是 {type(export).__name__}，不是记录的字典"
        cells[int(m.group(1))] = CellOutcome(outcome, message, export, died, export_error)
    return cells


def short_traceback(message: str, lines: int = 12) -> tuple[str, str]:
    """(一行摘要, 最后几行 traceback)"""
    text = message.split("Traceback:", 1)[-1].strip("\n")
    rows = [r.rstrip() for r in text.splitlines() if r.strip() and not set(r.strip()) <= {"-"}]
    summary = rows[-1].strip() if rows else "出错"
    if "Timeout of" in message:
        summary = "超时：" + re.search(r"Timeout of [^\n]*", message).group(0)
    elif "Kernel dead" in message:
        summary = "内核已经退出（Kernel dead）：前面的单元结束了 Python 进程"
    return summary[:300], "\n".join(rows[-lines:])[-3000:]
