"""评分器被中断、被杀、两个评分器抢一个输出目录；以及真实的练习与解答笔记本按答案表评分"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from grading import (
    FIXTURES,
    ROOT,
    needs_sandbox,
    sandboxes,
    start_grader,
    wait_for,
)

from shardlab.grade import cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="评分沙箱只支持 Linux")


@pytest.fixture
def loop_class(tmp_path) -> Path:
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(FIXTURES / "not_json.ipynb", subs / "a_not_json.ipynb")
    shutil.copy(FIXTURES / "stubborn_loop.ipynb", subs / "b_loop.ipynb")
    shutil.copy(FIXTURES / "correct.ipynb", subs / "c_correct.ipynb")
    return subs


def _busy_grader(subs: Path, out: Path, key_file: Path, env: dict | None = None):
    """启动评分器，等到它评完 a_not_json、正在沙箱里跑那个吞掉中断的死循环"""
    proc = start_grader(subs, out, key_file, "--cell-timeout", "20", env=env)
    wait_for(lambda: (out / "results" / "a_not_json.json").exists() and sandboxes(out))
    return proc


def _rerun(subs: Path, out: Path, key_file: Path, env: dict | None = None) -> dict:
    """再评一次同一个班（死循环 2 s 就超时），要正常结束；返回成绩册"""
    proc = start_grader(subs, out, key_file, "--cell-timeout", "2", env=env)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads((out / "gradebook.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@needs_sandbox
def test_first_ctrl_c_starts_no_new_sandbox_and_keeps_what_was_graded(tmp_path, key_file, loop_class):
    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    (out / "feedback" / "c_correct.md").write_text("上一次的反馈", encoding="utf-8")
    proc = _busy_grader(loop_class, out, key_file)
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
    # 没评完的成绩不能导入：以前 canvas.csv 里没评到的人是 0 分、“没有提交”，summary.md 也不提中断
    assert not (out / "canvas.csv").exists() and not (out / "grades_wide.csv").exists()
    assert "评分被中断" in (out / "summary.md").read_text(encoding="utf-8")
    # 还没评的那份上一次的反馈不留在 feedback/ 里（以前会被当成这次的发给学生）
    assert not (out / "feedback" / "c_correct.md").exists() and (out / "stale-feedback" / "c_correct.md").exists()
    wait_for(lambda: not sandboxes(out), 30)


@pytest.mark.slow
@needs_sandbox
def test_second_ctrl_c_exits_at_once_and_the_next_run_finishes(tmp_path, key_file, loop_class):
    out = tmp_path / "out"
    proc = _busy_grader(loop_class, out, key_file)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # 第一次中断之后、评分器退出之前（以前：这时的第二次 Ctrl-C 打出 traceback，退出码 -2）
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - t0 < 5, err
    assert "Traceback" not in err  # 以前：第二次 Ctrl-C 打出 traceback，退出码 -2
    json.loads((out / "gradebook.json").read_text(encoding="utf-8"))  # 仍是完整的 JSON
    wait_for(lambda: not sandboxes(out), 30)
    doc = _rerun(loop_class, out, key_file)
    assert {r["student"] for r in doc["submissions"]} == {"a_not_json", "b_loop", "c_correct"}


@pytest.mark.slow
@needs_sandbox
def test_killed_grader_leaves_nothing_for_the_next_run(tmp_path, key_file, loop_class):
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = _busy_grader(loop_class, out, key_file, env)
    proc.kill()
    proc.communicate(timeout=30)
    wait_for(lambda: not sandboxes(out), 90)  # --die-with-parent：沙箱跟着结束（机器很忙时内核退出要几十秒）
    assert not list(tmp.iterdir())  # 以前：/tmp 里留下 shardlab-stage-*
    doc = _rerun(loop_class, out, key_file, env)
    assert ".work" in doc["meta"]["cleaned_up"]
    assert not list((out / ".work").glob("*")) and not list(tmp.iterdir())


@pytest.mark.slow
@needs_sandbox
def test_two_graders_on_one_output_folder(tmp_path, key_file, loop_class, capsys):
    out = tmp_path / "out"
    first = start_grader(loop_class, out, key_file, "--cell-timeout", "20")
    try:
        wait_for(lambda: (out / "results" / "a_not_json.json").exists())
        rc = cli.main(["--course", str(ROOT), str(loop_class), "--out", str(out), "--key", str(key_file)])
        assert rc == 2 and "另一个评分器" in capsys.readouterr().err
    finally:
        first.kill()
        first.communicate(timeout=30)
