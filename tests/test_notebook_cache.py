"""nbval 的执行结果交给整本书的构建（tests/notebook_cache.py 与 tools/site_cache.py）

参照物是 nbclient：myst-nb 现场执行时用的就是它。nbval 跑过的笔记本存进 jupyter-cache 后，按 myst-nb 的方式取出来，
每个单元的输出（类型、流的名字与文字、数据的 MIME 类型、元数据）必须与 nbclient 执行同一个笔记本的结果一样。
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(ROOT))

import notebook_cache  # noqa: E402

CELLS = [
    "import sys\nfrom IPython.display import Markdown, display\nprint('第一行')",
    "print('之前')\ndisplay(Markdown('**粗体**'), metadata={'scrapbook': {'name': 'k', 'mime_prefix': ''}})\nprint('之后')",
    "print('错误流', file=sys.stderr)\n40 + 2",
    "x = 1  # 没有输出",
]


def _notebook(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# 标题")] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


def _run_nbval(tmp_path: Path, *notebooks: Path) -> subprocess.CompletedProcess:
    """在子进程里用 nbval 跑笔记本，注册与 conftest.py 相同的插件，缓存写到 tmp_path/cache"""
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(TESTS)!r})
        import notebook_cache

        def pytest_configure(config):
            plugin = notebook_cache.NbvalCache()
            plugin.cache_dir, plugin.done_dir = Path({str(tmp_path / "cache")!r}), Path({str(tmp_path / "done")!r})
            config.pluginmanager.register(plugin, "nbval-cache-under-test")
        """),
        encoding="utf-8",
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--nbval-lax"]
    cmd += ["--nbval-current-env", "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini")]
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return subprocess.run([*cmd, *map(str, notebooks)], cwd=tmp_path, capture_output=True, text=True, timeout=300)


def _shape(cell) -> list:
    return [
        (o.output_type, o.get("name"), o.get("text"), sorted(o.get("data", {})), dict(o.get("metadata", {})))
        for o in cell.outputs
    ]


def _cached(tmp_path: Path, path: Path):
    from jupyter_cache import get_cache

    return get_cache(str(tmp_path / "cache")).merge_match_into_notebook(nbformat.read(path, as_version=4))[1]


@pytest.mark.slow
def test_cached_outputs_are_what_nbclient_produces(tmp_path):
    path = _notebook(tmp_path / "demo.ipynb", CELLS)
    run = _run_nbval(tmp_path, path)
    assert run.returncode == 0, run.stdout + run.stderr
    cached = _cached(tmp_path, path)
    reference = nbformat.read(path, as_version=4)
    NotebookClient(reference, timeout=60, kernel_name="python3").execute()
    code = [c for c in cached.cells if c.cell_type == "code"]
    expected = [c for c in reference.cells if c.cell_type == "code"]
    assert [_shape(c) for c in code] == [_shape(c) for c in expected]
    assert [o.output_type for o in code[1].outputs] == ["stream", "display_data", "stream"]  # 流不合并，顺序不变
    assert cached.metadata["language_info"]["name"] == "python"
    assert (tmp_path / "done" / notebook_cache.marker_name(path)).exists()


@pytest.mark.slow
def test_failing_or_clearing_notebooks_are_not_cached_but_are_marked_done(tmp_path):
    from jupyter_cache import get_cache

    failing = _notebook(tmp_path / "failing.ipynb", ["print(1)", "raise ValueError('坏了')", "print(3)"])
    clearing = _notebook(
        tmp_path / "clearing.ipynb", ["from IPython.display import clear_output\nprint(1)\nclear_output()"]
    )
    good = _notebook(tmp_path / "good.ipynb", ["print('好')"])
    run = _run_nbval(tmp_path, failing, clearing, good)
    assert run.returncode == 1 and "坏了" in run.stdout
    cache = get_cache(str(tmp_path / "cache"))
    assert [Path(r.uri).name for r in cache.list_cache_records()] == ["good.ipynb"]
    for path in (failing, clearing):
        with pytest.raises(KeyError):
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
    assert sorted(p.name for p in (tmp_path / "done").iterdir()) == sorted(
        notebook_cache.marker_name(p) for p in (failing, clearing, good)
    )


def test_cache_hit_writes_the_notebook_with_outputs(tmp_path):
    """tools/site_cache.py：命中缓存时，myst-nb 之后写到 jupyter_execute 的那个笔记本对象也带上输出"""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.execute.cache import NotebookClientCache
    from tools import site_cache

    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    source = nbformat.v4.new_notebook(metadata={"kernelspec": kernelspec})
    source.cells = [nbformat.v4.new_markdown_cell("文字"), nbformat.v4.new_code_cell("print('有输出')")]
    executed = nbformat.from_dict(json.loads(json.dumps(source)))
    executed.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="有输出\n")]
    executed.cells[1].execution_count = 1
    executed.metadata["language_info"] = {"name": "python"}
    get_cache(str(tmp_path)).cache_notebook_bundle(CacheBundleIn(nb=executed, uri="x.ipynb"), check_validity=False)

    class Log:
        def info(self, *a, **k): ...

        warning = debug = info

    site_cache.install()
    site_cache.install()  # 装两次也只包一层
    config = NbParserConfig(execution_mode="cache", execution_cache_path=str(tmp_path))
    with NotebookClientCache(source, tmp_path / "x.md", config, Log()) as client:
        assert client.notebook is source
    assert source.cells[1].outputs[0].text == "有输出\n"
    assert source.cells[0].source == "文字" and source.metadata["language_info"] == {"name": "python"}
