"""从零构建整本书（tests/conftest.py 的 built_site）：每个笔记本都被执行，任何单元错误、断链或 Sphinx 警告都让构建失败"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import course_config, site_check  # noqa: E402


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
