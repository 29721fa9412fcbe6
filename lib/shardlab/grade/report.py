"""评分的输出：gradebook.csv、totals.csv、gradebook.json、每个学生的中文反馈；所有文件都原子地写（临时文件 + os.replace）

结果里的字符串已经过 ``text.clean``；这里再按去处转义：CSV 的每个单元格不会被电子表格当成公式，
Markdown 反馈里学生的文字不会成为 HTML、链接或图片。
成绩册里每份结果标出是不是在这次的答案表、评分代码和隐藏输入下评的（``current``）。
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from shardlab.grade import status as st
from shardlab.grade.text import csv_cell, md_block, md_code, md_inline

CSV_FIELDS = ["student", "file", "problem", "points", "max_points", "status", "current", "message"]
TOTAL_FIELDS = ["student", "file", "points", "max_points", "status", "current"]
FILE_MODE = 0o640


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), FILE_MODE)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def is_current(res: dict, meta: dict) -> bool:
    return res.get("cache_key") == meta.get("cache_key")


def _num(x: float) -> str:
    return f"{x:g}"


def _csv(fields: list[str], rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return buf.getvalue()


def gradebook_csv(results: list[dict], meta: dict) -> str:
    rows = []
    for res in results:
        current = "yes" if is_current(res, meta) else "no"
        for prob in res["problems"]:
            rows.append(
                {
                    "student": res["student"],
                    "file": res.get("file", ""),
                    "problem": prob["id"],
                    "points": _num(prob["points"]),
                    "max_points": _num(prob["max_points"]),
                    "status": prob["status"],
                    "current": current,
                    "message": prob.get("message", ""),
                }
            )
    return _csv(CSV_FIELDS, rows)


def totals_csv(results: list[dict], meta: dict) -> str:
    rows = [
        {
            "student": r["student"],
            "file": r.get("file", ""),
            "points": _num(r["points"]),
            "max_points": _num(r["max_points"]),
            "status": r["status"],
            "current": "yes" if is_current(r, meta) else "no",
        }
        for r in results
    ]
    return _csv(TOTAL_FIELDS, rows)


def write_gradebook(out: Path, results: list[dict], meta: dict) -> None:
    results = sorted(results, key=lambda r: r["student"])
    atomic_write(out / "gradebook.csv", gradebook_csv(results, meta))
    atomic_write(out / "totals.csv", totals_csv(results, meta))
    keys = ("student", "file", "status", "points", "max_points", "chapter", "wall_s")
    summary = [{**{k: r.get(k) for k in keys}, "current": is_current(r, meta)} for r in results]
    doc = {"meta": meta, "summary": summary, "submissions": results}
    atomic_write(out / "gradebook.json", json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def feedback_markdown(res: dict) -> str:
    lines = [f"# 评分反馈：{md_inline(res['student'])}", ""]
    lines.append(f"- 文件：{md_code(res['file'])}")
    if res.get("chapter"):
        lines.append(f"- 第 {res['chapter']} 章练习")
    lines.append(f"- 得分：**{_num(res['points'])} / {_num(res['max_points'])}**")
    if res["status"] != st.GRADED:
        lines.append(f"- 整份提交：{st.text(res['status'])}。{md_inline(res.get('message', ''))}")
    for note in res.get("notes", []):
        if "\n" in note:
            head, _, body = note.partition("\n")
            lines += [f"- 注意：{md_inline(head)}", "", md_block(body), ""]
        else:
            lines.append(f"- 注意：{md_inline(note)}")
    lines += ["", "## 各题", ""]
    for prob in res["problems"]:
        mark = "✓" if prob["points"] >= prob["max_points"] > 0 else "✗"
        status = st.text(prob["status"])
        msg = prob.get("message", "")
        where = f"第 {prob['cell']} 个单元，" if prob.get("cell") else ""
        text = msg if msg.startswith(status) else f"{status}。{msg}"
        score = f"{_num(prob['points'])}/{_num(prob['max_points'])} 分"
        lines.append(f"- {mark} {md_code(prob['id'])}（{where}{score}）：{md_inline(text)}")
    if res.get("errors"):
        lines += ["", "## 运行时的错误", ""]
        for err in res["errors"]:
            where = f"第 {err['cell']} 个单元" if err.get("cell") else "评分单元"
            if err.get("answer_ids"):
                where += "（答案 " + "、".join(err["answer_ids"]) + "）"
            lines += [
                f"### {md_inline(where)}：{md_inline(err['summary'])}",
                "",
                md_block(err.get("traceback", "").strip()),
                "",
            ]
    lines.append("")
    return "\n".join(lines)


def write_feedback(out: Path, res: dict) -> Path:
    path = out / "feedback" / f"{res['student']}.md"
    atomic_write(path, feedback_markdown(res))
    return path
