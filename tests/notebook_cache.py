"""nbval 跑配对的 .ipynb 时记下每个单元的输出，存进整本书构建用的 jupyter-cache：笔记本只执行一次

``make test`` 用 nbval（``--nbval-lax``）执行 book/、solutions/、exercises/ 里每个配对的 ``.ipynb``（学生在 Colab 打开的正是它们），
同一次运行里还要从 ``.md`` 构建整本书。书的配置是 ``execute_notebooks: cache``：myst-nb 先按代码单元的源码、单元元数据与
kernelspec 算出笔记本的散列，在 jupyter-cache 里找到同样的笔记本就直接用它的输出。配对的 ``.md`` 与 ``.ipynb`` 的代码单元
逐字相同（``tools/nbsync.py --check`` 保证），所以散列相同；这个插件把 nbval 的执行结果按 nbclient 的格式写进那个缓存，
构建就不再执行第二遍。任何一个单元失败、被跳过、只选了部分单元，或者遇到这里不处理的消息（``clear_output`` 等），
这个笔记本就不写进缓存，构建照常自己执行它（结果一样，只是慢一些）。

每个笔记本跑完（不论成败）都在 ``done_dir`` 里留一个标记，构建等标记齐了才开始（见 conftest.py 的 ``BookBuild``）。
"""

from __future__ import annotations

import copy
import hashlib
import time
from pathlib import Path

import pytest
from filelock import FileLock

_PLAIN_OUTPUTS = {"stream", "display_data", "execute_result", "error"}
_IGNORED = {"status", "execute_input", "execute_reply"}


def is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and type(item).__module__ == "nbval.plugin"


def marker_name(path: Path) -> str:
    return hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:16] + ".done"


class _Notebook:
    """一个笔记本在 nbval 里的执行记录"""

    def __init__(self, collector):
        self.collector = collector
        self.outputs: dict[int, list] = {}  # 代码单元序号 → nbclient 格式的输出
        self.cacheable = True
        self.language_info: dict | None = None
        self.started = time.monotonic()
        self.messages: list[dict] = []
        self.msg_id: str | None = None
        self._wrap_kernel()

    def _wrap_kernel(self):
        """记下 nbval 发出的执行请求的 id 与它读到的每条 iopub 消息（nbval 自己只保留合并过的输出）"""
        kernel, collector = self.collector.kernel, self.collector
        try:
            reply = kernel.kc.kernel_info(reply=True, timeout=30)
            self.language_info = reply["content"].get("language_info")
        except Exception:  # noqa: BLE001 —— 拿不到就只是少了语言信息，构建会自己执行
            self.cacheable = False
        execute, get_message = kernel.execute_cell_input, collector.get_kernel_message

        def execute_cell_input(*args, **kwargs):
            self.msg_id = execute(*args, **kwargs)
            self.messages = []
            return self.msg_id

        def get_kernel_message(*args, **kwargs):
            msg = get_message(*args, **kwargs)
            self.messages.append(msg)
            return msg

        kernel.execute_cell_input = execute_cell_input
        collector.get_kernel_message = get_kernel_message

    def record(self, cell_num: int) -> None:
        """把这个单元的 iopub 消息变成输出，与 nbclient（myst-nb 执行时用的）的做法一样：逐条 output_from_msg，不合并"""
        from nbformat.v4 import output_from_msg

        outputs = []
        for msg in self.messages:
            if msg["parent_header"].get("msg_id") != self.msg_id:
                continue
            kind = msg["msg_type"]
            if kind in _PLAIN_OUTPUTS:
                outputs.append(output_from_msg(msg))
            elif kind not in _IGNORED:
                self.cacheable = False  # clear_output、update_display_data、comm……：交给构建自己执行
        self.outputs[cell_num] = outputs
        self.messages = []

    def executed_notebook(self):
        nb = copy.deepcopy(self.collector.nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        if len(self.outputs) != len(code):
            return None  # 只跑了部分单元
        for i, cell in enumerate(code):
            cell.outputs = self.outputs[i]
            cell.execution_count = i + 1
        if self.language_info:
            nb.metadata["language_info"] = self.language_info
        return nb


class NbvalCache:
    """pytest 插件（conftest.py 注册为全局插件，所以 book/ 等目录里的 nbval 单元也经过它的钩子）

    ``cache_dir`` 与 ``done_dir`` 由 conftest 在排定了整本书的构建之后设置；没有构建时两者为 None，插件只把 nbval 单元标记为 slow。
    """

    def __init__(self):
        self.cache_dir: Path | None = None
        self.done_dir: Path | None = None
        self._notebooks: dict[str, _Notebook] = {}
        self._failed: set[str] = set()  # 有单元没通过（失败、跳过、xfail）的笔记本

    @pytest.hookimpl(tryfirst=True)  # 在 -m 取消选择之前：make test-fast（-m "not slow"）不执行笔记本
    def pytest_collection_modifyitems(self, items):
        for item in items:
            if is_nbval_cell(item):
                item.add_marker(pytest.mark.slow)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        if not (is_nbval_cell(item) and self.cache_dir):
            return (yield)
        key = item.parent.nodeid
        if key not in self._notebooks:
            self._notebooks[key] = _Notebook(item.parent)
        try:
            return (yield)
        finally:
            self._notebooks[key].record(item.cell_num)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if is_nbval_cell(item) and not report.passed:
            self._failed.add(item.parent.nodeid)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        result = yield
        if is_nbval_cell(item) and (nextitem is None or nextitem.parent is not item.parent):
            self._finish(item.parent)
        return result

    def _finish(self, collector) -> None:
        """一个笔记本的最后一个单元结束：写缓存（全部通过时），然后留下标记"""
        path = Path(str(collector.fspath))
        record = self._notebooks.pop(collector.nodeid, None)
        failed = collector.nodeid in self._failed
        try:
            if record is not None and record.cacheable and not failed and self.cache_dir is not None:
                nb = record.executed_notebook()
                if nb is not None:
                    self._store(nb, path, time.monotonic() - record.started)
        finally:
            if self.done_dir is not None:
                self.done_dir.mkdir(parents=True, exist_ok=True)
                (self.done_dir / marker_name(path)).touch()

    def _store(self, nb, path: Path, seconds: float) -> None:
        from jupyter_cache import get_cache
        from jupyter_cache.base import CacheBundleIn

        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.cache_dir.parent / "jupyter-cache.lock")):  # 两个 xdist 进程可能同时写
            get_cache(str(self.cache_dir)).cache_notebook_bundle(
                CacheBundleIn(nb=nb, uri=str(path), data={"execution_seconds": seconds, "executed_by": "nbval"}),
                check_validity=False,
                overwrite=True,
            )
