"""评分沙箱里的 pytest 插件（``-p shardlab.grade.plugin``）：把导出单元的输出放进 JUnit 报告

nbval 的 JUnit 报告只说每个单元过没过，不含单元的输出。评分器注入的导出单元（标签 ``autograder-export``）
打印一行 ``@@SHARDLAB-ANSWERS@@{...}``；本插件把这一行作为该测试用例的属性（``<property name="shardlab-export">``）
写进 JUnit，并把过长的失败信息截短，免得学生打印的几兆字节挤爆报告。

这个插件和学生的内核运行在同一个沙箱里，学生的代码理论上能伪造它的输出；那只能改变学生自己提交的数，
不能得到参考答案（参考答案从不进入沙箱），所以与把那些数直接写进笔记本等价。判定只在评分器进程里做。
"""

from __future__ import annotations

import os

import pytest
from nbval.kernel import RunningKernel

from shardlab.grade.markers import EXPORT_TAG, MARKER, PROGRESS_FD, RUNNING_MARK

_state = {"died": False}


def pytest_configure(config):
    """记下内核是不是在 nbval 去中断它之前就已经退出了（os._exit、杀掉自己）：nbval 只会报超时"""
    try:
        os.set_inheritable(PROGRESS_FD, False)  # 内核和学生启动的进程拿不到评分器的管道
    except OSError:
        pass
    original = RunningKernel.interrupt

    def interrupt(self):
        if not self.is_alive():
            _state["died"] = True
        return original(self)

    RunningKernel.interrupt = interrupt


def pytest_runtest_logstart(nodeid, location):
    """每个单元开始之前告诉评分器（fd 3 是沙箱外评分器读的管道；pytest 自己的输出进了日志）：整份提交超时被杀时，
    评分器知道当时在跑哪一个单元（以前只说“整份提交超时”）。内核进程不继承 fd 3"""
    try:
        os.write(PROGRESS_FD, f"\n{RUNNING_MARK}{nodeid.rsplit('::', 1)[-1][:40]}\n".encode())
    except OSError:
        pass


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        if hasattr(item, "output_timeout"):
            item.output_timeout = OUTPUT_TIMEOUT_S


MAX_EXPORT_CHARS = 200_000
MAX_LONGREPR_CHARS = 4_000
MAX_LINE_CHARS = 1_000
OUTPUT_TIMEOUT_S = 2  # nbval 默认 5 s：收到回复（或中断）之后再等输出的时间


def _export_line(outputs) -> str | None:
    text = "".join(o.get("text", "") for o in outputs or () if o.get("output_type") == "stream")
    lines = [line for line in text.splitlines() if line.startswith(MARKER)]
    return lines[-1][:MAX_EXPORT_CHARS] if lines else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    cell = getattr(item, "cell", None)
    if call.when == "call" and cell is not None:
        tags = cell.get("metadata", {}).get("tags", [])
        if EXPORT_TAG in tags:
            line = _export_line(getattr(item, "test_outputs", None))
            if line is not None:
                item.user_properties.append(("shardlab-export", line))
        if _state.pop("died", False):
            item.user_properties.append(("shardlab-kernel", "died"))
            _state["died"] = False
        elif getattr(item, "parent", None) is not None and getattr(item.parent, "kernel", None) is not None:
            if not item.parent.kernel.is_alive() and not item.parent.timed_out:
                item.user_properties.append(("shardlab-kernel", "died"))
    if report.failed and report.longrepr is not None:
        text = "\n".join(
            line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
            for line in str(report.longrepr).splitlines()
        )
        report.longrepr = text
        if len(text) > MAX_LONGREPR_CHARS:
            half = MAX_LONGREPR_CHARS // 2
            report.longrepr = text[:half] + f"\n…（截去 {len(text) - MAX_LONGREPR_CHARS} 个字符）…\n" + text[-half:]
