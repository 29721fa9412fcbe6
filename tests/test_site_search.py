"""读者在搜索页里查课程术语：第一个结果是定义它的地方（带锚点），摘要是含这个词的那句正文，点开后这个词高亮并在屏幕里

对 ``DEFINED_IN`` 的每个词，在真实的 Chromium 里（tools/site_check.py 的本地服务器与 Chromium）：

- 打开 ``search.html?q=词``，等搜索结束、第一个结果的摘要出来；
- 第一个结果在定义它的那一页，链接带锚点（``#…``），锚点在那一页里存在；
- 摘要里有这个词，没有原样的 TeX（``\\(``、``$$``、``\\text{``……），不是目录（“目录”或两个以上的节标题），不是代码；
- 结果里同一页只出现一次；``SENTENCE_TERMS`` 的词落在定义它的那一段（``<p>``），不是节标题；
- 点这个结果：落地页里这个词整个被高亮（``span.highlighted``），而且至少有一处在屏幕里、不在顶栏下面。

另有一个不用浏览器的测试：``tools/site_zh.py`` 的 ``DEFINITIONS`` 与这里的期望一致（每个词定义在哪一页）。

网站与 Chromium 从哪里来，和 test_site.py 一样（conftest.py 的 site 与 chromium：SHARDLAB_SITE 或共享的从零构建）。
直接运行 ``python tests/test_site_search.py <网站目录>`` 打印每个词的第一个结果（页面、锚点、摘要）和发现的问题。
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_check  # noqa: E402

CH05, CH06 = "book/ch05_collectives", "book/ch06_sharded_matmul"
APP_A = "book/appendix_hardware"

# 读者会搜的课程术语 → 定义它的那一页
DEFINED_IN = {
    "集合通信": CH05,
    "AllGather": CH05,
    "ReduceScatter": CH05,
    "AllReduce": CH05,
    "AllToAll": CH05,
    "全收集": CH05,
    "规约散射": CH05,
    "全规约": CH05,
    "全交换": CH05,
    "环形算法": CH05,
    "单向环": CH05,
    "双向环": CH05,
    "回绕": CH05,
    "环面": CH05,
    "延迟受限": CH05,
    "带宽受限": CH05,
    "带宽项": CH05,
    "延迟项": CH05,
    "多轴 AllGather": CH05,
    "多轴": CH05,
    "NVLink": APP_A,
    "总线带宽": CH05,
    "算法带宽": CH05,
    "数据并行": CH05,
    "FSDP": CH05,
    "序列并行": CH05,
    "混合专家": CH05,
    "NCCL": CH05,
    "ppermute": CH05,
    "分片矩阵乘法": CH06,
    "分片记号": CH06,
    "网格轴": CH06,
    "PartitionSpec": CH06,
    "收缩维": CH06,
    "张量并行": CH06,
    "模型并行": CH06,
    "通信临界强度": CH06,
    "roofline": CH06,
    "集合矩阵乘法": CH06,
    "Megatron": CH06,
}

# 节的标题就是这个词的：点开要落在标题下定义它的那一段，不是标题（tools/site_zh.py 的 Definition.sentence）
SENTENCE_TERMS = {"带宽项"}

slow = pytest.mark.slow

# 搜索页：等搜索结束、第一个结果的摘要（p.context）出来；返回第一个结果
_FIRST_RESULT_JS = r"""
async () => {
  const first = () => document.querySelector("#search-results ul.search li");
  for (let i = 0; i < 300; i++) {
    const done = typeof Search !== "undefined" && Search._pulse_status === -1 &&
                 (document.querySelector("#search-results p.search-summary") || {}).innerText;
    const li = first();
    if (li && li.querySelector("p.context")) break;
    if (done && !li) break;                      // 没有结果
    if (done && i > 100) break;                  // 结束 5 秒后仍没有摘要
    await new Promise(r => setTimeout(r, 50));
  }
  for (let i = 0; i < 100; i++) {                // 等全部结果列完（_finishSearch 写下汇总）
    if (typeof Search !== "undefined" && Search._pulse_status === -1 &&
        (document.querySelector("#search-results p.search-summary") || {}).innerText) break;
    await new Promise(r => setTimeout(r, 50));
  }
  const li = first();
  if (!li) return null;
  const a = li.querySelector("a");
  const ctx = li.querySelector("p.context");
  const all = Array.from(document.querySelectorAll("#search-results ul.search li > a")).map(x => x.href);
  return {href: a.href, title: a.textContent, snippet: ctx ? ctx.textContent : null,
          count: all.length, all};
}
"""

# 落地页：等 MathJax 排完、高亮出来、滚动停下；返回高亮与页面的标题、代码行
_LANDING_JS = r"""
async (term) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, new Promise(r => setTimeout(r, 10000))]);
  }
  const article = document.querySelector("article.bd-article") || document.body;
  const want = term.toLowerCase().replace(/\s+/g, " ");
  const marks = () => Array.from(article.querySelectorAll("span.highlighted"))
    .filter(s => s.textContent.toLowerCase().replace(/\s+/g, " ") === want);
  for (let i = 0; i < 60 && !marks().length; i++) await new Promise(r => setTimeout(r, 50));
  let last = -1;
  for (let i = 0; i < 40; i++) {                 // 滚动停下
    await new Promise(r => setTimeout(r, 100));
    if (window.scrollY === last) break;
    last = window.scrollY;
  }
  const header = document.querySelector("header.bd-header");
  const top = header ? header.getBoundingClientRect().bottom : 0;
  const shown = marks().filter(s => {
    const r = s.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.top >= top - 1 && r.bottom <= window.innerHeight + 1;
  });
  const hash = decodeURIComponent(location.hash.slice(1));
  const target = hash ? document.getElementById(hash) : null;
  return {
    url: location.href,
    anchorExists: !hash || !!target,
    anchorTag: target ? target.tagName.toLowerCase() : null,
    anchorText: target ? target.textContent.replace(/\s+/g, " ").trim().slice(0, 200) : null,
    highlighted: marks().length,
    anyHighlight: article.querySelectorAll("span.highlighted").length,
    shown: shown.length,
    headings: Array.from(article.querySelectorAll("h1, h2, h3, h4"))
      .map(h => h.textContent.replace(/[#¶]/g, "").trim()),
    codeLines: Array.from(article.querySelectorAll("pre"))
      .flatMap(p => p.textContent.split("\n")).map(l => l.trim()).filter(l => l.length >= 16),
  };
}
"""

_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\[A-Za-z]+\{|\\begin")
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass
class Outcome:
    """一个词的第一个结果，以及发现的问题"""

    term: str
    page: str = ""
    anchor: str = ""
    snippet: str | None = None
    results: int = 0
    hrefs: list[str] = field(default_factory=list)  # 全部结果的链接（去掉 ?highlight=）
    anchor_tag: str | None = None  # 落地的锚点是什么元素（p、section……）
    problems: list[str] = field(default_factory=list)


def _page_of(href: str) -> tuple[str, str]:
    url = urlparse(href)
    return url.path.lstrip("/").removesuffix(".html"), unquote(url.fragment)


def _judge_snippet(out: Outcome, landing: dict) -> None:
    snippet = out.snippet
    if not snippet:
        out.problems.append("第一个结果没有摘要")
        return
    flat = re.sub(r"\s+", " ", snippet)
    if out.term.lower() not in flat.lower():
        out.problems.append(f"摘要里没有这个词：{flat[:80]}")
    if _TEX.search(flat):
        out.problems.append(f"摘要里有原样的 TeX：{flat[:80]}")
    # 目录：“目录”两个字，或两个以上这一页的（带汉字的）节标题
    titles = {re.sub(r"^[\d.]+\s*", "", h) for h in landing.get("headings", [])}
    titles = {t for t in titles if len(_CJK.findall(t)) >= 4}
    hits = [t for t in titles if t in flat]
    if "目录" in flat or len(hits) >= 2:
        out.problems.append(f"摘要像是目录：{flat[:80]}")
    code = [line for line in landing.get("codeLines", []) if line in flat]
    if code:
        out.problems.append(f"摘要里有代码：{code[0][:60]}")


def search_terms(site: Path, chromium: str, terms: dict[str, str]) -> dict[str, Outcome]:
    """在网站的搜索页里查每个词、点开第一个结果；返回每个词的 Outcome"""
    from playwright.sync_api import sync_playwright

    outcomes: dict[str, Outcome] = {}
    with site_check.SiteServer(site) as server, sync_playwright() as pw:

        def route(r):
            if urlparse(r.request.url).hostname == site_check.HOST:
                r.continue_()
            else:
                r.abort("blockedbyclient")

        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=site_check.VIEWPORT, locale="zh-CN", service_workers="block")
            context.route("**/*", route)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            for term, want in terms.items():
                out = outcomes[term] = Outcome(term)
                errors.clear()
                page.goto(f"{server.base}search.html?q={quote(term)}", wait_until="load")
                first = page.evaluate(_FIRST_RESULT_JS)
                if first is None:
                    out.problems.append("没有结果")
                    out.problems.extend(f"脚本异常：{e}" for e in errors)
                    continue
                out.page, out.anchor = _page_of(first["href"])
                out.snippet, out.results = first["snippet"], first["count"]
                out.hrefs = [_page_of(h)[0] + "#" + _page_of(h)[1] for h in first["all"]]
                pages = [h.split("#")[0] for h in out.hrefs]
                repeated = sorted({p for p in pages if pages.count(p) > 1})
                if repeated:
                    out.problems.append(f"结果重复：同一页列了不止一次 {repeated}（{out.hrefs}）")
                if out.page != want:
                    out.problems.append(f"第一个结果是 {out.page}，不是定义它的 {want}")
                if not out.anchor:
                    out.problems.append("第一个结果没有锚点（只链到页首）")
                page.locator("#search-results ul.search li a").first.click()
                page.wait_for_load_state("load")
                landing = page.evaluate(_LANDING_JS, term)
                _judge_snippet(out, landing)
                out.anchor_tag = landing["anchorTag"]
                if term in SENTENCE_TERMS and (out.anchor_tag != "p" or term not in (landing["anchorText"] or "")):
                    out.problems.append(f"锚点落在 <{out.anchor_tag}> 上，不是含这个词的定义句（段落）")
                if not landing["anchorExists"]:
                    out.problems.append(f"锚点 #{out.anchor} 在 {out.page} 里不存在")
                if not landing["highlighted"]:
                    out.problems.append(f"落地页没有高亮这个词（高亮 {landing['anyHighlight']} 处别的）")
                elif not landing["shown"]:
                    out.problems.append(f"高亮了 {landing['highlighted']} 处，没有一处在屏幕里")
                out.problems.extend(f"脚本异常：{e}" for e in errors)
        finally:
            browser.close()
    return outcomes


def _table(outcomes: dict[str, Outcome]) -> str:
    rows = []
    for o in outcomes.values():
        anchor = f"#{o.anchor}" if o.anchor else "（无锚点）"
        rows.append(f"{o.term}: {o.page or '无'} {anchor}\n    摘要：{(o.snippet or '').strip()[:100]}")
        rows.extend(f"    ✗ {p}" for p in o.problems)
    return "\n".join(rows)


# ---------- 不需要浏览器 ----------


def test_every_term_has_a_definition_on_the_expected_page():
    from tools import site_zh

    defs = getattr(site_zh, "DEFINITIONS", {})
    where = {alias: d.doc for d in defs.values() for alias in (d.term, *d.aliases)}
    missing = {t: page for t, page in DEFINED_IN.items() if where.get(t) != page}
    assert not missing, f"tools/site_zh.py 的 DEFINITIONS 缺这些词或页面不对：{missing}"


def _doctree():
    from docutils.core import publish_doctree

    text = (
        "环形算法\n========\n\n"
        "环要首尾相连，TPU 上叫回绕（wraparound）。\n\n"
        "单向环与双向环\n--------------\n\n"
        "``回绕`` 在代码里不算。\n\n"
        "正文里的双向环。\n"
    )
    settings = {"report_level": 5, "doctitle_xform": False}
    doc = publish_doctree(text, settings_overrides=settings)
    from tools import site_zh

    site_zh.stable_section_ids(doc)
    return doc


def test_definitions_get_an_anchor_and_a_main_index_entry():
    from sphinx import addnodes
    from tools import site_zh

    doc = _doctree()
    defs = [
        site_zh.Definition("回绕", "d", "环形算法", ("wraparound",)),
        site_zh.Definition("单向环", "d", "单向环与双向环"),  # 在标题里：锚点在节上
    ]
    assert site_zh.mark_definitions(doc, "d", defs, ()) == ["def-回绕", "def-单向环"]
    para = doc.ids["def-回绕"]
    assert para.tagname == "paragraph" and "回绕" in para.astext()
    assert doc.ids["def-单向环"].tagname == "section"
    entries = [e for n in doc.findall(addnodes.index) for e in n["entries"]]
    assert ("single", "wraparound", "def-回绕", "main", None) in entries
    assert ("single", "单向环", "def-单向环", "main", None) in entries
    # sentence=True：跳过含这个词的标题，落在正文里第一个含它的段落
    doc = _doctree()
    site_zh.mark_definitions(doc, "d", [site_zh.Definition("双向环", "d", "单向环与双向环", sentence=True)], ())
    assert doc.ids["def-双向环"].tagname == "paragraph" and doc.ids["def-双向环"].astext() == "正文里的双向环。"


def test_a_definition_that_is_not_there_fails_the_build():
    from sphinx.errors import ExtensionError
    from tools import site_zh

    with pytest.raises(ExtensionError, match="没有 id 为"):
        site_zh.mark_definitions(_doctree(), "d", [site_zh.Definition("回绕", "d", "没有这一节")], ())
    with pytest.raises(ExtensionError, match="正文里没有"):  # 只在代码里出现不算
        site_zh.mark_definitions(_doctree(), "d", [site_zh.Definition("回绕", "d", "单向环与双向环")], ())


# ---------- Chromium ----------


@pytest.fixture(scope="module")
def outcomes(site, chromium):
    return search_terms(site, chromium, DEFINED_IN)


@slow
def test_first_result_is_the_anchored_definition(outcomes):
    bad = {
        t: o
        for t, o in outcomes.items()
        if any("第一个结果" in p or "锚点" in p or "没有结果" in p for p in o.problems)
    }
    assert not bad, _table(bad)


@slow
def test_no_page_is_listed_twice(outcomes):
    bad = {t: o for t, o in outcomes.items() if any(p.startswith("结果重复") for p in o.problems)}
    assert not bad, _table(bad)
    assert all(o.results >= 1 for o in outcomes.values())


def test_sentence_terms_are_marked_to_land_on_their_sentence():
    from tools import site_zh

    assert {d.term for d in site_zh.DEFINITIONS.values() if d.sentence} == SENTENCE_TERMS


@slow
def test_snippet_is_the_sentence_with_the_term(outcomes):
    bad = {t: o for t, o in outcomes.items() if any(p.startswith("摘要") or "没有摘要" in p for p in o.problems)}
    assert not bad, _table(bad)


@slow
def test_landing_highlights_the_term_on_screen(outcomes):
    bad = {t: o for t, o in outcomes.items() if any("高亮" in p or "脚本异常" in p for p in o.problems)}
    assert not bad, _table(bad)


if __name__ == "__main__":
    chrome = site_check.find_chromium()
    assert chrome, "没有 Chromium"
    found = search_terms(Path(sys.argv[1]), chrome, DEFINED_IN)
    print(_table(found))
    print(f"\n{sum(not o.problems for o in found.values())}/{len(found)} 个词没有问题")
