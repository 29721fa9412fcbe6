"""教师用的汇总：每个学生一行的成绩表、Canvas 导入表、按题加权、成绩概况（summary.md 与终端）

- ``grades_wide.csv``：学号、姓名、每道题的（加权）得分、总分、满分；UTF-8 带 BOM，Excel 直接打开不乱码；
- ``canvas.csv``：Canvas 成绩册（gradebook）导入格式：Student, ID, SIS User ID, SIS Login ID, Section 五列之后是作业一列，
  第二行 Points Possible 是满分；学生按 SIS User ID（花名册的 id）对应；
- ``--weights``：CSV ``problem,weight``（problem 是答案 id），没有列出的题权重 1；
- ``summary.md``：人数、平均分、中位数、分数分布、各状态的题数、忽略的文件及原因；终端打印同样的概况。

有花名册时每个学生都有一行（没有提交的记 0 分、状态“没有提交”）；没有花名册时每份提交一行。
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import Counter
from pathlib import Path

from shardlab import answers
from shardlab.grade import status as st
from shardlab.grade.text import csv_cell

NO_SUBMISSION = "没有提交"


class WeightsError(ValueError):
    """权重文件有问题"""


def read_weights(path: Path | None) -> dict[str, float]:
    """读 ``problem,weight`` 的 CSV；未知的答案 id、不是正数的权重都报错"""
    if path is None:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise WeightsError(f"读不了权重文件（--weights）{path}：{exc}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or [c.strip().lower() for c in rows[0][:2]] != ["problem", "weight"]:
        raise WeightsError(f"权重文件（--weights）{path} 的第一行应当是表头 problem,weight")
    weights, bad = {}, []
    for n, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) < 2:
            bad.append(f"第 {n} 行：要有 problem 和 weight 两列")
            continue
        pid, raw = row[0].strip(), row[1].strip()
        if pid not in answers.ANSWERS:
            bad.append(f"第 {n} 行：未知的答案 id（problem）{pid!r}")
            continue
        try:
            w = float(raw)
        except ValueError:
            w = -1.0
        if not w >= 0 or w == float("inf"):
            bad.append(f"第 {n} 行：权重（weight）{raw!r} 不是非负的数")
            continue
        weights[pid] = w
    if bad:
        raise WeightsError(f"权重文件（--weights）{path} 有问题：\n" + "\n".join(f"  - {b}" for b in bad))
    return weights


def _problem_ids(results: list[dict], chapter: int | None) -> list[str]:
    ids = [a.id for a in answers.ANSWER_LIST if chapter is None or a.chapter == chapter]
    seen = {p["id"] for r in results for p in r.get("problems", [])}
    return [i for i in ids if i in seen or chapter is not None]


def rows(results: list[dict], roster_students=None, weights=None, chapter=None) -> tuple[list[str], list[dict]]:
    """(题目 id 列表, 每个学生一行)：{'id','name','status','points':{题: 分},'total','max'}"""
    weights = weights or {}
    by_student: dict[str, list[dict]] = {}
    for r in results:
        by_student.setdefault(r.get("roster_id") or r["student"], []).append(r)
    pids = _problem_ids(results, chapter)
    people = [(s.id, s.name) for s in roster_students] if roster_students else [(k, "") for k in sorted(by_student)]
    out = []
    for sid, name in people:
        points = dict.fromkeys(pids, 0.0)
        statuses = []
        for r in by_student.get(sid, []):
            statuses.append(r.get("status", st.GRADED))
            for p in r.get("problems", []):
                if p["id"] in points:
                    points[p["id"]] = max(points[p["id"]], p["points"] * weights.get(p["id"], 1.0))
        maximum = sum(weights.get(p, 1.0) for p in pids)
        status = "、".join(dict.fromkeys(st.text(s) for s in statuses)) if statuses else NO_SUBMISSION
        out.append(
            {"id": sid, "name": name, "status": status, "points": points, "total": sum(points.values()), "max": maximum}
        )
    return pids, out


def _num(x: float) -> str:
    return f"{x:g}"


def wide_csv(pids: list[str], table: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["id", "name", *pids, "total", "max", "status"])
    for row in table:
        w.writerow(
            [
                csv_cell(row["id"]),
                csv_cell(row["name"]),
                *(_num(row["points"][p]) for p in pids),
                _num(row["total"]),
                _num(row["max"]),
                row["status"],
            ]
        )
    return "\ufeff" + buf.getvalue()


def canvas_csv(table: list[dict], assignment: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment])
    maximum = table[0]["max"] if table else 0
    w.writerow(["    Points Possible", "", "", "", "", _num(maximum)])
    for row in table:
        w.writerow([csv_cell(row["name"] or row["id"]), "", csv_cell(row["id"]), "", "", _num(row["total"])])
    return "\ufeff" + buf.getvalue()


def summary(table: list[dict], results: list[dict], ignored: list[tuple[str, str]]) -> str:
    totals = [r["total"] for r in table]
    maximum = max((r["max"] for r in table), default=0)
    lines = ["# 评分概况", ""]
    lines.append(f"- 学生：{len(table)} 人；提交：{len(results)} 份")
    if totals:
        lines.append(
            f"- 平均分 {statistics.mean(totals):.2f}，中位数 {statistics.median(totals):g}（满分 {_num(maximum)}）"
        )
        lines += ["", "## 分数分布", "", "| 总分 | 人数 |", "|---|---|"]
        buckets = Counter(_bucket(t, maximum) for t in totals)
        for label in sorted(buckets, key=lambda b: -buckets_order(b)):
            lines.append(f"| {label} | {buckets[label]} |")
    per_problem = Counter(p["status"] for r in results for p in r.get("problems", []))
    per_sub = Counter(r.get("status", st.GRADED) for r in results)
    lines += ["", "## 各状态", "", "| 状态 | 说明 | 题数 |", "|---|---|---|"]
    lines += [f"| `{k}` | {st.text(k)} | {v} |" for k, v in sorted(per_problem.items())]
    lines += ["", "| 整份提交的状态 | 说明 | 份数 |", "|---|---|---|"]
    lines += [f"| `{k}` | {st.text(k)} | {v} |" for k, v in sorted(per_sub.items())]
    missing = [r["id"] for r in table if r["status"] == NO_SUBMISSION]
    if missing:
        lines += ["", f"## 没有提交（{len(missing)} 人）", "", "、".join(missing)]
    lines += ["", f"## 忽略的文件（{len(ignored)} 个）", ""]
    lines += [f"- `{path}`：{why}" for path, why in ignored] or ["无"]
    return "\n".join(lines) + "\n"


def _bucket(total: float, maximum: float) -> str:
    if maximum <= 0:
        return "0"
    k = min(9, int(10 * total / maximum)) if total < maximum else 10
    return "满分" if k == 10 else f"{k * 10}%–{k * 10 + 10}%"


def buckets_order(label: str) -> float:
    return 101 if label == "满分" else float(label.split("%")[0]) if "%" in label else 0


def console_summary(table: list[dict], results: list[dict], ignored: list) -> str:
    totals = [r["total"] for r in table]
    if not totals:
        return "评分概况：没有学生"
    flagged = sum(p["status"] in (st.COPIED_PUBLISHED, st.OTHER_VARIANT) for r in results for p in r["problems"])
    return (
        f"评分概况：{len(table)} 名学生，平均分 {statistics.mean(totals):.2f}，中位数 {statistics.median(totals):g}"
        f"（满分 {_num(max(r['max'] for r in table))}）；抄来的答案 {flagged} 题；"
        f"没有提交 {sum(r['status'] == NO_SUBMISSION for r in table)} 人；忽略的文件 {len(ignored)} 个（见 summary.md）"
    )


def write_all(out: Path, results, roster_students, weights, chapter, ignored, write) -> str:
    """写出 grades_wide.csv、canvas.csv、summary.md（write 是原子写函数），返回终端上的一行概况"""
    pids, table = rows(results, roster_students, weights, chapter)
    write(out / "grades_wide.csv", wide_csv(pids, table))
    name = f"shardlab ch{chapter:02d}" if chapter else "shardlab"
    write(out / "canvas.csv", canvas_csv(table, name))
    write(out / "summary.md", summary(table, results, ignored))
    return console_summary(table, results, ignored)
