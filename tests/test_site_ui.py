"""tools/site_ui.py：界面上的英文提示换成中文，正文与代码不动；检查（tools/site_pages.py 的 english_ui）用同一张表"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_pages, site_ui  # noqa: E402

# 主题生成的网页的样子（取自构建好的网站，缩短了）
PAGE = """<html><head><title>第 5 章 — 书</title><script>const s = "Toggle primary sidebar";</script></head><body>
<input type="search" placeholder="Search this book..." aria-label="Search this book..."/>
<button class="sidebar-toggle primary-toggle btn btn-sm" title="Toggle primary sidebar" data-bs-toggle="tooltip">
<button class="theme-switch-button" aria-label="Color mode" data-bs-title="Color mode">
  <i data-mode="light" title="亮色"></i><i data-mode="auto"  title="System Settings"></i></button>
<a class="btn" title="Launch on Colab"><img alt="Colab logo" src="x.png"><span>Colab</span></a>
<button onclick="window.print()" class="btn-download-pdf-button" title="列印成 PDF">.pdf</button>
<nav aria-label="Main"><p class="prev-next-subtitle">next</p></nav>
<article class="bd-article">
<h2>环形算法<a class="headerlink" href="#x" title="Link to this heading">#</a></h2>
<details class="hide"><summary aria-label="Toggle hidden content"><p>显示代码</p></summary>
<div class="highlight"><pre><span class="nb">next</span>(<span class="n">it</span>)</pre></div></details>
<p>Contents</p>
</article>
<footer><p class="component-author">
作者： shardlab 课程作者
</p><p class="copyright">
      © Copyright 2026.
      <br/></p></footer></body></html>"""

THEME = {"Print to PDF": "列印成 PDF", "By": "作者："}.get  # 主题翻译目录的译法（sphinx-book-theme 的 zh_CN）


def test_chrome_is_rewritten_and_the_article_keeps_its_text():
    vocab = site_ui.Vocabulary(site_ui.VOCAB, [lambda s: THEME(s, s)])
    out = site_ui.rewrite_html(PAGE, vocab)
    for english in ("Search this book...", "Toggle primary sidebar", "Color mode", "System Settings", "Launch on"):
        assert f'="{english}' not in out, english
    assert 'placeholder="搜索本书……"' in out and 'title="显示或隐藏全书目录"' in out
    assert 'aria-label="颜色模式" data-bs-title="颜色模式"' in out and 'title="跟随系统"' in out
    assert 'title="在 Colab 中打开"' in out and 'alt="Colab 标志"' in out and "<span>Colab</span>" in out
    assert 'title="打印成 PDF"' in out and 'aria-label="全书目录"' in out
    assert '<p class="prev-next-subtitle">下一页</p>' in out
    # 正文：属性换成中文，文字（包括代码里的 next）不动
    assert 'title="链接到此标题"' in out and 'aria-label="显示或隐藏内容"' in out
    assert '<span class="nb">next</span>' in out and "<p>Contents</p>" in out
    # 页脚：占位、中文标点后的空格；脚本不动
    assert "\n作者：shardlab 课程作者\n" in out and "      © 2026 版权所有\n" in out
    assert 'const s = "Toggle primary sidebar";' in out
    assert site_ui.rewrite_html(out, vocab) == out  # 再改一遍不变


def test_rewritten_page_passes_the_check_and_the_original_fails(tmp_path):
    (tmp_path / "before.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "after.html").write_text(site_ui.rewrite_html(PAGE, site_ui.Vocabulary()), encoding="utf-8")
    before = site_pages.english_ui(tmp_path, ["before"])
    assert len(before) == 13, before
    assert any("Toggle hidden content" in m for m in before) and any("© Copyright 2026." in m for m in before)
    assert site_pages.english_ui(tmp_path, ["after"]) == []


def test_the_check_reports_english_hints_missing_from_the_vocabulary(tmp_path):
    (tmp_path / "p.html").write_text(
        '<html><body><button title="Open issue">x</button><img alt="H100 NVLink"><a title="全屏 Fullscreen">y</a></body></html>',
        encoding="utf-8",
    )
    found = site_pages.english_ui(tmp_path, ["p"])
    assert found == ['p: <button title="Open issue">（不在 tools/site_ui.py 的表里）'], found


def test_scripts_are_rewritten_and_checked(tmp_path):
    static = tmp_path / "_static"
    (static / "mathjax").mkdir(parents=True)
    js = 'var b = `<button aria-label="Toggle hidden content">`;\nif (mode == "next") go("Search");\n'
    (static / "togglebutton.js").write_text(js, encoding="utf-8")
    (static / "mathjax" / "tex.js").write_text('"Toggle hidden content"', encoding="utf-8")
    (tmp_path / "index.html").write_text("<html><body><p>正文</p></body></html>", encoding="utf-8")
    assert any("togglebutton.js" in m for m in site_pages.english_ui(tmp_path, ["index"]))
    assert site_ui.rewrite_site(tmp_path, site_ui.Vocabulary()) == 1
    out = (static / "togglebutton.js").read_text(encoding="utf-8")
    assert 'aria-label="显示或隐藏内容"' in out and '"next"' in out and '"Search"' in out  # 单个词不动
    assert (static / "mathjax" / "tex.js").read_text(encoding="utf-8") == '"Toggle hidden content"'
    assert site_pages.english_ui(tmp_path, ["index"]) == []


def test_vocabulary_is_simplified_chinese():
    han = re.compile(r"[\u4e00-\u9fff]")
    not_simplified = ("列印", "檔案", "網頁", "顯示", "隱藏", "內容", "搜尋", "標題", "連結", "下載", "開啟", "書")
    for english, chinese in site_ui.VOCAB.items():
        assert han.search(chinese), english
        assert not [w for w in not_simplified if w in chinese], f"{english} → {chinese}"
        assert re.findall(r"\{\w+\}", english) == re.findall(r"\{\w+\}", chinese), english
