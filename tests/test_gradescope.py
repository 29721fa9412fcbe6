"""Gradescope 的自动评分器：zip 的内容，以及在一个伪造的 /autograder 目录里运行 run_autograder 得到合乎格式的 results.json"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from shardlab import answers, variants
from shardlab.grade import gradescope

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import assign_bench  # noqa: E402

# Gradescope 文档（Autograder Specifications）里 results.json 的格式：我们写出的字段
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["tests"],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score", "max_score"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "visibility": VISIBILITY,
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("gradescope")
    roster_path, secret, own, pub, _ = assign_bench.make_class(work, 2, "ch05")
    zip_path = work / "autograder.zip"
    rc = gradescope.main(["--secret-file", str(secret), "--out", str(zip_path), "--chapter", "5",
                          "--roster", str(roster_path), "--course", str(ROOT)])  # fmt: skip
    assert rc == 0
    return work, zip_path, secret, own, pub


def _fake_tree(tmp_path: Path, zip_path: Path, notebook: Path | None, metadata: dict | None) -> Path:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    if notebook is not None:
        shutil.copy(notebook, root / "submission" / notebook.name)
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    return root


def _run_autograder(root: Path) -> dict:
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), SHARDLAB_PYTHON=sys.executable,
               JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))  # fmt: skip
    proc = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, RESULTS_SCHEMA)
    return results


def _metadata(sid: str) -> dict:
    return {
        "id": 1,
        "assignment": {"id": 2, "title": "第 5 章"},
        "users": [{"email": "x@example.com", "id": 3, "name": "学生", "sid": sid}],
    }


def test_zip_has_the_documented_layout_and_is_reproducible(built, tmp_path):
    work, zip_path, secret, _, _ = built
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
    assert {"setup.sh", "run_autograder", "requirements.txt", "key/answer_key.json", "key/secret"} <= names
    assert "lib/shardlab/grade/gradescope.py" in names and "lib/shardlab/answers.py" in names
    assert "exercises/ch05_exercises.ipynb" in names and "key/roster.csv" in names
    assert modes["run_autograder"] == modes["setup.sh"] == 0o755
    assert not any("__pycache__" in n for n in names)
    again = tmp_path / "again.zip"
    assert gradescope.main(["--secret-file", str(secret), "--out", str(again), "--chapter", "5",
                            "--roster", str(work / "roster.csv"), "--course", str(ROOT)]) == 0  # fmt: skip
    assert again.read_bytes() == zip_path.read_bytes()


@pytest.mark.slow
def test_run_autograder_grades_against_the_students_variant(built, tmp_path):
    work, zip_path, secret, own, pub = built
    notebook = own / "s001" / "ch05_exercises.ipynb"
    results = _run_autograder(_fake_tree(tmp_path / "own", zip_path, notebook, _metadata("s001")))
    ids = [a.id for a in answers.chapter_answers("ch05")]
    assert [t["name"].split("：")[0] for t in results["tests"]] == ids  # 每道题一项
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] == 1 for t in results["tests"])
    assert results["score"] == len(ids) and "s001" in results["output"]

    copied = _run_autograder(_fake_tree(tmp_path / "pub", zip_path, pub / "s001_ch05.ipynb", _metadata("s001")))
    varies = {a.id for a in answers.chapter_answers("ch05") if a.kind == "value" and a.varies}
    for t in copied["tests"]:
        aid = t["name"].split("：")[0]
        if aid in varies:
            assert t["score"] == 0 and "发布版" in t["output"], t
    assert copied["score"] == len(ids) - len(varies)

    other = _run_autograder(_fake_tree(tmp_path / "other", zip_path, notebook, _metadata("s000")))
    p0, p1 = (variants.for_student(secret.read_bytes(), "ch05", s) for s in ("s000", "s001"))
    differ = [a for a in varies if abs(answers.get(a).value(p0) / answers.get(a).value(p1) - 1) > 0.02]
    flagged = [t for t in other["tests"] if "另一位同学" in t["output"]]
    assert len(flagged) == len(differ) > 0


def test_missing_metadata_or_unknown_student_or_no_notebook_still_writes_results(built, tmp_path):
    _, zip_path, _, own, _ = built
    notebook = own / "s001" / "ch05_exercises.ipynb"
    for name, nb, meta, words in [
        ("nometa", notebook, None, "submission_metadata.json"),
        ("nosid", notebook, {"users": [{"name": "x"}]}, "学号"),
        ("stranger", notebook, _metadata("nobody"), "不在花名册"),
        ("empty", None, _metadata("s001"), "没有 .ipynb"),
    ]:
        root = _fake_tree(tmp_path / name, zip_path, nb, meta)
        res = gradescope.run(root)
        jsonschema.validate(res, RESULTS_SCHEMA)
        assert res["score"] == 0 and words in res["output"], (name, res["output"])
        assert json.loads((root / "results" / "results.json").read_text(encoding="utf-8")) == res


def test_student_id_comes_from_sid_then_email():
    assert gradescope.student_of({"users": [{"sid": " 2024001 ", "email": "a@b"}]}) == "2024001"
    assert gradescope.student_of({"users": [{"sid": "", "email": "a@b"}]}) == "a@b"
    assert gradescope.student_of({"users": []}) is None and gradescope.student_of([]) is None


def test_filled_notebook_fixture_is_a_valid_notebook(built):
    _, _, _, own, _ = built
    nbformat.validate(nbformat.read(own / "s000" / "ch05_exercises.ipynb", 4))
