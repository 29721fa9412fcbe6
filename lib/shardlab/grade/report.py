"""评分的输出：gradebook.csv、gradebook.json、每个学生的中文反馈；所有文件都原子地写（临时文件 + os.replace）"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from shardlab.grade import status as st

CSV_FIELDS = ["student", "problem", "points", "max_points", "status", "message"]


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def gradebook_csv(results: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for res in results:
        for prob in res["problems"]:
            writer.writerow(
                {
                    "student": res["student"],
                    "problem": prob["id"],
                    "points": _num(prob["points"]),
                    "max_points": _num(prob["max_points"]),
                    "status": prob["status"],
                    "message": prob.get("message", "").replace("\n", " "),
                }
            )
    return buf.getvalue()


def _num(x: float) -> str:
    return f"{x:g}"


def write_gradebook(out: Path, results: list[dict], meta: dict) -> None:
    results = sorted(results, key=lambda r: r["student"])
    atomic_write(out / "gradebook.csv", gradebook_csv(results))
    summary = [
        {k: r[k] for k in ("student", "file", "status", "points", "max_points", "chapter", "wall_s")} for r in results
    ]
    doc = {"meta": meta, "summary": summary, "submissions": results}
    atomic_write(out / "gradebook.json", json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def feedback_markdown(res: dict) -> str:
    lines = [f"# 评分反馈：{res['student']}", ""]
    lines.append(f"- 文件：`{res['file']}`")
    if res.get("chapter"):
        lines.append(f"- 第 {res['chapter']} 章练习")
    lines.append(f"- 得分：**{_num(res['points'])} / {_num(res['max_points'])}**")
    if res["status"] != st.GRADED:
        lines.append(f"- 整份提交：{st.text(res['status'])}。{res.get('message', '')}")
    for note in res.get("notes", []):
        lines.append(f"- 注意：{note}")
    lines += ["", "## 各题", ""]
    for prob in res["problems"]:
        mark = "✓" if prob["points"] >= prob["max_points"] > 0 else "✗"
        status = st.text(prob["status"])
        msg = prob.get("message", "")
        where = f"第 {prob['cell']} 个单元，" if prob.get("cell") else ""
        text = msg if msg.startswith(status) else f"{status}。{msg}"
        lines.append(f"- {mark} `{prob['id']}`（{where}{_num(prob['points'])}/{_num(prob['max_points'])} 分）：{text}")
    if res.get("errors"):
        lines += ["", "## 运行时的错误", ""]
        for err in res["errors"]:
            where = f"第 {err['cell']} 个单元" if err.get("cell") else "评分单元"
            if err.get("answer_ids"):
                where += "（答案 " + "、".join(err["answer_ids"]) + "）"
            lines += [f"### {where}：{err['summary']}", "", "```text", err.get("traceback", "").strip(), "```", ""]
    lines.append("")
    return "\n".join(lines)


def write_feedback(out: Path, res: dict) -> Path:
    path = out / "feedback" / f"{res['student']}.md"
    atomic_write(path, feedback_markdown(res))
    return path
