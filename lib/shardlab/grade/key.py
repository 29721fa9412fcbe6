"""答案表（answer key）：由解答笔记本算出（``python -m shardlab.grade.key``，即 make answer-key），评分时读入并核对

格式：``{"ch05-p1a": {"value": 2.33e-05, "unit": "s"}, ...}``，全部是 SI 单位；
函数答案写成 ``{"unit": "1", "kind": "function", "cases": [{"args": [...], "value": ...}, ...]}``（公开示例输入上的值）。
每个答案都来自解答笔记本里真正算出来的变量，不是手写的数字。

评分时按提交查表（``AnswerKey.entry(answer_id, submission)``）：现在每个人是同一份答案表，
个人化的题目变体只需换掉这个查表。
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from shardlab import atomic
from shardlab.exercise import answers
from shardlab.grade.course import Course, CourseError
from shardlab.grade.export import ExportItem, export_source, parse_exports


class AnswerKeyError(RuntimeError):
    """答案表缺失、读不了、无法重建，或与参考函数不一致"""


@dataclass(frozen=True)
class AnswerKey:
    entries: dict
    fingerprint: str

    @classmethod
    def from_entries(cls, entries: dict) -> AnswerKey:
        check_key(entries)
        return cls(entries, fingerprint(entries))

    def entry(self, answer_id: str, submission: str | None = None) -> dict | None:
        """答案 id 在这份提交（学生 id）上的期望值；没有这道题时为 None"""
        return self.entries.get(answer_id)


def fingerprint(entries: dict) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]


def check_key(entries: dict) -> None:
    """函数答案在评分时用参考函数算；先确认参考函数在公开示例上与解答笔记本一致"""
    if not isinstance(entries, dict):
        raise AnswerKeyError("答案表不是 {答案 id: 记录} 的字典")
    for aid, entry in entries.items():
        spec = answers.ANSWERS.get(aid)
        if spec is None or spec.kind != "function":
            continue
        for case in entry.get("cases", []):
            right = spec.reference(*case["args"])
            if not math.isclose(float(case["value"]), right, rel_tol=spec.rtol, abs_tol=1e-12):
                raise AnswerKeyError(f"{aid}：解答笔记本在 {case['args']} 上得 {case['value']}，参考函数得 {right}")


def read_key(path: Path) -> AnswerKey:
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnswerKeyError(f"读不了答案表 {path}：{exc}") from None
    return AnswerKey.from_entries(entries)


def is_fresh(path: Path, course: Course) -> bool:
    """答案表存在，且不比解答笔记本和参考算法（answers.py）旧"""
    if not path.exists():
        return False
    sources = [*course.solutions().values(), Path(answers.__file__)]
    newest = max((p.stat().st_mtime for p in sources if p.exists()), default=0)
    return path.stat().st_mtime >= newest


def load_key(path: Path | None = None, course: Course | None = None, cache: Path | None = None) -> AnswerKey:
    """给了 path 就读它；否则用 cache（默认课程目录的 build/answer_key.json），不存在或比解答旧时先由解答笔记本重建"""
    if path is not None:
        return read_key(path)
    if course is None:
        raise AnswerKeyError("没有给答案表（--key），也没有课程目录（--course）可以用来生成它")
    path = cache or course.default_key
    if not is_fresh(path, course):
        if not course.solutions():
            raise AnswerKeyError(f"没有答案表 {path}，课程目录里也没有解答笔记本可以用来生成它")
        write_key(course, path)
    return read_key(path)


# ---- 由解答笔记本生成 ----
def chapter_items(chapter: int) -> list[ExportItem]:
    return [ExportItem(a.id, a.var, a.kind, a.examples) for a in answers.ANSWERS.values() if a.chapter == chapter]


def run_and_export(md: Path, items: list[ExportItem], timeout: int = 300) -> dict:
    """执行一个笔记本（在它所在的目录里），末尾注入导出单元，返回导出的记录"""
    os.environ.setdefault("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))
    nb = jupytext.read(md)
    nb.cells.append(nbformat.v4.new_code_cell(export_source(items)))
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(md.parent)}}
    )
    client.execute()
    text = "".join(out.get("text", "") for out in nb.cells[-1].outputs if out.get("output_type") == "stream")
    return parse_exports(text)


def build_key(records: dict) -> dict:
    key = {}
    for aid, rec in sorted(records.items()):
        spec = answers.get(aid)
        if set(rec) & {"error", "invalid", "missing"}:
            raise AnswerKeyError(f"解答笔记本没有给出 {aid}（变量 {spec.var}）：{rec}")
        if spec.kind == "function":
            cases = [{"args": list(args), **case} for args, case in zip(spec.examples, rec["cases"], strict=True)]
            key[aid] = {"unit": spec.unit, "kind": "function", "cases": cases}
        else:
            key[aid] = {"value": rec["value"], "unit": spec.unit}
    return key


def registry_key() -> dict:
    """只由登记表的参考算法算出的发布版答案表（与 `build_key` 同样的格式），不运行解答笔记本

    测试与基准用它；正式评分用 `compute_key`（解答笔记本算出的数，另有测试保证两者一致）。
    """
    key = {}
    for a in answers.ANSWER_LIST:
        if a.kind == "function":
            cases = [{"args": list(x), "value": a.reference(*x)} for x in a.examples]
            key[a.id] = {"unit": a.unit, "kind": "function", "cases": cases}
        else:
            key[a.id] = {"value": float(a.value()), "unit": a.unit}
    return key


def compute_key(course: Course) -> dict:
    """运行课程的全部解答笔记本，得到答案表（字典）"""
    records: dict = {}
    for chapter, md in course.solutions().items():
        records.update(run_and_export(md, chapter_items(chapter)))
    missing = sorted(set(answers.ANSWERS) - set(records))
    if missing:
        raise AnswerKeyError("解答笔记本缺少这些答案：" + "、".join(missing))
    return build_key(records)


def write_key(course: Course, path: Path) -> dict:
    try:
        key = compute_key(course)
    except AnswerKeyError:
        raise
    except Exception as exc:  # noqa: BLE001  解答笔记本执行失败（CellExecutionError 等）
        raise AnswerKeyError(f"生成答案表失败：{type(exc).__name__}: {str(exc)[-2000:]}") from None
    atomic.write(path, json.dumps(key, ensure_ascii=False, indent=1) + "\n", 0o644)
    atomic.hand_back(path.parent)
    return key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shardlab.grade.key", description="运行解答笔记本并写出答案表")
    parser.add_argument("--course", type=Path, help="课程目录（默认：从当前目录向上找）")
    parser.add_argument("--out", type=Path, help="答案表（默认 <课程目录>/build/answer_key.json）")
    args = parser.parse_args(argv)
    try:
        course = Course.from_option(args.course)
        out = args.out or course.default_key
        key = write_key(course, out)
    except (CourseError, AnswerKeyError) as exc:
        print(f"答案表：{exc}", file=sys.stderr)
        return 1
    print(f"答案表：{out}（{len(key)} 个答案）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
