"""从零构建整本书（tests/conftest.py 的 built_site）：每个笔记本都被执行（nbval 已经跑过的取它的输出），任何单元错误、断链或 Sphinx 警告都让构建失败"""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import course_config, nbsync, site_check  # noqa: E402


@pytest.mark.slow
def test_every_toc_page_is_built(built_site):
    pages = site_check.toc_pages()  # 根页面在前
    for page in pages:
        assert (built_site / f"{page}.html").exists(), page
    assert 'lang="zh-CN"' in (built_site / f"{pages[0]}.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_executed_numbers_are_glued_into_the_prose(built_site):
    html = (built_site / "book" / "environment.html").read_text(encoding="utf-8")
    assert '本次运行共有 <span class="pasted-text">8</span> 个设备' in html
    assert "与 NumPy 一致" in html


@pytest.mark.slow
def test_figures_and_equations_are_numbered_per_chapter(built_site):
    """tools/site_numbers.py：以前全书连续编号，第 6 章从“图 7”、“(15)”开始"""
    for page, chapter in (("ch05_collectives", "5"), ("ch06_sharded_matmul", "6")):
        html = (built_site / "book" / f"{page}.html").read_text(encoding="utf-8")
        figures = re.findall(r'caption-number">图 ([^<]*?) <', html)
        equations = re.findall(r'class="eqno">\(([^<]*)\)<', html)
        assert figures and figures == [f"{chapter}.{k}" for k in range(1, len(figures) + 1)], (page, figures)
        assert equations and equations == [f"{chapter}.{k}" for k in range(1, len(equations) + 1)], (page, equations)


@pytest.mark.slow
def test_colab_button_opens_the_committed_ipynb(built_site):
    repo = course_config.load_config()["repository"]
    slug = repo["url"].removeprefix("https://github.com/")
    html = (built_site / "book" / "environment.html").read_text(encoding="utf-8")
    assert f"colab.research.google.com/github/{slug}/blob/{repo['branch']}/book/environment.ipynb" in html


@pytest.mark.slow
def test_no_figure_in_the_book_misses_a_glyph(built_site):
    """matplotlib 缺字形时只发警告：警告会作为 stderr 输出留在页面里，这里把它当成错误"""
    pages = [p for p in built_site.rglob("*.html") if "missing from font" in p.read_text(encoding="utf-8")]
    assert pages == []


@pytest.mark.slow
def test_build_reuses_what_nbval_executed(built_site):
    """nbval 在这次运行里跑过的配对 .ipynb，构建直接用缓存里的输出（tests/notebook_cache.py），不再执行第二遍"""
    import notebook_cache  # tests/notebook_cache.py

    shared = built_site.parents[2]  # <shared>/book-build/_build/html
    done = shared / "nbval-done"
    sources = [
        md for md in nbsync.notebook_sources() if (done / notebook_cache.marker_name(md.with_suffix(".ipynb"))).exists()
    ]
    if not sources:
        pytest.skip("这次运行没有用 nbval 跑笔记本（只选了部分测试），构建自己执行了它们")
    log = (shared / "book-build.log").read_text(encoding="utf-8", errors="replace")
    missed = [str(md.relative_to(ROOT)) for md in sources if f"{md}: Using cached notebook" not in log]
    assert not missed, f"这些笔记本 nbval 已经跑过，构建却又执行了一遍：{missed}"
    if len(sources) == len(nbsync.notebook_sources()):
        assert "Executing notebook" not in log


@pytest.mark.slow
def test_executed_notebooks_carry_their_outputs(built_site):
    """_build/jupyter_execute 里的笔记本（网站下载的 .ipynb 由它而来）带着输出，不论构建是现场执行还是取了缓存"""
    executed = built_site.parent / "jupyter_execute"
    for md in nbsync.notebook_sources():
        nb = json.loads((executed / md.relative_to(ROOT).with_suffix(".ipynb")).read_text(encoding="utf-8"))
        outputs = sum(len(c.get("outputs", [])) for c in nb["cells"] if c["cell_type"] == "code")
        assert outputs > 0, f"{md.relative_to(ROOT)} 执行过的笔记本没有任何输出"
        assert nb["metadata"].get("language_info", {}).get("name") == "python"
