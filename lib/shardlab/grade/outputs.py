"""教师用的汇总：每个学生一行的成绩表、Canvas 导入表、按题加权、成绩概况，以及只给助教看的两份记录

- ``grades_wide.csv``：学号、姓名、每道题的（加权）得分、总分、满分、状态；
- ``canvas.csv``：Canvas 成绩册（gradebook）导入格式：Student, ID, SIS User ID, SIS Login ID, Section 五列之后是作业一列
  （列名用 ``--canvas-column``，要与 Canvas 里的作业名一致），第二行 Points Possible 是满分；学生按 SIS User ID（花名册的 id）对应；
- ``--weights``：CSV ``problem,weight``（problem 是答案 id），没有列出的题权重 1；权重在评分时就用上（每道题的满分就是权重），
  所以这里、``totals.csv``、``gradebook.csv``、反馈和 Gradescope 的总分都是同一个数；
- ``summary.md``：人数、平均分、中位数、分数分布、各状态的题数、忽略的文件及原因；终端打印同样的概况；
- ``ta/answers.csv``、``ta/integrity.csv``、``ta/integrity.md``（0600，只给助教）：每个学生每道题交的数、参考值、状态、
  与谁的答案相同；每份提交与每位同学（或发布版）之间的证据（规则见 ``shardlab.grade.integrity``）。

只导出这一次运行找到的提交（缓存的结果也算）；以前运行过、这次没有列出的提交不进任何汇总。
有花名册时每个学生都有一行（没有提交的状态“没有提交”，分数空着，--zero-missing 时记 0 分）；没有花名册时每份提交一行。
所有 CSV 都是 UTF-8 带 BOM（Excel 直接打开不乱码），单元格经过 ``csv_cell``（不会被当成公式）。
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from shardlab.exercise import answers
from shardlab.grade import status as st
from shardlab.grade.integrity import ALPHA, MIN_MATCHES, Report
from shardlab.untrusted import csv_cell, md_cell, md_code, md_inline

NO_SUBMISSION = "没有提交"
MAX_WEIGHT = 1000.0
MIN_WEIGHT = 0.001  # 不是 0 的权重至少这么大：1e-300 这样的权重让满分接近 0，分数的比例没有意义
_PLAIN_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?|\.[0-9]+", re.ASCII)  # 只认 ASCII 的十进制小数：不要指数、全角数字
TA_DIR = "ta"
TA_MODE = 0o600


class WeightsError(ValueError):
    """权重文件有问题"""


def read_weights(path: Path | None) -> dict[str, float]:
    """读 ``problem,weight`` 的 CSV；未知的答案 id、不是非负数的权重都报错"""
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
        if any(c.strip() for c in row[2:]):  # ch05-p1a,0,5：用逗号写的小数 0,5 被拆成了两列
            bad.append(f"第 {n} 行：多于两列（{','.join(row)!r}）；小数请用点（0.5），不要用逗号")
            continue
        pid, raw = row[0].strip(), row[1].strip()
        if pid not in answers.ANSWERS:
            bad.append(f"第 {n} 行：未知的答案 id（problem）{pid!r}")
            continue
        # float() 认 "1e-300"、"１０"（全角数字）、"nan"、"1_0"：都不是教师在表格里会写的权重
        w = float(raw) if _PLAIN_DECIMAL.fullmatch(raw) else -1.0
        if not (w == 0 or MIN_WEIGHT <= w <= MAX_WEIGHT):
            bad.append(
                f"第 {n} 行：权重（weight）{raw!r} 应当是 0，或 {MIN_WEIGHT:g} 到 {MAX_WEIGHT:g} 之间的数，"
                "用半角数字和小数点写（例如 2 或 0.5，不用科学记数法、不用全角数字）"
            )
            continue
        if pid in weights:
            bad.append(f"第 {n} 行：{pid} 已经在前面给过权重（只能给一次）")
            continue
        weights[pid] = w
    if bad:
        raise WeightsError(f"权重文件（--weights）{path} 有问题：\n" + "\n".join(f"  - {b}" for b in bad))
    return weights


def weight_problems(weights: dict[str, float], chapter: int) -> list[str]:
    """权重文件与这一章对不上的地方：别的章的题、这一章每道题的权重都是 0（满分是 0）"""
    bad = []
    other = sorted(pid for pid in weights if answers.get(pid).chapter != chapter)
    if other:
        bad.append(f"权重文件（--weights）里有别的章的题：{'、'.join(other)}；这次是第 {chapter} 章")
    ids = [a.id for a in answers.ANSWER_LIST if a.chapter == chapter]
    if weights and all(weights.get(pid, 1.0) == 0 for pid in ids):
        bad.append(f"权重文件（--weights）把第 {chapter} 章每道题的权重都设成了 0：满分会是 0")
    return bad


def csv_text(header: list[str], rows: list[list]) -> str:
    """UTF-8 带 BOM 的 CSV；每个单元格经过 csv_cell"""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow([csv_cell(h) for h in header])  # 表头也可能来自教师的输入（--canvas-column）
    for row in rows:
        w.writerow([csv_cell(_num(c)) if isinstance(c, float) else csv_cell(c) for c in row])
    return "\ufeff" + buf.getvalue()


def _num(x: float) -> str:
    return f"{x:g}"


def _problem_ids(results: list[dict], chapter: int | None) -> list[str]:
    ids = [a.id for a in answers.ANSWER_LIST if chapter is None or a.chapter == chapter]
    seen = {p["id"] for r in results for p in r.get("problems", [])}
    return [i for i in ids if i in seen or chapter is not None]


NOT_GRADED = "还没有评（评分被中断）"
HELD = "待核对：名下内容不同的文件超过上限，有的没有评（见 summary.md；核对后加大 --max-files 重评）"
GROUP = "group"


def rows(
    results: list[dict],
    roster_students=None,
    chapter=None,
    weights=None,
    pending=frozenset(),
    held=frozenset(),
    zero_missing: bool = False,
) -> tuple[list[str], list[dict]]:
    """(题目 id 列表, 每个学生一行)：{'id','name','status','points':{题: 分},'total','max','file','held'}

    有花名册时每个学生取计入成绩的那一份（``counted``）；没有时每份提交一行。分数已经按权重算好（结果里的 points）。
    held：成绩待核对的学生（花名册 id，没有花名册时是提交的 id）→ 状态（集合时是 HELD：文件超过上限、有的没有评），
    canvas.csv 里不给分。
    """
    weights = weights or {}
    pids = _problem_ids(results, chapter)
    counted = [r for r in results if r.get("counted", True)]
    if roster_students:
        by_student = {r.get("roster_id") or r["student"]: r for r in counted}
        for r in counted:  # 小组提交（Gradescope 导出）：没有自己的提交的组员拿同一份成绩，和 Gradescope 一样
            for member in r.get("group", []):
                by_student.setdefault(member, {**r, "status": GROUP, "group_of": r.get("roster_id")})
        people = [(s.id, s.name) for s in roster_students]
    else:
        by_student = {r["student"]: r for r in counted}
        people = [(k, "") for k in sorted(set(by_student) | set(pending))]  # 还没有评的也列出来
    maximum = sum(weights.get(p, 1.0) for p in pids)
    out = []
    for sid, name in people:
        res = by_student.get(sid)
        points = dict.fromkeys(pids, 0.0)
        for p in (res or {}).get("problems", []):
            if p["id"] in points:
                points[p["id"]] = float(p["points"])
        if res is None:
            status, file = (NOT_GRADED if sid in pending else NO_SUBMISSION), ""
        elif res.get("status") == GROUP:
            status, file = f"小组提交（按 {res['group_of']} 的笔记本评分）", res.get("file", "")
        else:
            status, file = st.text(res.get("status", st.GRADED)), res.get("file", "")
        total = float(res["points"]) if res is not None else 0.0
        if sid in held:
            status = held[sid] if isinstance(held, Mapping) else HELD
        # blank：可以导入的表（canvas.csv、grades_wide.csv）里不给分，也不算进平均分：待核对的、还没有评的（评分被中断），
        # 和没有文件的（除非教师确认这次是全班的提交）。以前还没有评的按 0 分算进平均分、中位数和分数分布
        blank = sid in held or status == NOT_GRADED or (status == NO_SUBMISSION and not zero_missing)
        out.append({"id": sid, "name": name, "status": status, "points": points, "total": total, "max": maximum,
                    "file": file, "held": sid in held, "blank": blank})  # fmt: skip
    return pids, out


def wide_csv(pids: list[str], table: list[dict]) -> str:
    header = ["id", "name", *pids, "total", "max", "status", "file"]
    body = [
        [
            r["id"],
            r["name"],
            *("" if r.get("blank") else r["points"][p] for p in pids),
            "" if r.get("blank") else r["total"],
            r["max"],
            r["status"],
            r["file"],
        ]  # fmt: skip
        for r in table
    ]
    return csv_text(header, body)


def canvas_csv(table: list[dict], column: str) -> str:
    maximum = table[0]["max"] if table else 0.0
    body = [["    Points Possible", "", "", "", "", float(maximum)]]
    body += [[r["name"] or r["id"], "", r["id"], "", "", "" if r["blank"] else r["total"]] for r in table]
    return csv_text(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column], body)


def summary(
    table: list[dict], results: list[dict], ignored: list[tuple[str, str]], integrity: Report | None, notes=()
) -> str:
    totals = [r["total"] for r in table if not r.get("blank")]  # 待核对、空着的不算进平均分
    maximum = max((r["max"] for r in table), default=0)
    lines = ["# 评分概况", ""]
    if notes:
        lines += ["## 给教师的说明", "", *(f"- {md_inline(n)}" for n in notes), ""]
    if any(n.startswith("评分被中断") for n in notes):
        lines += ["下面的统计只含已经评完的学生（名下还有文件没评的学生整个人算“还没有评”）。", ""]
    lines.append(
        f"- 学生：{len(table)} 人；提交：{len(results)} 份（计入成绩的 {sum(r.get('counted', True) for r in results)} 份）"
    )
    if totals:
        nobody = sum(r["status"] == NO_SUBMISSION for r in table)
        zeroed = any(r["status"] == NO_SUBMISSION and not r.get("blank") for r in table)
        zero = (
            (f"；没有提交的 {nobody} 人按 0 分算" if zeroed else f"；没有提交的 {nobody} 人不算在内") if nobody else ""
        )
        waiting = sum(bool(r.get("held")) for r in table)
        zero += f"；待核对的 {waiting} 人不算在内" if waiting else ""
        later = sum(r["status"] == NOT_GRADED for r in table)
        zero += f"；还没有评的 {later} 人不算在内" if later else ""
        lines.append(
            f"- 平均分 {statistics.mean(totals):.2f}，中位数 {statistics.median(totals):g}（满分 {_num(maximum)}{zero}）"
        )
        lines += ["", "## 分数分布", "", "| 总分 | 人数 |", "|---|---|"]
        buckets = Counter(_bucket(t, maximum) for t in totals)
        for label in sorted(buckets, key=lambda b: -buckets_order(b)):
            lines.append(f"| {label} | {buckets[label]} |")
    per_problem = Counter(p["status"] for r in results for p in r.get("problems", []))
    per_sub = Counter(r.get("status", st.GRADED) for r in results)
    lines += ["", "## 各状态", "", "| 状态 | 说明 | 题数 |", "|---|---|---|"]
    lines += [f"| {md_cell(k)} | {md_cell(st.text(k))} | {v} |" for k, v in sorted(per_problem.items())]
    lines += ["", "| 整份提交的状态 | 说明 | 份数 |", "|---|---|---|"]
    lines += [f"| {md_cell(k)} | {md_cell(st.text(k))} | {v} |" for k, v in sorted(per_sub.items())]
    extra = [r for r in results if not r.get("counted", True)]
    if extra:
        lines += ["", f"## 同一个学生的其他文件（{len(extra)} 份，评了但不计入成绩）", ""]
        lines += [
            f"- {md_code(r.get('roster_id', ''))}：{md_code(r.get('file', ''))}（{_num(r['points'])} 分）"
            for r in extra
        ]
        differ = differing_files(results)
        if differ:
            lines += ["", *spray_lines(differ)]
    waiting = [r for r in table if r.get("held")]
    if waiting:
        lines += ["", f"## 待核对（{len(waiting)} 人，canvas.csv 里不给分）", ""]
        lines += [f"- {md_code(r['id'])}：{md_inline(r['status'])}" for r in waiting]
    later = [r for r in table if r["status"] == NOT_GRADED]
    if later:
        lines += [
            "",
            f"## 还没有评（{len(later)} 人，评分被中断；再运行一次会接着评，不算进上面的统计）",
            "",
            "、".join(md_code(r["id"]) for r in later),
        ]
    missing = [r for r in table if r["status"] == NO_SUBMISSION]
    if missing:
        lines += ["", f"## 没有提交（{len(missing)} 人）", "", "、".join(md_code(m["id"]) for m in missing)]
        if any(m.get("blank") for m in missing):
            lines += [
                "",
                "他们在 canvas.csv 与 grades_wide.csv 里空着：评分器不知道这次给的是不是全班的提交"
                "（只给了迟交的、重评的一部分时，他们其实交过）。确认是全班的提交后，加 --zero-missing 重新运行，记 0 分。",
            ]
    if integrity is not None:
        lines += ["", "## 需要核对的提交", ""]
        n = len({f.student for f in integrity.flagged})
        lines.append(f"{n} 份（证据与规则在 `ta/integrity.md`，只给助教；学生的反馈里没有这些内容）")
    lines += ["", f"## 忽略的文件（{len(ignored)} 个）", ""]
    lines += [f"- {md_code(path)}：{md_inline(why)}" for path, why in ignored] or ["无"]
    return "\n".join(lines) + "\n"


def differing_files(results: list[dict]) -> dict[str, int]:
    """同一个学生交了几份、而答案不一样的：{学生 id: 不同答案的份数}。取最高分的规则下，在几份里试不同的答案能抬高分数，
    所以列给教师和助教（答案一样的重复文件，例如重复下载的 (1)，不列；一个答案也没有的文件不算）"""
    groups: dict[str, set] = {}
    for r in results:
        # 一个答案也没交上来的文件（别的章、不是笔记本、空白的）不算“答案不同”：不是在试答案
        if r.get("roster_id") and any(p.get("submitted") is not None for p in r.get("problems", [])):
            answers_ = tuple(sorted((p.get("id", ""), repr(p.get("submitted"))) for p in r.get("problems", [])))
            groups.setdefault(r["roster_id"], set()).add(answers_)
    return {sid: len(v) for sid, v in sorted(groups.items()) if len(v) > 1}


def spray_lines(differ: dict[str, int]) -> list[str]:
    return [
        f"答案不同的几份文件（{len(differ)} 人）：计入的是总分最高的一份；在几份里试不同的答案也会这样，请核对这些学生交的文件。",
        "",
        *(f"- {md_code(sid)}：{n} 份答案不同" for sid, n in differ.items()),
    ]


def _bucket(total: float, maximum: float) -> str:
    if maximum <= 0:
        return "0"
    k = min(9, int(10 * total / maximum)) if total < maximum else 10
    return "满分" if k == 10 else f"{k * 10}%–{k * 10 + 10}%"


def buckets_order(label: str) -> float:
    return 101 if label == "满分" else float(label.split("%")[0]) if "%" in label else 0


def console_summary(table: list[dict], ignored: list, integrity: Report | None) -> str:
    if not table:
        return "评分概况：没有学生"
    totals = [r["total"] for r in table if not r.get("blank")]  # 与 summary.md 一样：空着、待核对的不算
    flagged = (
        f"需要核对的提交 {len({f.student for f in integrity.flagged})} 份（ta/integrity.md）；" if integrity else ""
    )
    stats = (
        f"平均分 {statistics.mean(totals):.2f}，中位数 {statistics.median(totals):g}"
        if totals
        else "没有可以算平均分的成绩"
    )
    waiting = sum(bool(r.get("held")) for r in table)
    later = sum(r["status"] == NOT_GRADED for r in table)
    return (
        f"评分概况：{len(table)} 名学生，{stats}"
        f"（满分 {_num(max(r['max'] for r in table))}，空着、待核对与还没有评的不算）；{flagged}"
        f"待核对 {waiting} 人；{f'还没有评 {later} 人；' if later else ''}"
        f"没有提交 {sum(r['status'] == NO_SUBMISSION for r in table)} 人；"
        f"忽略的文件 {len(ignored)} 个（见 summary.md）"
    )


def integrity_markdown(report: Report, names: dict[str, str], results=()) -> str:
    lines = [
        "# 需要核对的提交（只给助教）",
        "",
        "规则：答错的题先按学生自己的参数认常见失误，认出来的不算证据；剩下的错答案在容差内等于某位同学的正确答案"
        f"（或书上的答案）算一次对上。对上至少 {MIN_MATCHES} 次，而且按对学生有利的假设（错答案从全班的正确答案里随机挑）"
        f"偶然对上这么多次的概率小于 {ALPHA:g} / 比较过的来源数时，列为需要核对。标记不扣分，只是请你去看这份提交。",
        "",
        "“他的个人版”：计入的文件带着这个学生自己的个人版的签名吗。“否”说明文件不是从发给他的笔记本改出来的：可能整份拿了别人的"
        "笔记本，也可能（自己收的散放文件）是别人用他的名字放进来的，先确认文件确实是他交的。",
        "",
        "| 学生 | 文件 | 他的个人版 | 来源 | 对上 / 认不出失误的错答案 | 偶然的期望次数 | 概率 | 对上的题 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    own = {(r.get("roster_id"), r.get("file")): r.get("own_version") for r in results}
    shown = report.flagged
    for f in shown:  # 学生的名字、文件名可能含 | 和 Markdown：每一格都经过 md_cell
        who = f"{md_cell(names.get(f.student, ''))} {md_cell(f.student)}"
        mine = {True: "是", False: "否"}.get(own.get((f.student, f.file)), "?")
        lines.append(
            f"| {who} | {md_cell(f.file)} | {mine} | {md_cell(f.source)} | {len(f.matches)} / {f.unexplained} "
            f"| {f.expected:.2f} | {f.p_value:.1e} | {md_cell('、'.join(f.matches))} |"
        )
    if not shown:
        lines.append("| 无 | | | | | | | |")
    differ = differing_files(list(results))
    if differ:
        lines += ["", "## 多份答案不同的文件", "", *spray_lines(differ)]
    lines += [
        "",
        "全部的对上记录（包括没有达到标准的）在 `ta/integrity.csv`；每道题交的数与参考值在 `ta/answers.csv`。",
        "",
        "## 身份与参数单元",
        "",
    ]
    noted = [r for r in results if r.get("ta_notes")]
    lines += [
        f"- {md_code(r.get('roster_id') or r['student'])} {md_code(r.get('file', ''))}：{md_inline('；'.join(r['ta_notes']))}"
        for r in noted
    ] or ["无（没有笔记本写着别的学生的 id，也没有改过的参数单元）"]
    return "\n".join(lines) + "\n"


def integrity_csv(report: Report, names: dict[str, str]) -> str:
    header = ["student", "name", "file", "source", "matches", "unexplained_wrong", "opportunities", "expected_by_chance",
              "p_value", "flagged", "problems"]  # fmt: skip
    body = [
        [f.student, names.get(f.student, ""), f.file, f.source, str(len(f.matches)), str(f.unexplained),
         str(f.opportunities), f"{f.expected:.3f}", f"{f.p_value:.3g}", "yes" if f.flagged else "", "; ".join(f.matches)]
        for f in report.findings
    ]  # fmt: skip
    return csv_text(header, body)


def answers_csv(report: Report, names: dict[str, str], held: Mapping | frozenset = frozenset()) -> str:
    """每个学生每道题交的数与参考值；review：这个学生的成绩待核对时的原因（held：花名册 id → 原因，或只是 id 的集合）"""
    header = ["student", "name", "file", "problem", "status", "slip", "submitted", "expected", "same_as", "review"]
    body = [
        [r["student"], names.get(r["student"], ""), r["file"], r["problem"], r["status"], r["slip"],
         repr(r["submitted"]) if isinstance(r["submitted"], float) else str(r["submitted"]),
         repr(r["expected"]) if isinstance(r["expected"], float) else str(r["expected"]), r["matches"],
         (held[r["student"]] if isinstance(held, Mapping) else HELD) if r["student"] in held else ""]
        for r in report.answer_rows
    ]  # fmt: skip
    return csv_text(header, body)


def write_all(
    out: Path,
    results,
    roster_students,
    chapter,
    ignored,
    write,
    column=None,
    weights=None,
    integrity=None,
    notes=(),
    interrupted=False,
    pending=frozenset(),
    held=frozenset(),
    withheld=None,
    zero_missing=False,
):
    """写出 grades_wide.csv、canvas.csv、summary.md（和有花名册时的 ta/ 三个文件）；write(path, text, mode=None) 是原子写。
    withheld：不写能导入的成绩表的原因（例如这次评的全部崩溃了）"""
    pids, table = rows(results, roster_students, chapter, weights, pending, held, zero_missing)
    if interrupted or withheld:  # 没评完：不给能导入的成绩表（以前：没评到的学生在 canvas.csv 里是 0 分、“没有提交”）
        for name in ("grades_wide.csv", "canvas.csv"):
            (out / name).unlink(missing_ok=True)
        reason = (
            withheld or "评分被中断：有的提交还没有评，所以这次没有写 grades_wide.csv 和 canvas.csv；再运行一次会接着评"
        )
        notes = [reason, *notes]
    else:
        write(out / "grades_wide.csv", wide_csv(pids, table))
        write(out / "canvas.csv", canvas_csv(table, column or (f"shardlab ch{chapter:02d}" if chapter else "shardlab")))
    write(out / "summary.md", summary(table, results, ignored, integrity, notes))
    if integrity is not None:
        (out / TA_DIR).mkdir(exist_ok=True)
        (out / TA_DIR).chmod(0o700)
        names = {s.id: s.name for s in roster_students or []}
        write(out / TA_DIR / "answers.csv", answers_csv(integrity, names, held), TA_MODE)
        write(out / TA_DIR / "integrity.csv", integrity_csv(integrity, names), TA_MODE)
        write(out / TA_DIR / "integrity.md", integrity_markdown(integrity, names, results), TA_MODE)
    return console_summary(table, ignored, integrity)
