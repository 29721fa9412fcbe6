"""运行解答笔记本，写出答案表（make answer-key）：build/answer_key.json

格式：``{"ch05-p1a": {"value": 2.33e-05, "unit": "s"}, ...}``，全部是 SI 单位；
函数答案写成 ``{"unit": "1", "kind": "function", "cases": [{"args": [...], "value": ...}, ...]}``（公开示例输入上的值）。
每个答案都来自解答笔记本里真正算出来的变量，不是手写的数字。
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "answer_key.json"

from shardlab import answers  # noqa: E402
from shardlab.export import ExportItem, export_source, parse_exports  # noqa: E402


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
        if "error" in rec or rec.get("missing"):
            raise RuntimeError(f"解答笔记本没有给出 {aid}（变量 {spec.var}）：{rec}")
        if spec.kind == "function":
            cases = [{"args": list(args), **case} for args, case in zip(spec.examples, rec["cases"], strict=True)]
            key[aid] = {"unit": spec.unit, "kind": "function", "cases": cases}
        else:
            key[aid] = {"value": rec["value"], "unit": spec.unit}
    return key


def solution_notebooks() -> dict[int, Path]:
    return {int(p.name[2:4]): p for p in sorted((ROOT / "solutions").glob("ch*_solutions.md"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="运行解答笔记本并写出答案表")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    records: dict = {}
    for chapter, md in solution_notebooks().items():
        records.update(run_and_export(md, chapter_items(chapter)))
    missing = sorted(set(answers.ANSWERS) - set(records))
    if missing:
        print("解答笔记本缺少这些答案：" + "、".join(missing), file=sys.stderr)
        return 1
    key = build_key(records)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(key, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"答案表：{args.out}（{len(key)} 个答案）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
