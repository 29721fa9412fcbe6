"""按个人版评分：提交认人、每个学生自己的答案表、先认失误再谈抄袭、抄袭的证据只给助教、核对密钥、教师用的汇总"""

import csv
import io
import itertools
import json
import math
import os
import shutil
import signal
import stat
import sys
import threading
import types
import unicodedata
from pathlib import Path

import pytest
from grading import render_tokens  # tests/grading.py

from shardlab.exercise import answers, problems, roster, variants
from shardlab.exercise.judge import WRONG, judge_value
from shardlab.grade import (
    cli,
    folder,
    gradescope,
    identify,
    integrity,
    judge,
    junit,
    outputs,
    per_student,
    personal,
    report,
    status,
)
from shardlab.grade.key import AnswerKey, registry_key

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import assign_bench  # noqa: E402

SECRET = b"instructor secret, 32 bytes long"
STUDENTS = [roster.Student(f"s{k}", f"学生{k}", k + 2) for k in range(1, 13)]


def _published_key() -> AnswerKey:
    return AnswerKey.from_entries(registry_key())


@pytest.fixture(scope="module")
def key():
    return personal.PersonalKey.build(_published_key(), STUDENTS, SECRET)


# ---- 提交 → 学生 ----
TABLE = identify.Roster(
    [
        roster.Student("li", "李", 2),
        roster.Student("li_wei", "李伟", 3),
        roster.Student("s005", "Zhang Wang", 4, lms_id="12345"),
        roster.Student("S002", "赵", 5),
        roster.Student("alice", "Alice Smith", 6, email="alice@uni.edu"),
        roster.Student("王小明", "王小明", 7),
    ]
)


@pytest.mark.parametrize(
    ("parts", "embedded", "sid"),
    [
        (("li_wei.ipynb",), None, "li_wei"),  # 以前：前缀 li 先匹配上，li_wei 永远评不到
        (("li_wei_ch05.ipynb",), None, "li_wei"),
        (("li_ch05.ipynb",), None, "li"),
        (("s002.ipynb",), None, "S002"),  # 不分大小写（以前：认不出）
        (("ch05_exercises_s005.ipynb",), None, "s005"),  # id 在文件名后面（以前：认不出）
        (("alice_ch05 (1).ipynb",), None, "alice"),  # 浏览器重复下载加的 (1)
        (("zhangwang_12345_67890_ch05_exercises.ipynb",), None, "s005"),  # Canvas 批量下载（以前：认不出）
        (("zhangwang_LATE_12345_67890_ch05_exercises-1.ipynb",), None, "s005"),  # Canvas 迟交
        (("smithalice_999_81_ch05.ipynb",), None, None),  # Canvas 用户号不在 lms_id 列里：不是这个班的学生
        (("mallory_55555_5002_alice.ipynb",), "alice", None),  # 以前：按学生自己起的“alice”算成 alice 的，还可能诬陷她
        (
            ("Alice Smith_777_assignsubmission_file_", "ch05.ipynb"),
            None,
            "alice",
        ),  # Moodle 的参与者号每个作业都不同：按姓名
        (("Mallory_777_assignsubmission_file_", "alice.ipynb"), "alice", None),  # 姓名对不上：不看学生自己起的文件名
        (("s005_2024_1_ch05.ipynb",), None, "s005"),  # 不是 Canvas 的名字（姓名部分有数字）
        (("S002", "作业_2024_10_15.ipynb"), None, "S002"),  # 学生自己的文件夹说了算（以前：当成 Canvas 的名字，不评）
        (("s005", "lisi_24680_1234_ch05.ipynb"), None, "s005"),  # 以前：按文件名里的 Canvas 用户号算成别人的
        ((unicodedata.normalize("NFD", "王小明"), "ch05.ipynb"), None, "王小明"),  # macOS 写的 NFD 文件夹名
        (("homework.ipynb",), "alice", "alice"),  # 名字认不出：笔记本里写的 id 作证
        (("homework.ipynb",), "nobody", None),
        (("homework.ipynb",), None, None),
        (("li_wei_and_alice.ipynb",), None, None),  # 能对上两个人：不猜
        (("li_wei_and_alice.ipynb",), "alice", "alice"),  # 笔记本里写的 id 是候选之一：按它
    ],
)
def test_files_map_to_students_by_the_strongest_evidence(parts, embedded, sid):
    got = identify.identify(parts, TABLE, embedded, {})
    assert got.sid == sid, got
    if sid is None:
        assert got.reason


def test_lms_names_without_an_lms_id_column_match_by_name_only():
    table = identify.Roster([roster.Student("a1", "Alice Smith", 2), roster.Student("b2", "王五", 3)])
    assert identify.identify(("smithalice_999_81_ch05.ipynb",), table, None, {}).sid == "a1"
    assert identify.identify(("Alice Smith_777_assignsubmission_file_", "x.ipynb"), table, None, {}).sid == "a1"
    assert identify.identify(("mallory_555_81_a1.ipynb",), table, "a1", {}).sid is None  # 自己起的文件名不算证据
    export = {"submission_9": [{"sid": "x999", "email": "eve@evil"}]}
    assert identify.identify(("submission_9", "a1.ipynb"), table, None, export).sid is None


def test_gradescope_export_and_embedded_mismatch(tmp_path):
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: A\n    :sid: ''\n    :email: alice@uni.edu\n", encoding="utf-8"
    )
    export = identify.gradescope_export(tmp_path)
    assert identify.identify(("submission_1", "x.ipynb"), TABLE, None, export).sid == "alice"
    got = identify.identify(("li_wei.ipynb",), TABLE, "alice", {})  # 名字是 li_wei，笔记本写的是 alice
    assert got.sid == "li_wei" and "alice" in got.notes[0]


def test_copy_suffix_numbers_are_not_student_ids():
    """花名册的 id 是 1…12：以前 ``ch05_exercises (1).ipynb`` 算成学生 1（笔记本其实是 12 的）"""
    table = identify.Roster([roster.Student(str(k), f"学生{k}", k + 1) for k in range(1, 13)])
    for name in ("ch05_exercises (1).ipynb", "ch05_exercises - Copy.ipynb", "ch05_exercises copy 2.ipynb"):
        got = identify.identify((name,), table, "12", {})
        assert got.sid == "12" and got.how.startswith(identify.BY_EMBEDDED_ID), (name, got)
    assert identify.identify(("3_ch05 (1).ipynb",), table, None, {}).sid == "3"


def test_gradescope_export_unzipped_with_its_wrapper_folder_is_found(tmp_path):
    """Gradescope 的导出 zip 原样解压多一层 assignment_<号>_export/：以前每个文件“目录太深”，rc 0，全班 0 分"""
    inner = tmp_path / "subs" / "assignment_777_export"
    (inner / "submission_1").mkdir(parents=True)
    (inner / "submission_1" / "x.ipynb").write_text("{}", encoding="utf-8")
    (inner / "submission_metadata.yml").write_text("submission_1: {}\n", encoding="utf-8")
    (tmp_path / "subs" / "__MACOSX").mkdir()
    found = folder.scan([str(tmp_path / "subs")])
    assert [f.rel for f in found.found] == ["submission_1/x.ipynb"] and "Gradescope" in found.notes[0]
    (tmp_path / "subs" / "other").mkdir()  # 还有别的文件夹：不猜
    assert folder.scan([str(tmp_path / "subs")]).found == []
    nested = inner / "submission_2" / "hw" / "week5"  # 学生上传的子文件夹：Gradescope 自己会在整个提交里找
    nested.mkdir(parents=True)
    (nested / "ch05_exercises.ipynb").write_text("{}", encoding="utf-8")
    (inner / "deep" / "a" / "b").mkdir(parents=True)  # 不是 submission_<号>/：照旧只看两层
    (inner / "deep" / "a" / "b" / "x.ipynb").write_text("{}", encoding="utf-8")
    found = folder.scan([str(inner)])
    assert [f.rel for f in found.found] == ["submission_1/x.ipynb", "submission_2/hw/week5/ch05_exercises.ipynb"]
    assert any(i["file"] == "deep/a" and "太深" in i["reason"] for i in found.ignored)


def test_glob_over_per_student_folders_keeps_the_folder_as_the_student(tmp_path):
    for sid in ("s1", "s2"):
        (tmp_path / "subs" / sid).mkdir(parents=True)
        (tmp_path / "subs" / sid / "ch05_exercises.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "subs" / "s1" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "subs" / "s1" / ".ipynb_checkpoints" / "ch05_exercises-checkpoint.ipynb").write_text("{}")
    found = folder.scan([str(tmp_path / "subs" / "*" / "*.ipynb")])
    parts = [identify.rel_parts(f.raw_rel) for f in found.found]
    assert parts == [("s1", "ch05_exercises.ipynb"), ("s2", "ch05_exercises.ipynb")]  # 以前：每个都叫 ch05_exercises
    table = identify.Roster(STUDENTS[:2])
    assert [identify.identify(p, table, None, {}).sid for p in parts] == ["s1", "s2"]


def test_several_files_of_one_student_are_all_graded_and_the_best_counts():
    res = [
        {"student": "s1~a", "roster_id": "s1", "file": "alice_ch05 (1).ipynb", "points": 3.0},
        {"student": "s1~b", "roster_id": "s1", "file": "alice_ch05.ipynb", "points": 9.0},
        {"student": "s2", "roster_id": "s2", "file": "s2.ipynb", "points": 1.0},
        {"student": "s3~a", "roster_id": "s3", "file": "a.ipynb", "points": 9.0, "identity_conflict": True},
        {"student": "s3~b", "roster_id": "s3", "file": "b.ipynb", "points": 2.0},
        # 同学放进 s4 文件夹的、发给 s1 的个人版（元数据改成 s4）：同分、路径排在前面，以前计入它，s4 被标成待核对
        {"student": "s4~a", "roster_id": "s4", "file": "s4/a.ipynb", "points": 17.0, "signed_for": "s1"},
        {"student": "s4~b", "roster_id": "s4", "file": "s4/ch05.ipynb", "points": 17.0},
        {"student": "s5", "roster_id": "s5", "file": "s5/x.ipynb", "points": 4.0, "signed_for": "s1"},
        # 删了签名的别人的笔记本（或公开的练习）放进 s6 的文件夹，分更高：他自己签名的那份照样计入
        {"student": "s6~a", "roster_id": "s6", "file": "s6/0planted.ipynb", "points": 4.0, "own_version": False},
        {"student": "s6~b", "roster_id": "s6", "file": "s6/ch05.ipynb", "points": 3.0, "own_version": True},
        # 他丢了签名的满分终稿（参数是他的数）与一份空白的个人版：终稿计入
        {
            "student": "s7~a",
            "roster_id": "s7",
            "file": "s7/a_blank.ipynb",
            "points": 0.0,
            "own_version": True,
            "own_params": True,
        },
        {
            "student": "s7~b",
            "roster_id": "s7",
            "file": "s7/final.ipynb",
            "points": 17.0,
            "own_version": False,
            "own_params": True,
        },
    ]
    cli.select_counted(res)
    # 以前：s1 的两份都不评；s4 计入的是别人的个人版；s6 计入的是别人放的文件。只有一份时照样计入（再标待核对）
    assert [r["counted"] for r in res] == [False, True, True, False, True, False, True, True, False, True, False, True]


# ---- 每个学生的答案表；先认失误 ----
def test_each_student_is_judged_against_their_own_variant(key):
    spec = answers.get("ch05-p1c")
    ids = [s.id for s in STUDENTS]
    drawn = variants.for_class(SECRET, "ch05", ids)
    for sid in ids:
        entry = key.entry(spec.id, sid)
        assert entry["value"] == spec.value(drawn[sid]) and entry["params"] == drawn[sid]
        assert judge.judge_record(spec, {"value": entry["value"]}, key, [], sid).status == status.CORRECT
    v = judge.judge_record(spec, {"value": spec.value()}, key, [], "s1")
    assert v.status == status.WRONG and repr(key.entry(spec.id, "s1")["value"]) not in v.message
    assert key.entry(spec.id, "nobody") is None


def test_a_slip_that_equals_a_classmates_answer_is_judged_as_the_slip():
    """个人版的参数取值有限，常见失误的值常常等于别人的正确答案；它先是失误（给出提示），不是“别的同学的答案”"""
    ids = [f"s{k:03d}" for k in range(30)]
    drawn = variants.for_class(SECRET, "ch05", ids)
    vals = {sid: {s.id: s.value(p) for s in variants.varying("ch05")} for sid, p in drawn.items()}
    found = 0
    for spec in variants.varying("ch05"):
        for me, other in itertools.permutations(ids, 2):
            mine = drawn[me]
            for slip in spec.slips:
                wrong = slip.wrong_value(vals[me][spec.id], mine)
                if wrong is not None and variants.distinct(spec, vals[me][spec.id], vals[other][spec.id]):
                    if abs(wrong / vals[other][spec.id] - 1) < 1e-9:
                        v = judge_value(spec, wrong, vals[me][spec.id], mine)
                        assert v.status == WRONG and v.slip and slip.hint[:10] in v.message
                        found += 1
    assert found > 10  # 这种巧合在 30 人的班上很常见（以前：全部标成 other-variant，提示丢了）


# ---- 抄袭的证据：只给助教，从不因巧合指控 ----
def _result(sid, submitted: dict[str, float], right: dict[str, float], params) -> dict:
    probs = []
    for spec in variants.varying("ch05"):
        v = submitted[spec.id]
        verdict = judge_value(spec, v, right[spec.id], params)
        probs.append({"id": spec.id, "verdict": verdict.status, "status": verdict.status, "slip": verdict.slip,
                      "submitted": v})  # fmt: skip
    return {"student": sid, "roster_id": sid, "file": f"{sid}.ipynb", "problems": probs}


def test_integrity_flags_copying_but_never_honest_slips():
    ids = [f"s{k:03d}" for k in range(30)]
    drawn = variants.for_class(SECRET, "ch05", ids)
    vals = {sid: {s.id: s.value(p) for s in variants.varying("ch05")} for sid, p in drawn.items()}
    results = []
    for k, sid in enumerate(ids):  # 诚实的学生：每道题都犯一种常见失误（轮流取）
        wrong = {}
        for spec in variants.varying("ch05"):
            slips = [w for s in spec.slips if (w := s.wrong_value(vals[sid][spec.id], drawn[sid])) is not None]
            wrong[spec.id] = slips[k % len(slips)] if slips else vals[sid][spec.id]
        results.append(_result(sid, wrong, vals[sid], drawn[sid]))
    results.append(_result("s029", vals["s003"], vals["s029"], drawn["s029"]))  # s029 交的是 s003 的答案
    pub = {s.id: s.value() for s in variants.varying("ch05")}
    results.append(_result("s028", pub, vals["s028"], drawn["s028"]))  # s028 抄了书上的
    report_ = integrity.analyze(results, vals, "ch05")
    flagged = {(f.student, f.source) for f in report_.flagged}
    assert flagged == {("s029", "s003"), ("s028", integrity.PUBLISHED)}
    assert integrity.tail_probability([0.5, 0.5], 2) == pytest.approx(0.25)


def test_feedback_has_no_copying_accusation_and_no_reference_values(key):
    spec = answers.get("ch05-p1a")
    other = key.entry(spec.id, "s2")["value"]
    v = judge.judge_record(spec, {"value": other}, key, [], "s1")
    res = {"student": "s1", "file": "s1.ipynb", "status": status.GRADED, "points": 0.0, "max_points": 1.0,
           "problems": [judge.problem(spec.id, v.status, v.message, submitted=other)]}  # fmt: skip
    text = report.feedback_markdown(res)
    assert "同学" not in text and "抄" not in text and repr(other) not in text


# ---- 核对密钥 ----
def test_a_wrong_key_is_noticed_before_anything_is_written(tmp_path, capsys):
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 4, "ch05", published=False)
    wrong = tmp_path / "wrong.key"
    variants.new_secret(wrong)
    args = [str(own), "--out", str(tmp_path / "out"), "--course", str(ROOT), "--roster", str(roster_path),
            "--chapter", "5", "--no-progress", "--sandbox", "rlimit"]  # fmt: skip
    assert cli.main([*args, "--secret-file", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert "密钥不对：4 名学生" in err and "一份也验证不了" in err  # 以前：rc 0，全班 4–11 分，诚实的被当成抄袭
    assert not (tmp_path / "out").exists()
    # 签名证明密钥不对时，--trust-key 也不评（以前：照样按错的参数评分，导出全班的错分，退出码 0）
    assert cli.main([*args, "--secret-file", str(wrong), "--trust-key"]) == 2
    assert "--trust-key 也不能越过" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_wrong_key_on_a_single_file_says_the_key_does_not_match(tmp_path, capsys):
    """以前：只评一个文件（按笔记本里写的 id 认人）时说这个文件“签名却不是发给他的：不评”，退出码 0，写出一份空的成绩表"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    wrong = tmp_path / "wrong.key"
    variants.new_secret(wrong)
    args = [str(own / "s001" / "ch05_exercises.ipynb"), "--out", str(tmp_path / "out"), "--course", str(ROOT),
            "--roster", str(roster_path), "--chapter", "5", "--no-progress", "--sandbox", "rlimit"]  # fmt: skip
    assert cli.main([*args, "--secret-file", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert "密钥不对？1 名学生自己的第 5 章笔记本里，有 1 名" in err and "签名却不是发给他的" not in err
    assert not (tmp_path / "out").exists()


def test_mixed_chapters_are_refused_in_roster_mode_too(tmp_path, capsys):
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    shutil.copy(ROOT / "exercises" / "ch06_exercises.ipynb", own / "s000" / "ch06_exercises.ipynb")
    args = [str(own), "--out", str(tmp_path / "out"), "--course", str(ROOT), "--roster", str(roster_path),
            "--secret-file", str(secret), "--no-progress", "--sandbox", "rlimit"]  # fmt: skip
    assert cli.main(args) == 2
    assert "不止一章" in capsys.readouterr().err  # 以前：两份都不评，rc 0，“平均分 0.00”


def _res(sid, points: dict, weights=None, rid=None, counted=True):
    weights = weights or {}
    probs = [judge.problem(aid, status.CORRECT if ok else status.WRONG, "", weights.get(aid, 1.0), ok)
             for aid, ok in points.items()]  # fmt: skip
    res = {"student": sid, "status": status.GRADED, "problems": probs, "file": f"{sid}.ipynb", "counted": counted}
    res["points"] = sum(p["points"] for p in probs)
    res["max_points"] = sum(p["max_points"] for p in probs)
    if rid:
        res["roster_id"] = rid
    return res


def test_one_total_everywhere_with_weights():
    weights = {"ch05-p2": 3.0}
    ids = [a.id for a in answers.chapter_answers("ch05")]
    s2 = _res("s2", {aid: aid in ("ch05-p1a", "ch05-p2") for aid in ids}, weights, "s2")
    s1 = _res("s1", {aid: aid == "ch05-p1a" for aid in ids}, weights, "s1")
    pids, table = outputs.rows([s1, s2], STUDENTS[:3], 5, weights)
    assert [r["id"] for r in table] == ["s1", "s2", "s3"]
    assert (
        table[1]["total"] == s2["points"] == 4
        and table[0]["total"] == 1
        and table[2]["status"] == outputs.NO_SUBMISSION
    )
    assert table[0]["max"] == s2["max_points"] == len(pids) + 2  # 以前：汇总 19、totals.csv 与反馈 17
    totals = list(csv.DictReader(io.StringIO(report.totals_csv([s1, s2]).lstrip("\ufeff"))))
    assert [(r["points"], r["max_points"]) for r in totals] == [("1", "19"), ("4", "19")]
    assert "4 / 19" in report.feedback_markdown({**s2, "chapter": 5})
    canvas = list(csv.reader(io.StringIO(outputs.canvas_csv(table, "第 5 章作业").lstrip("\ufeff"))))
    assert canvas[0][-1] == "第 5 章作业" and canvas[1][-1] == "19" and canvas[3] == ["学生2", "", "s2", "", "", "4"]


def test_every_csv_has_a_bom_and_names_and_files_are_inert():
    evil = roster.Student("s9", "=HYPERLINK(1)", 2)
    res = _res("s9", {"ch05-p1a": True}, rid="s9")
    res["file"] = "<img src=x onerror=alert(1)> [x](http://e.x).ipynb"
    _, table = outputs.rows([res], [evil], 5)
    for text in (outputs.wide_csv(["ch05-p1a"], table), outputs.canvas_csv(table, "a"), report.gradebook_csv([res]),
                 report.totals_csv([res])):  # fmt: skip
        assert text.startswith("\ufeff")  # 以前：gradebook.csv 与 totals.csv 没有 BOM
    assert "'=HYPERLINK" in outputs.wide_csv([], table)
    summary = outputs.summary(table, [res], [(res["file"], "<b>原因</b>")], None)
    assert not render_tokens(summary) & {"html_inline", "html_block", "link_open", "image"}  # 以前：文件名原样贴进去


def test_verdicts_are_not_repeated():
    assert status.describe(status.CORRECT, "正确") == "正确"  # 以前：“正确。正确”
    assert status.describe(status.WRONG, "不对。少了 bf16 的因子 2。") == "不对。少了 bf16 的因子 2。"
    assert status.describe(status.TIMEOUT, "单元超时") == "超时。单元超时"


def test_ta_files_are_private(tmp_path):
    rep = integrity.Report()
    outputs.write_all(tmp_path, [], STUDENTS[:1], 5, [], report.atomic_write, integrity=rep)
    for name in ("answers.csv", "integrity.csv", "integrity.md"):
        assert stat.S_IMODE(os.stat(tmp_path / "ta" / name).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "grades_wide.csv").st_mode) == 0o640


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("problem,weight\nch05-p99,2\n", "未知的答案 id"),
        ("problem,weight\nch05-p1a,-1\n", "0.001 到 1000"),
        ("problem,weight\nch05-p1a,1e-300\n", "不用科学记数法"),  # 以前：接受，满分约等于 0
        ("problem,weight\nch05-p1a,１０\n", "不用全角数字"),  # 以前：float() 读成 10
        ("problem,weight\nch05-p1a,0.0000001\n", "0.001 到 1000"),
        ("problem,weight\nch05-p1a,nan\n", "半角数字"),
        ("a,b\n", "表头"),
        ("problem,weight\nch05-p1a,0,5\n", "小数请用点"),  # 以前：读成权重 0，不报错
    ],
)
def test_bad_weights_are_reported(tmp_path, text, message):
    path = tmp_path / "w.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(outputs.WeightsError, match=message):
        outputs.read_weights(path)


def test_hidden_inputs_are_deterministic_and_include_examples_and_edge_cases():
    seed = personal.hidden_seed(SECRET)
    assert seed == personal.hidden_seed(SECRET) != personal.hidden_seed(b"other")
    inputs = judge.hidden_inputs(seed)
    assert inputs == judge.hidden_inputs(seed)
    for a in answers.ANSWER_LIST:
        if a.kind == "function":
            for case in (*a.examples, *a.edge_cases):
                assert case in inputs[a.id], (a.id, case)


# ---- 整条链：写出个人版 → 作答 → 按个人版评分 ----
@pytest.mark.slow
def test_class_with_own_answers_scores_full_and_copying_is_evidence_for_the_ta(tmp_path):
    roster_path, secret, own, pub, _ = assign_bench.make_class(tmp_path, 4, "ch05")
    # s002 交的是 s000 的答案（放在自己的文件夹里）；s001 的文件夹里多了一份别人放的空白笔记本；s003 用 Canvas 的文件名
    (own / "s002" / "ch05_exercises.ipynb").write_bytes((own / "s000" / "ch05_exercises.ipynb").read_bytes())
    shutil.copy(ROOT / "exercises" / "ch05_exercises.ipynb", own / "s001" / "ch05_exercises (1).ipynb")
    shutil.move(own / "s003" / "ch05_exercises.ipynb", own / "wangwu_LATE_4711_1234_ch05_exercises-1.ipynb")
    (own / "s003").rmdir()
    roster_path.write_text(roster_path.read_text(encoding="utf-8").replace("id,name\n", "id,name,lms_id\n", 1)
                           .replace("s003,学生3", "s003,学生3,4711"), encoding="utf-8")  # fmt: skip
    (own / "notes.txt").write_text("不是笔记本", encoding="utf-8")
    assign_bench.grade(own, tmp_path / "out", roster_path, secret, 5, 2)
    out = tmp_path / "out"
    rows = assign_bench.gradebook(out)
    assert {r["roster_id"] for r in rows if r["counted"] == "yes"} == {"s000", "s001", "s002", "s003"}
    assert {r["status"] for r in rows if r["roster_id"] in ("s000", "s001", "s003") and r["counted"] == "yes"} == {
        status.CORRECT
    }  # s001 的真文件计入，别人放的那份评了但不计入（以前：两份都不评）
    feedback = (out / "feedback" / "s001.md").read_text(encoding="utf-8")  # 交了两个文件：这是计入的那一份
    assert "你名下有 2 个文件评了分：计入的是" in feedback
    wide = {r["id"]: r for r in csv.DictReader((out / "grades_wide.csv").open(encoding="utf-8-sig"))}
    n = len(answers.chapter_answers("ch05"))
    assert [wide[s]["total"] for s in ("s000", "s001", "s003")] == [str(n)] * 3
    copied = {r["problem"]: r["status"] for r in rows if r["roster_id"] == "s002"}
    assert set(copied.values()) <= {status.CORRECT, status.WRONG}  # 学生的成绩册和反馈里没有“抄袭”
    feedback_s002 = (out / "feedback" / "s002.md").read_text(encoding="utf-8")
    assert "抄" not in feedback_s002 and "s000" not in feedback_s002  # 不指控、不点名；只说交的不是发给他的个人版
    assert "发给另一位同学的个人版" in feedback_s002
    assert "待老师核对" in feedback_s002  # 以前：反馈里是一个看起来已定的分数
    # 待核对只由计入的那一份说（_held_note）：以前这条说明自己也写“成绩待助教核对”，没有计入的多余文件的反馈里也有，学生其实没待核对
    assert "待助教核对" not in feedback_s002
    totals = {r["roster_id"]: r for r in csv.DictReader((out / "totals.csv").open(encoding="utf-8-sig"))}
    assert "发给 s000 的个人版" in totals["s002"]["review"] and totals["s000"]["review"] == ""  # 以前没有这一列
    assert {r["review"] for r in rows if r["roster_id"] == "s002"} == {totals["s002"]["review"]}
    book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))["summary"]
    assert [r["review"] for r in book if r["roster_id"] == "s002"] == [totals["s002"]["review"]]
    # 整份是 s000 的个人版：与参数无关的答案是 s000 的，这个分数不导出（与散放的 LMS 文件名一样），成绩待核对
    assert wide["s002"]["total"] == "" and "待核对" in wide["s002"]["status"]
    canvas = list(csv.reader((out / "canvas.csv").open(encoding="utf-8-sig")))
    assert next(r for r in canvas if "s002" in r)[-1] == ""
    flagged = assign_bench.flagged(out)
    assert [(r["student"], r["source"]) for r in flagged] == [("s002", "s000")]
    ta_md = (out / "ta" / "integrity.md").read_text(encoding="utf-8")
    assert "笔记本里写的学生 id 是" in ta_md.split("## 身份与参数单元")[1]  # s002 交的笔记本是发给 s000 的
    row = next(line for line in ta_md.splitlines() if line.startswith("| 学生2 s002 |"))
    assert row.split("|")[3].strip() == "否"  # 计入的文件不带 s002 自己的签名：助教先确认文件是不是他交的
    ta = list(csv.DictReader((out / "ta" / "answers.csv").open(encoding="utf-8-sig")))  # 助教答复申诉用的记录
    assert any(r["student"] == "s002" and r["same_as"] == "s000" and r["submitted"] != r["expected"] for r in ta)
    assert {r["review"] != "" for r in ta if r["student"] == "s002"} == {True}
    assert {r["review"] for r in ta if r["student"] != "s002"} == {""}
    mine = [r for r in ta if r["student"] == "s000" and r["expected"]]  # 数值题（函数题没有单一的参考值）
    n_values = sum(a.kind == "value" for a in answers.chapter_answers("ch05"))
    assert len(mine) == n_values and all(float(r["submitted"]) == float(r["expected"]) for r in mine)
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "notes.txt" in summary and "需要核对的提交" in summary
    assert "答案不同的几份文件" not in summary  # s001 的另一份是空白的练习：一道也没答，不是在几份里试答案
    assert "发给 s000 的个人版" in summary  # s002 待核对，原因写在 summary.md 里
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    assert doc["meta"]["seed"] == personal.hidden_seed(secret.read_bytes()) and doc["meta"]["personal_variants"]
    assign_bench.grade(pub, tmp_path / "out-pub", roster_path, secret, 5, 2)
    varies = {a.id for a in variants.varying("ch05")}
    pub_rows = assign_bench.gradebook(tmp_path / "out-pub")
    assert {r["status"] for r in pub_rows if r["problem"] in varies} == {status.WRONG}
    caught = {r["student"] for r in assign_bench.flagged(tmp_path / "out-pub") if r["source"] == integrity.PUBLISHED}
    assert caught == {"s000", "s001", "s002", "s003"}
    first = {f: (out / f).read_bytes() for f in ("gradebook.csv", "grades_wide.csv", "canvas.csv")}
    assign_bench.grade(own, out, roster_path, secret, 5, 2, "--force")
    assert {f: (out / f).read_bytes() for f in first} == first  # --force 重评，逐字节相同


def test_answer_cells_are_numbered_as_jupyter_counts_code_cells():
    from shardlab.grade import inject

    nb = {"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# 标题"},
        {"cell_type": "markdown", "metadata": {}, "source": "说明"},
        {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {"tags": ["ch05-p1a"]}, "source": "p1a = 1", "outputs": [],
         "execution_count": None},
    ]}  # fmt: skip
    prep = inject.prepare(nb, 5, {})
    assert prep.problem_cell["ch05-p1a"] == 2  # 第 2 个代码单元（以前：第 4 个单元，连 Markdown 一起数）


def test_chapter_6_has_few_answers_that_the_website_gives_away():
    """在个人版里照抄网站上的数能拿分的题：以前第 6 章有 6 道（问题 8 (c) 的两个 0 也在内），现在只剩两道函数题和两个大环的极限"""
    fixed = [a.id for a in answers.chapter_answers("ch06") if not a.varies]
    assert fixed == ["ch06-p4-fn", "ch06-p6-uni", "ch06-p6-bi", "ch06-p9-fn"]
    base = answers.get("ch06-p8c-bytes").value()
    drawn = variants.for_class(SECRET, "ch06", [s.id for s in STUDENTS])
    assert base == 0 and all(answers.get("ch06-p8c-bytes").value(p) > 0 for p in drawn.values())


def test_one_closeness_rule_in_the_library():
    """以前 check.py、grade/personal.py、variants.py 各有一份 _close"""
    lib = ROOT / "lib" / "shardlab"
    copies = [
        p.relative_to(lib).as_posix() for p in lib.rglob("*.py") if "def _close(" in p.read_text(encoding="utf-8")
    ]
    assert copies == []
    assert "def close(" in (lib / "exercise" / "judge.py").read_text(encoding="utf-8")


def test_guide_states_the_rules_the_code_applies():
    guide = (ROOT / "book" / "instructor_guide.md").read_text(encoding="utf-8")
    n5, n6 = variants.MAX_SHARED["ch05"], variants.MAX_SHARED["ch06"]
    assert f"最多 {n5} 个（第 5 章）或 {n6} 个（第 6 章）" in guide
    assert f"每章 {len(variants.varying('ch05'))} 个随参数变化的数值答案" in guide
    assert len(variants.varying("ch05")) == len(variants.varying("ch06"))
    assert f"对上至少 {integrity.MIN_MATCHES} 次" in guide and f"小于 {integrity.ALPHA:g} 除以" in guide
    assert f"{variants.MAX_CLASS} 人以内" in guide and f"短于 {variants.MIN_SECRET_BYTES} 个字节" in guide


def test_gitignore_keeps_keys_rosters_and_grades_out_of_the_repository():
    import subprocess

    paths = ["secret.key", "course.key", "roster.csv", "roster-2025.csv", "class_roster.csv", "weights.csv",
             "个人版/s1/ch05_exercises.ipynb", "grades/ch05/grades_wide.csv", "autograder-ch05.zip",
             "course-admin/submissions/ch05/s1/x.ipynb", "submissions/ch05/s1/x.ipynb"]  # fmt: skip
    proc = subprocess.run(["git", "-c", "core.quotePath=false", "check-ignore", "--no-index", *paths], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    assert sorted(proc.stdout.split()) == sorted(paths)
    kept = subprocess.run(["git", "check-ignore", "--no-index", "lib/shardlab/exercise/variants.py"], cwd=ROOT)
    assert kept.returncode == 1  # 库的源码不被忽略


# ---- 红队发现的问题 ----
class _Peek:
    def __init__(self, chapter, student, sources, tag=None):
        self.chapter, self.student, self.param_sources, self.tag = chapter, student, sources, tag


def _found(sid, rel, chapter, params, tag=None, student=None):
    cell = "# 题目参数\n" + "\n".join(f"{k} = {v!r}" for k, v in params.items())
    f = folder.Found(Path(rel), rel, rel.encode(), sid.encode(), sid, roster_id=sid)
    f.peek = _Peek(chapter, student or sid, [cell], tag)
    f.written_params = problems.written(f"ch{chapter:02d}", f.peek.param_sources) if chapter == 5 else None
    return f


def _issued(students, assignment="ch05"):
    ids = [s.id for s in students]
    drawn = variants.for_class(SECRET, assignment, ids)
    tags = {sid: variants.sign(SECRET, assignment, sid, p) for sid, p in drawn.items()}
    return drawn, tags


def test_one_students_edited_copies_or_other_chapters_never_stop_the_class():
    key = personal.PersonalKey.build(_published_key(), STUDENTS[:4], SECRET, ("ch05",))
    drawn, tags = _issued(STUDENTS[:4])
    found = [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in STUDENTS[:3]]
    for k in range(5):  # s4 交了 5 份改过参数的副本（以前：按文件数，“密钥不对？”，全班都不评）
        found.append(_found("s4", f"s4/c{k}.ipynb", 5, {**drawn["s4"], "B": 70 + k}, tags["s4"]))
    problem, notes = personal.reconcile(found, key, "ch05")
    assert problem is None and notes == []
    wrong_chapter = [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in STUDENTS[:4]]
    key6 = personal.PersonalKey.build(_published_key(), STUDENTS[:4], SECRET, ("ch06",))
    assert personal.reconcile(wrong_chapter, key6, "ch06") == (None, [])  # 以前：--chapter 6 说“密钥不对？”


def test_a_wrong_key_still_stops_and_a_huge_number_does_not_crash():
    drawn, tags = _issued(STUDENTS[:4])
    wrong = personal.PersonalKey.build(_published_key(), STUDENTS[:4], b"another secret of 32 bytes......", ("ch05",))
    found = [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in STUDENTS[:4]]
    with pytest.raises(personal.KeyDisproved, match="密钥不对：4 名学生"):
        personal.reconcile(found, wrong, "ch05")
    huge = problems.written("ch05", ["# 题目参数\nB = 1" + "0" * 400])  # 以前：OverflowError 让整批评分退出
    assert isinstance(huge["B"], str) and problems.from_cells("ch05", ["# 题目参数\nB = 1" + "0" * 400])["B"] == 1024


def test_a_deleted_roster_row_is_noticed_and_nobody_is_graded_against_numbers_they_never_got():
    students = [roster.Student(f"t{k:02d}", f"学生{k}", k + 2) for k in range(30)]
    drawn, tags = _issued(students)
    for gone in students:  # 教师删掉了一个退课学生的那一行：找一行删掉后会改变后面的人的数的
        later = [s for s in students if s is not gone]
        key = personal.PersonalKey.build(_published_key(), later, SECRET, ("ch05",))
        moved = [s.id for s in later if key.params[s.id]["ch05"] != drawn[s.id]]
        if moved:
            break
    assert moved, "删掉哪一行都不改变任何人的数：换一个密钥"
    found = [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in later]
    problem, notes = personal.reconcile(found, key, "ch05")
    assert problem is None and all(sid in notes[0] for sid in moved)  # 以前：不声不响，这几个人按没发给他们的数评分
    for sid in moved:
        assert key.params[sid]["ch05"] == drawn[sid]
        spec = answers.get("ch05-p1a")
        assert key.entry(spec.id, sid)["value"] == spec.value(drawn[sid])
    forged = [_found("t02", "t02.ipynb", 5, {**drawn["t02"], "B": 7168}, tags["t02"])]  # 改了参数，签名对不上
    key2 = personal.PersonalKey.build(_published_key(), students, SECRET, ("ch05",))
    assert personal.reconcile(forged, key2, "ch05")[1] == [] and key2.params["t02"]["ch05"] == drawn["t02"]


def test_duplicate_lms_ids_and_emails_are_roster_errors():
    with pytest.raises(roster.RosterError, match="lms_id '5000' 与第 2 行相同"):
        roster.parse("id,name,lms_id\na,A,5000\nb,B,5000\n")
    with pytest.raises(roster.RosterError, match="email"):
        roster.parse("id,name,email\na,A,X@u.edu\nb,B,x@u.edu\n")


def test_output_directory_of_another_chapter_or_with_planted_links_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "gradebook.json").write_text(json.dumps({"meta": {"chapter": 5}}), encoding="utf-8")
    with pytest.raises(cli.UsageError, match="第 5 章的成绩"):
        cli._check_out(out, 6)
    cli._check_out(out, 5)
    victim = tmp_path / "victim.txt"
    victim.write_text("重要", encoding="utf-8")
    (out / ".lock").symlink_to(victim)
    with pytest.raises(cli.UsageError, match="符号链接"):
        cli._check_out(out, 5)
    with pytest.raises(cli.UsageError, match="符号链接"):
        cli._lock(out)
    assert victim.read_text(encoding="utf-8") == "重要"  # 以前：锁文件跟着链接，把它改成了 pid
    (out / ".lock").unlink()
    (out / "ta").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(cli.UsageError, match="符号链接"):
        cli._check_out(out, 5)


def test_weights_are_bounded_and_belong_to_the_chapter(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("problem,weight\nch05-p1a,1e308\n", encoding="utf-8")
    with pytest.raises(outputs.WeightsError, match="0.001 到 1000"):
        outputs.read_weights(path)
    path.write_text("problem,weight\nch05-p1a,2\nch05-p1b,0.5\nch05-p2,0\nch05-p1c,.25\n", encoding="utf-8")
    assert outputs.read_weights(path) == {"ch05-p1a": 2.0, "ch05-p1b": 0.5, "ch05-p2": 0.0, "ch05-p1c": 0.25}
    with pytest.raises(cli.UsageError, match="别的章的题：ch06-p1"):
        cli._check_weights({"ch05-p1a": 2.0, "ch06-p1": 5.0}, 5)
    path.write_text("problem,weight\nch05-p1a,5\nch05-p1a,0\n", encoding="utf-8")
    with pytest.raises(outputs.WeightsError, match="已经在前面给过"):  # 以前：后一行悄悄覆盖前一行
        outputs.read_weights(path)
    with pytest.raises(cli.UsageError, match="满分会是 0"):
        cli._check_weights({a.id: 0.0 for a in answers.chapter_answers("ch05")}, 5)


def test_a_repetitive_key_is_refused(tmp_path):
    weak = tmp_path / "k"
    weak.write_bytes(b"a" * 16)
    with pytest.raises(ValueError, match="种不同的字节"):
        variants.read_secret(weak)


def test_hostile_students_who_edit_their_parameters_cannot_stop_the_class():
    """三个人里两个改了参数单元（签名留着）：以前“密钥不对？”，整批都不评；签名对得上推出的参数，证明密钥是对的"""
    key = personal.PersonalKey.build(_published_key(), STUDENTS[:3], SECRET, ("ch05",))
    drawn, tags = _issued(STUDENTS[:3])
    found = [_found("s1", "s1.ipynb", 5, drawn["s1"], tags["s1"])]
    found += [_found(s, f"{s}.ipynb", 5, {**drawn[s], "B": 7168, "D": 2048}, tags[s]) for s in ("s2", "s3")]
    assert personal.reconcile(found, key, "ch05") == (None, [])
    stripped = [_found(s, f"{s}.ipynb", 5, {**drawn[s], "B": 7168, "D": 2048}, None) for s in ("s1", "s2", "s3")]
    assert personal.reconcile(stripped, key, "ch05")[0].startswith("学生交的不是个人版？")  # 没有签名可作证：按多数判断


def test_a_file_that_only_claims_a_classmate_in_its_metadata_needs_that_classmates_signature():
    """以前：一份写着 s006 的 homework.ipynb（其实是别人的答案）算成 s006 交的，s006 还被标成抄袭"""
    students = STUDENTS[:3]
    key = personal.PersonalKey.build(_published_key(), students, SECRET, ("ch05",))
    drawn, tags = _issued(students)
    claim = _found("s3", "homework.ipynb", 5, drawn["s1"], tags["s1"], student="s3")  # s1 的笔记本，改写了学生 id
    claim.how = identify.BY_EMBEDDED_ID
    mine = _found("s2", "s2-homework.ipynb", 5, drawn["s2"], tags["s2"])
    mine.how = identify.BY_EMBEDDED_ID
    scan = folder.Scan(found=[claim, mine])
    cli._drop_unsigned_claims(scan, key, "ch05")
    assert [f.rel for f in scan.found] == ["s2-homework.ipynb"] and "签名却不是发给他的" in scan.ignored[0]["reason"]


def test_signatures_are_verified_with_a_public_key_that_cannot_make_them():
    public = variants.public_key(SECRET, "ch05")
    params = variants.for_student(SECRET, "ch05", "s1")
    tag = variants.sign(SECRET, "ch05", "s1", params)
    assert variants.verify(public, "ch05", "s1", params, tag)
    assert not variants.verify(public, "ch05", "s2", params, tag)  # 签的是（章, 学生, 参数）：换个学生就对不上
    assert not variants.verify(public, "ch05", "s1", {**params, "B": 512}, tag)
    assert len(public) == 32 and public not in SECRET  # 公钥不是密钥的一部分；以前 zip 里的 HMAC 子密钥能伪造签名


def test_ta_table_cells_stay_cells_whatever_the_names_contain():
    rep = integrity.Report()
    rep.findings.append(integrity.Finding("c2", "a|b.ipynb", "c1", ["ch05-p1a"] * 3, 3, 3, 0.1, 1e-9, True))
    names = {"c2": "<img src=x onerror=alert(1)>**b**[l](http://e.vil)|x|"}
    text = outputs.integrity_markdown(rep, names)
    row = next(line for line in text.splitlines() if "c2" in line and line.startswith("|"))
    assert row.count("|") - row.count("\\|") == 9  # 8 格：名字里的 | 不再把表格切开（以前：列错位，链接生效）
    assert not render_tokens(text) & {"html_inline", "html_block", "link_open", "image"}


def test_excel_scientific_ids_are_explained():
    with pytest.raises(roster.RosterError, match="科学记数法"):
        roster.parse("id,name\n2.02E+06,张三\n")


def test_gradescope_export_folders_need_their_metadata():
    export = {"submission_100": [{"sid": "alice", "email": ""}]}
    assert identify.identify(("submission_100", "x.ipynb"), TABLE, None, export).sid == "alice"
    unlisted = identify.identify(("submission_101", "s002.ipynb"), TABLE, "S002", export)
    assert unlisted.sid is None and "没有列在" in unlisted.reason  # 以前：按学生起的文件名算成 S002 的
    no_yml = identify.identify(("submission_101", "s002.ipynb"), TABLE, None, {})
    assert no_yml.sid is None and "submission_metadata.yml" in no_yml.reason


def test_wrong_roster_wrong_chapter_and_public_notebooks_get_the_right_diagnosis(tmp_path, capsys):
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    base = [str(own), "--course", str(ROOT), "--no-progress", "--sandbox", "rlimit", "--secret-file", str(secret)]
    other = tmp_path / "other.csv"
    other.write_text("id,name\nt001,X\nt002,Y\nt003,Z\n", encoding="utf-8")
    assert cli.main([*base, "--out", str(tmp_path / "o1"), "--roster", str(other), "--chapter", "5"]) == 2
    err = capsys.readouterr().err
    assert "花名册不对？3 份提交里有 3 份" in err and "'s000' 也不在花名册里" in err  # 以前：rc 0，全班 0 分
    assert cli.main([*base, "--out", str(tmp_path / "o2"), "--roster", str(roster_path), "--chapter", "6"]) == 2
    assert "都是第 5 章的练习" in capsys.readouterr().err  # 以前：rc 0，全班 other-chapter、0 分
    for sid in ("s000", "s001", "s002"):  # 全班交的都是公开的练习（书上的数，没有签名）
        shutil.copy(ROOT / "exercises" / "ch05_exercises.ipynb", own / sid / "ch05_exercises.ipynb")
    assert cli.main([*base, "--out", str(tmp_path / "o3"), "--roster", str(roster_path), "--chapter", "5"]) == 2
    err = capsys.readouterr().err
    assert "学生交的不是个人版？" in err and "3 份是书上的数" in err and "--trust-key" in err
    assert not any((tmp_path / name).exists() for name in ("o1", "o2", "o3"))


def test_personal_notebooks_without_the_key_and_the_answer_folder_are_refused(tmp_path, capsys):
    """以前：不给 --roster/--secret-file 时按书上的参数评，全班 3/17，rc 0；指到教师的参考答案目录时全班满分"""
    import shardlab.assign.cli

    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    base = ["--course", str(ROOT), "--no-progress", "--sandbox", "rlimit", "--chapter", "5"]
    assert cli.main([str(own), "--out", str(tmp_path / "o1"), *base]) == 2
    assert "是个人版" in capsys.readouterr().err
    answers_dir = tmp_path / "个人版"
    shardlab.assign.cli.assign(
        roster.read(roster_path), secret.read_bytes(), answers_dir, ROOT, ("ch05",), solutions=True
    )
    only = tmp_path / "only-solutions"
    only.mkdir()
    for sid in ("s000", "s001"):
        shutil.copytree(answers_dir / sid, only / sid)
        for nb in (only / sid).glob("*_exercises.ipynb"):
            nb.unlink()
    keyed = [*base, "--roster", str(roster_path), "--secret-file", str(secret)]
    assert cli.main([str(only), "--out", str(tmp_path / "o2"), *keyed]) == 2
    err = capsys.readouterr().err
    assert "没有一份可以评的提交" in err and "参考答案" in err
    assert not any((tmp_path / name).exists() for name in ("o1", "o2"))


def test_group_export_grades_every_member_and_wrong_key_is_caught_with_one_submission():
    export = {"submission_444": [{"sid": "s005", "email": ""}, {"sid": "alice", "email": ""}]}
    got = identify.identify(("submission_444", "nb.ipynb"), TABLE, "alice", export)
    assert got.sid == "alice" and got.group == ["alice", "s005"]
    res = _res("alice", {"ch05-p1a": True}, rid="alice")
    res["group"] = ["alice", "s005"]
    students = [roster.Student("alice", "A", 2), roster.Student("s005", "B", 3)]
    _, table = outputs.rows([res], students, 5)
    assert [r["total"] for r in table] == [1, 1] and "小组提交" in table[1]["status"]  # 以前：s005 “没有提交”
    key = personal.PersonalKey.build(_published_key(), STUDENTS[:1], b"another secret of 32 bytes......", ("ch05",))
    drawn, tags = _issued(STUDENTS[:1])
    late = [_found("s1", "s1.ipynb", 5, drawn["s1"], tags["s1"])]  # 只收到一份（迟交的）：以前不核对，按错的数评了分
    assert personal.reconcile(late, key, "ch05")[0].startswith("密钥不对？")


def test_roster_ids_changed_since_assign_are_caught():
    """Excel 把 0012 存成了 12：以前整个班按错的数评分，一句提示也没有"""
    students = [roster.Student("0012", "A", 2), roster.Student("0034", "B", 3)]
    drawn, tags = _issued(students)
    renamed = [roster.Student("12", "A", 2), roster.Student("34", "B", 3)]
    key = personal.PersonalKey.build(_published_key(), renamed, SECRET, ("ch05",))
    found = [_found(new.id, f"{new.id}.ipynb", 5, drawn[old.id], tags[old.id], student=old.id)
             for old, new in zip(students, renamed)]  # fmt: skip
    problem, _ = personal.reconcile(found, key, "ch05")
    assert problem.startswith("花名册里的 id 与生成个人版时的不同？") and "2 名学生里有 2 名" in problem


def test_unsigned_ghost_ids_from_one_student_do_not_stop_the_class():
    """一个学生交了几份元数据写着假 id 的文件：以前按文件数算“花名册的 id 变了”，整班停下（rc 2）"""
    students = [roster.Student("s1", "A", 2), roster.Student("s2", "B", 3)]
    drawn, tags = _issued(students)
    key = personal.PersonalKey.build(_published_key(), students, SECRET, ("ch05",))
    found = [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in students]
    found += [_found("s1", f"s1 ({k}).ipynb", 5, drawn["s1"], tags["s1"], student=f"ghost{k}") for k in range(5)]
    assert personal.reconcile(found, key, "ch05")[0] is None


def test_a_huge_number_in_the_parameter_cell_affects_only_that_file(tmp_path):
    """以前：B = 0x 加几千个 f 让 repr 抛出 ValueError，整班的评分以“用法错误”停下"""
    for src in ("B = 0x" + "f" * 3900, 'mesh = {"X": 0x' + "f" * 4000 + "}"):
        got = problems.written("ch05", [src])
        assert all(isinstance(v, str) and "太大" in v for v in got.values()) and got
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    path = own / "s000" / "ch05_exercises.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if problems.PARAM_TAG in c.get("metadata", {}).get("tags", []))
    cell["source"] = "".join(cell["source"]) + "\nB = 0x" + "f" * 3900 + "\n"
    path.write_text(json.dumps(nb), encoding="utf-8")
    _, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert sorted(f.roster_id for f in found.found) == ["s000", "s001"]  # 整个评分之前的流程（认人、核对密钥）都过得去


def test_timeouts_while_others_ran_are_graded_again_alone(monkeypatch):
    """一个学生占满 CPU，同时在评的诚实同学超时 0 分（还被缓存）：以前就此定分；现在等别的评完单独重评一次"""
    import threading

    honest, hog = (folder.Found(Path(n), n, n.encode(), n.encode(), n) for n in ("s1.ipynb", "s2.ipynb"))
    results = {
        "s1.ipynb": {"status": status.TIMEOUT, "problems": []},
        "s2.ipynb": {"status": status.GRADED, "problems": [{"status": status.TIMEOUT}]},
    }
    graded = []
    monkeypatch.setattr(cli, "grade_submission", lambda f, ctx: graded.append(f.sid) or {"status": status.GRADED})
    ctx = types.SimpleNamespace(stop=threading.Event())
    recorded = {}
    done = cli._retry_timeouts_alone([honest, hog], results, ctx, lambda f, r: recorded.update({f.sid: r}), 2)
    assert done == graded == ["s1.ipynb", "s2.ipynb"] and "单独重评" in recorded["s1.ipynb"]["notes"][0]
    assert cli._retry_timeouts_alone([honest], results, ctx, lambda f, r: None, 1) == []  # -j 1：没有别的提交同时评


def test_planted_junk_files_do_not_stop_the_class_but_a_wrong_roster_does(tmp_path):
    """以前按文件数判断“花名册不对？”：往散放的提交目录里丢 5 个对不上的文件，4 个学生的评分就停下"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    for k in range(5):
        shutil.copy(ROOT / "exercises" / "ch05_exercises.ipynb", own / f"junk{k}.ipynb")
    who = cli.Personal(roster.read(roster_path), secret.read_bytes())
    found = folder.scan([str(own)])
    cli._peek_all(found, secret.read_bytes())
    cli._identify(found, who)
    assert sorted(f.roster_id for f in found.found) == ["s000", "s001"] and len(found.ignored) == 5
    other = tmp_path / "other.csv"  # 另一个班的花名册：两份签名对得上的个人版都对不上，而且对上的一份也没有
    other.write_text("id,name\ns000,学生0\nt1,X\n", encoding="utf-8")
    shutil.rmtree(own / "s000")
    for k in range(5):
        (own / f"junk{k}.ipynb").unlink()
    shutil.copytree(own / "s001", own / "s001-copy")
    found = folder.scan([str(own)])
    cli._peek_all(found, secret.read_bytes())
    with pytest.raises(cli.UsageError, match="花名册不对？.*1 份是用这个密钥"):  # 内容相同的两份只算一份证据
        cli._identify(found, cli.Personal(roster.read(other), secret.read_bytes()))


def test_the_handed_out_notebooks_are_not_graded_as_a_class_of_zeros(tmp_path, capsys):
    """以前：把评分器指到 shardlab-assign 的输出（发下去的空白笔记本），全班 0 分，rc 0，canvas.csv 可以导入"""
    roster_path, secret, _, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    args = [str(tmp_path / "assigned"), "--course", str(ROOT), "--no-progress", "--sandbox", "rlimit", "--chapter", "5",
            "--roster", str(roster_path), "--secret-file", str(secret)]  # fmt: skip
    assert cli.main([*args, "--out", str(tmp_path / "o")]) == 2
    assert "一道题也没有作答" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_identical_copies_are_graded_once_and_files_per_student_are_capped(tmp_path):
    """以前：一个学生的 200 个文件每个都进沙箱评（每个最多 --wall 秒），内容相同的副本也一样"""
    sub = tmp_path / "subs" / "s1"
    sub.mkdir(parents=True)
    for k in range(8):  # 内容不同的笔记本（读不成笔记本的文件不进沙箱，不用待核对，见下一个测试）
        (sub / f"v{k}.ipynb").write_text(json.dumps(_answered(k)), encoding="utf-8")
    (sub / "v9-copy.ipynb").write_text(json.dumps(_answered(0)), encoding="utf-8")
    found = folder.scan([str(tmp_path / "subs")])
    cli._peek_all(found)
    assert per_student.limit(found) == ["s1（8 个，没评 3 个）"]
    assert [f.rel for f in found.found] == [f"s1/v{k}.ipynb" for k in range(per_student.MAX_FILES)]
    reasons = [i["reason"] for i in found.ignored]
    assert sum("内容相同" in r for r in reasons) == 1 and sum("超过" in r for r in reasons) == 3


def test_changing_the_limits_invalidates_cached_results():
    """以前：超时之后加大 --cell-timeout 再运行，缓存里的超时结果照样用，gradebook.json 却记着新的上限"""
    from shardlab.grade.sandbox import Limits
    from shardlab.grade.submission import Context

    key = AnswerKey({}, "fp")

    def ctx(limits, mode="bwrap"):
        return Context(key, 1, {}, types.SimpleNamespace(limits=limits, mode=mode), 5, code="c")

    base = ctx(Limits(cell_s=2))
    assert base.cache_key == ctx(Limits(cell_s=2)).cache_key
    assert base.cache_key != ctx(Limits(cell_s=30)).cache_key
    assert base.cache_key != ctx(Limits(cell_s=2), mode="uid").cache_key


def test_one_students_blank_drafts_do_not_stop_the_class(tmp_path):
    """以前按文件数：一个学生多交 4 份空白草稿，3 人的班就停下（“一道题也没有作答”）"""
    blank = json.loads((ROOT / "exercises" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    done = json.loads(json.dumps(blank))
    for cell in done["cells"]:
        if "ch05-p1a" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "p1a = 1.0"
    for sid in ("s1", "s2", "s3"):
        (tmp_path / sid).mkdir()
        (tmp_path / sid / "mine.ipynb").write_text(json.dumps(done), encoding="utf-8")
    for k in range(4):
        draft = json.loads(json.dumps(blank))
        draft["cells"].append({"cell_type": "markdown", "metadata": {}, "source": f"草稿 {k}"})
        (tmp_path / "s1" / f"draft{k}.ipynb").write_text(json.dumps(draft), encoding="utf-8")
    found = folder.scan([str(tmp_path)])
    cli._peek_all(found)
    cli._refuse_mostly_blank(found, cli.Course(ROOT), 5)  # 不抛出
    for sid in ("s2", "s3"):
        (tmp_path / sid / "mine.ipynb").write_text(json.dumps(blank), encoding="utf-8")
    found = folder.scan([str(tmp_path)])
    cli._peek_all(found)
    with pytest.raises(cli.UsageError, match="3 名学生里有 2 名"):
        cli._refuse_mostly_blank(found, cli.Course(ROOT), 5)


def test_one_student_cannot_stop_or_displace_with_copies_of_notebooks(tmp_path):
    """以前：学生把自己签名的笔记本复制几份、起认不出的名字，就让“花名册不对？”停下整班；
    几份伪造签名的文件排在前面，就把同学自己文件夹里的真文件挤出 5 个的上限（3/17，还被标为抄袭）"""
    roster_path, secret, own, pub, _ = assign_bench.make_class(tmp_path, 2, "ch05")
    for k in range(4):
        shutil.copy(own / "s001" / "ch05_exercises.ipynb", own / f"abc_1{k}_2{k}_ch05.ipynb")
    who = cli.Personal(roster.read(roster_path), secret.read_bytes())
    found = folder.scan([str(own)])
    cli._peek_all(found, secret.read_bytes())
    cli._identify(found, who)  # 不抛出：写着花名册里的 id 的文件不是“花名册不对”的证据
    assert sorted(f.roster_id for f in found.found) == ["s000", "s001"]
    for k in range(5):
        nb = json.loads((pub / "s001_ch05.ipynb").read_text(encoding="utf-8"))
        nb["metadata"]["shardlab"] = {"student": "s001", "tag": f"forged{k}", "assignment": "ch05"}
        (own / f"0_s001_{k}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    found = folder.scan([str(own)])
    cli._peek_all(found, secret.read_bytes())
    cli._identify(found, who)
    per_student.limit(found)
    assert "s001/ch05_exercises.ipynb" in [f.rel for f in found.found if f.roster_id == "s001"]


def test_without_a_roster_identical_blank_or_tagged_copies_count_once(tmp_path):
    blank = (ROOT / "exercises" / "ch05_exercises.ipynb").read_text(encoding="utf-8")
    done = json.loads(blank)
    for cell in done["cells"]:
        if "ch05-p1a" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "p1a = 1.0"
    for sid in ("s1", "s2", "s3"):
        (tmp_path / f"{sid}.ipynb").write_text(json.dumps(done), encoding="utf-8")
    for k in range(4):  # 元数据各不相同：以前按整个文件的 sha256 去重，改一个字节就多算一个学生
        tagged = json.loads(blank)
        tagged["metadata"]["shardlab"] = {"student": "x", "tag": "y", "n": k}
        plain = json.loads(blank)
        plain["metadata"]["n"] = k
        (tmp_path / f"zz{k}.ipynb").write_text(json.dumps(plain), encoding="utf-8")
        (tmp_path / f"yy{k}.ipynb").write_text(json.dumps(tagged), encoding="utf-8")
    found = folder.scan([str(tmp_path)])
    cli._peek_all(found)
    cli._refuse_mostly_blank(found, cli.Course(ROOT), 5)  # 以前：“7 名学生里有 4 名……”停下
    cli._refuse_personal_without_key(found)  # 以前：“有 4 份是个人版……”停下，也没有办法照样评
    assert "--book-params" in cli.build_parser().format_help()


def test_a_timeout_under_jobs_that_was_never_retried_alone_is_not_cached():
    f = folder.Found(Path("s1.ipynb"), "s1.ipynb", b"s1.ipynb", b"s1", "s1")
    prev = {"cache_key": "k", "sha256": "h", "roster_id": None, "file": "s1.ipynb", "status": status.TIMEOUT}
    assert cli._cached(prev, "h", "k", f) is None  # 被中断、没来得及单独重评：下次再评（以前：缓存的 0 分）
    assert cli._cached({**prev, "graded_alone": True}, "h", "k", f) is not None
    assert cli._cached({**prev, "status": status.GRADED}, "h", "k", f) is not None
    for broken in (status.CRASHED, status.GRADER_ERROR):  # 以前：评分环境的错修好之后，缓存里全班的“崩溃”照样用
        assert cli._cached({**prev, "status": broken, "graded_alone": True}, "h", "k", f) is None


def test_partial_parameter_cells_do_not_hide_a_wrong_key():
    """以前：给每位同学放几份只写了 TP = 2/3/4/6 的文件，其中总有一份与错的密钥推出的参数“一致”，“密钥不对？”就不再停下"""
    students = [roster.Student(f"s{k}", "x", k + 2) for k in range(3)]
    drawn, tags = _issued(students)
    wrong = personal.PersonalKey.build(_published_key(), students, b"another secret of 32 bytes......", ("ch05",))
    found = [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in students]
    for s in students:
        for tp in (2, 3, 4, 6, 8):
            found.append(_found(s.id, f"{s.id}_tp{tp}.ipynb", 5, {"TP": tp}))
    with pytest.raises(personal.KeyDisproved, match="密钥不对：3 名学生"):
        personal.reconcile(found, wrong, "ch05")


def test_yaml_aliases_in_export_metadata_are_not_expanded(tmp_path):
    """以前：submission_metadata.yml 里层层引用的别名在 str() 时展开，几百字节的文件就能耗尽时间和内存"""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{k}: &a{k} [*a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}]"
        for k in range(1, 9)
    ]
    lines += ["submission_1:", "  :submitters:", "  - :sid: s1", "    :name: *a8"]
    (tmp_path / "submission_metadata.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import time

    start = time.monotonic()
    export = identify.gradescope_export(tmp_path)
    assert time.monotonic() - start < 5 and export["submission_1"] == [{"sid": "s1"}]


def _prepare(tmp_path, subs, *extra):
    """cli.prepare：评分之前的一切（认出学生、每个学生留哪几个文件、核对密钥），不进沙箱"""
    args = cli.build_parser().parse_args(
        [str(subs), "--out", str(tmp_path / "o"), "--course", str(ROOT), "--sandbox", "rlimit", *extra]
    )
    found = cli.prepare(args).found
    return args, found


def _answered(k: int = 0) -> dict:
    nb = json.loads((ROOT / "exercises" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "ch05-p1a" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = f"p1a = {1.0 + k}"
    return nb


def test_without_a_roster_planted_files_do_not_displace_a_loose_submission(tmp_path):
    """以前没有花名册时按去掉扩展名的文件名分学生：别人放的 s001_ch05.IPYNB……（大写排在前面）或一个 s001_ch05/ 文件夹
    占满了 5 个的名额，s001_ch05.ipynb 本人的文件没有评"""
    subs = tmp_path / "subs"
    (subs / "s001_ch05").mkdir(parents=True)
    (subs / "s001_ch05.ipynb").write_text(json.dumps(_answered()), encoding="utf-8")
    for k, ext in enumerate(("IPYNB", "IPYNb", "IPYnb", "IPynb", "Ipynb")):
        (subs / f"s001_ch05.{ext}").write_text(json.dumps(_answered(k + 1)), encoding="utf-8")
        (subs / "s001_ch05" / f"v{k}.ipynb").write_text(json.dumps(_answered(k + 1)), encoding="utf-8")
    args, found = _prepare(tmp_path, subs, "--chapter", "5")
    assert "s001_ch05.ipynb" in [f.rel for f in found.found] and len(found.found) == 11
    assert not any("超过" in n for n in args.roster_notes)


def test_copies_in_a_teachers_folder_do_not_displace_the_students_own_file(tmp_path):
    """以前：拿到 s001 的个人版的人在 S001/ 文件夹里放 5 份改过答案的副本（签名照样对得上），与 s001 散放的真文件同级，
    按路径排在前面，把真文件挤出 5 个的上限；现在每个位置轮流取，超过上限的写进给教师的说明"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    mine = own / "s001" / "ch05_exercises.ipynb"
    real = json.loads(mine.read_text(encoding="utf-8"))
    (own / "s001_ch05.ipynb").write_text(json.dumps(real), encoding="utf-8")
    shutil.rmtree(own / "s001")
    (own / "S001").mkdir()
    for k in range(5):
        copy = json.loads(json.dumps(real))
        copy["cells"].append({"cell_type": "markdown", "metadata": {}, "source": f"改过 {k}"})
        (own / "S001" / f"a{k}.ipynb").write_text(json.dumps(copy), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert "s001_ch05.ipynb" in [f.rel for f in found.found if f.roster_id == "s001"]
    assert any("s001（6 个，没评 1 个）" in n and "--max-files" in n for n in args.roster_notes)
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file",
                           str(secret), "--max-files", "6")  # fmt: skip
    assert sum(f.roster_id == "s001" for f in found.found) == 6


def test_junk_in_a_students_folder_does_not_hide_a_class_of_personal_notebooks(tmp_path):
    """以前按文件数：2 名学生都交了个人版，其中一人的文件夹里多放 5 个别的文件，就按书上的参数评下去（几乎全错）"""
    _, _, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    for k in range(5):
        (own / "s000" / f"junk{k}.ipynb").write_text(json.dumps(_answered(k)), encoding="utf-8")
    with pytest.raises(cli.UsageError, match="2 名学生里有 2 名交的是个人版"):
        _prepare(tmp_path, own, "--chapter", "5")


def test_one_withdrawn_students_notebook_copied_around_is_one_piece_of_evidence(tmp_path):
    """s003 退了课（不在花名册里）。以前：他的真个人版复制到两个同学的文件夹里，“花名册里的 id 变了？”就按文件对上的学生数停下；
    改几处答案后散放 8 份（对不上的文件过半），“花名册不对？”就按内容数停下。现在两处都按笔记本里写的学生 id 数：只算一份证据"""
    _, secret, own, _, _ = assign_bench.make_class(tmp_path, 4, "ch05", published=False)
    three = tmp_path / "three.csv"
    three.write_text("id,name\n" + "".join(f"s{k:03d},学生{k}\n" for k in range(3)), encoding="utf-8")
    theirs = json.loads((own / "s003" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    for sid in ("s000", "s001"):
        (own / sid / "copy.ipynb").write_text(json.dumps(theirs), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(three), "--secret-file", str(secret))
    assert sorted({f.roster_id for f in found.found}) == ["s000", "s001", "s002"]
    for k in range(8):
        copy = json.loads(json.dumps(theirs))
        copy["cells"].append({"cell_type": "markdown", "metadata": {}, "source": f"改过 {k}"})
        (own / f"x{k}.ipynb").write_text(json.dumps(copy), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(three), "--secret-file", str(secret))
    assert sorted({f.roster_id for f in found.found}) == ["s000", "s001", "s002"]


def _unsigned(nb: dict) -> dict:
    nb = json.loads(json.dumps(nb))
    nb["metadata"].pop("shardlab", None)
    return nb


def test_a_student_displaced_by_planted_folders_is_held_not_graded_zero(tmp_path):
    """以前：5 个起名 a_s001/…e_s001/ 的文件夹（或一个 s001/ 文件夹里 5 份）排在 s001 自己散放的（没有签名的）文件前面，
    占满名额，他按别人放的文件得 0 分，canvas.csv 里照样是 0。现在他的成绩标为待核对，canvas.csv 里不给分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    real = json.loads((own / "s001" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    shutil.rmtree(own / "s001")
    (own / "s001.ipynb").write_text(json.dumps(_unsigned(real)), encoding="utf-8")
    for k, name in enumerate("abcde"):
        (own / f"{name}_s001").mkdir()
        (own / f"{name}_s001" / "x.ipynb").write_text(json.dumps(_answered(k)), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    mine = [f for f in found.found if f.roster_id == "s001"]
    assert (
        len(mine) == 5 and all(f.over_cap for f in mine) and not any(f.over_cap for f in found.found if f not in mine)
    )
    assert any("s001（6 个，没评 1 个）" in n and "待核对" in n for n in args.roster_notes)
    results = [{"student": "s001", "roster_id": "s001", "points": 0.0, "problems": [], "counted": True, "file": "a"}]
    _, table = outputs.rows(results, roster.read(roster_path), 5, held={"s001"})
    row = next(r for r in table if r["id"] == "s001")
    assert row["status"] == outputs.HELD and outputs.canvas_csv(table, "c").splitlines()[-1].endswith(",")


def test_junk_and_other_chapter_files_beyond_the_cap_do_not_hold_a_student(tmp_path):
    """以前：别人往 s001 的文件夹里放 5 个不是笔记本的 .ipynb 和第 6 章的笔记本，他自己的一份照样评了，
    没评的却只是这些垃圾，他的成绩也标成了待核对；垃圾排在他自己的文件之后，也挤不掉它"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    for k in range(5):
        (own / "s001" / f"junk{k}.ipynb").write_text(f"不是笔记本 {k}", encoding="utf-8")
    shutil.copy(ROOT / "exercises" / "ch06_exercises.ipynb", own / "s001" / "ch06_exercises.ipynb")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    mine = [f.rel for f in found.found if f.roster_id == "s001"]
    assert "s001/ch05_exercises.ipynb" in mine and len(mine) == 5 and not any(f.over_cap for f in found.found)
    assert not any("待核对" in n for n in args.roster_notes)
    # 他这一章的文件多过上限时照样待核对
    for k in range(5):
        (own / "s001" / f"v{k}.ipynb").write_text(json.dumps(_answered(k)), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert all(f.over_cap for f in found.found if f.roster_id == "s001")
    # 答案一个也没有的文件（别的章、读不成笔记本的）不算“答案不同”
    graded = [{"roster_id": "s001", "problems": [{"id": "ch05-p1a", "submitted": v}]} for v in (1.0, None, 2.0)]
    assert outputs.differing_files(graded[:2]) == {} and outputs.differing_files(graded) == {"s001": 2}


def test_planted_copies_of_a_classmates_variant_do_not_push_a_student_over_the_cap(tmp_path):
    """以前：往 s001 的文件夹里放 6 份 s000 的个人版（答案各不相同；元数据写 s000，或改成 s001），s001 就超过上限、成绩待核对。
    他另有文件时这些本来就不会计入（cli.select_counted），排在最后，没评的只是它们时不待核对"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    theirs = json.loads((own / "s000" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    for k in range(6):
        copy = json.loads(json.dumps(theirs))
        copy["cells"].append({"cell_type": "markdown", "metadata": {}, "source": f"副本 {k}"})
        if k % 2:
            copy["metadata"]["shardlab"]["student"] = "s001"  # 签名对不上 s001，对得上 s000
        (own / "s001" / f"copy{k}.ipynb").write_text(json.dumps(copy), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    mine = [f.rel for f in found.found if f.roster_id == "s001"]
    assert "s001/ch05_exercises.ipynb" in mine and len(mine) == 5
    assert not any(f.over_cap for f in found.found) and not any("待核对" in n for n in args.roster_notes)
    # 他只有这些同学的个人版时，它们就是他交的：超过上限照样待核对
    (own / "s001" / "ch05_exercises.ipynb").unlink()
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert [f.over_cap for f in found.found if f.roster_id == "s001"] == [True] * 5


def test_forged_claims_are_dropped_before_they_take_a_students_places(tmp_path):
    """以前先数上限、后扔伪造的：5 份写着 s001、签名是伪造的散放文件占满名额，s001 自己的文件没评，伪造的随后又被扔掉，
    他成了“没有提交”"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 2, "ch05", published=False)
    real = json.loads((own / "s001" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    shutil.rmtree(own / "s001")
    (own / "s001.ipynb").write_text(json.dumps(_unsigned(real)), encoding="utf-8")
    for k in range(5):
        forged = _answered(k)
        forged["metadata"]["shardlab"] = {"student": "s001", "tag": f"forged{k}", "assignment": "ch05"}
        (own / f"0{k}.ipynb").write_text(json.dumps(forged), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert [f.rel for f in found.found if f.roster_id == "s001"] == ["s001.ipynb"]
    assert not any(f.over_cap for f in found.found)
    ch06 = json.loads((ROOT / "exercises" / "ch06_exercises.ipynb").read_text(encoding="utf-8"))
    (own / "S001").mkdir()  # 另一章的笔记本排在这一章的后面（以前：教师文件夹里的 5 份第 6 章笔记本占满名额）
    for k in range(5):
        ch06["metadata"]["n"] = k
        (own / "S001" / f"{k}.ipynb").write_text(json.dumps(ch06), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert "s001.ipynb" in [f.rel for f in found.found if f.roster_id == "s001"]


def test_a_planted_gradescope_metadata_file_is_not_an_export(tmp_path):
    """以前：往自己收作业的目录里放 submission_metadata.yml 和 submission_1/，就能把自己的笔记本作为小组提交记到朋友名下"""
    (tmp_path / "submission_1").mkdir()
    (tmp_path / "s000.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :sid: alice\n  - :sid: li\n", encoding="utf-8"
    )
    assert identify.gradescope_export(tmp_path) is None
    got = identify.identify(("submission_1", "x.ipynb"), TABLE, "alice", None)
    assert got.sid is None and "不是原样的导出" in got.reason
    (tmp_path / "s000.ipynb").unlink()
    assert identify.gradescope_export(tmp_path)["submission_1"] == [{"sid": "alice"}, {"sid": "li"}]


def test_leading_zeros_dropped_by_excel_stop_the_run_even_for_one_student(tmp_path):
    """以前：4 个 id 里只有 0101 被 Excel 改成 101，他的个人版对不上花名册，成了“没有提交”，退出码 0"""
    import shardlab.assign.cli

    ids = ["0101", "1102", "1103", "1104"]
    issued = tmp_path / "issued.csv"
    issued.write_text("id,name\n" + "".join(f"{i},学生{i}\n" for i in ids), encoding="utf-8")
    secret = os.urandom(32)
    (tmp_path / "secret").write_bytes(secret)
    shardlab.assign.cli.assign(roster.read(issued), secret, tmp_path / "assigned", ROOT, ("ch05",))
    subs = tmp_path / "subs"
    for i in ids:
        (subs / i).mkdir(parents=True)
        nb = json.loads((tmp_path / "assigned" / i / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if "ch05-p1a" in cell.get("metadata", {}).get("tags", []):
                cell["source"] = "p1a = 1.0"
        (subs / i / "ch05_exercises.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    excel = tmp_path / "excel.csv"
    excel.write_text(issued.read_text(encoding="utf-8").replace("0101,", "101,"), encoding="utf-8")
    extra = ["--chapter", "5", "--roster", str(excel), "--secret-file", str(tmp_path / "secret")]
    with pytest.raises(cli.UsageError, match="开头是 0 的 id.*'0101'.*'101'"):
        _prepare(tmp_path, subs, *extra)
    args, found = _prepare(tmp_path, subs, *extra, "--trust-key")
    assert any("--trust-key" in n and "0101" in n for n in args.roster_notes) and len(found.found) == 3
    (subs / "0101").rename(subs / "101")  # 文件夹名对上了 101（像 LMS 的用户号）：以前按 101 的参数评，4/17，rc 0
    with pytest.raises(cli.UsageError, match="开头是 0 的 id"):
        _prepare(tmp_path, subs, *extra)


def test_an_unquoted_glob_keeps_the_student_folders_and_the_output_folder_is_not_scanned(tmp_path):
    """以前：没加引号的 subs/*/x.ipynb 被 shell 展开成几个文件，路径从整个路径算起，文件夹名认不出学生；
    输出目录在提交目录里面时，评分器自己写的文件列成一堆“忽略”"""
    subs = tmp_path / "subs"
    for sid in ("s000", "s001"):
        (subs / sid).mkdir(parents=True)
        (subs / sid / "x.ipynb").write_text("{}", encoding="utf-8")
    found = folder.scan([str(subs / "s000" / "x.ipynb"), str(subs / "s001" / "x.ipynb")])
    assert [(f.rel, f.group) for f in found.found] == [("s000/x.ipynb", b"s000"), ("s001/x.ipynb", b"s001")]
    (subs / "grades" / "results").mkdir(parents=True)
    (subs / "grades" / "summary.md").write_text("x", encoding="utf-8")
    (subs / "grades" / "results" / "s000.json").write_text("{}", encoding="utf-8")
    found = folder.scan([str(subs)], skip=subs / "grades")
    assert found.ignored == [] and len(found.found) == 2


def test_group_membership_is_part_of_the_cache_and_members_get_feedback(tmp_path):
    """以前：重新导出 Gradescope 后退出小组的人还拿着缓存里小组的分；小组里没有自己文件的组员没有反馈文件"""
    f = folder.Found(Path("x.ipynb"), "submission_1/x.ipynb", b"submission_1/x.ipynb", b"submission_1", "alice")
    f.roster_id, f.members = "alice", ["alice", "li"]
    prev = {"cache_key": "k", "sha256": "h", "roster_id": "alice", "file": f.rel, "status": status.GRADED,
            "group": ["alice", "li"]}  # fmt: skip
    assert cli._cached(prev, "h", "k", f) is not None
    f.members = ["alice"]
    assert cli._cached(prev, "h", "k", f) is None
    res = {**prev, "student": "alice", "counted": True, "points": 3.0, "max_points": 3.0, "problems": [],
           "errors": [], "notes": [], "chapter": 5}  # fmt: skip
    cli._feedback_per_student(tmp_path, [res])
    assert "按 alice 交的笔记本评分" in (tmp_path / "feedback" / "li.md").read_text(encoding="utf-8")


def test_a_group_export_is_graded_as_the_member_whose_signature_it_carries(tmp_path):
    """以前：本机评 Gradescope 导出的小组提交时按笔记本里写的 id（谁都能改）定组员：s001 的个人版写着 s002，就按 s002 的参数评"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    subs = tmp_path / "export"
    (subs / "submission_7").mkdir(parents=True)
    (subs / "submission_metadata.yml").write_text(
        "submission_7:\n  :submitters:\n  - :sid: s002\n  - :sid: s001\n", encoding="utf-8"
    )
    nb = json.loads((own / "s001" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    nb["metadata"]["shardlab"]["student"] = "s002"
    (subs / "submission_7" / "ch05_exercises.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    args, found = _prepare(tmp_path, subs, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    (f,) = found.found
    assert f.roster_id == "s001" and "签名表明笔记本是 s001 的个人版" in f.how and f.members == ["s001", "s002"]
    del nb["metadata"]["shardlab"]["student"]  # 没写 id：以前按 yml 里的第一位 s002 评，还要助教核对
    (subs / "submission_7" / "ch05_exercises.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    args, found = _prepare(tmp_path, subs, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    (f,) = found.found
    assert f.roster_id == "s001" and not f.notes


def test_a_held_group_submission_holds_every_member_who_shares_its_score(tmp_path):
    """以前：小组提交待核对时只有交文件的组员待核对，另一位组员在 canvas.csv 里照样拿这份分（grades_wide.csv 写着“小组提交”）"""
    base = {"file": "submission_7/x.ipynb", "status": status.GRADED, "points": 4.0, "max_points": 17.0,
            "problems": [], "errors": [], "notes": [], "chapter": 5, "counted": True}  # fmt: skip
    results = [{**base, "student": "s001", "roster_id": "s001", "group": ["s001", "s002"]},
               {**base, "student": "s003", "roster_id": "s003", "group": ["s003", "s004"]}]  # fmt: skip
    held = {"s001": "待核对：交的是发给 s000 的个人版"}
    held |= cli._held_group_members(results, held)
    assert held == {"s001": "待核对：交的是发给 s000 的个人版", "s002": "待核对：交的是发给 s000 的个人版"}
    students = [roster.Student(f"s00{k}", f"学生{k}", k + 2) for k in range(5)]
    _, table = outputs.rows(results, students, 5, held=held)
    by = {row["id"]: row for row in table}
    assert by["s002"]["held"] and by["s002"]["blank"] and "待核对" in by["s002"]["status"]
    assert not by["s004"]["held"] and not by["s004"]["blank"]  # 没待核对的小组照常
    cli._write_all_feedback(tmp_path, results, held)
    text = (tmp_path / "feedback" / "s002.md").read_text(encoding="utf-8")
    assert "待老师核对" in text and "s000" not in text
    assert "待老师核对" not in (tmp_path / "feedback" / "s004.md").read_text(encoding="utf-8")


def test_a_group_notebook_without_an_embedded_id_is_graded_as_the_first_member(tmp_path):
    """以前：小组提交的笔记本里没有写学生 id 时“不猜”，两位组员都是“没有提交”（Gradescope 容器里按第一位评）"""
    export = {"submission_1": [{"sid": "li"}, {"sid": "alice"}]}
    got = identify.identify(("submission_1", "x.ipynb"), TABLE, None, export)
    assert got.sid == "li" and got.group == ["alice", "li"] and got.strong and "请助教核对" in got.notes[0]


def test_an_unquoted_glob_over_student_folders_keeps_the_folder_names(tmp_path):
    """以前：shardlab-grade subs/*（shell 展开成几个文件夹）把每个文件夹当成提交目录，文件夹名不再认人"""
    for sid in ("s000", "s001"):
        (tmp_path / sid).mkdir()
        (tmp_path / sid / "ch05_exercises.ipynb").write_text("{}", encoding="utf-8")
    found = folder.scan([str(tmp_path / "s000"), str(tmp_path / "s001")])
    assert [(f.rel, f.group) for f in found.found] == [
        ("s000/ch05_exercises.ipynb", b"s000"),
        ("s001/ch05_exercises.ipynb", b"s001"),
    ]
    assert "shell 展开" in found.notes[0]
    (tmp_path / "s001" / "submission_metadata.yml").write_text("{}", encoding="utf-8")  # Gradescope 导出：是提交目录
    assert not folder.scan([str(tmp_path / "s000"), str(tmp_path / "s001")]).notes


@pytest.mark.slow
def test_a_kernel_that_cannot_start_is_a_crash_and_withholds_the_grade_files(tmp_path, capsys):
    """以前：--memory-mb 太小、内核起不来时每道题都判“没有导出”，全班 0 分，退出码 0，canvas.csv 可以导入，重跑照样用缓存"""
    subs = tmp_path / "subs"
    subs.mkdir()
    for sid in ("a", "b"):
        (subs / f"{sid}.ipynb").write_text(json.dumps(_answered()), encoding="utf-8")
    argv = [str(subs), "--out", str(tmp_path / "o"), "--course", str(ROOT), "--sandbox", "rlimit", "--chapter", "5",
            "--no-progress", "--memory-mb", "200"]  # fmt: skip
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "都崩溃或超时了" in err and not (tmp_path / "o" / "canvas.csv").exists()
    res = json.loads((tmp_path / "o" / "results" / "a.json").read_text(encoding="utf-8"))
    assert res["status"] == status.CRASHED and "内核没有启动" in res["message"]


def test_submission_arguments_that_cannot_be_right_are_refused(tmp_path):
    """以前：--out 写成了提交目录（全班 0 分，rc 0）；路径不存在只是一条英文的“忽略”；没加引号的 export/* 拆开了 Gradescope 导出"""
    subs = tmp_path / "subs"
    (subs / "submission_1").mkdir(parents=True)
    (subs / "submission_metadata.yml").write_text("submission_1: {}\n", encoding="utf-8")
    for argv, match in (
        ([str(subs), "--out", str(subs)], "--out 与提交目录是同一个目录"),
        ([str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")], "不存在"),
        (
            [str(subs / "submission_1"), str(subs / "submission_metadata.yml"), "--out", str(tmp_path / "o")],
            "export/\\*",
        ),
        ([str(tmp_path / "o2"), "--out", str(tmp_path / "o")], "不存在"),
    ):
        args = cli.build_parser().parse_args([*argv, "--course", str(ROOT), "--sandbox", "rlimit", "--chapter", "5"])
        with pytest.raises(cli.UsageError, match=match):
            cli.prepare(args)
    (tmp_path / "empty").mkdir()
    args = cli.build_parser().parse_args([str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--course", str(ROOT),
                                          "--sandbox", "rlimit", "--chapter", "5"])  # fmt: skip
    with pytest.raises(cli.UsageError, match="没有找到任何 .ipynb"):
        cli.prepare(args)


def test_feedback_of_a_former_group_member_is_set_aside(tmp_path):
    """以前：重新导出后 li 不在小组里了，成绩变成 0，feedback/li.md 却还是上次的 17/17"""
    (tmp_path / "feedback").mkdir()
    for name in ("alice", "li", "bob~1234abcd"):
        (tmp_path / "feedback" / f"{name}.md").write_text("x", encoding="utf-8")
    base = {"file": "x.ipynb", "points": 1.0, "max_points": 3.0, "status": status.GRADED, "problems": []}
    results = [{**base, "student": "alice", "roster_id": "alice", "counted": True, "group": ["alice"]},
               {**base, "student": "bob~1234abcd", "roster_id": "bob", "counted": True}]  # fmt: skip
    written = cli._write_all_feedback(tmp_path, results)
    assert cli._feedback_not_of_this_run(tmp_path, written) == {"li"}
    results[0]["group"] = ["alice", "li"]
    written = cli._write_all_feedback(tmp_path, results)
    assert cli._feedback_not_of_this_run(tmp_path, written) == set()


def test_one_student_with_a_subfolder_does_not_change_how_sibling_folders_are_read(tmp_path):
    """以前：没加引号的 subs/* 里只要有一个学生的文件夹带子文件夹，所有文件夹名都不再认人"""
    for sid in ("s000", "s001", "s002"):
        (tmp_path / sid).mkdir()
        (tmp_path / sid / "x.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "s002" / "x.ipynb").unlink()
    (tmp_path / "s002" / "inner").mkdir()
    (tmp_path / "s002" / "inner" / "x.ipynb").write_text("{}", encoding="utf-8")
    found = folder.scan([str(tmp_path / s) for s in ("s000", "s001", "s002")])
    assert [f.group for f in found.found] == [b"s000", b"s001"] and "目录太深" in found.ignored[0]["reason"]
    for sid in ("s000", "s001"):  # 几个班级目录：自己不直接装笔记本，里面是学生的子文件夹
        (tmp_path / sid / "x.ipynb").unlink()
        (tmp_path / sid / "stu").mkdir()
        (tmp_path / sid / "stu" / "x.ipynb").write_text("{}", encoding="utf-8")
    assert not folder.scan([str(tmp_path / s) for s in ("s000", "s001", "s002")]).notes


def test_a_students_own_exception_text_is_not_a_dead_kernel():
    """以前：答案单元 raise RuntimeError("Kernel died") 就把自己的错误记成了“内核已经退出”"""
    assert junit.kernel_gone("pytest plugin exception: Kernel dead on test start")
    assert junit.kernel_gone("RuntimeError: Kernel died before replying to kernel_info")
    spoof = "Notebook cell execution failed\nCell 7: Cell outputs differ\n\nTraceback:\nRuntimeError: Kernel died kernel_info"
    assert not junit.kernel_gone(spoof)


def test_answering_problem_8_in_the_books_order_is_a_slip_not_copying():
    """以前：个人版把 (a)(b)(c) 三种分片换了顺序，学生按书上的顺序、用自己的维度答，答案常常恰好等于书上的（0、维度乘积相同），
    150 人的班里有诚实的学生因此被标为对上了书上的答案（p ≈ 1e-9）"""
    book = problems.published("ch06")["cases8"]
    drawn = variants.for_class(b"k" * 32, "ch06", [f"s{k:03d}" for k in range(60)])
    checked = 0
    for params in drawn.values():
        for letter in "abc":
            if problems.p8_scheme(book, letter) in ("none", problems.p8_scheme(params["cases8"], letter)):
                continue  # 答 0 不算这种失误（见 answers._p8_book_order）
            for quantity in ("bytes", "time"):
                spec = answers.get(f"ch06-p8{letter}-{quantity}")
                wrong, right = spec.value({**params, "cases8": book}), spec.value(params)
                if math.isclose(wrong, right, rel_tol=1e-9):
                    continue  # 两种分片在他的维度下恰好一样：答对了
                verdict = judge_value(spec, wrong, right, params)
                assert verdict.slip and "按书上的顺序" in verdict.message, (letter, quantity, verdict)
                checked += 1
    assert checked > 20
    assert variants.for_class(b"k" * 32, "ch06", ["s000"]) == {"s000": drawn["s000"]}  # 个人版的参数不因它改变


def test_a_mistyped_roster_id_holds_the_student_instead_of_recording_zero(tmp_path):
    """以前：花名册里 s001 写成了 s010，s001 的真个人版被忽略（“不在花名册里”），canvas.csv 里 s010 是 0 分、退出码 0。
    现在有用这个密钥为不在花名册里的 id 生成的个人版时，summary 点名这个 id，没有文件的 s010 是“待核对”、canvas.csv 里空着"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    typo = tmp_path / "typo.csv"
    typo.write_text(roster_path.read_text(encoding="utf-8").replace("s001,", "s010,"), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(typo), "--secret-file", str(secret))
    assert found.off_roster == ["s001"] and any("'s001'" in n and "待核对" in n for n in args.roster_notes)
    results = {
        sid: {"student": sid, "roster_id": sid, "points": 17.0, "problems": [], "counted": True, "file": f"{sid}/x"}
        for sid in ("s000", "s002")
    }
    students = roster.read(typo)
    why = cli._held_without_file({}, students, results, {"off_roster": found.off_roster})
    assert list(why) == ["s010"] and "s001" in why["s010"]
    _, table = outputs.rows(list(results.values()), students, 5, held=why)
    row = next(r for r in table if r["id"] == "s010")
    assert row["status"].startswith("待核对") and "s001" in row["status"] and row["held"]
    assert any(line.endswith(",s010,,,") for line in outputs.canvas_csv(table, "c").splitlines())
    text = outputs.summary(table, list(results.values()), [], None)
    assert "## 待核对（1 人" in text and "没有提交" not in text
    # 花名册没写错、只是有人没交：照样“没有提交”
    assert not cli._held_without_file({}, students, results, {})


def test_grading_one_late_file_into_an_old_output_does_not_zero_the_others(tmp_path):
    """以前：只给迟交的一个文件、输出到全班评过的目录，别的学生以前的结果还在 results/，canvas.csv 里却是 0 分、“没有提交”"""
    out = tmp_path / "o"
    (out / "results").mkdir(parents=True)
    (out / "feedback").mkdir()
    old = {"student": "s000_x", "roster_id": "s000", "file": "s000/x.ipynb", "points": 17.0}
    (out / "results" / "s000_x.json").write_text(json.dumps(old), encoding="utf-8")
    (out / cli.STALE).mkdir()
    (out / cli.STALE / "s000.md").write_text("以前的反馈", encoding="utf-8")
    students = [roster.Student("s000", "甲", 2), roster.Student("s001", "乙", 3)]
    results = {"s001_x": {"student": "s001_x", "roster_id": "s001", "points": 5.0, "counted": True, "file": "x"}}
    meta = {"not_in_this_run": ["s000_x.json"]}
    assert cli._earlier_students(out, meta) == {"s000": "s000/x.ipynb"}
    why = cli._held_without_file(cli._earlier_students(out, meta), students, results, {})
    assert list(why) == ["s000"] and "以前评过" in why["s000"]


def test_nested_output_and_submission_folders_are_pointed_out(tmp_path):
    """以前只拒绝 --out 就是提交目录；放在里面（或反过来）时一声不响，助教的参考值和反馈就放进了收作业的目录"""
    subs = tmp_path / "subs"
    subs.mkdir()
    assert any("--out 在提交目录" in w for w in cli._check_submission_args([str(subs)], subs / "grades"))
    assert any("在 --out 里面" in w for w in cli._check_submission_args([str(subs)], tmp_path))
    assert not cli._check_submission_args([str(subs)], tmp_path / "grades")


def test_a_canvas_named_file_in_another_students_folder_is_pointed_out():
    """教师按学生分好的文件夹说了算；以前里面放着一个 Canvas 下载格式、写着另一个学生的用户号的文件时一声不响"""
    table = identify.Roster(
        [roster.Student("s001", "张三", 2, lms_id="111"), roster.Student("s002", "李四", 3, lms_id="222")]
    )
    ident = identify.identify(("s001", "lisi_222_9001_ch05_exercises.ipynb"), table, None, None)
    assert ident.sid == "s001" and any("s002" in n and "请助教核对" in n for n in ident.notes)
    mine = identify.identify(("s001", "zhangsan_111_9001_ch05_exercises.ipynb"), table, None, None)
    assert mine.sid == "s001" and not mine.notes


@pytest.mark.slow
def test_regrading_one_file_into_the_class_output_holds_the_rest(tmp_path, capsys):
    """整条命令：全班评过之后只给一个学生的文件、输出到同一个目录。以前别的学生在 canvas.csv 里是 0 分，
    stderr 说“它们的 0 份反馈移到了 stale-feedback/”（其实移了）"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 2)
    assert cli.main([str(own), *base]) == 0
    capsys.readouterr()
    assert cli.main([str(own / "s001" / "ch05_exercises.ipynb"), *base]) == 0
    err = capsys.readouterr().err
    assert "它们的 1 份反馈在 stale-feedback/" in err and (out / cli.STALE / "s000.md").is_file()
    canvas = (out / "canvas.csv").read_text(encoding="utf-8-sig").splitlines()
    assert any(line.endswith(",s000,,,") for line in canvas)
    assert "以前评过" in (out / "summary.md").read_text(encoding="utf-8")


def _feedback_scores(out: Path) -> dict[str, str]:
    """feedback/ 里每个学生的得分行"""
    return {
        p.stem: next(line for line in p.read_text(encoding="utf-8").splitlines() if line.startswith("- 得分："))
        for p in (out / "feedback").glob("*.md")
    }


def _result_scores(out: Path) -> dict[str, str]:
    """results/ 里每份结果应有的得分行"""
    got = {}
    for p in (out / "results").glob("*.json"):
        r = json.loads(p.read_text(encoding="utf-8"))
        got[p.stem] = f"- 得分：**{r['points']:g} / {r['max_points']:g}**"
    return got


def test_a_cached_result_follows_its_student_not_the_path_and_never_another_student():
    """只给一个文件时它的路径变了（ch05_exercises.ipynb，而不是 s001/ch05_exercises.ipynb）：同一个学生、同样的内容照样用缓存；
    另一个学生一模一样的副本、没有花名册时换了路径的、有身份问题的，都不用"""
    previous = {"roster_id": "s001", "file": "s001/ch05_exercises.ipynb", "sha256": "abc", "cache_key": "k",
                "status": status.GRADED, "how": identify.BY_FOLDER, "identity_conflict": False, "problems": []}  # fmt: skip
    moved = folder.Found(Path("x"), "ch05_exercises.ipynb", b"ch05_exercises.ipynb", b"x", "s001", roster_id="s001")
    moved.how = identify.BY_EMBEDDED_ID
    reused = cli._cached(previous, "abc", "k", moved)
    assert reused["file"] == "ch05_exercises.ipynb" and reused["how"] == identify.BY_EMBEDDED_ID
    assert previous["file"] == "s001/ch05_exercises.ipynb"  # 缓存里的那份不改
    assert cli._cached(previous, "abd", "k", moved) is None and cli._cached(previous, "abc", "j", moved) is None
    copy = folder.Found(Path("y"), "s002/ch05_exercises.ipynb", b"s002/ch05_exercises.ipynb", b"s002", "s002",
                        roster_id="s002")  # fmt: skip
    assert cli._cached(previous, "abc", "k", copy) is None
    loose = folder.Found(Path("x"), "ch05_exercises.ipynb", b"ch05_exercises.ipynb", b"x", "s001")
    assert cli._cached({**previous, "roster_id": None}, "abc", "k", loose) is None
    moved.notes = ["笔记本里写的是 s002"]
    assert cli._cached(previous, "abc", "k", moved) is None
    moved.notes = []
    assert cli._cached({**previous, "identity_conflict": True}, "abc", "k", moved) is None


@pytest.mark.slow
def test_a_full_rerun_after_a_partial_run_gives_everyone_feedback_again(tmp_path, capsys):
    """整条命令：全班评过，只给一个学生的文件重评（别的学生的反馈移到 stale-feedback/），再照样给全班的提交目录。
    以前第三次运行 rc 0、canvas.csv 里四个人都有分，feedback/ 里却只有重评的那一份（缓存的结果不重写反馈）"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 3)
    assert cli.main([str(own), *base]) == 0
    capsys.readouterr()
    assert cli.main([str(own / "s002" / "ch05_exercises.ipynb"), *base]) == 0
    assert "新评 0 份，跳过已评 1 份" in capsys.readouterr().err  # 换了给法的同一份文件用缓存（以前重评）
    assert sorted(p.stem for p in (out / cli.STALE).glob("*.md")) == ["s000", "s001"]
    capsys.readouterr()
    assert cli.main([str(own), *base]) == 0
    err = capsys.readouterr().err
    assert "评分完成" in err and "不在 feedback/ 里" not in err
    assert _feedback_scores(out) == _result_scores(out) and set(_feedback_scores(out)) == {"s000", "s001", "s002"}
    assert not list((out / cli.STALE).glob("*.md"))  # 过时的那份删掉了：同一个学生不会两边各有一份


@pytest.mark.slow
def test_an_interrupted_run_counts_only_graded_students_and_the_rerun_gives_everyone_feedback(
    tmp_path, capsys, monkeypatch
):
    """--force 重评时在第一份评完后中断（Ctrl-C），再正常运行一次。以前：中断的那次说“0 份上一次的反馈移到了 stale-feedback/”
    （其实移了 2 份），summary.md 把还没评的学生按 0 分算进平均分、中位数和分数分布；下一次运行之后，只有新评的学生有反馈"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 3)
    assert cli.main([str(own), *base]) == 0
    real = _stop_after_the_first_result(monkeypatch)
    capsys.readouterr()
    assert cli.main([str(own), *base, "--force"]) == 130
    err = capsys.readouterr().err
    assert "还没评完的 2 人（还有 2 份没评）；他们的 2 份反馈在 stale-feedback/ 里" in err
    assert len(list((out / "feedback").glob("*.md"))) == 1 and len(list((out / cli.STALE).glob("*.md"))) == 2
    summary = (out / "summary.md").read_text(encoding="utf-8")
    graded = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))["submissions"]
    (done,) = graded
    later = sorted({"s000", "s001", "s002"} - {done["roster_id"]})
    assert "## 还没有评（2 人" in summary and "、".join(f"`{s}`" for s in later) in summary
    assert f"- 平均分 {done['points']:.2f}，中位数 {done['points']:g}" in summary
    assert "还没有评的 2 人不算在内" in summary and "| 0%–10% |" not in summary
    assert "1 名学生" not in err and "还没有评 2 人" in err
    monkeypatch.setattr(cli, "grade_submission", real)
    capsys.readouterr()
    assert cli.main([str(own), *base]) == 0
    assert "跳过已评 3 份" in capsys.readouterr().err  # --force 没有删掉以前的结果：没变的都用缓存
    assert _feedback_scores(out) == _result_scores(out) and set(_feedback_scores(out)) == {"s000", "s001", "s002"}
    assert not list((out / cli.STALE).glob("*.md"))


@pytest.mark.slow
def test_a_hard_stop_leaves_no_importable_tables_that_look_current(tmp_path, capsys, monkeypatch):
    """第二次 Ctrl-C、终端关掉（SIGHUP）、被杀掉：评分器来不及重写汇总。以前上一次的 canvas.csv、grades_wide.csv、
    读来是“评完了”的 summary.md 和要重评的学生上一次的反馈都留在原处，看起来是这次的，而 results/ 只更新了一部分。
    现在写出第一份新结果之前就删掉两张表、summary.md 写成“评分中/未完成”、要重评的反馈移开"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 3)
    assert cli.main([str(own), *base]) == 0
    assert (out / "canvas.csv").is_file() and len(list((out / "feedback").glob("*.md"))) == 3
    real, calls, seen = cli.grade_submission, [], []

    def stop_hard(f, ctx):
        calls.append(f.sid)
        if len(calls) > 1:
            raise SystemExit(130)  # 就像第一份评完后的第二次 Ctrl-C（os._exit）
        seen.append(((out / "canvas.csv").exists(), (out / "grades_wide.csv").exists(),
                     (out / "summary.md").read_text(encoding="utf-8"),
                     sorted(p.stem for p in (out / "feedback").glob("*.md"))))  # fmt: skip
        return real(f, ctx)

    monkeypatch.setattr(cli, "grade_submission", stop_hard)
    with pytest.raises(SystemExit):
        cli.main([str(own), *base, "--force"])
    ((canvas, wide, summary, feedback),) = seen
    assert not canvas and not wide and cli.UNFINISHED in summary and feedback == []
    assert not (out / "canvas.csv").exists() and not (out / "grades_wide.csv").exists()
    assert cli.UNFINISHED in (out / "summary.md").read_text(encoding="utf-8")
    # feedback/ 里至多是这次评完的那一份（停下时它也许还没写出）
    assert {p.stem for p in (out / "feedback").glob("*.md")} <= {calls[0]}
    assert len(list((out / cli.STALE).glob("*.md"))) >= 2
    monkeypatch.setattr(cli, "grade_submission", real)
    capsys.readouterr()
    assert cli.main([str(own), *base]) == 0
    assert (out / "canvas.csv").is_file() and cli.UNFINISHED not in (out / "summary.md").read_text(encoding="utf-8")
    assert len(list((out / "feedback").glob("*.md"))) == 3 and not list((out / cli.STALE).glob("*.md"))


def test_a_closed_terminal_stops_the_grader_like_the_first_ctrl_c():
    """SIGHUP（终端关掉、SSH 断了）与第一次 Ctrl-C 一样：不再启动新的沙箱，保存已评的结果（以前进程直接死掉）"""
    with cli._Interrupts() as interrupts:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            assert signal.getsignal(sig) is interrupts
        interrupts(signal.SIGHUP, None)
        assert interrupts.stop.is_set()
        interrupts.count = 0  # 退出时照常换回原来的处理器


@pytest.mark.slow
def test_a_parallel_timeout_not_yet_regraded_alone_is_not_final_after_an_interrupt(tmp_path, capsys, monkeypatch):
    """-j 2：s000 与别的提交同时评时超时，评分器本要等别的评完再单独重评它，可这次被中断了。以前：这个超时当成定论，
    算进平均分和分数分布，反馈放进 feedback/。现在它与名下还有文件没评的学生一样“还没有评”，反馈在 stale-feedback/"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 3)
    base += ["-j", "2"]
    real, lock, done = cli.grade_submission, threading.Lock(), []

    def timeout_then_stop(f, ctx):
        if ctx.stop.is_set() or f.sid == "s002":
            raise cli.Interrupted()  # s002 还没评就被中断了
        res = real(f, ctx)
        if f.sid == "s000":
            res = {**res, "status": status.TIMEOUT, "message": "超过了墙钟时间上限"}
        with lock:
            done.append(f.sid)
            if len(done) == 2:
                ctx.stop.set()  # 两份都评完时按了 Ctrl-C：单独重评 s000 之前
        return res

    monkeypatch.setattr(cli, "grade_submission", timeout_then_stop)
    assert cli.main([str(own), *base]) == 130
    err = capsys.readouterr().err
    assert sorted(done) == ["s000", "s001"]
    s001 = json.loads((out / "results" / "s001.json").read_text(encoding="utf-8"))["points"]
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "## 还没有评（2 人" in summary and "`s000`" in summary.split("## 还没有评")[1]
    assert f"- 平均分 {s001:.2f}，中位数 {s001:g}" in summary and "还没有评的 2 人不算在内" in summary
    assert not (out / "feedback" / "s000.md").exists() and (out / cli.STALE / "s000.md").is_file()
    assert (out / "feedback" / "s001.md").is_file()
    assert "还没评完的 2 人（还有 2 份没评）" in err
    book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))["submissions"]
    assert not [r for r in book if r.get("roster_id") == "s000" and r.get("counted")]


@pytest.mark.slow
def test_a_grader_error_or_a_crash_holds_the_student_instead_of_zero(tmp_path, capsys, monkeypatch):
    """计入成绩的那一份评分器出错（grader-error）或评分进程崩溃（crashed）：以前 canvas.csv 里是 0 分（只要不是全班都这样）；
    这个 0 不是评出来的：待核对，canvas.csv 与 grades_wide.csv 里空着，不算进平均分"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 3)
    real = cli.grade_submission

    def broken(f, ctx):
        if f.sid == "s000":
            raise RuntimeError("评分器自己的错")
        res = real(f, ctx)
        if f.sid == "s001":
            res = {**res, "status": status.CRASHED, "message": "评分进程没有给出报告", "points": 0.0}
        return res

    monkeypatch.setattr(cli, "grade_submission", broken)
    assert cli.main([str(own), *base]) == 0
    canvas = {row[2]: row[5] for row in csv.reader(io.StringIO((out / "canvas.csv").read_text(encoding="utf-8-sig")))}
    s002 = json.loads((out / "results" / "s002.json").read_text(encoding="utf-8"))["points"]
    assert canvas["s000"] == "" and canvas["s001"] == "" and float(canvas["s002"]) == s002
    summary = (out / "summary.md").read_text(encoding="utf-8")
    held = summary.split("## 待核对")[1]
    assert "`s000`：待核对：评分器出错" in held and "`s001`：待核对：评分进程崩溃" in held
    assert f"- 平均分 {s002:.2f}" in summary and "待核对的 2 人不算在内" in summary


@pytest.mark.slow
def test_a_student_with_a_file_still_pending_is_not_graded_yet_after_an_interrupt(tmp_path, capsys, monkeypatch):
    """s001 交了两份（先评的是空白的 a.ipynb），评完第一份时中断。以前：他按空白那份的 0 分算进平均分、中位数和分数分布，
    不在“还没有评”里；空白那份的反馈留在 feedback/ 里，当成这次的；还说他没有反馈文件是因为“写反馈失败”（没有失败过）"""
    roster_path, secret, own, out, base = _class_run(tmp_path, 3)
    assert cli.main([str(own), *base]) == 0
    shutil.copy(tmp_path / "assigned" / "s001" / "ch05_exercises.ipynb", own / "s001" / "a.ipynb")
    real = _stop_after_the_first_result(monkeypatch)
    capsys.readouterr()
    assert cli.main([str(own), *base]) == 130
    err = capsys.readouterr().err
    results = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (out / "results").glob("*.json")}
    (blank,) = [r for s, r in results.items() if s.startswith("s001~")]
    assert blank["file"] == "s001/a.ipynb" and blank["points"] == 0
    others = [results["s000"]["points"], results["s002"]["points"]]
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "## 还没有评（1 人" in summary and "`s001`" in summary.split("## 还没有评")[1]
    assert f"- 平均分 {sum(others) / 2:.2f}" in summary and "还没有评的 1 人不算在内" in summary
    assert "| 0%–10% |" not in summary and "计入成绩的 2 份" in summary
    assert f"平均分 {sum(others) / 2:.2f}" in err and "还没有评 1 人" in err
    assert not list((out / "feedback").glob("s001*.md"))  # 空白那份的反馈不当成这次的
    assert (out / cli.STALE / f"{blank['student']}.md").is_file()
    assert "写反馈失败" not in err and "没有反馈文件" not in err
    assert "还没评完的 1 人（还有 1 份没评）；他们的 2 份反馈在 stale-feedback/ 里" in err
    book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))["submissions"]
    assert not [r for r in book if r.get("roster_id") == "s001" and r.get("counted")]
    monkeypatch.setattr(cli, "grade_submission", real)
    capsys.readouterr()
    assert cli.main([str(own), *base]) == 0
    assert "跳过已评 3 份" in capsys.readouterr().err
    scores = _feedback_scores(out)
    solved = json.loads((out / "results" / "s000.json").read_text(encoding="utf-8"))["max_points"]
    assert scores["s001"] == f"- 得分：**{solved:g} / {solved:g}**"
    assert scores[blank["student"]] == f"- 得分：**0 / {solved:g}**"
    assert not list((out / cli.STALE).glob("s001*.md"))


def _no_results_for(found, *missing: str) -> dict:
    """prepare 之后、不进沙箱：假装找到的文件都评了（同一个学生的算一份）"""
    return {
        f.sid: {"student": f.sid, "roster_id": f.roster_id, "points": 1.0, "counted": True, "file": f.rel}
        for f in found.found
        if f.roster_id not in missing
    }


def test_a_file_that_is_not_a_notebook_holds_its_owner_instead_of_zero(tmp_path):
    """以前：s001 的文件夹里只有 ch05_exercises.md（jupytext 配对的 Markdown）、.zip 或符号链接时，他是“没有提交”、canvas.csv 里 0 分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    (own / "s001" / "ch05_exercises.ipynb").rename(own / "s001" / "ch05_exercises.md")
    (own / "s002" / "ch05_exercises.ipynb").rename(own / "s002" / "ch05_exercises.ipynb.json")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert sorted(found.owned_ignored) == ["s001", "s002"] and "不是 .ipynb" in found.owned_ignored["s001"]
    doubts = {"owned_ignored": found.owned_ignored, "unidentified": found.unidentified, "partial": found.partial}
    why = cli._held_without_file({}, roster.read(roster_path), _no_results_for(found), doubts)
    assert sorted(why) == ["s001", "s002"] and "交了文件但没有评" in why["s001"]


def test_a_notebook_nobody_can_be_matched_to_holds_the_students_without_a_file(tmp_path):
    """以前：王五把答案贴进一个新笔记本（没有 shardlab 元数据），起名“王五作业.ipynb”：认不出是谁的，他“没有提交”、0 分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    real = json.loads((own / "s002" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    shutil.rmtree(own / "s002")
    (own / "王五作业.ipynb").write_text(json.dumps(_unsigned(real)), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert found.unidentified == ["王五作业.ipynb"]
    doubts = {"unidentified": found.unidentified}
    why = cli._held_without_file({}, roster.read(roster_path), _no_results_for(found), doubts)
    assert list(why) == ["s002"] and "认不出是谁交的" in why["s002"]


def test_one_students_folder_given_as_the_submissions_is_a_partial_run(tmp_path, capsys):
    """以前：重评一个学生时给的是他的文件夹 subs/s000、输出到新目录，别的学生在 canvas.csv 里都是 0 分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    args, found = _prepare(
        tmp_path, own / "s000", "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret)
    )
    assert "学生的文件夹" in found.partial
    why = cli._held_without_file({}, roster.read(roster_path), _no_results_for(found), {"partial": found.partial})
    assert sorted(why) == ["s001", "s002"] and all("不是整个提交目录" in w for w in why.values())
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert found.partial == "" and not found.unidentified and not found.owned_ignored
    # 提醒只在评分开始时打印一次（以前 prepare 里也打印：“在 --out 里面”出现两次）
    capsys.readouterr()
    cli.prepare(cli.build_parser().parse_args([str(own), "--out", str(own / "grades"), "--course", str(ROOT),
                                               "--sandbox", "rlimit", "--chapter", "5", "--roster", str(roster_path),
                                               "--secret-file", str(secret)]))  # fmt: skip
    assert "--out 在提交目录" not in capsys.readouterr().err


def test_one_students_folder_is_identified_by_its_own_name(tmp_path):
    """以前：给的是 subs/s001 本身时路径从文件夹里面算起，文件夹名不算数：里面没有签名的“作业.ipynb”认不出是谁，整次运行被拒绝"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    real = json.loads((own / "s001" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    (own / "s001" / "ch05_exercises.ipynb").unlink()
    (own / "s001" / "作业.ipynb").write_text(json.dumps(_unsigned(real)), encoding="utf-8")
    args, found = _prepare(
        tmp_path, own / "s001", "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret)
    )
    assert [(f.roster_id, f.how, f.rel) for f in found.found] == [("s001", identify.BY_FOLDER, "s001/作业.ipynb")]
    assert "学生的文件夹" in found.partial and not found.unidentified  # 别的学生照旧待核对，不是 0 分
    why = cli._held_without_file({}, roster.read(roster_path), _no_results_for(found), {"partial": found.partial})
    assert sorted(why) == ["s000", "s002"]


def test_limits_must_be_positive_and_out_must_be_a_folder(tmp_path):
    """以前：--wall 0、--cell-timeout 0、-j 0 照样评（全班超时、canvas.csv 里 0 分，退出码 0）；--out 是文件时是 Python 的 traceback"""
    parser = cli.build_parser()
    for bad in (["--wall", "0"], ["--cell-timeout", "-5"], ["-j", "0"], ["--memory-mb", "0"], ["--wall", "nan"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["subs", "--out", "o", *bad])
    assert parser.parse_args(["subs", "--out", "o", "--wall", "30"]).wall == 30.0
    afile = tmp_path / "roster.csv"
    afile.write_text("id,name\n", encoding="utf-8")
    with pytest.raises(cli.UsageError, match="是一个文件，不是目录"):
        cli._check_out(afile, 5)
    assert gradescope.main(["--secret-file", "s", "--roster", "r", "--chapter", "5", "--out", str(tmp_path)]) == 2


def test_files_that_cannot_be_graded_hold_their_owner(tmp_path):
    """以前：解压多了一层（s001/ch05_lisi/x.ipynb）、名字像笔记本的目录或 FIFO、太大的或别的章的笔记本：都是“没有提交”或 0 分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 4, "ch05", published=False)
    (own / "s001" / "deeper").mkdir()
    (own / "s001" / "ch05_exercises.ipynb").rename(own / "s001" / "deeper" / "ch05_exercises.ipynb")
    (own / "s002" / "ch05_exercises.ipynb").rename(own / "s002" / "keep.json")
    (own / "s002" / "ch05_exercises.ipynb").mkdir()
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert sorted(found.owned_ignored) == ["s001", "s002"] and "目录太深" in found.owned_ignored["s001"]
    results = [
        {"student": "s000", "roster_id": "s000", "counted": True, "status": status.TOO_LARGE, "points": 0.0},
        {"student": "s003", "roster_id": "s003", "counted": True, "status": status.OTHER_CHAPTER, "points": 0.0},
        {"student": "s009", "roster_id": "s009", "counted": True, "status": status.GRADED, "points": 0.0},
    ]
    held = cli._held_unreadable(results)
    assert sorted(held) == ["s000", "s003"] and "文件太大" in held["s000"]


def test_a_run_that_finds_few_of_the_class_is_partial(tmp_path):
    """以前：重评一个学生时把他的文件单独放进一个随便起名的目录，别的学生在 canvas.csv 里都是 0 分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 4, "ch05", published=False)
    lone = tmp_path / "regrade"
    lone.mkdir()
    shutil.copy(own / "s002" / "ch05_exercises.ipynb", lone / "s002_ch05.ipynb")
    args, found = _prepare(tmp_path, lone, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert "1 / 4" in found.partial


def test_canvas_names_with_digits_are_matched_by_the_user_number():
    """以前：Canvas 文件名的姓名部分有数字（wangwu2_…）时不当成 Canvas 的名字，按学生自己起的文件名 2024001 认人"""
    table = identify.Roster(
        [roster.Student("2024001", "张三", 2, lms_id="13579"), roster.Student("2024003", "王五", 3, lms_id="11111")]
    )
    ident = identify.identify(("wangwu2_11111_88003_2024001.ipynb",), table, None, None)
    assert ident.sid == "2024003"
    with pytest.raises(roster.RosterError, match="Excel"):
        roster.parse("id,name,lms_id\ns1,甲,13579.0\n")


def test_students_without_a_file_are_blank_unless_the_class_is_confirmed_whole():
    """以前：只给迟交的一个文件夹（半个班）输出到新目录，按时交了的学生在 canvas.csv 里是 0 分。评分器分不出这种情形，
    所以没有文件的学生默认空着；教师确认给的是全班的提交（--zero-missing）才记 0 分"""
    res = {"student": "s1", "roster_id": "s1", "points": 3.0, "counted": True, "problems": []}
    _, table = outputs.rows([res], STUDENTS[:2], 5)
    assert table[1]["status"] == outputs.NO_SUBMISSION and table[1]["blank"]
    assert outputs.canvas_csv(table, "c").splitlines()[-1].endswith(",s2,,,")
    pids, _ = outputs.rows([res], STUDENTS[:2], 5)
    assert "s2,学生2," + "," * len(pids) + ",17,没有提交," in outputs.wide_csv(pids, table)
    text = outputs.summary(table, [res], [], None)
    assert "--zero-missing" in text and "平均分 3.00" in text
    _, confirmed = outputs.rows([res], STUDENTS[:2], 5, zero_missing=True)
    assert outputs.canvas_csv(confirmed, "c").splitlines()[-1].endswith(",s2,,,0")
    assert "按 0 分算" in outputs.summary(confirmed, [res], [], None)


def test_widespread_timeouts_withhold_the_importable_tables():
    """以前：--cell-timeout 0.0001 时 17 分的笔记本 0 分，只因为有一份评到了一半，canvas.csv 照样写出"""
    slow = {"status": status.GRADED, "points": 0.0, "problems": [{"status": status.TIMEOUT}]}
    ok = {"status": status.GRADED, "points": 1.0, "problems": [{"status": status.CORRECT}]}
    assert "超时" in cli._withheld({"a": slow, "b": slow, "c": ok}, True)
    assert "超时" in cli._withheld({"a": slow, "b": slow, "c": ok, "d": ok}, True)  # 正好一半（以前放过）
    assert cli._withheld({"a": slow, "b": ok, "c": ok}, True) is None
    assert cli._withheld({"a": slow, "b": slow, "c": ok}, False) is None  # 这次什么也没评：都是缓存
    assert "崩溃" in cli._withheld({"a": {"status": status.CRASHED}, "b": {"status": status.TIMEOUT}}, True)
    # 按学生数：一个学生的四份笔记本都超时（sleep），另外三名学生好好的，成绩表照写（以前按份数算，全班都没有）
    mine = {f"s4~{i}": slow for i in range(4)}
    others = {f"s{i}": ok for i in range(1, 4)}
    owner = {sid: ("roster", sid.split("~")[0]) for sid in mine | others}  # per_student.student_of 给出的学生
    assert cli._withheld(mine | others, True, owner) is None
    assert "超时" in cli._withheld(mine | others, True)  # 每份算一个人时（以前的算法）四份超时就过半


def test_feedback_of_a_crash_says_held_not_zero():
    """评分进程崩溃的结果在成绩表里是“待核对”，反馈以前却写“得分：0 / 17”"""
    base = {"student": "s1", "file": "s1/a.ipynb", "points": 0.0, "max_points": 17.0, "problems": [], "message": "x"}
    for broken in (status.CRASHED, status.GRADER_ERROR):
        text = report.feedback_markdown({**base, "status": broken})
        assert "待核对" in text and "0 / 17" not in text
    assert "0 / 17" in report.feedback_markdown({**base, "status": status.GRADED})


def test_personal_solutions_and_the_public_exercise_hold_the_student(tmp_path):
    """以前：学生交回自己的个人版解答（kind: solutions）被扔掉，他 0 分；用书上的参数做了网站上的公开练习的学生，
    ta/integrity.md 说他抄了书，canvas.csv 里是 3 分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 4, "ch05", published=False)
    sol = json.loads((tmp_path / "assigned" / "s001" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    sol["metadata"]["shardlab"]["kind"] = "solutions"
    (own / "s001" / "ch05_exercises.ipynb").write_text(json.dumps(sol), encoding="utf-8")
    shutil.copy(ROOT / "exercises" / "ch05_exercises.ipynb", own / "s002" / "ch05_exercises.ipynb")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret),
                           "--allow-blank")  # fmt: skip
    assert "s001" in found.owned_ignored and "参考答案" in found.owned_ignored["s001"]
    book = "s002/ch05_exercises.ipynb"
    assert found.book_params == [book]
    results = [{"roster_id": "s002", "counted": True, "file": book}, {"roster_id": "s003", "counted": True, "file": "x"},
               {"roster_id": "s001", "counted": True, "file": "s001/own.ipynb"}]  # fmt: skip
    assert list(cli._held_book_params(results, found.book_params)) == ["s002"]  # 只看计入成绩的那一份
    report = integrity.Report([integrity.Finding("s002", book, integrity.PUBLISHED, ["a"] * 9, 9, 9, 0.1, 1e-9, True),
                               integrity.Finding("s002", book, "s003", ["a"] * 9, 9, 9, 0.1, 1e-9, True)])  # fmt: skip
    cli._not_copying_the_book(report, found.book_params)
    assert [f.source for f in report.flagged] == ["s003"]  # 照抄同学的照样列出


def test_book_parameters_pasted_into_a_signed_personal_notebook_are_graded_not_held(tmp_path):
    """以前：把书上的参数单元贴进自己的（签了名的）个人版，就算成“交的是公开练习”，成绩待核对、让他重做，而不是按发给他的数评分"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    public = json.loads((ROOT / "exercises" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    book_cells = iter([c for c in public["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])])
    mine = json.loads((own / "s002" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    mine["cells"] = [next(book_cells) if "parameters" in c.get("metadata", {}).get("tags", []) else c
                     for c in mine["cells"]]  # fmt: skip
    (own / "s002" / "ch05_exercises.ipynb").write_text(json.dumps(mine), encoding="utf-8")
    shutil.copy(ROOT / "exercises" / "ch05_exercises.ipynb", own / "s001" / "ch05_exercises.ipynb")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret),
                           "--allow-blank")  # fmt: skip
    assert found.book_params == ["s001/ch05_exercises.ipynb"]  # 没有签名的公开练习照旧待核对
    edited = next(f for f in found.found if f.roster_id == "s002")
    assert edited.written_params == problems.published("ch05") and edited.peek.tag
    assert args.personal.key.params["s002"]["ch05"] != problems.published("ch05")  # 按签名的、发给他的数评分


def test_one_stray_notebook_of_another_chapter_does_not_let_a_wrong_chapter_through(tmp_path):
    """以前：第 5 章的作业里混进一份第 6 章的笔记本，--chapter 6 的笔误就评下去了，全班都成了“别的章的练习”"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 4, "ch05", published=False)
    shutil.copy(ROOT / "exercises" / "ch06_exercises.ipynb", own / "s003" / "hw6.ipynb")
    with pytest.raises(cli.UsageError, match="只有 1 名学生交了第 6 章的练习，3 名交的是别的章"):
        _prepare(tmp_path, own, "--chapter", "6", "--roster", str(roster_path), "--secret-file", str(secret))
    _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))


def test_r19_limits_globs_and_the_terminal_summary(tmp_path, capsys):
    """以前：--cell-timeout 1e9 在 nbval 里溢出，每道题都“没有导出”，全班 0 分、退出码 0；加了引号的通配符只选了一部分学生，
    加 --zero-missing 时没选上的学生记 0 分；终端上的平均分把空着与待核对的人算成 0"""
    parser = cli.build_parser()
    for bad in (["--cell-timeout", "1e9"], ["--wall", "2200000"], ["--wall", "3"], ["--cell-timeout", "0.001"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["subs", "--out", "o", *bad])
    with pytest.raises(SystemExit):
        parser.parse_args(["subs", "--out", "o", "--memory-mb", "1e12"])
    assert "不是整数" in capsys.readouterr().err
    zero = {"status": status.GRADED, "points": 0.0, "problems": [{"status": status.ERROR}] * 3}
    assert "出错、超时或没有导出" in cli._withheld(
        {"a": zero, "b": zero}, True
    )  # 以前：--memory-mb 600 时设置单元失败，全班 0 分
    wrong = {**zero, "problems": [{"status": status.WRONG}] + [{"status": status.ERROR}] * 2}
    assert cli._withheld({"a": zero, "b": wrong}, True) is None  # 有一道题真的判了：不是环境的问题
    silent = {"status": status.GRADED, "problems": [{"status": status.NO_EXPORT}] * 3}
    assert "没有导出" in cli._withheld({"a": silent, "b": silent}, True)
    table = identify.Roster([roster.Student("s001", "甲", 2)])
    assert "通配符" in cli._partial([str(tmp_path / "subs" / "s00[1]" / "*.ipynb")], table)
    res = {"student": "s1", "roster_id": "s1", "points": 3.0, "counted": True, "problems": []}
    _, rows = outputs.rows([res], STUDENTS[:3], 5, held={"s3": "待核对：测试"})
    line = outputs.console_summary(rows, [], None)
    assert "平均分 3.00" in line and "待核对 1 人" in line and "没有提交 1 人" in line


def _stop_after_the_first_result(monkeypatch):
    """第一份评完时就像按了 Ctrl-C：之后的提交都不评；返回原来的 grade_submission（接着评时换回去）"""
    real = cli.grade_submission

    def stop_after_one(f, ctx):
        if ctx.stop.is_set():
            raise cli.Interrupted()
        res = real(f, ctx)
        ctx.stop.set()
        return res

    monkeypatch.setattr(cli, "grade_submission", stop_after_one)
    return real


def _class_run(tmp_path: Path, n: int):
    """n 个学生的第 5 章个人版（assign_bench.make_class）与评分命令的公共参数（输出到 tmp_path/out，rlimit 隔离）：
    返回 (花名册, 密钥, 学生的提交目录, 输出目录, 参数)"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, n, "ch05", published=False)
    out = tmp_path / "out"
    base = ["--out", str(out), "--course", str(ROOT), "--roster", str(roster_path), "--secret-file", str(secret),
            "--chapter", "5", "--no-progress", "--sandbox", "rlimit"]  # fmt: skip
    return roster_path, secret, own, out, base


def _forged_book_notebook(secret: bytes, sid: str) -> dict:
    """公开的练习（书上的参数），元数据里却带着用密钥为 sid 签的书上参数：拿到（猜出）密钥的人才写得出"""
    nb = json.loads((ROOT / "exercises" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    book = problems.published("ch05")
    nb["metadata"]["shardlab"] = {"assignment": "ch05", "kind": "exercises", "student": sid,
                                  "tag": variants.sign(secret, "ch05", sid, book)}  # fmt: skip
    return nb


def test_a_signature_on_the_books_parameters_is_not_honoured(tmp_path):
    """以前：猜出口令式密钥的学生给书上的参数签名、照抄公开的解答，按“花名册改过”的规则按书上的参数评分，满分且不用核对。
    个人版从不发书上的参数：现在按推出的参数评分，提交算作公开的练习（待核对），并提醒教师换密钥"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    forged = _forged_book_notebook(secret.read_bytes(), "s001")
    (own / "s001" / "ch05_exercises.ipynb").write_text(json.dumps(forged), encoding="utf-8")
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    key = args.personal.key
    assert key.params["s001"]["ch05"] != problems.published("ch05")  # 没有按签名改成书上的参数
    assert any("s001" in n and "密钥可能泄露" in n for n in args.roster_notes)
    assert found.book_params == ["s001/ch05_exercises.ipynb"]  # 算作交了公开的练习：待核对
    # 签名对得上别的参数（花名册后来改过）照样按笔记本里的数评分：只拦书上的参数
    drawn = variants.for_student(secret.read_bytes(), "ch05", "s001", 7)
    assert drawn != key.params["s001"]["ch05"]
    f = _found("s001", "s001.ipynb", 5, drawn, variants.sign(secret.read_bytes(), "ch05", "s001", drawn))
    key2 = personal.PersonalKey.build(_published_key(), roster.read(roster_path), secret.read_bytes(), ("ch05",))
    assert personal.reconcile([f], key2, "ch05")[0] is None and key2.params["s001"]["ch05"] == drawn


def test_a_canvas_shaped_loose_file_signed_for_someone_else_holds_the_named_student(tmp_path):
    """以前：自己收的目录里，一个起成 Canvas 格式的文件（用户号是 s002 的）装着发给 s000 的个人版，算到 s002 头上，
    s002 没交别的时按他的参数评出 0 分、作为“已评分”导出。现在不评这份，s002 待核对，原因写明签名是谁的"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    roster_path.write_text(roster_path.read_text(encoding="utf-8").replace("id,name\n", "id,name,lms_id\n", 1)
                           .replace("s000,学生0", "s000,学生0,11111").replace("s001,学生1", "s001,学生1,22222")
                           .replace("s002,学生2", "s002,学生2,13579"), encoding="utf-8")  # fmt: skip
    shutil.copy(own / "s000" / "ch05_exercises.ipynb", own / "s000_13579_99_ch05.ipynb")
    shutil.rmtree(own / "s002")
    # s001 自己的文件换成带时间戳的散放文件：像 Canvas 的名字，用户号却不在花名册里
    shutil.move(own / "s001" / "ch05_exercises.ipynb", own / "s001_20260301_1200_ch05.ipynb")
    (own / "s001").rmdir()
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert {f.roster_id for f in found.found} == {"s000"}
    ignored = {i["file"]: i["reason"] for i in found.ignored}
    assert "发给 s000 的个人版" in ignored["s000_13579_99_ch05.ipynb"]
    assert "s002" in found.owned_ignored  # 他的成绩待核对，不是按别人的笔记本评出的 0 分
    assert "请把它放进 s001/ 文件夹" in ignored["s001_20260301_1200_ch05.ipynb"]  # 以前只说“不是这个班的学生交的？”


def test_a_readable_or_text_secret_is_warned_about(tmp_path, capsys):
    text = tmp_path / "pass.key"
    text.write_text("CS329-Spring-2026-secret\n", encoding="utf-8")
    text.chmod(0o600)
    assert variants.read_secret(text)  # 能用（不拦），但要警告
    (warning,) = variants.secret_warnings(text)
    assert "可读的文字" in warning
    hexkey = tmp_path / "hex.key"
    hexkey.write_text(os.urandom(16).hex(), encoding="utf-8")
    hexkey.chmod(0o600)
    with_newline = tmp_path / "hex-nl.key"  # openssl rand -hex 16 > key 写的：末尾的换行是密钥的一部分，
    with_newline.write_bytes(hexkey.read_bytes() + b"\n")  # 用它发过的个人版，换行去掉了就验证不了
    assert variants.read_secret(with_newline) == hexkey.read_bytes() + b"\n"
    binary = tmp_path / "bin.key"  # 二进制密钥末尾的 0x0a 是密钥的一部分
    binary.write_bytes(bytes(range(200, 232)) + b"\n")
    assert variants.read_secret(binary).endswith(b"\n")
    assert variants.secret_warnings(hexkey) == []  # openssl rand -hex 16：随机的
    made = variants.new_secret(tmp_path / "new.key")
    assert variants.secret_warnings(made) == []
    made.chmod(0o644)
    (warning,) = variants.secret_warnings(made)
    assert "权限（permissions）是 0644" in warning
    roster_path = tmp_path / "roster.csv"
    roster_path.write_text("id,name\ns1,甲\n", encoding="utf-8")
    import shardlab.assign.cli

    assert shardlab.assign.cli.main([str(roster_path), "--secret-file", str(text), "--out", str(tmp_path / "pv")]) == 0
    assert "警告：" in capsys.readouterr().err
    # 参数顺序反了：密钥当成了花名册
    assert shardlab.assign.cli.main([str(made), "--secret-file", str(roster_path), "--out", str(tmp_path / "pv2")]) == 2
    assert "参数顺序反了" in capsys.readouterr().err


def test_a_text_key_whose_newline_an_editor_removed_is_named_as_the_likely_cause(tmp_path, capsys, monkeypatch):
    """用 openssl rand -hex 16 > key 写的密钥（末尾有换行）发了个人版，后来编辑器存盘去掉了换行：密钥就不对了。
    评分器不替教师猜（去掉换行会让用带换行的密钥发过的个人版全对不上），但在“密钥不对”里说出这个可能"""
    hexkey = os.urandom(16).hex().encode() + b"\n"

    def text_key(path):
        Path(path).write_bytes(hexkey)
        Path(path).chmod(0o600)
        return Path(path)

    monkeypatch.setattr(variants, "new_secret", text_key)
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    args, found = _prepare(tmp_path, own, "--chapter", "5", "--roster", str(roster_path), "--secret-file", str(secret))
    assert len(found.found) == 3  # 带换行的原样：签名都对得上
    secret.write_bytes(hexkey.rstrip(b"\n"))  # 编辑器存了一次盘
    args = [str(own), "--out", str(tmp_path / "out"), "--course", str(ROOT), "--roster", str(roster_path),
            "--secret-file", str(secret), "--chapter", "5", "--no-progress", "--sandbox", "rlimit"]  # fmt: skip
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "密钥不对" in err and "末尾没有换行" in err and "编辑器存过盘" in err
    assert not (tmp_path / "out").exists()


def test_a_copy_signed_for_a_classmate_proves_the_key_in_a_late_batch(tmp_path):
    """以前：只评迟交的一份，它是同学的个人版（元数据改成自己的 id）：签名对得上同学，却被当成“密钥不对？”，什么也没写"""
    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    nb = json.loads((own / "s001" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    nb["metadata"]["shardlab"]["student"] = "s002"
    late = tmp_path / "late"
    (late / "s002").mkdir(parents=True)
    (late / "s002" / "ch05_exercises.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    args, found = _prepare(tmp_path, late / "s002", "--chapter", "5", "--roster", str(roster_path),
                           "--secret-file", str(secret))  # fmt: skip
    assert [f.roster_id for f in found.found] == ["s002"]


def test_one_old_notebook_that_verifies_does_not_prove_a_wrong_key():
    """以前：用上学期的密钥评这学期的班，只要有一份旧个人版对得上，别的学生的签名全对不上也照样评，错分导出到 canvas.csv"""
    old = b"o" * 32
    key = personal.PersonalKey.build(_published_key(), STUDENTS[:4], old, ("ch05",))
    drawn, tags = _issued(STUDENTS[:4])  # 这学期的密钥（SECRET）发的个人版
    old_drawn = variants.for_class(old, "ch05", [STUDENTS[0].id])[STUDENTS[0].id]
    found = [_found(STUDENTS[0].id, "a.ipynb", 5, old_drawn, variants.sign(old, "ch05", STUDENTS[0].id, old_drawn))]
    found += [_found(s.id, f"{s.id}.ipynb", 5, drawn[s.id], tags[s.id]) for s in STUDENTS[1:4]]
    with pytest.raises(personal.KeyDisproved):
        personal.reconcile(found, key, "ch05")
