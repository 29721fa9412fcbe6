"""评分的输出：gradebook.csv、totals.csv、gradebook.json、每个学生的中文反馈；所有文件都原子地写（临时文件 + os.replace）

结果里的字符串已经过 ``untrusted.clean``；这里再按去处转义：CSV 的每个单元格不会被电子表格当成公式，
Markdown 反馈里学生的文字不会成为 HTML、链接或图片。
成绩册只列这一次运行找到的提交；同一个学生有几份时，每份一行，``counted`` 标出计入成绩的那一份。
反馈只有学生自己的东西：每道题对不对和提示（从不给参考值），不写助教的记录（``ta_notes``、交的数与别人的比较）。
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from shardlab import atomic
from shardlab.grade import status as st
from shardlab.grade.outputs import csv_text
from shardlab.untrusted import md_block, md_code, md_inline

CSV_FIELDS = [
    "student",
    "roster_id",
    "file",
    "counted",
    "problem",
    "points",
    "max_points",
    "status",
    "message",
    "review",
]
TOTAL_FIELDS = ["student", "roster_id", "file", "counted", "points", "max_points", "status", "review"]
FILE_MODE = 0o640


def atomic_write(path: Path, text: str, mode: int = FILE_MODE) -> None:
    """原子地写（``shardlab.atomic``）；评分器的文件默认 0640"""
    atomic.write(path, text, mode)


def _num(x: float) -> str:
    return f"{x:g}"


def _yes(flag) -> str:
    return "yes" if flag else "no"


def review(res: dict, held: Mapping[str, str]) -> str:
    """这份提交所属学生的成绩待核对时的原因（“待核对：……”），不待核对时是空串；名下的每份提交都标，不只计入的那份"""
    sid = res.get("roster_id") or res.get("student")
    return held.get(sid, "") if isinstance(sid, str) else ""


def gradebook_csv(results: list[dict], held: Mapping[str, str] = MappingProxyType({})) -> str:
    """held：成绩待核对的学生（花名册 id，没有花名册时是提交的 id）→ 原因；review 一列写明，分数只是评出来的、不是成绩"""
    body = [
        [res["student"], res.get("roster_id", ""), res.get("file", ""), _yes(res.get("counted", True)), prob["id"],
         _num(prob["points"]), _num(prob["max_points"]), prob["status"], prob.get("message", ""), review(res, held)]
        for res in results
        for prob in res["problems"]
    ]  # fmt: skip
    return csv_text(CSV_FIELDS, body)


def totals_csv(results: list[dict], held: Mapping[str, str] = MappingProxyType({})) -> str:
    body = [
        [r["student"], r.get("roster_id", ""), r.get("file", ""), _yes(r.get("counted", True)), _num(r["points"]),
         _num(r["max_points"]), r["status"], review(r, held)]
        for r in results
    ]  # fmt: skip
    return csv_text(TOTAL_FIELDS, body)


def write_gradebook(out: Path, results: list[dict], meta: dict, held: Mapping[str, str] = MappingProxyType({})) -> None:
    results = sorted(results, key=lambda r: r["student"])
    atomic_write(out / "gradebook.csv", gradebook_csv(results, held))
    atomic_write(out / "totals.csv", totals_csv(results, held))
    keys = ("student", "roster_id", "file", "counted", "status", "points", "max_points", "chapter", "wall_s")
    summary = [{**{k: r.get(k) for k in keys}, "review": review(r, held)} for r in results]
    doc = {"meta": meta, "summary": summary, "submissions": results}
    atomic_write(out / "gradebook.json", json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def feedback_markdown(res: dict) -> str:
    lines = [f"# 评分反馈：{md_inline(res['student'])}", ""]
    lines.append(f"- 文件：{md_code(res['file'])}")
    if res.get("chapter"):
        lines.append(f"- 第 {res['chapter']} 章练习")
    if res["status"] in st.NO_SCORE:  # 成绩表里是“待核对”：反馈不能写成 0 分
        lines.append(
            f"- 得分：**待核对**（评分进程没有给出完整的报告，这不是 0 分；满分 {_num(res['max_points'])}，由老师核对后再定）"
        )
    else:
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
        mark = "✓" if prob.get("verdict") == st.CORRECT else "✗"
        where = f"第 {prob['cell']} 个代码单元，" if prob.get("cell") else ""
        text = st.describe(prob["status"], prob.get("message", ""))
        score = f"{_num(prob['points'])}/{_num(prob['max_points'])} 分"
        lines.append(f"- {mark} {md_code(prob['id'])}（{where}{score}）：{md_inline(text)}")
    if res.get("errors"):
        lines += ["", "## 运行时的错误", ""]
        for err in res["errors"]:
            where = f"第 {err['cell']} 个代码单元" if err.get("cell") else "评分单元"
            if err.get("answer_ids"):
                where += "（答案 " + "、".join(err["answer_ids"]) + "）"
            lines += [
                f"### {md_inline(where)}：{md_code(err['summary'])}",  # 代码段：原样显示，不用一个个转义
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
