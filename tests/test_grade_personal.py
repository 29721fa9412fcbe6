"""按个人版评分：提交认人、每个学生自己的答案表、抄来的答案、确定的隐藏输入、教师用的汇总"""

import csv
import io
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from shardlab import answers, roster, variants
from shardlab.grade import folder, judge, outputs, personal, report, status
from shardlab.grade.key import AnswerKey, registry_key

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import assign_bench  # noqa: E402

SECRET = b"instructor secret"
STUDENTS = [roster.Student("s1", "张三", 2), roster.Student("s2", "李四", 3), roster.Student("s3", "王五", 4)]


def _published_key() -> AnswerKey:
    return AnswerKey.from_entries(registry_key())


@pytest.fixture(scope="module")
def key():
    return personal.PersonalKey.build(_published_key(), STUDENTS, SECRET)


@pytest.mark.parametrize(
    ("rel", "sid"),
    [
        ("s1/ch05_exercises.ipynb", "s1"),
        ("s2_ch05.ipynb", "s2"),
        ("s3.ipynb", "s3"),
        ("s1x_ch05.ipynb", None),
        ("zz/ch05.ipynb", None),
        ("S1_ch05.ipynb", None),
    ],
)
def test_submissions_map_to_roster_ids_by_folder_or_prefix(tmp_path, rel, sid):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text("{}", encoding="utf-8")
    found = folder.scan([str(tmp_path)])
    got = personal.map_to_roster(found, {"s1", "s2", "s3"})
    if sid is None:
        assert got == {} and not found.found
        assert any("花名册" in i["reason"] for i in found.ignored), found.ignored
    else:
        assert got == {sid: sid} and found.found[0].sid == sid


def test_ambiguous_prefix_is_reported_not_guessed():
    got = personal.match("a_b_hw", False, "a_b_hw.ipynb", {"a", "a_b"})
    assert got.sid is None and "不止一个" in got.reason


def test_unknown_duplicate_and_non_notebook_files_are_listed_as_ignored(tmp_path):
    for rel in ("s1/ch05_exercises.ipynb", "s2_ch05.ipynb", "s2/ch05.ipynb", "nobody_ch05.ipynb", "notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}", encoding="utf-8")
    found = folder.scan([str(tmp_path)])
    assert personal.map_to_roster(found, {"s1", "s2", "s3"}) == {"s1": "s1"}
    reasons = {Path(i["file"]).name: i["reason"] for i in found.ignored}
    assert "花名册" in reasons["nobody_ch05.ipynb"] and "不是 .ipynb" in reasons["notes.txt"]
    assert "2 份提交" in reasons["s2_ch05.ipynb"] and "2 份提交" in reasons["ch05.ipynb"]


def test_each_student_is_judged_against_their_own_variant(key):
    spec = answers.get("ch05-p1c")
    mine = {s.id: spec.value(variants.for_student(SECRET, "ch05", s.id)) for s in STUDENTS}
    for s in STUDENTS:
        entry = key.entry(spec.id, s.id)
        assert entry["value"] == mine[s.id]
        assert judge.judge_record(spec, {"value": mine[s.id]}, key, [], s.id).status == status.CORRECT
    v = judge.judge_record(spec, {"value": spec.value()}, key, [], "s1")
    assert v.status == status.COPIED_PUBLISHED and repr(mine["s1"]) not in v.message
    others = [x for x in ("s2", "s3") if abs(mine[x] / mine["s1"] - 1) > 0.05]
    assert others, "三个学生的 p1c 全相同：换一个密钥"
    assert judge.judge_record(spec, {"value": mine[others[0]]}, key, [], "s1").status == status.OTHER_VARIANT
    assert judge.judge_record(spec, {"value": mine["s1"] * 3.7}, key, [], "s1").status == status.WRONG
    assert key.entry(spec.id, "nobody") is None


def test_slip_hints_use_the_students_parameters(key):
    spec = answers.get("ch05-p1a")  # “V 用了整个数组”差 |Y| 倍；“线”差 2(N-1)/N 倍，N = 学生的 |X|
    params = variants.for_student(SECRET, "ch05", "s2")
    x = params["mesh"]["X"]
    right = spec.value(params)
    v = judge.judge_record(spec, {"value": right * 2 * (x - 1) / x}, key, [], "s2")
    assert v.status == status.WRONG and "wraparound" in v.message


def test_invariant_answers_have_no_impostors(key):
    assert key.entry("ch05-p3-uni", "s1")["impostors"] == []
    assert judge.judge_record(answers.get("ch05-p3-uni"), {"value": 0.5}, key, [], "s1").ok


def test_key_fingerprint_depends_on_the_secret_and_roster():
    base = _published_key()
    a = personal.PersonalKey.build(base, STUDENTS, SECRET).fingerprint
    assert a == personal.PersonalKey.build(base, STUDENTS, SECRET).fingerprint
    assert a != personal.PersonalKey.build(base, STUDENTS, b"other").fingerprint
    assert a != personal.PersonalKey.build(base, STUDENTS[:2], SECRET).fingerprint


def test_hidden_inputs_are_deterministic_and_include_examples_and_edge_cases():
    seed = personal.hidden_seed(SECRET)
    assert seed == personal.hidden_seed(SECRET) != personal.hidden_seed(b"other")
    inputs = judge.hidden_inputs(seed)
    assert inputs == judge.hidden_inputs(seed)
    for a in answers.ANSWER_LIST:
        if a.kind == "function":
            assert a.edge_cases
            for case in (*a.examples, *a.edge_cases):
                assert case in inputs[a.id], (a.id, case)
            assert len(inputs[a.id]) > len(set(a.examples) | set(a.edge_cases))
    assert (2, True) in inputs["ch05-p3-fn"] and any(n % 2 for n, _ in inputs["ch05-p3-fn"])


def _result(sid, points, rid=None, whole=status.GRADED):
    probs = [
        {"id": aid, "points": p, "max_points": 1.0, "status": status.CORRECT if p else status.WRONG}
        for aid, p in points.items()
    ]
    res = {"student": sid, "status": whole, "problems": probs, "points": sum(points.values())}
    if rid:
        res["roster_id"] = rid
    return res


def test_wide_and_canvas_tables_have_one_row_per_student_with_weights():
    results = [
        _result("s1", {"ch05-p1a": 1.0, "ch05-p2": 0.0}, "s1"),
        _result("s2", {"ch05-p1a": 1.0, "ch05-p2": 1.0}, "s2"),
    ]
    weights = {"ch05-p2": 3.0}
    pids, table = outputs.rows(results, STUDENTS, weights, chapter=5)
    assert [r["id"] for r in table] == ["s1", "s2", "s3"]
    assert table[1]["total"] == 1 + 3 and table[0]["total"] == 1 and table[2]["status"] == outputs.NO_SUBMISSION
    assert table[0]["max"] == len(pids) + 2  # 17 题，其中一题权重 3
    wide = outputs.wide_csv(pids, table)
    assert wide.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(wide.lstrip("\ufeff"))))
    assert rows[0][:2] == ["id", "name"] and rows[0][-3:] == ["total", "max", "status"]
    assert rows[2][1] == "李四" and rows[2][rows[0].index("ch05-p2")] == "3"
    canvas = list(csv.reader(io.StringIO(outputs.canvas_csv(table, "shardlab ch05").lstrip("\ufeff"))))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "shardlab ch05"]
    assert canvas[1][0].strip() == "Points Possible" and canvas[1][-1] == "19"
    assert canvas[3] == ["李四", "", "s2", "", "", "4"]


def test_spreadsheet_formulas_from_names_are_made_inert():
    _, table = outputs.rows([], [roster.Student("s9", "=HYPERLINK(1)", 2)], {}, chapter=5)
    assert "'=HYPERLINK" in outputs.wide_csv([], table)


def test_summary_reports_statistics_statuses_and_ignored_files():
    results = [_result("s1", {"ch05-p1a": 1.0}, "s1"), _result("s2", {"ch05-p1a": 0.0}, "s2")]
    _, table = outputs.rows(results, STUDENTS, {}, chapter=5)
    text = outputs.summary(table, results, [("subs/notes.txt", "不是 .ipynb 笔记本，忽略")])
    assert "学生：3 人；提交：2 份" in text and "中位数" in text and "分数分布" in text
    assert "`wrong`" in text and "notes.txt" in text and "没有提交（1 人）" in text and "s3" in text
    line = outputs.console_summary(table, results, [])
    assert "3 名学生" in line and "平均分" in line


@pytest.mark.parametrize(
    ("text", "message"),
    [("problem,weight\nch05-p99,2\n", "未知的答案 id"), ("problem,weight\nch05-p1a,-1\n", "非负"), ("a,b\n", "表头")],
)
def test_bad_weights_are_reported(tmp_path, text, message):
    path = tmp_path / "w.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(outputs.WeightsError, match=message):
        outputs.read_weights(path)


def test_output_files_follow_the_umask(tmp_path):
    report.atomic_write(tmp_path / "a.csv", "x")
    assert stat.S_IMODE(os.stat(tmp_path / "a.csv").st_mode) == report.FILE_MODE
    assert report.FILE_MODE & 0o040  # 组可读（默认 umask 022 或 027）


# ---- 整条链：写出个人版 → 作答 → 按个人版评分 ----
@pytest.mark.slow
def test_class_with_own_answers_scores_full_and_copied_answers_are_flagged(tmp_path):
    roster_path, secret, own, pub, _ = assign_bench.make_class(tmp_path, 3, "ch05")
    # 第三个学生交的是第一个学生的答案（放在自己的文件夹里）
    (own / "s002" / "ch05_exercises.ipynb").write_bytes((own / "s000" / "ch05_exercises.ipynb").read_bytes())
    (own / "stranger_ch05.ipynb").write_bytes((own / "s001" / "ch05_exercises.ipynb").read_bytes())
    (own / "notes.txt").write_text("不是笔记本", encoding="utf-8")
    assign_bench.grade(own, tmp_path / "out", roster_path, secret, 5, 2)
    rows = assign_bench.gradebook(tmp_path / "out")
    first = {f: (tmp_path / "out" / f).read_bytes() for f in ("gradebook.csv", "grades_wide.csv", "canvas.csv")}
    assert {r["status"] for r in rows if r["student"] in ("s000", "s001")} == {status.CORRECT}
    copied = {r["problem"]: r["status"] for r in rows if r["student"] == "s002"}
    varies = {a.id for a in answers.chapter_answers("ch05") if a.kind == "value" and a.varies}
    key = secret.read_bytes()
    p0, p2 = (variants.for_student(key, "ch05", sid) for sid in ("s000", "s002"))
    for pid in varies:  # 两人的数碰巧相同的题算对，其余认出是别人的答案
        same = abs(answers.get(pid).value(p0) / answers.get(pid).value(p2) - 1) < 0.02
        assert copied[pid] == (status.CORRECT if same else status.OTHER_VARIANT), pid
    assert status.OTHER_VARIANT in copied.values()
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "stranger_ch05.ipynb" in summary and "notes.txt" in summary and "花名册" in summary
    doc = json.loads((tmp_path / "out" / "gradebook.json").read_text(encoding="utf-8"))
    assert doc["meta"]["seed"] == personal.hidden_seed(secret.read_bytes()) and doc["meta"]["personal_variants"]
    assign_bench.grade(pub, tmp_path / "out-pub", roster_path, secret, 5, 2)
    pub_rows = assign_bench.gradebook(tmp_path / "out-pub")
    assert {r["status"] for r in pub_rows if r["problem"] in varies} == {status.COPIED_PUBLISHED}
    assert all(float(r["points"]) == 0 for r in pub_rows if r["problem"] in varies)
    assign_bench.grade(own, tmp_path / "out", roster_path, secret, 5, 2, "--force")
    assert {f: (tmp_path / "out" / f).read_bytes() for f in first} == first  # --force 重评，逐字节相同
