"""评分器的基准：每份提交的时间（含沙箱）与 -j 2 的吞吐量；可选地在同一次运行里比较 otter-grader 与 nbgrader

    .venv/bin/python benchmarks/grade_bench.py [--n 30] [--otter /tmp/venv-otter/bin] [--nbgrader /tmp/venv-nbg/bin]

提交是 N 份“部分正确”的第 5 章夹具（tests/fixtures/grader/partial.ipynb）。目标：中位数 ≤ 3 s/份（-j 1，含隔离），
-j 2 时 ≥ 30 份/分钟。otter / nbgrader 用各自的格式写一个等价的三题笔记本（同样先 import shardlab/JAX），
只在给出它们的虚拟环境时运行；它们不装进项目的 .venv。
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "grader" / "partial.ipynb"
# otter / nbgrader 的内核要能 import shardlab（它们的虚拟环境里另装了 jax）
OTHER_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "COURSE_PROFILE": "cpu", "JUPYTER_PATH": ""}


def reference_key(path: Path) -> Path:
    from shardlab.grade.key import registry_key

    path.write_text(json.dumps(registry_key()), encoding="utf-8")
    return path


def run_shardlab(tmp: Path, n: int, jobs: int) -> dict:
    subs = tmp / f"subs-j{jobs}"
    subs.mkdir()
    for k in range(n):
        shutil.copy(FIXTURE, subs / f"s{k:03d}.ipynb")
    out = tmp / f"out-j{jobs}"
    key = reference_key(tmp / "key.json")
    cmd = [
        sys.executable,
        "-m",
        "shardlab.grade",
        str(subs),
        "--out",
        str(out),
        "--key",
        str(key),
        "--course",
        str(ROOT),
    ]
    start = time.monotonic()
    subprocess.run([*cmd, "-j", str(jobs), "--no-progress"], check=True, capture_output=True)
    wall = time.monotonic() - start
    doc = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    per = [r["wall_s"] for r in doc["submissions"]]
    return {
        "tool": f"shardlab-grade -j {jobs}",
        "isolation": doc["meta"]["isolation"],
        "n": n,
        "wall_s": round(wall, 2),
        "median_s": round(statistics.median(per), 2),
        "p90_s": round(sorted(per)[int(0.9 * (len(per) - 1))], 2),
        "per_minute": round(60 * n / wall, 1),
    }


# ---- otter-grader：一个等价的三题笔记本（Otter Assign v1 格式） ----
SETUP = "from shardlab import runtime\nrt = runtime.setup()\nfrom shardlab import cost"


def _nb(cells: list[tuple[str, str, dict]]) -> dict:
    out = []
    for kind, src, meta in cells:
        cell = {"cell_type": kind, "metadata": meta, "source": src}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        out.append(cell)
    return {
        "cells": out,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 4,
    }


def _env(bindir: Path) -> dict:
    return {**OTHER_ENV, "PATH": f"{bindir}:{os.environ['PATH']}"}


def run_otter(tmp: Path, bindir: Path, n: int) -> dict:
    work = tmp / "otter"
    work.mkdir()
    cells = [
        ("raw", "# ASSIGNMENT CONFIG\nrequirements: null\nexport_cell: false\ngenerate: true\nrun_tests: false\n", {})
    ]
    cells.append(("code", SETUP + "\nimport otter\ngrader = otter.Notebook()", {}))
    for q, value in (("q1", "2.0"), ("q2", "0.5"), ("q3", "16.0")):
        cells += [
            ("raw", f"# BEGIN QUESTION\nname: {q}\npoints: 1", {}),
            ("raw", "# BEGIN SOLUTION", {}),
            ("code", f"{q} = {value} # SOLUTION", {}),
            ("raw", "# END SOLUTION", {}),
            ("raw", "# BEGIN TESTS", {}),
            ("code", f"assert abs({q} - {value}) < 1e-6", {}),
            ("raw", "# END TESTS", {}),
            ("raw", "# END QUESTION", {}),
        ]
    (work / "master.ipynb").write_text(json.dumps(_nb(cells)), encoding="utf-8")
    subprocess.run(
        [str(bindir / "otter"), "assign", "master.ipynb", "dist"],
        cwd=work,
        check=True,
        capture_output=True,
        env=_env(bindir),
    )
    zips = list((work / "dist" / "autograder").glob("*.zip"))
    student = work / "dist" / "student" / "master.ipynb"
    times = []
    for k in range(n):
        sub = work / f"sub{k}.ipynb"
        shutil.copy(student, sub)
        (work / f"o{k}").mkdir()
        start = time.monotonic()
        subprocess.run(
            [str(bindir / "otter"), "run", "-a", str(zips[0]), "-o", str(work / f"o{k}"), str(sub)],
            cwd=work,
            check=True,
            capture_output=True,
            env=_env(bindir),
        )
        times.append(time.monotonic() - start)
    return {"tool": "otter run (no isolation)", "n": n, "median_s": round(statistics.median(times), 2)}


def run_nbgrader(tmp: Path, bindir: Path, n: int) -> dict:
    work = tmp / "nbg"
    (work / "source" / "ps1").mkdir(parents=True)
    cells = [("code", SETUP, {})]
    for k, (q, value) in enumerate((("q1", "2.0"), ("q2", "0.5"), ("q3", "16.0"))):
        sol = {
            "nbgrader": {"solution": True, "grade": False, "locked": False, "grade_id": f"s{k}", "schema_version": 3}
        }
        test = {
            "nbgrader": {
                "solution": False,
                "grade": True,
                "locked": True,
                "points": 1,
                "grade_id": f"t{k}",
                "schema_version": 3,
            }
        }
        cells += [
            ("code", f"### BEGIN SOLUTION\n{q} = {value}\n### END SOLUTION", sol),
            ("code", f"assert abs({q} - {value}) < 1e-6", test),
        ]
    (work / "source" / "ps1" / "ps1.ipynb").write_text(json.dumps(_nb(cells)), encoding="utf-8")
    (work / "nbgrader_config.py").write_text(
        textwrap.dedent("""\
            c = get_config()
            c.CourseDirectory.course_id = "bench"
            c.CourseDirectory.db_assignments = [dict(name="ps1")]
            c.CourseDirectory.db_students = [dict(id=f"s{k}") for k in range(200)]
            c.ExecutePreprocessor.timeout = 120
        """),
        encoding="utf-8",
    )
    nbg = str(bindir / "nbgrader")
    subprocess.run(
        [nbg, "generate_assignment", "ps1", "--force"], cwd=work, check=True, capture_output=True, env=_env(bindir)
    )
    for k in range(n):
        d = work / "submitted" / f"s{k}" / "ps1"
        d.mkdir(parents=True)
        shutil.copy(work / "release" / "ps1" / "ps1.ipynb", d / "ps1.ipynb")
    start = time.monotonic()
    subprocess.run([nbg, "autograde", "ps1", "--force"], cwd=work, check=True, capture_output=True, env=_env(bindir))
    wall = time.monotonic() - start
    return {
        "tool": "nbgrader autograde (no isolation)",
        "n": n,
        "median_s": round(wall / n, 2),
        "wall_s": round(wall, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--otter", type=Path, help="装有 otter-grader 的虚拟环境的 bin 目录")
    parser.add_argument("--nbgrader", type=Path, help="装有 nbgrader 的虚拟环境的 bin 目录")
    parser.add_argument("--json", type=Path, help="把结果也写进这个文件")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        tmp = Path(tmp)
        rows.append(run_shardlab(tmp, max(8, args.n // 3), jobs=1))
        rows.append(run_shardlab(tmp, args.n, jobs=2))
        for name, fn, path in (("otter", run_otter, args.otter), ("nbgrader", run_nbgrader, args.nbgrader)):
            if path is None:
                continue
            try:
                rows.append(fn(tmp, path, max(5, args.n // 6)))
            except (subprocess.CalledProcessError, OSError) as exc:
                err = getattr(exc, "stderr", b"") or b""
                rows.append({"tool": name, "error": f"{exc}: {err.decode(errors='replace')[-500:]}"})
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
