"""执行缓存命中时也写出带输出的笔记本（Sphinx 扩展，_config.yml 的 local_extensions）

书的配置是 ``execute_notebooks: cache``：myst-nb 在 ``_build/.jupyter_cache`` 里找到代码单元相同的笔记本，就用它的输出，
不再执行（``make test`` 里这些输出来自 nbval，见 ``tests/notebook_cache.py``）。myst-nb 1.4 在这种情况下把缓存里的输出
合并进一个新的笔记本对象，只交给渲染；写到 ``_build/jupyter_execute/<页>.ipynb`` 的（网站下载按钮里的 .ipynb
由它复制而来，``tools/site_pages.py`` 也读它）却是没有输出的原对象。这里让合并就地发生，
于是缓存命中与现场执行写出同样的文件。myst-nb 改了这部分时 ``tests/test_site_cache.py`` 会失败。
"""

from __future__ import annotations

from myst_nb.core.execute.cache import NotebookClientCache

_MARK = "_merged_in_place"


def _start_client_in_place(original):
    def start_client(self):
        source = self._notebook
        original(self)
        merged = self._notebook
        if merged is not source:  # 命中缓存：把合并后的单元与元数据放回 myst-nb 之后要写出的那个对象
            source.cells[:] = merged.cells
            source.metadata.clear()
            source.metadata.update(merged.metadata)
            self._notebook = source

    setattr(start_client, _MARK, True)
    return start_client


def install() -> None:
    if not getattr(NotebookClientCache.start_client, _MARK, False):
        NotebookClientCache.start_client = _start_client_in_place(NotebookClientCache.start_client)


def setup(app):
    install()
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
