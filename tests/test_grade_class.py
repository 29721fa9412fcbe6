"""评分器对一个有敌意的班级：tests/fixtures/grader/ 的每种坏输入、符号链接与怪文件名，加上几份好的提交，一次评完"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grading import (
    FIXTURES,
    LIMITS,
    NON_UTF8,
    ROOT,
    SANDBOXED,
    SEED,
    UNSAFE_WITHOUT_SANDBOX,
    ch05_ids,
    needs_sandbox,
    render_tokens,
    sandboxes,
    statuses,
)

from shardlab.grade import cli, folder, inject
from shardlab.grade.status import TEXT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="评分沙箱只支持 Linux")


LONG_NAME = "张" * 79 + ".ipynb"  # 237 字节：临时结果文件的名字曾经因此超过 255 字节
FORMULA_NAME = '=HYPERLINK("evil.example")+@-.ipynb'
ESCAPE_NAME = "\x1b[31m\x1b]0;t\x07red.ipynb"
GOOD = ["s01", "s02"]  # 每个学生一个子目录的好提交
# 好提交（correct.ipynb 的副本）一共十份：correct 本身、两个子目录、alice.IPYNB、bob-2、bob.IPYNB、三个怪名字、非 UTF-8 的名字
N_GOOD = 10


def hostile_class(subs: Path) -> dict[str, str]:
    """在 subs 里摆出一个有敌意的班级：夹具之外，符号链接、FIFO、设备、目录、撞名的文件、超长和带转义序列的文件名、
    2000 万字节的空单元、嵌套极深的 JSON，以及每个学生一个子目录的好提交（连同别的副本一共 N_GOOD 份）。返回被忽略的文件 → 期望的原因片段"""
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
    rows = list(csv.DictReader((batch["out"] / "gradebook.csv").open(encoding="utf-8-sig")))
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
    assert not sandboxes(batch["out"])  # 沙箱的进程全都结束了


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
    extra = 1 + len(GOOD) + 5 + 3 + 2  # 非 UTF-8 名字、子目录里好的、alice×2 与 bob×3、三个怪名字、两个巨大的
    expected = len(list(FIXTURES.glob("*.ipynb"))) + extra - (0 if SANDBOXED else len(UNSAFE_WITHOUT_SANDBOX))
    assert len(students) == expected
    assert not (out / ".work").exists() or not list((out / ".work").iterdir())  # 临时目录都在输出目录下，已清掉


@pytest.mark.slow
def test_rerun_skips_and_force_regrades(batch, key_file, capsys, tmp_path):
    out, subs = tmp_path / "out", batch["subs"]
    shutil.copytree(batch["out"], out)  # 别的测试还要读这一批的成绩册：在副本上重跑
    before = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    # 崩溃的不用缓存（可能是评分环境的错，修好之后要重评）；别的都跳过
    crashed = {p.name for p in (out / "results").glob("*.json")
               if json.loads(p.read_text(encoding="utf-8"))["status"] in ("crashed", "grader-error")}  # fmt: skip
    assert crashed and len(crashed) < len(before)
    mode = [] if SANDBOXED else ["--sandbox", "rlimit"]
    rc = cli.main(
        [*mode, "--course", str(ROOT), str(subs), "--out", str(out), "--key", str(key_file), "--chapter", "5", *LIMITS]
    )
    assert rc == 0
    now = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    assert {k: v for k, v in now.items() if k not in crashed} == {k: v for k, v in before.items() if k not in crashed}
    assert all(now[k] != before[k] for k in crashed)
    assert f"跳过已评 {len(before) - len(crashed)} 份" in capsys.readouterr().err
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
    assert len(doc["submissions"]) == 2  # 成绩册只有这次列出的提交；别的结果文件还在 results/，不进汇总
    assert len(doc["meta"]["not_in_this_run"]) == len(before) - 2


# ---- 有敌意的班级（issue：评分器以外的部分）----
def _full(res: dict) -> bool:
    return res["status"] == "graded" and res["points"] == res["max_points"] == len(ch05_ids())


@pytest.mark.slow
def test_ten_good_submissions_in_a_hostile_class_get_full_marks(batch):
    digest = hashlib.sha256((FIXTURES / "correct.ipynb").read_bytes()).hexdigest()
    good = [r for r in batch["doc"]["submissions"] if r.get("sha256") == digest]
    assert len(good) == N_GOOD, sorted(r["file"] for r in good)
    assert all(_full(r) for r in good), [(r["file"], statuses(r)) for r in good if not _full(r)]
    for sid in GOOD:
        res = batch["res"][sid]
        assert _full(res), (sid, statuses(res))
        assert res["file"] == f"{sid}/ch05_exercises.ipynb"  # 每个学生一个子目录：id 是目录名，成绩册带相对路径
    rows = list(csv.DictReader((batch["out"] / "gradebook.csv").open(encoding="utf-8-sig")))
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


@pytest.mark.slow
def test_hostile_text_is_inert_everywhere_an_instructor_looks(batch):
    out = batch["out"]
    res = batch["res"]["hostile_text"]
    st_ = statuses(res)
    assert st_["ch05-p3-fn"] == "error" and st_["ch05-p1a"] == "invalid"
    assert res["points"] == res["max_points"] - 2
    for row in csv.reader((out / "gradebook.csv").open(encoding="utf-8-sig")):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    rows = list(csv.DictReader((out / "gradebook.csv").open(encoding="utf-8-sig")))
    assert any("HYPERLINK" in r["message"] for r in rows if r["student"] == "hostile_text")
    assert any(r["file"].startswith("'=HYPERLINK") for r in rows)
    for fb in (out / "feedback").glob("*.md"):
        text = fb.read_text(encoding="utf-8")
        kinds = render_tokens(text)
        assert not kinds & {"html_inline", "html_block", "link_open", "image"}, (fb.name, kinds)
        assert not any(ch in text for ch in "\x1b\x07\u202e"), fb.name
    fb = (out / "feedback" / "hostile_text.md").read_text(encoding="utf-8")
    assert "HYPERLINK" in fb and "onerror" in fb  # 文字还在（学生能看到自己的错误），只是不起作用
    for path in [out / "gradebook.json", *(out / "results").glob("*.json")]:
        json.loads(path.read_text(encoding="utf-8"))
        assert "\\u001b" not in path.read_text(encoding="utf-8")
