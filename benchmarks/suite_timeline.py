"""make test 花在哪里：跑一遍 make test，记下每个测试文件在哪个 xdist 进程里、何时开始、何时结束

    .venv/bin/python benchmarks/suite_timeline.py [--jobs 2] [--out build/suite_timeline.json] [-- 其他 pytest 参数]

打印总墙钟时间、`time` 式的 CPU 时间（本进程的子进程合计：沙箱与浏览器也算在内）、每个文件的时间线，
以及每个进程最后一个文件结束的时刻（两者相差多少说明排得均不均）。目标：make test ≤ 2 分 25 秒（issue 15）。
这里不断言任何东西：它是量时间的工具，不是测试。
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# 每个 xdist 进程里加载的小插件：每个测试文件的开始、结束时刻与进程 id（墙钟时间，time.time()）
PLUGIN = """
import json, os, time
import pytest

_files = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    entry = _files.setdefault(str(item.path.relative_to(item.config.rootpath)), [start, start])
    entry[1] = time.time()


def pytest_sessionfinish(session):
    out = os.environ["SHARDLAB_TIMELINE_DIR"]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(out, worker + ".json"), "w") as f:
        json.dump(_files, f)
"""


def run(jobs: int, extra: list[str]) -> dict:
    """运行 ``make test JOBS=jobs``（README 的测试命令本身），计时插件经 PYTEST_ADDOPTS 加进去"""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "shardlab_timeline_plugin.py").write_text(PLUGIN, encoding="utf-8")
        addopts = " ".join(
            ["-p shardlab_timeline_plugin", *map(shlex.quote, extra), os.environ.get("PYTEST_ADDOPTS", "")]
        )
        env = dict(
            os.environ,
            SHARDLAB_TIMELINE_DIR=tmp,
            PYTHONPATH=os.pathsep.join([tmp, os.environ.get("PYTHONPATH", "")]),
            PYTEST_ADDOPTS=addopts.strip(),
        )
        cmd = ["make", "test", f"JOBS={jobs}"]
        start = time.time()
        proc = subprocess.run(cmd, cwd=ROOT, env=env)
        wall = time.time() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        files = []
        for part in Path(tmp).glob("*.json"):
            for name, (t0, t1) in json.loads(part.read_text(encoding="utf-8")).items():
                files.append({"worker": part.stem, "file": name, "start_s": t0 - start, "end_s": t1 - start})
    files.sort(key=lambda f: f["start_s"])
    return {
        "returncode": proc.returncode,
        "wall_s": wall,
        "cpu_user_s": usage.ru_utime,
        "cpu_sys_s": usage.ru_stime,
        "jobs": jobs,
        "files": files,
    }


def report(res: dict) -> str:
    lines = [
        f"pytest 退出码 {res['returncode']}；墙钟 {res['wall_s']:.0f} s（目标 ≤ 145 s）；"
        f"CPU user {res['cpu_user_s']:.0f} s + sys {res['cpu_sys_s']:.0f} s（{res['jobs']} 个进程）",
        "",
        f"{'进程':6} {'开始':>7} {'结束':>7} {'用时':>7}  文件",
    ]
    for f in res["files"]:
        if f["end_s"] - f["start_s"] >= 1:
            span = f["end_s"] - f["start_s"]
            lines.append(f"{f['worker']:6} {f['start_s']:7.1f} {f['end_s']:7.1f} {span:7.1f}  {f['file']}")
    last = {}
    for f in res["files"]:
        last[f["worker"]] = max(last.get(f["worker"], 0), f["end_s"])
    lines += ["", "每个进程最后结束于：" + "，".join(f"{w} {t:.0f} s" for w, t in sorted(last.items()))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="xdist 进程数（make test 的 JOBS，默认 2）")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "suite_timeline.json")
    ap.add_argument("pytest_args", nargs="*", help="交给 pytest 的其他参数（写在 -- 之后）")
    args = ap.parse_args(argv)
    res = run(args.jobs, args.pytest_args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, ensure_ascii=False, indent=1), encoding="utf-8")
    print(report(res))
    print(f"\n写在 {args.out}")
    return res["returncode"]


if __name__ == "__main__":
    sys.exit(main())
