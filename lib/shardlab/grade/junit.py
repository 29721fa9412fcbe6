"""读沙箱里 pytest 写的 JUnit 报告：每个 nbval 单元（``Cell N``）的结果、失败信息和导出单元的导出记录

报告来自沙箱，学生的内核能把它整个换掉，所以它是不可信的输入：用 defusedxml 解析（拒绝 DTD 与实体，
没有实体膨胀），长度有上限（``MAX_REPORT_CHARS``，与沙箱读回的输出上限相同），每条消息、每个导出行也有上限。
这些上限对一份伪造的、达到最大长度的报告同样成立（``tests/test_grade.py`` 实测时间与内存）。
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from shardlab.grade.markers import MARKER

MAX_REPORT_CHARS = 8 << 20
MAX_MESSAGE_CHARS = 20_000  # 一个单元的失败信息（插件已截到 4000 字符；伪造的报告可能更长）
MAX_EXPORT_CHARS = 200_000  # 一个导出行
MAX_CELLS = 10_000  # 报告里的测试用例数（评分笔记本的单元数不超过 inject.MAX_CELLS 的两倍）
_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*m")
_CELL = re.compile(r"Cell (\d{1,6})")


class ReportError(ValueError):
    """报告不能用：太长、不是 XML、含 DTD 或实体"""


@dataclass
class CellOutcome:
    outcome: str  # 'passed' | 'failed' | 'skipped'
    message: str = ""
    export: dict | None = None
    died: bool = False  # 插件发现内核在这个单元里退出了
    export_error: str = ""  # 导出行在，但读不出记录时的原因


def _export(value: str) -> tuple[dict | None, str]:
    if len(value) > MAX_EXPORT_CHARS:
        return None, f"导出行超过 {MAX_EXPORT_CHARS} 个字符"
    try:
        export = json.loads(value[len(MARKER) :])
    except (ValueError, RecursionError) as exc:  # JSONDecodeError，或位数过多的整数
        return None, f"导出行不是合法的 JSON（{str(exc)[:200]}）"
    if not isinstance(export, dict):
        return None, f"导出行是 {type(export).__name__}，不是记录的字典"
    return export, ""


def parse_junit(xml: str) -> dict[int, CellOutcome]:
    if len(xml) > MAX_REPORT_CHARS:
        raise ReportError(f"报告超过 {MAX_REPORT_CHARS} 个字符")
    try:
        root = SafeET.fromstring(xml, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise ReportError(f"报告含有 DTD 或实体（{type(exc).__name__}），被拒绝") from None
    except ET.ParseError as exc:
        raise ReportError(f"报告不是合法的 XML（{exc}）") from None
    cells: dict[int, CellOutcome] = {}
    for case in root.iter("testcase"):
        m = _CELL.fullmatch(case.get("name", ""))
        if not m:
            continue
        if len(cells) >= MAX_CELLS:
            raise ReportError(f"报告里的单元超过 {MAX_CELLS} 个")
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = _ANSI.sub("", ((node.text or "") or node.get("message", ""))[:MAX_MESSAGE_CHARS])
                break
        export, died, export_error = None, False, ""
        for prop in case.iter("property"):
            value = prop.get("value", "")
            died = died or (prop.get("name") == "shardlab-kernel" and value == "died")
            if prop.get("name") == "shardlab-export" and value.startswith(MARKER):
                export, export_error = _export(value)
        cells[int(m.group(1))] = CellOutcome(outcome, message, export, died, export_error)
    return cells


_KERNEL_GONE = ("Kernel dead", "Kernel died", "kernel_info")  # nbval 报告内核退出或没有启动的写法


def kernel_gone(message: str) -> bool:
    """单元的失败信息说内核已经退出，或者根本没有启动（以前只认 "Kernel dead"：内核起不来时每道题都判成“没有导出”）。
    学生代码抛出的异常（nbval 的 "Notebook cell execution failed"，里面有学生能写的任何文字）不算：
    不然 raise RuntimeError("Kernel died") 就能把自己的错误记成评分器的内核崩溃"""
    return "Notebook cell execution failed" not in message and any(s in message for s in _KERNEL_GONE)


def short_traceback(message: str, lines: int = 12) -> tuple[str, str]:
    """(一行摘要, 最后几行 traceback)"""
    text = message.split("Traceback:", 1)[-1].strip("\n")
    rows = [r.rstrip() for r in text.splitlines() if r.strip() and not set(r.strip()) <= {"-"}]
    summary = rows[-1].strip() if rows else "出错"
    if "Timeout of" in message:
        summary = "超时：" + re.search(r"Timeout of [^\n]*", message).group(0)[:200]
    elif kernel_gone(message):
        summary = "内核已经退出（Kernel dead）：前面的单元结束了 Python 进程"
    return summary[:300], "\n".join(rows[-lines:])[-3000:]
