"""练习与解答：答案表由解答笔记本算出并与登记表一致；把解答的答案填进练习，所有自检都通过；填进常见失误，得到对应的提示；
真实的练习与解答交给评分器，解答满分、练习零分"""

import json
import os
import shutil
import sys
from pathlib import Path

import jupytext
import pytest
from grading import SANDBOXED, statuses  # tests/grading.py：评分器测试共用的东西
from nbclient import NotebookClient

from shardlab.exercise import answers
from shardlab.grade import cli, inject
from shardlab.grade.course import Course
from shardlab.grade.key import load_key

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = Course(ROOT).solutions()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SOLUTIONS, reason="还没有解答笔记本"),
]


@pytest.fixture(scope="module")
def key_path(tmp_path_factory) -> Path:
    """make answer-key 走的路：load_key 执行解答笔记本、算出答案表并缓存（评分器没给 --key 时也这样做）"""
    path = tmp_path_factory.mktemp("key") / "answer_key.json"
    load_key(None, Course(ROOT), cache=path)
    return path


@pytest.fixture(scope="module")
def key(key_path) -> dict:
    return load_key(key_path).entries


def test_answer_key_covers_every_id_and_matches_the_registry(key):
    assert set(key) == set(answers.ANSWERS)
    for aid, entry in key.items():
        spec = answers.get(aid)
        assert entry["unit"] == spec.unit
        if spec.kind == "function":
            for case in entry["cases"]:
                assert case["value"] == pytest.approx(spec.reference(*case["args"]), rel=1e-9), aid
        else:
            assert entry["value"] == pytest.approx(spec.value(), rel=1e-9, abs=1e-15), aid


def _answer_cells(nb):
    cells = {}
    for k, cell in enumerate(nb.cells):
        for tag in cell.metadata.get("tags", []):
            if tag in answers.ANSWERS:
                cells[tag] = k
    return cells


def _run_filled(chapter: int, fill) -> str:
    """把练习笔记本里每个答案单元换成 fill(spec, 解答单元) 的源码，执行，返回全部输出文本"""
    exercise = ROOT / "exercises" / f"ch{chapter:02d}_exercises.md"
    nb = jupytext.read(exercise)
    solution = jupytext.read(SOLUTIONS[chapter])
    sol_cells = _answer_cells(solution)
    for aid, k in _answer_cells(nb).items():
        nb.cells[k].source = fill(answers.get(aid), solution.cells[sol_cells[aid]].source)
    os.environ.setdefault("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(exercise.parent)}}
    ).execute()
    return "\n".join(
        out.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for out in c.outputs
        if out.get("output_type") == "stream"
    )


@pytest.mark.parametrize("chapter", sorted(SOLUTIONS))
def test_exercises_filled_with_the_solutions_answers_pass_every_check(key, chapter):
    def fill(spec, solution_source):
        if spec.kind == "function":
            return solution_source  # 函数答案：解答里的函数定义
        return f"{spec.var} = {key[spec.id]['value']!r}"

    text = _run_filled(chapter, fill)
    ids = [a for a in answers.ANSWERS if answers.get(a).chapter == chapter]
    for aid in ids:
        assert f"✓ {aid}：正确" in text, aid
    assert "✗" not in text and "未作答" not in text


@pytest.mark.parametrize("chapter", sorted(SOLUTIONS))
def test_planted_slips_get_the_right_hints(key, chapter):
    """时间答案用 µs 写、字节答案用 MB 写，其余的值乘 3.7：自检指出失误，并且不泄露答案"""

    def fill(spec, solution_source):
        if spec.kind == "function":
            return f"def {spec.var}(*args):\n    return -1.0"
        value = key[spec.id]["value"]
        planted = value * {"s": 1e6, "B": 1e-6}.get(spec.unit, 3.7) if value else 1.0
        return f"{spec.var} = {planted!r}"

    text = _run_filled(chapter, fill)
    for aid in (a for a in answers.ANSWERS if answers.get(a).chapter == chapter):
        spec, value = answers.get(aid), key[aid].get("value")
        line = next(ln for ln in text.splitlines() if ln.split("：")[0].endswith(f" {aid}"))
        assert line.startswith("✗"), line
        if spec.unit == "s" and value:
            assert "微秒（µs）" in line, line
        if spec.unit == "B" and value:
            assert "MB" in line, line
        if value:
            assert repr(value) not in line and f"{value:g}" not in line


# ---- 真实的练习与解答（答案表由 make answer-key 的逻辑从解答算出） ----
@pytest.mark.slow
def test_real_exercises_and_solutions(tmp_path, key_path):
    notebooks = [ROOT / "exercises" / f"ch0{c}_exercises.ipynb" for c in (5, 6)]
    notebooks += [ROOT / "solutions" / f"ch0{c}_solutions.ipynb" for c in (5, 6)]
    if not all(p.exists() for p in notebooks):
        pytest.skip("练习或解答笔记本还不在")
    key = load_key(None, Course(ROOT), cache=key_path).entries  # 夹具已由解答算出并缓存：新鲜的答案表不再重建
    assert set(key) == set(answers.ANSWERS)
    mtime = key_path.stat().st_mtime_ns
    load_key(None, Course(ROOT), cache=key_path)
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
