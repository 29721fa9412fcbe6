"""读者看到的网站：在真实的 Chromium 里打开每一页（tools/site_check.py）

- 网站从 127.0.0.1 的本地服务器提供，去往任何别处的请求都被拦下并算作失败；
- 每页：数学式由站内的 MathJax 排版、图片加载且有 alt、控制台没有错误、没有失败的请求、站内链接与锚点都存在、
  笔记本页面有指向已提交 .ipynb 的 Colab 按钮和 .ipynb / .md 下载；
- 每页第一屏截图存到 _build/screenshots/<页面>.png；一页用打印样式生成 PDF（_build/screenshots/print/）；
- 动画：每个播放器点“播放”后会动；打印时换成逐步图；
- 读起来：没有只显示 glue 返回值的输出框、中文标点后没有空格、节的锚点不是流水号、展开的代码行不超过 88 个字符、
  图注的方位词与颜色词与图相符、界面上没有英文提示（tools/site_pages.py）。

搜索与手机（390 px）在 test_site_phone.py：另一个 pytest-xdist 进程里的另一个浏览器，与这里的桌面检查同时进行。

网站从哪里来：环境变量 SHARDLAB_SITE 指向已构建的 _build/html（make test-site 这样做）；
否则用 conftest.py 的 built_site（与 test_book_build.py 共用同一次从零开始的构建）。

Chromium：Debian 的 chromium 包（.ci/run 安装；也可用 CHROMIUM=/路径 指定）。本机没有时这些浏览器测试跳过并说明原因；
在 CI（环境变量 CI 为真）里没有 Chromium 则失败，不会悄悄跳过。
"""

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_check  # noqa: E402

SCREENSHOTS = Path(os.environ.get("SHARDLAB_SCREENSHOTS", ROOT / "_build" / "screenshots"))
PAGES = site_check.toc_pages()
NOTEBOOK_PAGES = [p for p in PAGES if site_check.is_notebook_page(p)]
PDF_PAGE = (NOTEBOOK_PAGES or PAGES)[0]
slow = pytest.mark.slow  # 需要构建网站或浏览器的测试；make test-fast 跳过


@pytest.fixture(scope="module")
def report(site, chromium):
    return site_check.check_site(
        site,
        PAGES,
        chromium=chromium,
        screenshots=SCREENSHOTS,
        pdf_page=PDF_PAGE,
        pdf_out=SCREENSHOTS / "print" / f"{PDF_PAGE}.pdf",
    )


def _ok(problems):
    return "\n".join(problems) or "无"


# ---------- 不需要构建 ----------


def test_mathjax_is_pinned_and_served_from_the_site():
    import json

    import yaml
    from tools import site_assets

    version = site_assets.pinned_version()
    assert re.fullmatch(r"3\.\d+\.\d+", version), version
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/mathjax"]["version"] == version
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert cfg["sphinx"]["config"]["mathjax_path"] == f"mathjax/{site_assets.ENTRY}"
    assert {"site_assets", "site_ui"} <= set(cfg["sphinx"]["local_extensions"])
    assert "print.css" in cfg["sphinx"]["config"]["html_css_files"]
    assert PAGES[0] == yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["root"]


# ---------- 不需要浏览器 ----------


@slow
def test_site_carries_its_own_mathjax_and_references_nothing_outside(site):
    mathjax = site / "_static" / "mathjax"
    assert (mathjax / "tex-chtml.js").stat().st_size > 500_000
    assert len(list((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))) >= 20
    assert (mathjax / "LICENSE").exists()
    for page in PAGES:
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        assert "cdn.jsdelivr.net" not in html and "mathjax@" not in html, page
    assert site_check.static_external_resources(site) == []


@slow
def test_root_redirect_page_names_the_sites_icon(site):
    # 没有图标链接时，浏览器打开根目录的跳转页会去要 /favicon.ico，得到 404
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'http-equiv="Refresh"' in index
    assert '<link rel="icon" href="_static/favicon.svg"/>' in index
    assert (site / "_static" / "favicon.svg").exists()


@slow
def test_no_output_box_shows_only_a_glued_value(site):
    from tools import site_pages

    stray = site_pages.stray_glue_outputs(site)
    assert stray == [], _ok(stray)


@slow
def test_no_space_after_chinese_punctuation_and_stable_section_anchors(site):
    from tools import site_pages

    problems = site_pages.cjk_spaces(site, PAGES) + site_pages.auto_section_ids(site, PAGES)
    assert problems == [], _ok(problems)


_CJK_PUNCT = "、。，；：！？"
_OUTPUT_SPACE = re.compile(rf"[{_CJK_PUNCT}][ \u00a0]+\S|\S[ \u00a0]+[{_CJK_PUNCT}]")
_QUOTE_SPACE = re.compile(r"[\u3400-\u9fff][ \u00a0]+[“”‘’]|[“”‘’][ \u00a0]+[\u3400-\u9fff]")


def spacing_in_outputs_and_quotes(site: Path, pages: list[str]) -> list[str]:
    """cjk_spaces 不看的两处：打印出来的输出里中文标点前后的空格（print 的参数之间多出的一个），
    正文里弯引号与汉字之间的空格（“名字里的 “All” 表示”）"""
    from bs4 import BeautifulSoup

    found = []
    for page in pages:
        soup = BeautifulSoup((site / f"{page}.html").read_text(encoding="utf-8"), "html.parser")
        article = soup.select_one("article") or soup
        for pre in article.select("div.cell_output pre"):
            text = pre.get_text()
            found += [
                f"{page} 输出：“{text[max(0, m.start() - 8) : m.end() + 8]}”" for m in _OUTPUT_SPACE.finditer(text)
            ]
        for node in article.select("script, style, pre, .highlight, div.cell_input"):
            node.decompose()
        for node in article.select(".math"):
            node.replace_with("X")
        text = article.get_text()
        found += [f"{page} 正文：“{text[max(0, m.start() - 8) : m.end() + 8]}”" for m in _QUOTE_SPACE.finditer(text)]
    return found


@slow
def test_no_space_around_chinese_punctuation_in_outputs_or_curly_quotes(site):
    # 先查第 5、6 章；其余页面（附录、环境说明）的打印输出还有同样的空格，改好后把它们加进来
    pages = [p for p in NOTEBOOK_PAGES if p in ("book/ch05_collectives", "book/ch06_sharded_matmul")]
    assert len(pages) == 2
    problems = spacing_in_outputs_and_quotes(site, pages)
    assert problems == [], _ok(problems)


@slow
def test_visible_code_lines_fit_a_narrow_screen(site):
    from tools import site_pages

    long_lines = site_pages.long_code_lines(site, PAGES)
    assert long_lines == [], _ok(long_lines)


@slow
def test_captions_agree_with_their_figures(site):
    from tools import site_pages

    problems, checked = site_pages.caption_problems(site, PAGES)
    assert problems == [], _ok(problems)
    assert checked >= 1, "没有一张图带着 plots.glue_figure 记下的事实（子图排列、颜色）"


@slow
def test_setup_cell_is_collapsed_and_ui_strings_are_chinese(site):
    for page in NOTEBOOK_PAGES:
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        assert "Show code cell" not in html and "Click to show" not in html, page
        if page != "book/environment":
            first = re.search(r'<div class="cell[^"]*docutils container"', html)
            assert first and "tag_hide-input" in first.group(0), f"{page} 的第一个代码单元没有折叠"
        if page.startswith(("book/ch05", "book/ch06")):  # 各章第二个单元导入本章的库：和设置单元一样折叠
            cells = re.findall(r'<div class="cell( [^"]*)? docutils container"', html)
            assert len(cells) > 2 and "tag_hide-input" in cells[1], f"{page} 导入库的单元没有折叠"


@slow
def test_site_chrome_is_chinese(site):
    """页头、侧栏、页脚、提示与折叠块的无障碍标签都是简体中文（tools/site_ui.py 的 VOCAB），每一页包括搜索页"""
    from tools import site_pages

    pages = site_pages.html_pages(site)
    assert {"search", "genindex", *PAGES} <= set(pages)
    problems = site_pages.english_ui(site, pages)
    assert problems == [], _ok(problems[:40]) + f"\n……共 {len(problems)} 处"


@slow
def test_print_button_says_print_to_pdf_in_simplified_chinese(site):
    """打印按钮的提示是“打印成 PDF”（sphinx-book-theme 的 zh_CN 译法是“列印成 PDF”）"""
    for page in NOTEBOOK_PAGES:
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        titles = re.findall(r'class="[^"]*btn-download-pdf-button[^"]*"\s+title="([^"]*)"', html)
        assert titles == ["打印成 PDF"], f"{page} 的打印按钮：{titles}"
        assert "列印" not in html, page


# ---------- Chromium ----------


@slow
def test_no_request_leaves_the_site(report):
    assert report.blocked == [], _ok(report.problems("external"))


@slow
def test_no_failed_request_and_no_console_error(report):
    problems = report.problems("failed") + report.problems("console") + report.problems("load")
    assert problems == [], _ok(problems)


@slow
def test_math_is_typeset_by_the_local_mathjax(report):
    assert report.problems("math") == [], _ok(report.problems("math"))
    with_math = [p for p in report.pages if p.info.get("math")]
    assert with_math, "没有任何一页有数学式？"
    assert all(p.info["mjx"] >= p.info["math"] for p in with_math)


@slow
def test_every_image_loads_and_has_alt_text(report):
    assert report.problems("image") == [], _ok(report.problems("image"))


@slow
def test_internal_links_and_anchors_resolve(report):
    assert report.problems("link") == [], _ok(report.problems("link"))
    assert report.checked_links >= len(PAGES)


@slow
def test_notebook_pages_open_in_colab_and_download(report):
    problems = report.problems("colab") + report.problems("download") + report.problems("exercise")
    assert problems == [], _ok(problems)
    for page in report.pages:
        if page.page in NOTEBOOK_PAGES:
            assert site_check.colab_url(page.page) in page.info["colab"]
            assert (ROOT / f"{page.page}.ipynb").exists()
    assert all(u.startswith("https://") for u in report.external_links)


@slow
def test_a_screenshot_of_every_page(report):
    for page in PAGES:
        shot = SCREENSHOTS / f"{page}.png"
        assert shot.exists() and shot.stat().st_size > 10_000, shot


@slow
def test_caption_text_has_the_weight_and_colour_of_the_prose(report):
    """图注里的拉丁字母不比汉字细、不比正文浅（浅色与深色模式）"""
    assert report.problems("caption") == [], _ok(report.problems("caption"))


@slow
def test_animations_play(report):
    assert report.problems("animation") == [], _ok(report.problems("animation"))
    assert report.players >= 1, "网站上没有一个动画（shardlab.animate 的播放器）"


@slow
def test_a_chapter_prints_to_a_clean_pdf(report):
    assert report.problems("print") == [], _ok(report.problems("print"))
    assert report.pdf is not None and report.pdf.read_bytes().startswith(b"%PDF")
    assert report.pdf_pages >= 1


# ---------- 检查本身能失败 ----------


@slow
def test_checker_reports_every_kind_of_problem(tmp_path, chromium):
    """一个故意写坏的小网站：每一类问题都要被报告出来"""
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True)
    (repo / "_config.yml").write_text("repository:\n  url: https://github.com/o/r\n  branch: main\n", encoding="utf-8")
    (repo / "book" / "nb.md").write_text("---\njupytext:\n  x: 1\nkernelspec:\n  name: python3\n---\n# nb\n")
    site = tmp_path / "site"
    (site / "book").mkdir(parents=True)
    (site / "index.html").write_text("<html><body>index</body></html>", encoding="utf-8")
    (site / "book" / "other.html").write_text(
        '<html><body><article class="bd-article"><h1 id="here">ok</h1></article></body></html>', encoding="utf-8"
    )
    (site / "book" / "nb.html").write_text(
        """<html><head><script src="http://example.com/x.js"></script></head><body>
        <article class="bd-article" id="top">
        <p>行内 $$x^2$$ 没有排版</p>
        <span class="math notranslate nohighlight">\\(a+b\\)</span>
        <img src="missing.png" alt="x">
        <a href="other.html#here">好链接</a> <a href="other.html#nope">坏锚点</a> <a href="gone.html">坏链接</a>
        <a href="https://colab.research.google.com/github/o/r/blob/main/book/nb.ipynb">Colab</a>
        <div class="shardlab-player" data-steps="3" data-step="0"><div class="sl-panels"></div>
        <button class="sl-play">播放</button></div>
        </article>
        <script>console.error("boom")</script></body></html>""",
        encoding="utf-8",
    )
    rep = site_check.check_site(
        site, ["book/other", "book/nb"], chromium=chromium, repo_root=repo, search_terms={"集合通信": "book/nb"}
    )
    assert rep.problems("external") and "example.com" in rep.problems("external")[0]
    assert any("boom" in m for m in rep.problems("console"))
    assert any("missing.png" in m for m in rep.problems("failed"))
    math = " ".join(rep.problems("math"))
    assert "MathJax 没有加载" in math and "$$" in math
    image = " ".join(rep.problems("image"))
    assert "没有加载" in image and "alt" in image
    link = " ".join(rep.problems("link"))
    assert "#nope" in link and "gone.html" in link and "#here" not in link
    colab = " ".join(rep.problems("colab"))
    assert "不存在的笔记本" in colab
    assert any(".ipynb" in m for m in rep.problems("download"))
    assert any("没有变化" in m for m in rep.problems("animation")), "不会动的播放器要被报告"
    assert any("集合通信" in m for m in rep.problems("search")), "搜不到的词要被报告"
    assert [p for p in rep.pages if p.page == "book/other"][0].problems == []
    assert site_check.static_external_resources(site) == ["book/nb.html: <script> http://example.com/x.js"]
