"""教师用评分器（shardlab.grade）：每种坏输入一个夹具（tests/fixtures/grader/），加上沙箱的隔离与限制的实测"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from shardlab import answers
from shardlab.grade import cli, folder, judge, junit, report
from shardlab.grade import inject as inj
from shardlab.grade import key as keys
from shardlab.grade import sandbox as sbx
from shardlab.grade import status as st
from shardlab.grade.course import Course

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "grader"
NON_UTF8 = b"\xff\xfe-\xe5\xad\xa6\xe7\x94\x9f.ipynb"  # 不是合法 UTF-8 的文件名
SEED = 7
LIMITS = ["--cell-timeout", "8", "--wall", "60", "--memory-mb", "3072", "--nproc", "160"]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="评分沙箱只支持 Linux")
SANDBOXED = sys.platform == "linux" and sbx.detect_mode() == "bwrap"
UNSAFE_WITHOUT_SANDBOX = {"fork_bomb", "kill_grader", "read_nearby"}
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap（.ci/run 会安装）")


def reference_key() -> dict:
    """与 make answer-key 同样格式的答案表，数值来自参考算法（另有测试保证与解答笔记本一致）"""
    key = {}
    for a in answers.ANSWERS.values():
        if a.kind == "function":
            key[a.id] = {
                "unit": a.unit,
                "kind": "function",
                "cases": [{"args": list(x), "value": a.reference(*x)} for x in a.examples],
            }
        else:
            key[a.id] = {"value": float(a.reference()), "unit": a.unit}
    return key


@pytest.fixture(scope="module")
def key_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("key") / "answer_key.json"
    path.write_text(json.dumps(reference_key()), encoding="utf-8")
    return path


def _uids_running() -> list[str]:
    out = subprocess.run(["ps", "-eo", "uid=,pid=,comm="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.split() and int(line.split()[0]) >= 200_000]


@pytest.fixture(scope="module")
def batch(tmp_path_factory, key_file):
    """把所有夹具（外加一个非 UTF-8 文件名的副本和放在旁边的答案表）用 -j 2 评一遍"""
    subs = tmp_path_factory.mktemp("subs")
    for nb in FIXTURES.glob("*.ipynb"):
        if nb.stem in UNSAFE_WITHOUT_SANDBOX and not SANDBOXED:
            continue  # 没有命名空间时 kill(-1) 与 fork 炸弹会伤到整台机器
        shutil.copy(nb, subs / nb.name)
    shutil.copy(FIXTURES / "correct.ipynb", os.path.join(os.fsencode(subs), NON_UTF8))
    shutil.copy(key_file, subs / "answer_key.json")  # “旁边的文件”：学生不该读到
    out = tmp_path_factory.mktemp("out")
    shutil.copy(key_file, out / "answer_key.json")
    start = time.monotonic()
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    rc = cli.main(
        [
            *mode,
            "--course",
            str(ROOT),
            str(subs),
            "--out",
            str(out),
            "-j",
            "2",
            "--seed",
            str(SEED),
            "--key",
            str(key_file),
            "--no-progress",
            *LIMITS,
        ]
    )
    elapsed = time.monotonic() - start
    assert rc == 0
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    by_student = {r["student"]: r for r in doc["submissions"]}
    return {"out": out, "subs": subs, "doc": doc, "res": by_student, "elapsed": elapsed}


def statuses(res: dict) -> dict[str, str]:
    return {p["id"]: p["status"] for p in res["problems"]}


def ch05_ids() -> list[str]:
    return [a.id for a in inj.chapter_answers(5)]


# ---- 正常的提交 ----
@pytest.mark.slow
def test_correct_submission_scores_full_marks(batch):
    res = batch["res"]["correct"]
    assert res["status"] == "graded"
    assert res["points"] == res["max_points"] == len(ch05_ids())
    assert set(statuses(res).values()) == {"correct"}
    assert batch["doc"]["meta"]["isolation"] in ("bwrap", "rlimit")


@pytest.mark.slow
def test_partial_submission_points_and_hints(batch):
    res = batch["res"]["partial"]
    st = statuses(res)
    assert st["ch05-p1a"] == "wrong" and st["ch05-p1b"] == "wrong"
    assert st["ch05-p2"] == "missing" and st["ch05-p4"] == "invalid" and st["ch05-p5-8"] == "error"
    assert st["ch05-p3-fn"] == "wrong"
    assert res["points"] == len(ch05_ids()) - 6
    msg = {p["id"]: p["message"] for p in res["problems"]}
    assert "bf16" in msg["ch05-p1a"] and "微秒" in msg["ch05-p1b"]
    fb = (batch["out"] / "feedback" / "partial.md").read_text(encoding="utf-8")
    assert "✗ `ch05-p1a`" in fb and "✓ `ch05-p1c`" in fb and "ZeroDivisionError" in fb and "bf16" in fb
    rows = list(csv.DictReader((batch["out"] / "gradebook.csv").open(encoding="utf-8")))
    mine = {r["problem"]: r for r in rows if r["student"] == "partial"}
    assert (
        mine["ch05-p1c"]["points"] == "1"
        and mine["ch05-p1a"]["points"] == "0"
        and mine["ch05-p1a"]["max_points"] == "1"
    )
    assert set(rows[0]) >= {"student", "problem", "points", "max_points", "status"}


@pytest.mark.slow
def test_non_utf8_file_name(batch):
    (sid,) = [s for s in batch["res"] if "xff" in s]
    res = batch["res"][sid]
    assert sid.startswith("_xff_xfe-学生-") and "\\" not in sid and sid.encode("utf-8")
    assert res["points"] == res["max_points"] and "\\xff" in res["file"]
    assert (batch["out"] / "feedback" / f"{sid}.md").exists()


# ---- 坏的输入：每个夹具一个状态 ----
@pytest.mark.slow
@pytest.mark.parametrize(
    "name, status",
    [
        ("not_json", "not-json"),
        ("not_notebook", "not-notebook"),
        ("nbformat3", "nbformat-3"),
        ("unrelated", "unrelated-notebook"),
    ],
)
def test_whole_submission_statuses(batch, name, status):
    res = batch["res"][name]
    assert res["status"] == status and res["points"] == 0
    assert [p["status"] for p in res["problems"]] == [status]
    assert st.TEXT[status] in (batch["out"] / "feedback" / f"{name}.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_tags_missing_duplicated_reordered(batch):
    st = statuses(batch["res"]["tags_missing"])
    assert st["ch05-p1b"] == st["ch05-p2"] == st["ch05-p4"] == "missing-cell"
    assert st["ch05-p1a"] == "correct"
    res = batch["res"]["tags_duplicated"]
    assert statuses(res)["ch05-p1c"] == "duplicate-tag" and res["points"] == len(ch05_ids()) - 1
    res = batch["res"]["reordered"]
    moved = [p for p in res["problems"] if p["status"] == "reordered"]
    assert moved and all(p["points"] == 1 for p in moved)  # 按它所在的位置照样评分
    assert res["points"] == res["max_points"]


@pytest.mark.slow
def test_cells_that_raise(batch):
    res = batch["res"]["raises"]
    assert statuses(res)["ch05-p1c"] == "error"
    assert res["points"] == len(ch05_ids()) - 1
    summaries = " ".join(e["summary"] for e in res["errors"])
    assert "ValueError: 学生的单元出错了" in summaries and "NameError" in summaries


@pytest.mark.slow
def test_infinite_loops(batch):
    res = batch["res"]["infinite_loop"]  # 能中断：超时的单元之后照常评分
    assert any("超时" in e["summary"] for e in res["errors"])
    assert res["points"] == res["max_points"]
    res = batch["res"]["stubborn_loop"]  # 吞掉中断：内核被停掉，之后的题记为超时
    st = statuses(res)
    assert st["ch05-p3-fn"] == "correct" and st["ch05-p4"] == "timeout" and st["ch05-p7-prefill-time"] == "timeout"


@pytest.mark.slow
def test_memory_bomb(batch):
    res = batch["res"]["memory_bomb"]
    assert sum("MemoryError" in e["summary"] for e in res["errors"]) == 2
    assert res["points"] == res["max_points"]  # 内核活下来了


@pytest.mark.slow
@needs_sandbox
def test_fork_bomb_is_contained(batch):
    res = batch["res"]["fork_bomb"]
    st = statuses(res)
    assert st["ch05-p3-fn"] == "correct"
    assert st["ch05-p4"] in ("timeout", "kernel-died")
    assert not _uids_running()  # 沙箱的进程全都结束了


@pytest.mark.slow
def test_exit_and_killing_the_kernel(batch):
    res = batch["res"]["exit_kernel"]
    st = statuses(res)
    assert st["ch05-p2"] == "correct"  # sys.exit 只是个异常
    assert st["ch05-p4"] == st["ch05-p7-prefill-time"] == "kernel-died"
    assert any("SystemExit" in e["summary"] for e in res["errors"])
    if not SANDBOXED:
        return
    res = batch["res"]["kill_grader"]  # 杀掉 pytest 与能杀的一切：这一份记为 crashed，评分器和别的提交不受影响
    assert res["status"] == "crashed" and res["points"] == 0
    assert batch["res"]["correct"]["points"] == batch["res"]["correct"]["max_points"]


@pytest.mark.slow
def test_monkeypatching_changes_nothing(batch):
    res = batch["res"]["monkeypatch"]
    st = statuses(res)
    for aid in ("ch05-p1a", "ch05-p2", "ch05-p4", "ch05-p6-dp", "ch05-p3-fn"):
        assert st[aid] == "wrong", aid
    assert res["points"] == len(ch05_ids()) - 5
    assert any("冒充评分单元" in n for n in res["notes"])


@pytest.mark.slow
@needs_sandbox
def test_reading_files_nearby_finds_no_key(batch):
    res = batch["res"]["read_nearby"]
    st = statuses(res)
    assert st["ch05-p1a"] == "missing"  # 没找到答案表
    assert st["ch05-p1b"] == "missing"  # shardlab.answers 在沙箱里没有参考值
    assert st["ch05-p1c"] == "wrong"


@pytest.mark.slow
def test_printing_megabytes(batch):
    res = batch["res"]["print_megabytes"]
    assert res["status"] == "graded" and res["points"] == res["max_points"]
    assert any("ValueError" in e["summary"] for e in res["errors"])
    assert all(len(e["traceback"]) <= 3000 for e in res["errors"])
    assert (batch["out"] / "feedback" / "print_megabytes.md").stat().st_size < 50_000


@pytest.mark.slow
def test_outputs_atomic_and_complete(batch):
    out = batch["out"]
    assert not list(out.rglob("*.tmp"))
    students = set(batch["res"])
    assert {p.stem for p in (out / "results").glob("*.json")} == students
    assert {p.stem for p in (out / "feedback").glob("*.md")} == students
    expected = len(list(FIXTURES.glob("*.ipynb"))) + 1 - (0 if SANDBOXED else len(UNSAFE_WITHOUT_SANDBOX))
    assert len(students) == expected


@pytest.mark.slow
def test_rerun_skips_and_force_regrades(batch, key_file, capsys):
    out, subs = batch["out"], batch["subs"]
    before = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    rc = cli.main(
        [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "--key", str(key_file), "--no-progress", *LIMITS]
    )
    assert rc == 0
    assert {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")} == before
    assert f"跳过已评 {len(before)} 份" in capsys.readouterr().err
    rc = cli.main(
        [
            *mode,
            "--course",
            str(ROOT),
            str(subs / "not_*.ipynb"),
            "--out",
            str(out),
            "--key",
            str(key_file),
            "--force",
            "--no-progress",
        ]
    )
    assert rc == 0
    after = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    assert after["not_json.json"] != before["not_json.json"] and after["correct.json"] == before["correct.json"]
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    assert len(doc["submissions"]) == len(before)  # 跳过的也留在成绩册里


# ---- 答案表与隐藏输入不进沙箱 ----
def _secret_strings(key: dict, inputs: dict) -> set[str]:
    out = set()
    for aid, entry in key.items():
        values = [entry["value"]] if "value" in entry else []
        values += [answers.get(aid).reference(*args) for args in inputs.get(aid, [])]
        for v in values:
            if float(v).is_integer():  # 2**25 这样的整数在库里本来就有，不算
                continue
            for text in (repr(float(v)), f"{v:.6g}", f"{v:.10g}"):
                if len(text.split("e")[0].strip("-0.")) >= 6:  # 0.5、16.0 这种短数会到处出现，不算
                    out.add(text)
    return out


def test_key_never_enters_the_graded_notebook_or_sandbox(tmp_path, key_file):
    key = keys.load_key(key_file).entries
    inputs = judge.hidden_inputs(SEED)
    raw = inj.read_notebook((FIXTURES / "blank.ipynb").read_bytes())
    prep = inj.prepare(raw, None, inputs)
    text = nbformat.writes(prep.notebook)
    secrets = _secret_strings(key, inputs)
    assert secrets and not [s for s in secrets if s in text]
    assert "ch05-p3-fn" in text  # 导出单元在，只是没有参考值
    stage = tmp_path / "stage"
    sbx.stage_library(stage)
    for path in stage.rglob("*"):
        if path.is_file():
            body = path.read_text(encoding="utf-8", errors="replace")
            assert not [s for s in secrets if s in body], path
    assert "def ch05_p1a" not in (stage / "shardlab" / "answers.py").read_text(encoding="utf-8")


def test_prepare_puts_export_right_after_each_answer_and_drops_fake_cells():
    raw = inj.read_notebook((FIXTURES / "monkeypatch.ipynb").read_bytes())
    prep = inj.prepare(raw, None, {"ch05-p3-fn": [(3, True)]})
    assert prep.dropped == 2 and prep.chapter == 5
    for k, ref in enumerate(prep.cells):
        if ref.kind == "export":
            prev = prep.notebook.cells[k - 1]
            assert prev.metadata["tags"] == list(ref.answer_ids)
    n_export = sum(r.kind == "export" for r in prep.cells)
    assert n_export == len(ch05_ids())
    assert all(c.get("outputs") == [] for c in prep.notebook.cells)


def test_read_notebook_rejects_bad_input():
    for data, status in [
        (b"\xff\xfe garbage", "not-json"),
        (b"[1, 2]", "not-notebook"),
        (b'{"nbformat": 5, "cells": []}', "not-notebook"),
        (b'{"nbformat": 4, "cells": "x"}', "not-notebook"),
        (b'{"nbformat": 2}', "nbformat-3"),
        (b" " * (inj.MAX_SUBMISSION_BYTES + 1), "too-large"),
    ]:
        with pytest.raises(inj.SubmissionError) as info:
            inj.read_notebook(data)
        assert info.value.status == status


def test_student_ids():
    assert folder.student_id(Path("alice.ipynb")) == "alice"
    assert folder.student_id(Path("张三_hw5.ipynb")) == "张三_hw5"
    odd = folder.student_id(Path("a b/../c.ipynb"))
    assert "/" not in odd and " " not in odd
    bad = folder.student_id(Path(os.fsdecode(NON_UTF8)))
    assert bad.startswith("_xff_xfe-学生-") and bad.encode("utf-8")
    assert folder.student_id(Path(os.fsdecode(b"x\xff.ipynb"))) != folder.student_id(Path(os.fsdecode(b"x\xfe.ipynb")))


def test_judging_plain_records():
    spec = answers.get("ch05-p1a")
    key = keys.AnswerKey.from_entries(reference_key())
    right = key.entries["ch05-p1a"]["value"]
    assert judge.judge_record(spec, {"value": right}, key, []).ok
    assert judge.judge_record(spec, {"value": right / 2}, key, []).status == "wrong"
    assert judge.judge_record(spec, {"value": "nan"}, key, []).status == "wrong"
    assert judge.judge_record(spec, {"value": True}, key, []).status == "invalid"
    assert judge.judge_record(spec, {"missing": True}, key, []).status == "missing"
    assert judge.judge_record(spec, {"error": "没有定义变量 p1a"}, key, []).status == "error"
    fn = answers.get("ch05-p3-fn")
    cases = [(5, True), (8, False)]
    good = {"cases": [{"value": answers.alltoall_over_allgather(*c)} for c in cases]}
    assert judge.judge_record(fn, good, key, cases).ok
    bad = {"cases": [{"value": 0.25}, {"value": 0.5}]}
    verdict = judge.judge_record(fn, bad, key, cases)
    assert verdict.status == "wrong" and "(5, True)" in verdict.message


def test_hidden_inputs_are_drawn_per_run():
    for a in answers.ANSWERS.values():
        if a.kind != "function":
            continue
        drawn = judge.draw_inputs(a, random.Random(1))
        assert len(drawn) == judge.N_HIDDEN
        for args in drawn:
            assert len(args) == len(a.examples[0])
            a.reference(*args)  # 参考函数在这些输入上有定义
    spec = answers.get("ch05-p3-fn")
    assert judge.draw_inputs(spec, random.Random(1)) != judge.draw_inputs(spec, random.Random(2))
    assert all(2 <= n <= 64 for n, _ in judge.draw_inputs(spec, random.Random(3), 50))


def test_key_must_agree_with_reference_functions(tmp_path):
    key = reference_key()
    key["ch05-p3-fn"]["cases"][0]["value"] = 0.1
    path = tmp_path / "k.json"
    path.write_text(json.dumps(key), encoding="utf-8")
    with pytest.raises(keys.AnswerKeyError):
        keys.load_key(path)
    assert cli.main(["x", "--course", str(ROOT), "--out", str(tmp_path / "o"), "--key", str(path)]) == 2


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    target = tmp_path / "gradebook.json"
    report.atomic_write(target, "old")

    with pytest.raises(TypeError):
        report.atomic_write(target, 123)  # 写不进去
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["gradebook.json"]


# ---- 沙箱：实测隔离与限制 ----
PROBE = r"""
import json, os, socket, resource
info = {"uid": os.getuid(), "pid": os.getpid()}
wrote = []
for path in ["/etc/x", "/usr/x", "/tmp/ok", os.path.expanduser("~/ok"), "/work/x", "/root/x", "/x"]:
    try:
        with open(path, "w") as f:
            f.write("1")
        wrote.append(path)
    except OSError:
        pass
info["wrote"] = wrote
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    info["net"] = "ok"
except OSError as exc:
    info["net"] = type(exc).__name__
kids = 0
try:
    while kids < 10_000:
        pid = os.fork()
        if pid == 0:
            import time
            time.sleep(30)
            os._exit(0)
        kids += 1
except OSError:
    pass
info["forks"] = kids
try:
    block = bytearray(8 << 30)
    info["alloc_8g"] = True
except MemoryError:
    info["alloc_8g"] = False
info["visible_roots"] = sorted(os.listdir("/"))
info["home"] = sorted(os.listdir("."))
info["procs"] = len([p for p in os.listdir("/proc") if p.isdigit()])
try:
    open("big", "wb").write(b"0" * (100 << 20))
    info["big_file"] = True
except OSError as exc:
    info["big_file"] = type(exc).__name__
raise RuntimeError("PROBE" + json.dumps(info) + "PROBE")
"""


@pytest.mark.slow
def test_sandbox_limits_bite(tmp_path):
    if sbx.detect_mode() != "bwrap":
        pytest.skip("需要 root 与 bubblewrap")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PROBE)]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    path.chmod(0o644)
    staged = sbx.stage_library(tmp_path / "stage")
    limits = sbx.Limits(cell_s=30, wall_s=60, memory_bytes=2 << 30, nproc=100, file_bytes=16 << 20)
    run = sbx.Sandbox(staged, limits).run(path)
    cells = junit.parse_junit(run.junit)
    info = json.loads(re.search(r"PROBE(\{.*?\})PROBE", cells[0].message).group(1))
    assert info["uid"] >= 200_000
    assert sorted(info["wrote"]) == sorted(["/tmp/ok", os.path.join(sbx.SANDBOX_HOME, "ok")])
    assert info["net"] in ("OSError", "ConnectionRefusedError") or "Error" in info["net"]
    assert info["forks"] < limits.nproc  # RLIMIT_NPROC 生效（进程 + 线程）
    assert info["alloc_8g"] is False  # RLIMIT_AS 生效
    assert info["big_file"] is not True  # RLIMIT_FSIZE / tmpfs 大小生效
    venv_root = Path(sys.prefix).resolve().parts[1]  # 虚拟环境所在的顶层目录（/work、/tmp……）只读挂进沙箱
    assert venv_root in info["visible_roots"] and "home" in info["visible_roots"]
    assert info["home"] == sorted(
        ["graded.ipynb", ".pytest.ini", ".pytest.log", ".ipython", ".jupyter-runtime", "ok"]
    ) or ("graded.ipynb" in info["home"] and "answer_key.json" not in info["home"])
    assert info["procs"] < 150  # 只看得见沙箱自己的进程
    assert not _uids_running()


@pytest.mark.slow
@needs_sandbox
def test_ctrl_c_keeps_what_was_graded(tmp_path, key_file):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(FIXTURES / "not_json.ipynb", subs / "a_not_json.ipynb")
    shutil.copy(FIXTURES / "stubborn_loop.ipynb", subs / "b_loop.ipynb")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "shardlab.grade",
        "--course",
        str(ROOT),
        str(subs),
        "--out",
        str(out),
        "--key",
        str(key_file),
        "--no-progress",
    ]
    proc = subprocess.Popen([*cmd, "--cell-timeout", "20"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (out / "results" / "a_not_json.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)  # 沙箱已经在跑第二份
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    assert [r["student"] for r in doc["submissions"]] == ["a_not_json"]
    assert not (out / "results" / "b_loop.json").exists()
    time.sleep(0.5)
    assert not _uids_running()


# ---- 真实的练习与解答（答案表由 make answer-key 的逻辑从解答算出） ----
@pytest.mark.slow
def test_real_exercises_and_solutions(tmp_path):
    notebooks = [ROOT / "exercises" / f"ch0{c}_exercises.ipynb" for c in (5, 6)]
    notebooks += [ROOT / "solutions" / f"ch0{c}_solutions.ipynb" for c in (5, 6)]
    if not all(p.exists() for p in notebooks):
        pytest.skip("练习或解答笔记本还不在")
    key_path = tmp_path / "answer_key.json"
    key = keys.load_key(None, Course(ROOT), cache=key_path).entries
    assert key_path.exists() and set(key) == set(answers.ANSWERS)
    mtime = key_path.stat().st_mtime_ns
    keys.load_key(None, Course(ROOT), cache=key_path)  # 新鲜的答案表不再重建
    assert key_path.stat().st_mtime_ns == mtime
    subs = tmp_path / "subs"
    subs.mkdir()
    for p in notebooks:
        shutil.copy(p, subs / p.name)
    out = tmp_path / "out"
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    args = [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "--key", str(key_path), "-j", "2"]
    assert cli.main([*args, "--no-progress"]) == 0
    res = {r["student"]: r for r in json.loads((out / "gradebook.json").read_text(encoding="utf-8"))["submissions"]}
    for c in (5, 6):
        sol, ex = res[f"ch0{c}_solutions"], res[f"ch0{c}_exercises"]
        assert sol["chapter"] == ex["chapter"] == c
        assert sol["points"] == sol["max_points"] == len(inj.chapter_answers(c)), statuses(sol)
        assert ex["points"] == 0 and set(statuses(ex).values()) == {"missing"}, statuses(ex)
