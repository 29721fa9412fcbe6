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
import tracemalloc
from fractions import Fraction
from pathlib import Path

import nbformat
import numpy as np
import pytest
from markdown_it import MarkdownIt

from shardlab import answers, check
from shardlab.grade import cli, export, folder, inject, judge, junit, report, sandbox, text
from shardlab.grade.course import Course
from shardlab.grade.key import AnswerKey, AnswerKeyError, load_key, registry_key
from shardlab.grade.status import TEXT

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "grader"
NON_UTF8 = b"\xff\xfe-\xe5\xad\xa6\xe7\x94\x9f.ipynb"  # 不是合法 UTF-8 的文件名
SEED = 7
LIMITS = ["--cell-timeout", "8", "--wall", "60", "--memory-mb", "3072", "--nproc", "160"]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="评分沙箱只支持 Linux")
SANDBOXED = sys.platform == "linux" and sandbox.detect_mode() == "bwrap"
UNSAFE_WITHOUT_SANDBOX = {"fork_bomb", "kill_grader", "read_nearby"}
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap（.ci/run 会安装）")


def reference_key() -> dict:
    """与 make answer-key 同样格式的答案表，数值来自参考算法（另有测试保证与解答笔记本一致）"""
    return registry_key()


@pytest.fixture(scope="module")
def key_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("key") / "answer_key.json"
    path.write_text(json.dumps(reference_key()), encoding="utf-8")
    return path


def _sandboxes(under: Path) -> list[str]:
    """还活着的、属于这次评分的沙箱：bwrap 的命令行里有评分笔记本的路径（在 under 下）；
    bwrap 一结束，它的 pid 命名空间里的进程就全部结束。别的工作区同时在评分时，它们的沙箱不算"""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if cmd.startswith("bwrap ") and str(under) in cmd:
            found.append(f"{pid} {cmd[:80]}")
    return found


LONG_NAME = "张" * 79 + ".ipynb"  # 237 字节：临时结果文件的名字曾经因此超过 255 字节
FORMULA_NAME = '=HYPERLINK("evil.example")+@-.ipynb'
ESCAPE_NAME = "\x1b[31m\x1b]0;t\x07red.ipynb"
GOOD = [f"s{k:02d}" for k in range(1, 11)]  # 十份好的提交，每个学生一个子目录


def hostile_class(subs: Path) -> dict[str, str]:
    """在 subs 里摆出一个有敌意的班级：夹具之外，符号链接、FIFO、设备、目录、撞名的文件、超长和带转义序列的文件名、
    2000 万字节的空单元、嵌套极深的 JSON，以及十份每个学生一个子目录的好提交。返回被忽略的文件 → 期望的原因片段"""
    correct = FIXTURES / "correct.ipynb"
    for sid in GOOD:
        (subs / sid).mkdir()
        shutil.copy(correct, subs / sid / "ch05_exercises.ipynb")
    shutil.copy(FIXTURES / "blank.ipynb", subs / "alice.ipynb")
    shutil.copy(correct, subs / "alice.IPYNB")
    shutil.copy(correct, subs / "bob-2.ipynb")
    shutil.copy(correct, subs / "bob.IPYNB")
    shutil.copy(FIXTURES / "partial.ipynb", subs / "bob.ipynb")
    for name in (LONG_NAME, FORMULA_NAME, ESCAPE_NAME):
        shutil.copy(correct, subs / name)
    cells = b",".join([b'{"cell_type":"code","metadata":{"tags":["ch05-p1a"]}}'] + [b'{"cell_type":"code"}'] * 998_000)
    huge = b'{"nbformat":4,"nbformat_minor":4,"metadata":{},"cells":[' + cells + b"]}"
    assert len(huge) <= inject.MAX_SUBMISSION_BYTES  # 不超过文件大小的上限：挡住它的是单元数
    (subs / "huge_cells.ipynb").write_bytes(huge)
    deep = b"[" * 100_000 + b"]" * 100_000
    (subs / "deep.ipynb").write_bytes(b'{"nbformat":4,"cells":[],"metadata":{"x":' + deep + b"}}")
    os.symlink(ROOT / "solutions" / "ch05_solutions.ipynb", subs / "steal.ipynb")
    os.symlink(subs / "correct.ipynb", subs / "copycat.ipynb")
    os.symlink("/dev/zero", subs / "zero.ipynb")
    os.mkfifo(subs / "pipe.ipynb")
    (subs / "folder.ipynb").mkdir()
    os.symlink(ROOT / "solutions", subs / "s99")
    return {
        "steal.ipynb": "符号链接",
        "copycat.ipynb": "符号链接",
        "zero.ipynb": "符号链接",
        "pipe.ipynb": "FIFO",
        "folder.ipynb": "目录",
        "s99": "符号链接",
        "answer_key.json": "不是 .ipynb",
    }


@pytest.fixture(scope="module")
def batch(tmp_path_factory, key_file):
    """把所有夹具和有敌意的班级（hostile_class）外加一个非 UTF-8 文件名的副本和放在旁边的答案表用 -j 2 一次评完"""
    subs = tmp_path_factory.mktemp("subs")
    for nb in FIXTURES.glob("*.ipynb"):
        if nb.stem in UNSAFE_WITHOUT_SANDBOX and not SANDBOXED:
            continue  # 没有命名空间时 kill(-1) 与 fork 炸弹会伤到整台机器
        shutil.copy(nb, subs / nb.name)
    shutil.copy(FIXTURES / "correct.ipynb", os.path.join(os.fsencode(subs), NON_UTF8))
    shutil.copy(key_file, subs / "answer_key.json")  # “旁边的文件”：学生不该读到
    ignored = hostile_class(subs)
    out = tmp_path_factory.mktemp("out")
    shutil.copy(key_file, out / "answer_key.json")
    start = time.monotonic()
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    args = [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "-j", "2", "--seed", str(SEED)]
    proc = subprocess.run(
        [sys.executable, "-m", "shardlab.grade", *args, "--chapter", "5", "--key", str(key_file), *LIMITS],
        capture_output=True,
        timeout=1200,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    by_student = {r["student"]: r for r in doc["submissions"]}
    by_file = {r["file"]: r for r in doc["submissions"]}
    return {
        "out": out,
        "subs": subs,
        "doc": doc,
        "res": by_student,
        "by_file": by_file,
        "elapsed": elapsed,
        "ignored": ignored,
        "stderr": proc.stderr,
    }


def statuses(res: dict) -> dict[str, str]:
    return {p["id"]: p["status"] for p in res["problems"]}


def ch05_ids() -> list[str]:
    return [a.id for a in inject.chapter_answers(5)]


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
    assert sid.startswith("_xff_xfe-学生~") and "\\" not in sid and sid.encode("utf-8")
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
    assert {p["status"] for p in res["problems"]} == {status} and res["max_points"] == len(ch05_ids())
    assert TEXT[status] in (batch["out"] / "feedback" / f"{name}.md").read_text(encoding="utf-8")


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
    # 炸弹所在的单元超时；之后内核是被拖死（timeout / kernel-died）还是活下来照常评分（correct），取决于机器的负载
    assert any("超时" in e["summary"] for e in res["errors"]) or st["ch05-p4"] in ("timeout", "kernel-died")
    assert st["ch05-p4"] in ("timeout", "kernel-died", "correct") and res["max_points"] == len(ch05_ids())
    assert not _sandboxes(batch["out"])  # 沙箱的进程全都结束了


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
    extra = 1 + len(GOOD) + 5 + 3 + 2  # 非 UTF-8 名字、十份好的、alice×2 与 bob×3、三个怪名字、两个巨大的
    expected = len(list(FIXTURES.glob("*.ipynb"))) + extra - (0 if SANDBOXED else len(UNSAFE_WITHOUT_SANDBOX))
    assert len(students) == expected
    assert not (out / ".work").exists() or not list((out / ".work").iterdir())  # 临时目录都在输出目录下，已清掉


@pytest.mark.slow
def test_rerun_skips_and_force_regrades(batch, key_file, capsys):
    out, subs = batch["out"], batch["subs"]
    before = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    rc = cli.main(
        [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "--key", str(key_file), "--chapter", "5", *LIMITS]
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
            "--chapter",
            "5",
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
            for s in (repr(float(v)), f"{v:.6g}", f"{v:.10g}"):
                if len(s.split("e")[0].strip("-0.")) >= 6:  # 0.5、16.0 这种短数会到处出现，不算
                    out.add(s)
    return out


def test_key_never_enters_the_graded_notebook_or_sandbox(tmp_path, key_file):
    key = load_key(key_file).entries
    inputs = judge.hidden_inputs(SEED)
    raw = inject.read_notebook((FIXTURES / "blank.ipynb").read_bytes())
    prep = inject.prepare(raw, None, inputs)
    text = nbformat.writes(prep.notebook)
    secrets = _secret_strings(key, inputs)
    assert secrets and not [s for s in secrets if s in text]
    assert "ch05-p3-fn" in text  # 导出单元在，只是没有参考值
    stage = tmp_path / "stage"
    sandbox.stage_library(stage)
    for path in stage.rglob("*"):
        if path.is_file():
            body = path.read_text(encoding="utf-8", errors="replace")
            assert not [s for s in secrets if s in body], path
    assert "def ch05_p1a" not in (stage / "shardlab" / "answers.py").read_text(encoding="utf-8")


def test_plugin_imports_from_the_staged_library(tmp_path):
    """沙箱里的库是删减过的（answers、check 没有参考算法）：插件和它导入的一切在那里也要能导入"""
    staged = sandbox.stage_library(tmp_path / "stage")
    code = f"import shardlab, {sandbox.PLUGIN}; print(shardlab.__file__)"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(staged.parent)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str(staged / "__init__.py")


def test_prepare_puts_export_right_after_each_answer_and_drops_fake_cells():
    raw = inject.read_notebook((FIXTURES / "monkeypatch.ipynb").read_bytes())
    prep = inject.prepare(raw, None, {"ch05-p3-fn": [(3, True)]})
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
        (b" " * (inject.MAX_SUBMISSION_BYTES + 1), "too-large"),
    ]:
        with pytest.raises(inject.SubmissionError) as info:
            inject.read_notebook(data)
        assert info.value.status == status


def _ids(names: list[bytes]) -> list[str]:
    found = [folder.Found(Path(os.fsdecode(n)), folder.show(n), n, folder._stem(n)) for n in names]
    folder.assign_ids(found)
    return [f.sid for f in found]


def test_student_ids():
    assert _ids([b"alice.ipynb"]) == ["alice"]
    assert _ids(["张三_hw5.ipynb".encode()]) == ["张三_hw5"]
    (odd,) = _ids([b"a b/../c.ipynb"])
    assert "/" not in odd and " " not in odd
    (bad,) = _ids([NON_UTF8])
    assert bad.startswith("_xff_xfe-学生~") and bad.encode("utf-8")
    assert len(set(_ids([b"x\xff.ipynb", b"x\xfe.ipynb"]))) == 2


def test_judging_plain_records():
    spec = answers.get("ch05-p1a")
    key = AnswerKey.from_entries(reference_key())
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


def test_hidden_inputs_are_a_function_of_the_seed_and_include_the_examples():
    a, b = judge.hidden_inputs(11), judge.hidden_inputs(11)
    assert a == b and a != judge.hidden_inputs(12)
    for aid, cases in a.items():
        spec = answers.get(aid)
        fixed = list(dict.fromkeys((*map(tuple, spec.examples), *map(tuple, spec.edge_cases))))
        assert cases[: len(fixed)] == fixed  # 公开示例与题目说到的边界情形总在最前面
        assert len(fixed) < len(cases) <= len(fixed) + judge.N_HIDDEN
        assert len(set(cases)) == len(cases)


def test_one_type_rule_for_self_check_and_grader(capsys):
    """自检与评分器对“是不是数”只有一个答案：导出单元里运行的就是 check.as_number 的源码"""
    values = {
        "i": 3,
        "f": 2.5,
        "f32": np.float32(2),
        "i64": np.int64(4),
        "a0": np.array(3.0),
        "ab": np.array(True),
        "b": True,
        "s": "16",
        "l": [1.0],
        "a1": np.array([1.0]),
        "c": 1 + 0j,
        "fr": Fraction(1, 2),
        "as": np.array("x"),
    }
    namespace = {**values, "float": "遮住了内置的 float", "isinstance": None}  # 学生的全局变量遮不住规则
    exec(export.export_source([export.ExportItem(k, k) for k in values]), namespace)
    got = export.parse_exports(capsys.readouterr().out)
    spec = answers.get("ch05-p1a")
    for name, value in values.items():
        invalid_in_check = check.judge_value(spec, value, 1.0).status == "invalid"
        assert ("invalid" in got[name]) == invalid_in_check, (name, got[name])
    assert {k for k, v in got.items() if "invalid" in v} == {"ab", "b", "s", "l", "a1", "c", "as"}


def test_key_must_agree_with_reference_functions(tmp_path):
    key = reference_key()
    key["ch05-p3-fn"]["cases"][0]["value"] = 0.1
    path = tmp_path / "k.json"
    path.write_text(json.dumps(key), encoding="utf-8")
    with pytest.raises(AnswerKeyError):
        load_key(path)
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
    if sandbox.detect_mode() != "bwrap":
        pytest.skip("需要 root 与 bubblewrap")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PROBE)]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    path.chmod(0o644)
    staged = sandbox.stage_library(tmp_path / "stage")
    limits = sandbox.Limits(cell_s=30, wall_s=60, memory_bytes=2 << 30, nproc=100, file_bytes=16 << 20)
    run = sandbox.Sandbox(staged, limits, workdir=tmp_path).run(path)
    cells = junit.parse_junit(run.junit)
    info = json.loads(re.search(r"PROBE(\{.*?\})PROBE", cells[0].message).group(1))
    assert info["uid"] >= 200_000
    assert sorted(info["wrote"]) == sorted(["/tmp/ok", os.path.join(sandbox.SANDBOX_HOME, "ok")])
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
    assert not _sandboxes(tmp_path)


def _grader(subs: Path, out: Path, key_file: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "shardlab.grade", "--course", str(ROOT), str(subs), "--out", str(out)]
    cmd += ["--key", str(key_file), "--no-progress", "--chapter", "5", *extra]
    return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(cond, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "等不到"
        time.sleep(0.05)


@pytest.fixture
def loop_class(tmp_path) -> Path:
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(FIXTURES / "not_json.ipynb", subs / "a_not_json.ipynb")
    shutil.copy(FIXTURES / "stubborn_loop.ipynb", subs / "b_loop.ipynb")
    shutil.copy(FIXTURES / "correct.ipynb", subs / "c_correct.ipynb")
    return subs


@pytest.mark.slow
@needs_sandbox
def test_first_ctrl_c_starts_no_new_sandbox_and_keeps_what_was_graded(tmp_path, key_file, loop_class):
    out = tmp_path / "out"
    proc = _grader(loop_class, out, key_file, "--cell-timeout", "20")
    _wait_for(lambda: (out / "results" / "a_not_json.json").exists() and _sandboxes(out))
    time.sleep(1.0)  # 沙箱在跑第二份
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 15 and "Traceback" not in err
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    assert [r["student"] for r in doc["submissions"]] == ["a_not_json"] and doc["meta"]["interrupted"]
    assert not (out / "results" / "b_loop.json").exists() and not (out / "results" / "c_correct.json").exists()
    assert not (out / ".work").exists() or not list((out / ".work").glob("*"))
    _wait_for(lambda: not _sandboxes(out), 30)


@pytest.mark.slow
@needs_sandbox
def test_second_ctrl_c_exits_at_once_and_the_next_run_finishes(tmp_path, key_file, loop_class):
    out = tmp_path / "out"
    proc = _grader(loop_class, out, key_file, "--cell-timeout", "20")
    _wait_for(lambda: (out / "results" / "a_not_json.json").exists() and _sandboxes(out))
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # 第一次中断之后、评分器退出之前（以前：这时的第二次 Ctrl-C 打出 traceback，退出码 -2）
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - t0 < 5, err
    assert "Traceback" not in err  # 以前：第二次 Ctrl-C 打出 traceback，退出码 -2
    json.loads((out / "gradebook.json").read_text(encoding="utf-8"))  # 仍是完整的 JSON
    _wait_for(lambda: not _sandboxes(out), 30)
    proc = _grader(loop_class, out, key_file, "--cell-timeout", "2")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    assert {r["student"] for r in doc["submissions"]} == {"a_not_json", "b_loop", "c_correct"}


@pytest.mark.slow
@needs_sandbox
def test_killed_grader_leaves_nothing_for_the_next_run(tmp_path, key_file, loop_class):
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = _grader(loop_class, out, key_file, "--cell-timeout", "20", env=env)
    _wait_for(lambda: (out / "results" / "a_not_json.json").exists() and _sandboxes(out))
    proc.kill()
    proc.communicate(timeout=30)
    _wait_for(lambda: not _sandboxes(out), 30)  # --die-with-parent：沙箱跟着结束（负载高时内核退出要几秒）
    assert not list(tmp.iterdir())  # 以前：/tmp 里留下 shardlab-stage-*
    proc = _grader(loop_class, out, key_file, "--cell-timeout", "2", env=env)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    assert ".work" in doc["meta"]["cleaned_up"]
    assert not list((out / ".work").glob("*")) and not list(tmp.iterdir())


@pytest.mark.slow
@needs_sandbox
def test_two_graders_on_one_output_folder(tmp_path, key_file, loop_class, capsys):
    out = tmp_path / "out"
    first = _grader(loop_class, out, key_file, "--cell-timeout", "20")
    try:
        _wait_for(lambda: (out / "results" / "a_not_json.json").exists())
        rc = cli.main(["--course", str(ROOT), str(loop_class), "--out", str(out), "--key", str(key_file)])
        assert rc == 2 and "另一个评分器" in capsys.readouterr().err
    finally:
        first.kill()
        first.communicate(timeout=30)


def test_results_are_never_stale(tmp_path, key_file, monkeypatch):
    """缓存键含答案表、评分代码（answers/check/评分器）与种子；成绩册标出不是在这次的键下评的结果"""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    shutil.copy(FIXTURES / "not_json.ipynb", subs / "a.ipynb")
    shutil.copy(FIXTURES / "unrelated.ipynb", subs / "b.ipynb")
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    base = [*mode, "--course", str(ROOT), "--out", str(out), "--chapter", "5", "--no-progress", "--seed", "3"]

    def run(key: Path, *files: str) -> dict:
        assert cli.main([*base, "--key", str(key), *[str(subs / f) for f in files]]) == 0
        return json.loads((out / "gradebook.json").read_text(encoding="utf-8"))

    def mtimes() -> dict:
        return {p.stem: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}

    run(key_file, "a.ipynb", "b.ipynb")
    first = mtimes()
    changed = reference_key()
    changed["ch05-p1a"]["value"] *= 2
    key2 = tmp_path / "key2.json"
    key2.write_text(json.dumps(changed), encoding="utf-8")
    doc = run(key2, "a.ipynb")  # 只重评 a：b 的结果是旧答案表下的，标出来
    current = {r["student"]: r["current"] for r in doc["summary"]}
    assert current == {"a": True, "b": False}
    totals = {r["student"]: r["current"] for r in csv.DictReader((out / "totals.csv").open(encoding="utf-8"))}
    assert totals == {"a": "yes", "b": "no"}
    doc = run(key2, "a.ipynb", "b.ipynb")
    assert mtimes()["a"] == mtimes()["a"] and all(r["current"] for r in doc["summary"])
    before = mtimes()
    monkeypatch.setattr("shardlab.grade.submission.code_fingerprint", lambda: "tolerance-changed")
    doc = run(key2, "a.ipynb", "b.ipynb")  # answers.py 的容差改了：评分代码的指纹变了，全部重评
    after = mtimes()
    assert all(after[s] != before[s] for s in ("a", "b")) and first["a"] != after["a"]
    assert {r["code"] for r in doc["submissions"]} == {"tolerance-changed"}
    assert all(r["seed"] == 3 for r in doc["submissions"])


def test_chapter_is_inferred_only_when_every_submission_agrees(tmp_path, key_file, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(FIXTURES / "not_json.ipynb", subs / "a.ipynb")
    shutil.copy(FIXTURES / "other_chapter.ipynb", subs / "ch06.ipynb")
    shutil.copy(FIXTURES / "unrelated.ipynb", subs / "c.ipynb")
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    args = [*mode, "--course", str(ROOT), str(subs), "--key", str(key_file), "--no-progress"]
    assert cli.main([*args, "--out", str(tmp_path / "o1")]) == 0  # 只有第 6 章的标签：推断为第 6 章
    doc = json.loads((tmp_path / "o1" / "gradebook.json").read_text(encoding="utf-8"))
    assert doc["meta"]["chapter"] == 6
    shutil.copy(FIXTURES / "blank.ipynb", subs / "ch05.ipynb")
    assert cli.main([*args, "--out", str(tmp_path / "o2")]) == 2  # 两章都有：要求 --chapter
    err = capsys.readouterr().err
    assert "不止一章" in err and "--chapter" in err
    assert not (tmp_path / "o2" / "gradebook.json").exists()


def test_refuses_outside_a_course_checkout(tmp_path, key_file, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main([str(tmp_path), "--out", str(tmp_path / "o"), "--key", str(key_file)]) == 2
    assert "找不到课程目录" in capsys.readouterr().err


# ---- 真实的练习与解答（答案表由 make answer-key 的逻辑从解答算出） ----
@pytest.mark.slow
def test_real_exercises_and_solutions(tmp_path):
    notebooks = [ROOT / "exercises" / f"ch0{c}_exercises.ipynb" for c in (5, 6)]
    notebooks += [ROOT / "solutions" / f"ch0{c}_solutions.ipynb" for c in (5, 6)]
    if not all(p.exists() for p in notebooks):
        pytest.skip("练习或解答笔记本还不在")
    key_path = tmp_path / "answer_key.json"
    key = load_key(None, Course(ROOT), cache=key_path).entries
    assert key_path.exists() and set(key) == set(answers.ANSWERS)
    mtime = key_path.stat().st_mtime_ns
    load_key(None, Course(ROOT), cache=key_path)  # 新鲜的答案表不再重建
    assert key_path.stat().st_mtime_ns == mtime
    subs = tmp_path / "subs"
    subs.mkdir()
    for p in notebooks:
        shutil.copy(p, subs / p.name)
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    for c in (5, 6):  # 一次评一章：别的章的两份记为 other-chapter，不评
        out = tmp_path / f"out{c}"
        args = [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "--key", str(key_path), "-j", "2"]
        assert cli.main([*args, "--chapter", str(c), "--no-progress"]) == 0
        doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
        res = {r["student"]: r for r in doc["submissions"]}
        sol, ex = res[f"ch0{c}_solutions"], res[f"ch0{c}_exercises"]
        assert sol["chapter"] == ex["chapter"] == c
        assert sol["points"] == sol["max_points"] == len(inject.chapter_answers(c)), statuses(sol)
        assert ex["points"] == 0 and set(statuses(ex).values()) == {"missing"}, statuses(ex)
        other = [r for sid, r in res.items() if not sid.startswith(f"ch0{c}")]
        assert len(other) == 2 and all(r["status"] == "other-chapter" for r in other)
        assert all(r["max_points"] == len(inject.chapter_answers(c)) for r in other)


# ---- 有敌意的班级（issue：评分器以外的部分）----
def _full(res: dict) -> bool:
    return res["status"] == "graded" and res["points"] == res["max_points"] == len(ch05_ids())


@pytest.mark.slow
def test_ten_good_submissions_in_a_hostile_class_get_full_marks(batch):
    for sid in GOOD:
        res = batch["res"][sid]
        assert _full(res), (sid, statuses(res))
        assert res["file"] == f"{sid}/ch05_exercises.ipynb"  # 每个学生一个子目录：id 是目录名，成绩册带相对路径
    rows = list(csv.DictReader((batch["out"] / "gradebook.csv").open(encoding="utf-8")))
    assert {r["file"] for r in rows if r["student"] == "s01"} == {"s01/ch05_exercises.ipynb"}


@pytest.mark.slow
def test_lone_surrogates_from_the_sandbox_do_not_stop_the_run(batch):
    res = batch["res"]["surrogate_error"]  # 以前：写 results/<id>.json 时 UnicodeEncodeError，整批退出 1
    st_ = statuses(res)
    assert st_["ch05-p3-fn"] == "error" and "\ufffd" in {p["id"]: p for p in res["problems"]}["ch05-p3-fn"]["message"]
    assert res["points"] == res["max_points"] - 1
    text = (batch["out"] / "results" / "surrogate_error.json").read_text(encoding="utf-8")
    assert "\\ud800" not in text and "\ud800" not in text


@pytest.mark.slow
def test_long_and_odd_file_names_are_graded(batch):
    by_file = batch["by_file"]
    for name in (LONG_NAME, FORMULA_NAME):
        res = by_file[name]
        assert _full(res), name
        assert len(res["student"].encode()) <= folder.MAX_ID_BYTES + 9
    esc = by_file[folder.show(os.fsencode(ESCAPE_NAME))]
    assert _full(esc) and "\x1b" not in esc["file"] and "\x07" not in esc["file"]
    assert b"\x1b" not in batch["stderr"]  # 终端上没有学生送来的转义序列


@pytest.mark.slow
def test_symlinks_fifos_devices_and_dirs_are_ignored_with_a_reason(batch):
    ignored = {i["file"]: i["reason"] for i in batch["doc"]["meta"]["ignored"]}
    for name, why in batch["ignored"].items():
        assert why in ignored[name], (name, ignored.get(name))
    graded_files = set(batch["by_file"])
    assert not graded_files & set(batch["ignored"])  # 指向解答的符号链接没有得到 17/17
    assert _full(batch["by_file"]["correct.ipynb"])  # 被指向的那份没有消失


@pytest.mark.slow
def test_ids_are_unique_and_traceable(batch):
    by_file = batch["by_file"]
    alice_blank, alice = by_file["alice.ipynb"], by_file["alice.IPYNB"]
    assert alice_blank["student"] != alice["student"] and alice_blank["points"] == 0 and _full(alice)
    bobs = [by_file[n] for n in ("bob-2.ipynb", "bob.IPYNB", "bob.ipynb")]
    assert len({b["student"] for b in bobs}) == 3
    assert _full(bobs[0]) and _full(bobs[1]) and bobs[2]["points"] == len(ch05_ids()) - 6
    hashed = [r["student"] for r in batch["doc"]["submissions"] if folder.HASH_SEP in r["student"]]
    plain = {r["student"].casefold() for r in batch["doc"]["submissions"] if folder.HASH_SEP not in r["student"]}
    assert hashed and not {h.casefold() for h in hashed} & plain
    assert len({r["student"].casefold() for r in batch["doc"]["submissions"]}) == len(batch["doc"]["submissions"])


@pytest.mark.slow
def test_huge_and_deep_notebooks_are_refused_before_any_work(batch):
    for name in ("huge_cells.ipynb", "deep.ipynb"):
        res = batch["by_file"][name]
        assert res["status"] == "too-large" and res["max_points"] == len(ch05_ids()), res["message"]
        assert res["wall_s"] < 5, res["wall_s"]  # 以前：99.8 万个空单元要 396 s 和 4 GB


@pytest.mark.slow
def test_malformed_submissions_get_precise_statuses_out_of_the_chapter_maximum(batch):
    res = batch["res"]["tag_twice"]
    assert _full(res) and any("ch05-p1a" in n and "2 次" in n for n in res["notes"])
    for name, status in [("huge_int", "invalid-number"), ("surrogate_source", "invalid-text")]:
        res = batch["res"][name]
        assert res["status"] == status and res["points"] == 0 and res["max_points"] == len(ch05_ids())


@pytest.mark.slow
def test_other_chapter_is_reported_not_graded(batch):
    res = batch["res"]["other_chapter"]  # 以前：按第 6 章评，满分
    assert res["status"] == "other-chapter" and res["chapter"] == 5
    assert res["points"] == 0 and res["max_points"] == len(ch05_ids())


@pytest.mark.slow
def test_forged_report_is_refused(batch):
    res = batch["res"]["forged_report"]
    assert res["points"] == 0 and res["max_points"] == len(ch05_ids())
    assert any("DTD" in n or "实体" in n for n in res["notes"]), res["notes"]


def _render_tokens(markdown: str) -> set[str]:
    md = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["linkify", "table", "strikethrough"])

    def walk(tokens):
        for t in tokens:
            yield t
            yield from walk(t.children or [])

    return {t.type for t in walk(md.parse(markdown))}


@pytest.mark.slow
def test_hostile_text_is_inert_everywhere_an_instructor_looks(batch):
    out = batch["out"]
    res = batch["res"]["hostile_text"]
    st_ = statuses(res)
    assert st_["ch05-p3-fn"] == "error" and st_["ch05-p1a"] == "invalid"
    assert res["points"] == res["max_points"] - 2
    for row in csv.reader((out / "gradebook.csv").open(encoding="utf-8")):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    rows = list(csv.DictReader((out / "gradebook.csv").open(encoding="utf-8")))
    assert any("HYPERLINK" in r["message"] for r in rows if r["student"] == "hostile_text")
    assert any(r["file"].startswith("'=HYPERLINK") for r in rows)
    for fb in (out / "feedback").glob("*.md"):
        text = fb.read_text(encoding="utf-8")
        kinds = _render_tokens(text)
        assert not kinds & {"html_inline", "html_block", "link_open", "image"}, (fb.name, kinds)
        assert not any(ch in text for ch in "\x1b\x07\u202e"), fb.name
    fb = (out / "feedback" / "hostile_text.md").read_text(encoding="utf-8")
    assert "HYPERLINK" in fb and "onerror" in fb  # 文字还在（学生能看到自己的错误），只是不起作用
    for path in [out / "gradebook.json", *(out / "results").glob("*.json")]:
        json.loads(path.read_text(encoding="utf-8"))
        assert "\\u001b" not in path.read_text(encoding="utf-8")


# ---- 报告：伪造的、最大长度的 JUnit ----
def _forged_reports() -> dict[str, str]:
    cap = junit.MAX_REPORT_CHARS
    head = '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
    case = '<testcase name="Cell {n}"><failure message="m">{body}</failure></testcase>'
    many = head + "".join(case.format(n=n, body="x" * 60) for n in range(cap // 120)) + "</testsuite></testsuites>"
    one = head + case.format(n=1, body="y" * (cap - 200)) + "</testsuite></testsuites>"
    prop = (
        '<testcase name="Cell {n}"><properties><property name="shardlab-export" value="{v}"/></properties></testcase>'
    )
    exports = head + "".join(
        prop.format(n=n, v="@@SHARDLAB-ANSWERS@@{&quot;a&quot;: [" + "[" * 500 + "]" * 500 + "]}") for n in range(3000)
    )
    exports += "</testsuite></testsuites>"
    deep = head + "<a>" * 200_000 + "</a>" * 200_000 + "</testsuite></testsuites>"
    return {"many": many[:cap], "one": one[:cap], "exports": exports[:cap], "deep": deep[:cap]}


@pytest.mark.slow
def test_forged_report_of_the_maximum_size_stays_bounded():
    for name, xml in _forged_reports().items():
        assert len(xml) <= junit.MAX_REPORT_CHARS
        tracemalloc.start()
        t0 = time.process_time()
        try:
            cells = junit.parse_junit(xml)
        except junit.ReportError:
            cells = {}
        cpu = time.process_time() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert cpu < 10 and peak < 400 << 20, (name, cpu, peak >> 20)
        assert all(len(c.message) <= junit.MAX_MESSAGE_CHARS for c in cells.values())
    with pytest.raises(junit.ReportError):
        junit.parse_junit("x" * (junit.MAX_REPORT_CHARS + 1))


def test_report_with_entities_or_dtd_is_refused():
    bomb = '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "' + "x" * 100 + '">'
    for k in range(1, 4):
        bomb += f'<!ENTITY e{k} "' + ("&a;" if k == 1 else f"&e{k - 1};") * 10 + '">'
    bomb += ']><testsuites><testcase name="Cell 0"><properties>'
    bomb += '<property name="shardlab-export" value="&e3;"/>' * 20 + "</properties></testcase></testsuites>"
    with pytest.raises(junit.ReportError, match="DTD"):  # 以前：照单全收，实体膨胀（2 MB 的报告用了 5.4 GB）
        junit.parse_junit(bomb)
    with pytest.raises(junit.ReportError):
        junit.parse_junit('<?xml version="1.0"?><!DOCTYPE t SYSTEM "file:///etc/passwd"><t/>')


def test_untrusted_text_helpers():
    assert text.clean("a\ud800b\x1b[2Jc\u202e") == "a\ufffdb[2Jc"
    assert text.clean(b"\xff ok") == "\ufffd ok"
    assert len(text.clean("x" * 10_000, 100)) < 130
    for bad in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", " =1", "\r=x"):
        assert text.csv_cell(bad).startswith("'"), bad
    assert text.csv_cell("正确") == "正确"
    evil = "<script>x</script> [a](http://e.x) ![i](http://e.x/i.png) http://e.x www.e.x a@b.cd ``` *b*"
    assert not _render_tokens(text.md_inline(evil)) & {"html_inline", "link_open", "image"}
    assert _render_tokens(text.md_block("```\n<b>x</b>\n```")) == {"fence"}
