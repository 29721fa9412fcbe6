"""评分器测试共用的东西：夹具目录、限制、沙箱探测，以及启动评分器、等条件成立的小工具

分在 test_grade.py（单元与小的端到端）、test_grade_class.py（有敌意的班级）、test_grade_interrupts.py（中断、被杀与两个评分器）
三个文件里，让 pytest-xdist 把它们分给不同的进程。
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from shardlab.grade import inject, sandbox

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "grader"
NON_UTF8 = b"\xff\xfe-\xe5\xad\xa6\xe7\x94\x9f.ipynb"  # 不是合法 UTF-8 的文件名
SEED = 7
LIMITS = ["--cell-timeout", "4", "--wall", "60", "--memory-mb", "3072", "--nproc", "160"]

SANDBOXED = sys.platform == "linux" and sandbox.detect_mode() == "bwrap"
UNSAFE_WITHOUT_SANDBOX = {"fork_bomb", "kill_grader", "read_nearby"}
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap（.ci/run 会安装）")


def sandboxes(under: Path) -> list[str]:
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


def statuses(res: dict) -> dict[str, str]:
    return {p["id"]: p["status"] for p in res["problems"]}


def ch05_ids() -> list[str]:
    return [a.id for a in inject.chapter_answers(5)]


def start_grader(subs: Path, out: Path, key_file: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "shardlab.grade", "--course", str(ROOT), str(subs), "--out", str(out)]
    cmd += ["--key", str(key_file), "--no-progress", "--chapter", "5", *extra]
    return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)


def wait_for(cond, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "等不到"
        time.sleep(0.05)


def render_tokens(markdown: str) -> set[str]:
    """一段 Markdown 渲染时出现的记号种类（html_inline、link_open……）"""
    md = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["linkify", "table", "strikethrough"])

    def walk(tokens):
        for t in tokens:
            yield t
            yield from walk(t.children or [])

    return {t.type for t in walk(md.parse(markdown))}
