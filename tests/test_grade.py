"""教师用评分器（shardlab.grade）的单元与小的端到端测试：答案表、注入、JUnit、判定、隐藏输入、沙箱的限制、缓存与重评

有敌意的班级在 test_grade_class.py，中断与真实的练习和解答在 test_grade_interrupts.py；共用的东西在 grading.py。
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import tracemalloc
from fractions import Fraction
from pathlib import Path

import nbformat
import numpy as np
import pytest
from grading import (
    FIXTURES,
    NON_UTF8,
    ROOT,
    SANDBOXED,
    SEED,
    ch05_ids,
    render_tokens,
    sandboxes,
    wait_for,
)

from shardlab import untrusted
from shardlab.exercise import answers
from shardlab.exercise.judge import judge_value
from shardlab.grade import cli, export, folder, inject, judge, junit, report, sandbox
from shardlab.grade.key import AnswerKey, AnswerKeyError, load_key, registry_key

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="评分沙箱只支持 Linux")


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
    assert "def v4p_gather_x" not in (stage / "shardlab" / "exercise" / "answers.py").read_text(encoding="utf-8")
    assert "def v4p_gather_x" in Path(answers.__file__).read_text(encoding="utf-8")  # 真正的参考算法在库里


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
    key = AnswerKey.from_entries(registry_key())
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
    """自检与评分器对“是不是数”只有一个答案：导出单元里运行的就是 judge.as_number 的源码"""
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
        invalid_in_check = judge_value(spec, value, 1.0).status == "invalid"
        assert ("invalid" in got[name]) == invalid_in_check, (name, got[name])
    assert {k for k, v in got.items() if "invalid" in v} == {"ab", "b", "s", "l", "a1", "c", "as"}


def test_key_must_agree_with_reference_functions(tmp_path):
    key = registry_key()
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
    assert not sandboxes(tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="评分沙箱只支持 Linux")
def test_a_whole_submission_timeout_says_which_cell_was_running(tmp_path):
    """以前：整份提交超时被杀时只说“整份提交超过 N s”，不说停在哪个单元（JUnit 报告还没写出来）"""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(c) for c in ("x = 1", "import time\nwhile True:\n    time.sleep(0.1)", "y = 2")
    ]
    path = tmp_path / "loop.ipynb"
    nbformat.write(nb, path)
    path.chmod(0o644)
    staged = sandbox.stage_library(tmp_path / "stage")
    limits = sandbox.Limits(cell_s=300, wall_s=25, memory_bytes=2 << 30, nproc=100, file_bytes=16 << 20)
    mode = "bwrap" if sandbox.detect_mode() == "bwrap" else "rlimit"
    run = sandbox.Sandbox(staged, limits, mode=mode, workdir=tmp_path).run(path)
    assert run.timed_out and run.junit is None and run.running == 1
    prep = inject.Prepared(5, nbformat.v4.new_notebook(), [inject.CellRef("student", k) for k in (1, 2, 3)])
    assert judge._running_when_killed(prep, run.running) == "；当时在运行第 2 个代码单元"
    assert judge._running_when_killed(prep, 7) == judge._running_when_killed(prep, None) == ""
    assert sandbox._running(b"x\n@@SHARDLAB-RUNNING=Cell 3\n@@SHARDLAB-RUNNING=Cell 99999999\n") == 3  # 过长的不认


def test_results_are_never_stale(tmp_path, key_file, monkeypatch):
    """缓存键含答案表、评分代码（练习系统与评分器）、种子与权重；成绩册只有这次找到的提交，以前的结果不进汇总"""
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
    changed = registry_key()
    changed["ch05-p1a"]["value"] *= 2
    key2 = tmp_path / "key2.json"
    key2.write_text(json.dumps(changed), encoding="utf-8")
    doc = run(
        key2, "a.ipynb"
    )  # 只评 a：b 的旧结果（旧答案表下的）不进这次的成绩册和汇总（以前：标成 current = no 照样导出）
    assert [r["student"] for r in doc["summary"]] == ["a"] and doc["meta"]["not_in_this_run"] == ["b.json"]
    assert (
        not (out / "feedback" / "b.md").exists() and (out / "stale-feedback" / "b.md").exists()
    )  # 不会被当成这次的发出去
    totals = [r["student"] for r in csv.DictReader((out / "totals.csv").open(encoding="utf-8-sig"))]
    wide = [r["id"] for r in csv.DictReader((out / "grades_wide.csv").open(encoding="utf-8-sig"))]
    assert totals == wide == ["a"]
    doc = run(key2, "a.ipynb", "b.ipynb")  # b 的结果是旧答案表下的：重评，a 用缓存
    assert mtimes()["b"] != first["b"] and {r["key"] for r in doc["submissions"]} == {load_key(key2).fingerprint}
    before = mtimes()
    monkeypatch.setattr("shardlab.grade.submission.code_fingerprint", lambda: "tolerance-changed")
    doc = run(key2, "a.ipynb", "b.ipynb")  # 练习系统的容差改了：评分代码的指纹变了，全部重评
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
    assert untrusted.clean("a\ud800b\x1b[2Jc\u202e") == "a\ufffdb[2Jc"
    assert untrusted.clean(b"\xff ok") == "\ufffd ok"
    assert len(untrusted.clean("x" * 10_000, 100)) < 130
    for bad in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", " =1", "\r=x"):
        assert untrusted.csv_cell(bad).startswith("'"), bad
    assert untrusted.csv_cell("正确") == "正确"
    evil = "<script>x</script> [a](http://e.x) ![i](http://e.x/i.png) http://e.x www.e.x a@b.cd ``` *b*"
    assert not render_tokens(untrusted.md_inline(evil)) & {"html_inline", "link_open", "image"}
    assert render_tokens(untrusted.md_block("```\n<b>x</b>\n```")) == {"fence"}


def test_once_interrupted_the_grader_ignores_ctrl_c_while_it_exits():
    """第一次 Ctrl-C 之后评分器存好结果、返回 130；Python 退出时会把自己的信号处理器换回默认的，那时的第二次 Ctrl-C
    曾让进程死于 SIGINT（退出码 -2，机器越快越容易碰上）。离开 _Interrupts 之后两个信号都应是 SIG_IGN"""
    code = (
        "import os, signal, sys\n"
        "from shardlab.grade.cli import _Interrupts\n"
        "with _Interrupts() as i:\n"
        "    i(signal.SIGINT, None)\n"
        "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.exit(130)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["True", "True"], proc.stderr
    assert proc.returncode == 130


@pytest.mark.skipif(os.geteuid() != 0, reason="要以 root 换 uid")
def test_sandbox_uids_never_belong_to_someone_else(monkeypatch, tmp_path):
    """评完一份会以沙箱的 uid 杀掉它的全部进程：随机 uid 碰上正在运行的进程（或 /etc/passwd 里的用户）时换一个"""
    busy = 250_123
    proc = subprocess.Popen(["setpriv", f"--reuid={busy}", f"--regid={busy}", "--clear-groups", "--", "sleep", "30"])
    try:
        wait_for(lambda: bool(sandbox.uid_processes(busy)), 10)
        picks = iter([busy - sandbox.UID_RANGE[0], 7])
        monkeypatch.setattr(sandbox.secrets, "randbelow", lambda n: next(picks))
        assert sandbox.free_uid() == sandbox.UID_RANGE[0] + 7  # 以前：直接用了 250123，评完把那个 sleep 一起杀了
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="要以 root 换 uid")
def test_uid_mode_probe_says_when_the_student_uid_cannot_run_python(tmp_path, monkeypatch):
    staged = sandbox.stage_library(tmp_path / "stage" / "lib")
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    (hidden / "python").symlink_to(sys.executable)
    monkeypatch.setattr(sandbox.sys, "executable", str(hidden / "python"))
    problem = sandbox.Sandbox(staged, sandbox.Limits(), mode="uid", workdir=tmp_path).probe()
    assert problem and "运行不了" in problem and "o+x" in problem  # 以前：每份提交都“评分进程崩溃（退出码 126）”、0 分


@pytest.mark.skipif(os.geteuid() != 0, reason="要以 root 运行（sudo）")
def test_outputs_go_back_to_the_instructor_who_ran_sudo(tmp_path, key_file, monkeypatch):
    """评分器要用 root 运行；以前写出的是 root 的 0640 文件，用 sudo 运行它的教师自己打不开成绩"""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    shutil.copy(FIXTURES / "not_json.ipynb", subs / "a.ipynb")
    out.mkdir()
    (out / "notes-of-another-user.txt").write_text("别人的", encoding="utf-8")
    os.chown(out / "notes-of-another-user.txt", 4242, 4242)
    monkeypatch.setenv("SUDO_UID", "4321")
    monkeypatch.setenv("SUDO_GID", "4321")
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    args = [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "--key", str(key_file), "--chapter", "5"]
    assert cli.main([*args, "--no-progress"]) == 0
    owners = {p.relative_to(out).as_posix(): (p.lstat().st_uid, p.lstat().st_gid) for p in out.rglob("*")}
    assert owners.pop("notes-of-another-user.txt") == (4242, 4242)  # 输出目录里原来就有的别人的文件不动
    assert out.stat().st_uid == 0  # 输出目录本来就在（不是评分器建的）：不交出去（以前：/tmp 这样的目录也会被交出去）
    assert owners and {k: v for k, v in owners.items() if v != (4321, 4321)} == {}


@pytest.mark.skipif(os.geteuid() != 0, reason="要以 root 改文件的属主")
def test_uid_mode_cleans_what_the_student_left_in_world_writable_directories(tmp_path):
    uid = 250_777
    shared = tmp_path / "ww"
    shared.mkdir()
    shared.chmod(0o1777)  # 所有人都能写的子目录（以前：只看 /tmp 顶层，这里面的留下来了）
    for path in (tmp_path / "top", shared / "left", shared / "deep"):
        path.mkdir() if path.name == "deep" else path.write_text("x")
        os.chown(path, uid, uid)
    (shared / "root-owned").write_text("留着")
    assert sandbox.remove_uid_files(uid, roots=[str(tmp_path)]) == 3
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["root-owned", "ww"]


def test_sandbox_workdirs_are_absolute(tmp_path, monkeypatch):
    """--out 给的是相对路径时，沙箱里的路径曾经拼错（uid 模式下全班“评分进程崩溃”）"""
    monkeypatch.chdir(tmp_path)
    box = sandbox.Sandbox(tmp_path, sandbox.Limits(), mode="uid", workdir=Path("out/.work"))
    assert box.workdir == tmp_path / "out" / ".work" and box.workdir.is_absolute()


_PROBE = """
import sys, tempfile
from pathlib import Path
from shardlab.grade import sandbox
if sys.argv[1] == "old":  # 以前只挂真实路径
    sandbox._python_binds = lambda: [(r, r) for r in sandbox._python_roots()]
work = Path(tempfile.mkdtemp(dir=sys.argv[2]))
work.chmod(0o755)
staged = sandbox.stage_library(work / "stage" / "lib")
(work / "stage").chmod(0o755)
print(sandbox.Sandbox(staged, sandbox.Limits(), mode="bwrap", workdir=work).probe())
"""


@pytest.mark.skipif(sandbox.bwrap_problem() is not None, reason="要 bubblewrap（以 root 运行）")
def test_a_virtualenv_reached_through_a_symlink_runs_inside_bwrap(tmp_path):
    """以前：虚拟环境经符号链接到达（~/course 是链接）时，沙箱里找不到 sys.executable，每份提交都“崩溃”、全班 0 分、退出码 0；
    bwrap 模式也不试运行。现在挂在评分器用的路径上，评分之前还在沙箱里试运行一次"""
    link = tmp_path / "venv"
    link.symlink_to(Path(sys.prefix).resolve())
    tmp_path.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    run = lambda how: subprocess.run(  # noqa: E731
        [str(link / "bin" / "python"), "-c", _PROBE, how, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert run("new").stdout.strip() == "None"
    old = run("old").stdout
    assert "沙箱（bubblewrap）里运行不了" in old and "not found" in old
