"""在真实浏览器里检查构建好的网站（读者看到的样子）

用 Playwright 驱动系统的 Chromium（Debian 的 /usr/bin/chromium；不下载浏览器），
从 127.0.0.1 上的本地服务器打开每一页，并拦下一切去往别处的请求。对每一页记录：

- 被拦下的外部请求、失败的请求、HTTP ≥ 400 的响应、控制台错误与未捕获的异常；
- 数学式：有 ``.math`` 的页面必须有 MathJax 输出（``mjx-container``），每个 ``.math`` 都被排版，
  没有 TeX 错误（``mjx-merror``），正文（代码块之外）没有残留的 ``$$``、``\\[``、``\\(``、``\\begin{``；
- 图片：每个 ``<img>`` 都加载成功（naturalWidth > 0），正文里的图片都有说明性的 alt；
- 链接：站内链接 HTTP 200，带锚点的链接在目标页里有对应的 id；
- Colab / 下载按钮：笔记本页面有指向仓库里已提交 ``.ipynb`` 的 Colab 链接、能下载的 .ipynb 与 .md；
  练习页面（有 sphinx-exercise 的练习块或位于 exercises/）链接到自己的笔记本；
- 每页第一屏的截图（1280×800）；指定的一页用打印样式生成 PDF。
- 搜索（``search_terms``）：在网站自己的搜索页里查每个词，要求结果里有定义它的那一页；
- 动画（``shardlab.animate`` 的播放器）：点“播放”后过一会儿，步数和画面都变了；打印时播放器隐藏、逐步图显示；
- 手机（390×844，``check_mobile``）：每页一张截图；正文里每张图都是指向它自己的 PNG 的链接（点开看原图），
  每张图的文字渲染后不小于 10 CSS px
  （由 ``plots.glue_figure`` 记下的最小字号、dpi 与图的显示宽度算出；没有记录的图按课程样式的 10 pt、110 dpi 算），
  播放器里的字也不小于 10 px，页面不横向溢出。

另有不需要浏览器的静态检查 ``static_external_resources``：HTML 与 CSS 里不能引用站外的脚本、样式、字体或图片。

页面列表来自 ``_toc.yml``（``toc_pages``），所以加了章节不用改这里。
测试在 ``tests/test_site.py``；``make test-site`` 构建网站后运行它。
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import yaml

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
VIEWPORT = {"width": 1280, "height": 800}
MOBILE = {"width": 390, "height": 844}
MIN_TEXT_PX = 10.0
MIN_CELL_PX = 48.0  # 手机上表格单元格的最小宽度（更窄时一行只放得下一两个汉字）
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
COLAB = "https://colab.research.google.com/github/"


def find_chromium() -> str | None:
    import os
    import shutil

    env = os.environ.get("CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for cand in CHROMIUM_CANDIDATES:
        if Path(cand).exists():
            return cand
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


# ---------- 页面列表与仓库信息 ----------


def _toc_entries(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("file", "root"):
                yield value
            else:
                yield from _toc_entries(value)
    elif isinstance(node, list):
        for item in node:
            yield from _toc_entries(item)


def toc_pages(root: Path = ROOT) -> list[str]:
    """目录里的全部页面（不带扩展名，如 book/environment），根页面在前"""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    pages: list[str] = []
    for entry in _toc_entries(toc):
        entry = str(entry).removesuffix(".md").removesuffix(".ipynb")
        if entry not in pages:
            pages.append(entry)
    return pages


def is_notebook_page(page: str, root: Path = ROOT) -> bool:
    """带 jupytext 头的 .md（与 tools/nbsync.py 的判断相同）"""
    md = root / f"{page}.md"
    if not md.exists():
        return (root / f"{page}.ipynb").exists()
    text = md.read_text(encoding="utf-8")
    header = text.split("\n---", 1)[0] if text.startswith("---\n") else ""
    return "jupytext:" in header and "kernelspec:" in header


def repository(root: Path = ROOT) -> tuple[str, str]:
    """(owner/name, branch)，来自 _config.yml"""
    cfg = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo = cfg["repository"]
    return repo["url"].removeprefix("https://github.com/").rstrip("/"), repo.get("branch", "main")


# ---------- 本地服务器 ----------


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".woff": "font/woff",
        ".woff2": "font/woff2",
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
        ".ipynb": "application/json",
        ".md": "text/markdown; charset=utf-8",
    }

    def log_message(self, format, *args):  # 安静；失败由浏览器一侧记录
        pass


class SiteServer:
    """在 127.0.0.1 的空闲端口上提供一个目录（与 python -m http.server 相同的处理器）"""

    def __init__(self, directory: Path):
        handler = functools.partial(_Handler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), handler)
        self.base = f"http://{HOST}:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# ---------- 静态检查 ----------

_EXTERNAL_ATTR = re.compile(
    r"<(script|img|iframe|source|video|audio|embed|object)\b[^>]*?\s(?:src|data)\s*=\s*[\"']((?:https?:)?//[^\"']+)",
    re.I,
)
_LINK_TAG = re.compile(r"<link\b[^>]*>", re.I)
_CSS_URL = re.compile(r"(?:url\(\s*[\"']?|@import\s+[\"'])((?:https?:)?//[^\"')\s]+)", re.I)


def static_external_resources(site: Path) -> list[str]:
    """HTML 里站外的 src / 样式表 / 预加载，CSS 里站外的 url() 与 @import（超链接 <a> 不算）"""
    found = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(site)
        for tag, url in _EXTERNAL_ATTR.findall(text):
            found.append(f"{rel}: <{tag}> {url}")
        for tag in _LINK_TAG.findall(text):
            href = re.search(r"\shref\s*=\s*[\"']((?:https?:)?//[^\"']+)", tag, re.I)
            rel_attr = re.search(r"\srel\s*=\s*[\"']([^\"']+)", tag, re.I)
            kinds = (rel_attr.group(1).lower().split() if rel_attr else []) or ["?"]
            if href and set(kinds) & {"stylesheet", "preload", "modulepreload", "icon", "prefetch", "manifest", "?"}:
                found.append(f"{rel}: <link rel={'/'.join(kinds)}> {href.group(1)}")
    for css in sorted(site.rglob("*.css")):
        text = re.sub(r"/\*.*?\*/", "", css.read_text(encoding="utf-8", errors="replace"), flags=re.S)
        for url in _CSS_URL.findall(text):
            found.append(f"{css.relative_to(site)}: {url}")
    return found


# ---------- 链接目标 ----------


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key == "id" or (key == "name" and tag == "a"):
                self.ids.add(value or "")


def _fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


# ---------- 浏览器检查 ----------

_PAGE_JS = r"""
async () => {
  // 图注里每段文字的字重与颜色要和正文段落一样（浅色、深色模式各查一次）
  const captionStyles = (article) => {
    const body = article.querySelector("section p, p");
    const caps = Array.from(article.querySelectorAll("figcaption"));
    if (!body || !caps.length) return [];
    const out = [];
    const html = document.documentElement, saved = html.dataset.theme;
    for (const mode of ["light", "dark"]) {
      html.dataset.theme = mode;
      const ref = getComputedStyle(body);
      for (const cap of caps) {
        // 图注本身、段落和 caption-text 决定继承下去的字重与颜色（<strong>、<code> 里有意不同的不算）
        for (const el of [cap, ...cap.querySelectorAll(":scope > p, span.caption-text")]) {
          const s = getComputedStyle(el);
          if (s.fontWeight !== ref.fontWeight || s.color !== ref.color) {
            out.push(`${mode}: ${el.tagName.toLowerCase()}.${el.className || ""} 字重 ${s.fontWeight}、颜色 ${s.color}` +
                     `（正文 ${ref.fontWeight}、${ref.color}）`);
          }
        }
      }
    }
    if (saved === undefined) delete html.dataset.theme; else html.dataset.theme = saved;
    return out;
  };
  const imgs = Array.from(document.images);
  for (const img of imgs) { img.loading = "eager"; }
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(r => { img.addEventListener("load", r); img.addEventListener("error", r); setTimeout(r, 5000); })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, new Promise(r => setTimeout(r, 10000))]);
  }
  if (document.fonts && document.fonts.ready) { await document.fonts.ready; }
  const skip = "pre, code, script, style, textarea, mjx-container, .highlight";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    const t = n.textContent;
    for (const pat of ["$$", "\\[", "\\(", "\\begin{"]) {
      const i = t.indexOf(pat);
      if (i >= 0) raw.push(t.slice(Math.max(0, i - 30), i + 40).trim());
    }
  }
  const mathEls = Array.from(document.querySelectorAll(".math"));
  const article = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;
  return {
    title: document.title,
    math: mathEls.length,
    mjx: document.querySelectorAll("mjx-container").length,
    untypeset: mathEls.filter(e => !e.querySelector("mjx-container")).map(e => e.textContent.slice(0, 60)),
    merror: Array.from(document.querySelectorAll("mjx-merror")).map(e => e.textContent.slice(0, 60)),
    mathjaxLoaded: !!(window.MathJax && MathJax.version),
    raw: raw,
    images: imgs.map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0,
                            alt: i.getAttribute("alt"), inArticle: article.contains(i),
                            width: i.getBoundingClientRect().width})),
    links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href),
    colab: Array.from(document.querySelectorAll("a[href^='https://colab.research.google.com/']")).map(a => a.href),
    downloads: Array.from(document.querySelectorAll(
        "a.btn-download-source-button, a.btn-download-notebook-button")).map(a => a.href),
    exercises: document.querySelectorAll(".exercise, .solution").length,
    players: document.querySelectorAll(".shardlab-player").length,
    captions: captionStyles(article),
    // 锚点落在顶栏下面：节和图的 scroll-margin-top 不小于顶栏的高度
    anchorMargin: Array.from(article.querySelectorAll("section[id], figure[id]")).slice(0, 3)
        .map(e => parseFloat(getComputedStyle(e).scrollMarginTop) || 0),
    headerHeight: (document.querySelector("header.bd-header") || {offsetHeight: 0}).offsetHeight,
  };
}
"""

_PRINT_JS = r"""
() => {
  const hidden2 = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
    return s.display === "none" || s.visibility === "hidden" || r.width === 0 || r.height === 0; };
  const hidden = sel => Array.from(document.querySelectorAll(sel)).every(e => {
    const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
    return s.display === "none" || s.visibility === "hidden" || r.width === 0 || r.height === 0;
  });
  const art = document.querySelector(".bd-article") || document.querySelector("article");
  return {
    chromeHidden: ["header.bd-header", ".bd-sidebar-primary", ".bd-sidebar-secondary",
                   ".bd-header-article", ".prev-next-area", "footer.bd-footer", ".bd-footer-content"]
                  .filter(sel => !hidden(sel)),
    articleWidth: art ? art.getBoundingClientRect().width : 0,
    pageWidth: document.documentElement.clientWidth,
    players: document.querySelectorAll(".shardlab-player").length,
    playersShown: Array.from(document.querySelectorAll(".shardlab-player")).filter(e => !hidden2(e)).length,
    stripsShown: Array.from(document.querySelectorAll(".shardlab-strip img")).filter(e => !hidden2(e)).length,
  };
}
"""


@dataclass
class PageResult:
    page: str
    url: str
    info: dict = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (类别, 说明)
    screenshot: Path | None = None
    layout: dict = field(default_factory=dict)  # 手机上的图与表（_LAYOUT_JS）

    def add(self, kind: str, message: str) -> None:
        self.problems.append((kind, message))


@dataclass
class SiteReport:
    base: str
    pages: list[PageResult]
    blocked: list[str]
    failed: list[str]
    console: list[str]
    external_links: set[str]
    pdf: Path | None = None
    pdf_pages: int = 0
    pdf_problems: list[str] = field(default_factory=list)
    checked_links: int = 0
    search: dict[str, list[str]] = field(default_factory=dict)  # 词 → 结果里的页面
    search_problems: list[str] = field(default_factory=list)
    players: int = 0
    mobile_figures: int = 0

    def problems(self, kind: str | None = None) -> list[str]:
        """全部发现；kind 只取一类：external / failed / console / load / math / image / link / colab / download /
        exercise / print / search / animation / mobile / caption"""
        groups = {
            "external": [f"外部请求（已拦下）：{u}" for u in self.blocked],
            "failed": [f"请求失败：{u}" for u in self.failed],
            "console": [f"控制台错误：{m}" for m in self.console],
            "print": [f"打印：{m}" for m in self.pdf_problems],
            "search": list(self.search_problems),
        }
        for page in self.pages:
            for k, message in page.problems:
                groups.setdefault(k, []).append(f"{page.page}: {message}")
        if kind is not None:
            return groups.get(kind, [])
        return [m for messages in groups.values() for m in messages]


def check_site(
    site: Path,
    pages: list[str],
    *,
    chromium: str,
    repo_root: Path = ROOT,
    notebook_pages: set[str] | None = None,
    exercise_pages: set[str] | None = None,
    screenshots: Path | None = None,
    pdf_page: str | None = None,
    pdf_out: Path | None = None,
    search_terms: dict[str, str] | None = None,
    mobile: bool | list[str] = False,
    desktop: bool = True,
) -> SiteReport:
    """打开 pages（不带 .html）里的每一页并检查；返回全部发现（不抛出断言）

    desktop=False 时不做桌面宽度的逐页检查（也不查链接），只做 search_terms、mobile 与 PDF：
    测试把桌面检查与手机、搜索分给两个 pytest-xdist 进程，同时进行。
    """
    from playwright.sync_api import sync_playwright

    site = Path(site)
    if notebook_pages is None:
        notebook_pages = {p for p in pages if is_notebook_page(p, repo_root)}
    if exercise_pages is None:
        exercise_pages = {p for p in pages if p.startswith("exercises/")}
    slug, branch = repository(repo_root)
    blocked: list[str] = []
    failed: list[str] = []
    console: list[str] = []
    results: list[PageResult] = []
    externals: set[str] = set()

    with SiteServer(site) as server, sync_playwright() as pw:
        origin = server.base.rstrip("/")

        def route(r):
            if urlparse(r.request.url).hostname == HOST:
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort("blockedbyclient")

        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT, locale="zh-CN", service_workers="block")
            context.route("**/*", route)
            current = {"page": ""}

            def watch(p):
                """控制台错误、未捕获的异常、失败的站内请求与 4xx/5xx 响应都记下来"""
                p.on("console", lambda m: m.type == "error" and console.append(f"{current['page']}: {m.text}"))
                p.on("pageerror", lambda e: console.append(f"{current['page']}: 未捕获的异常 {e}"))
                # 翻到下一页时浏览器会中止还没完成的请求（net::ERR_ABORTED）：那不是网站的错；缺的文件由下面的 4xx 记下
                p.on(
                    "requestfailed",
                    lambda r: (
                        urlparse(r.url).hostname == HOST
                        and "ERR_ABORTED" not in str(r.failure)
                        and failed.append(f"{current['page']}: {r.url} ({r.failure})")
                    ),
                )
                p.on(
                    "response",
                    lambda r: r.status >= 400 and failed.append(f"{current['page']}: HTTP {r.status} {r.url}"),
                )
                return p

            page = watch(context.new_page())
            players = 0
            for name in pages if desktop else ():
                current["page"] = name
                result = PageResult(name, f"{server.base}{name}.html")
                results.append(result)
                resp = page.goto(result.url, wait_until="load")
                if resp is None or resp.status != 200:
                    result.add("load", f"页面打不开（HTTP {resp.status if resp else '?'}）")
                    continue
                info = page.evaluate(_PAGE_JS)
                result.info = info
                _judge_page(result, info, name in notebook_pages, name in exercise_pages, slug, branch, repo_root)
                for href in info["links"]:
                    if not href.startswith(origin) and urlparse(href).scheme in ("http", "https"):
                        externals.add(href)
                if screenshots is not None:
                    shot = screenshots / f"{name}.png"
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(shot))
                    result.screenshot = shot
                if info.get("players"):  # 截过第一屏之后，在同一次加载里点“播放”
                    current["page"] = f"{name}（动画）"
                    players += _check_players(page, result)

            if not desktop:
                results = [PageResult(name, f"{server.base}{name}.html") for name in pages]
            report = SiteReport(server.base, results, blocked, failed, console, externals)
            report.players = players
            if desktop:
                _check_links(report, origin)
            if search_terms:
                current["page"] = "search"
                spage = watch(context.new_page())
                spage.add_init_script(_NO_SUMMARIES_JS)
                try:
                    report.search = _check_search(spage, server.base, search_terms, report.search_problems)
                finally:
                    spage.close()
            if mobile:
                current["page"] = "（手机）"
                mctx = browser.new_context(viewport=MOBILE, locale="zh-CN", service_workers="block", is_mobile=True)
                mctx.route("**/*", route)
                mpage = mctx.new_page()
                try:
                    on_phone = set(pages) if mobile is True else set(mobile)
                    for r in (r for r in results if r.page in on_phone):
                        current["page"] = f"{r.page}（手机）"
                        shot = (screenshots / "mobile" / f"{r.page}.png") if screenshots is not None else None
                        report.mobile_figures += _check_mobile(mpage, r, site, shot)
                finally:
                    mctx.close()

            if pdf_page is not None and pdf_out is not None:
                current["page"] = f"{pdf_page}（打印）"
                page.goto(f"{server.base}{pdf_page}.html", wait_until="load")
                page.evaluate(_PAGE_JS)
                page.emulate_media(media="print")
                lay = page.evaluate(_PRINT_JS)
                if lay["players"] and (lay["playersShown"] or lay["stripsShown"] < lay["players"]):
                    report.pdf_problems.append(
                        f"打印时应隐藏动画、显示逐步图：{lay['playersShown']} 个播放器仍可见，"
                        f"{lay['stripsShown']}/{lay['players']} 张逐步图显示"
                    )
                if lay["chromeHidden"]:
                    report.pdf_problems.append(f"打印时这些界面元素仍然可见：{lay['chromeHidden']}")
                if lay["articleWidth"] < 0.8 * lay["pageWidth"]:
                    report.pdf_problems.append(
                        f"打印时正文只占 {lay['articleWidth']:.0f}/{lay['pageWidth']} px 宽，应接近全宽"
                    )
                if screenshots is not None:
                    shot = screenshots / "print" / f"{pdf_page}.png"
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(shot), full_page=False)
                pdf_out.parent.mkdir(parents=True, exist_ok=True)
                page.pdf(path=str(pdf_out), format="A4", print_background=True, outline=True, tagged=True)
                report.pdf = pdf_out
                data = pdf_out.read_bytes()
                n_pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
                if not data.startswith(b"%PDF") or len(data) < 10_000 or n_pages < 1:
                    report.pdf_problems.append(f"PDF 不像样：{len(data)} 字节，{n_pages} 页")
                report.pdf_pages = n_pages
        finally:
            browser.close()
    return report


_PLAYER_STATE_JS = r"""
() => Array.from(document.querySelectorAll(".shardlab-player")).map(p => ({
  step: p.dataset.step, steps: p.dataset.steps, interval: p.dataset.interval, svg: p.querySelector(".sl-panels").innerHTML.length + ":" +
  Array.from(p.querySelectorAll(".sl-svg svg")).map(s => s.innerHTML).join("|")}))
"""


# 播放器的样子：步数只写一处（每幅画至多一处：几份记录并排时各写各的），深色模式下按钮和设备框是深色的
_PLAYER_LOOK_JS = r"""
() => {
  const out = [];
  const players = Array.from(document.querySelectorAll(".shardlab-player"));
  players.forEach((p, i) => {
    const panels = p.querySelectorAll(".sl-panel").length;
    const counters = Array.from(p.querySelectorAll(".sl-svg text, .sl-step"))
      .filter(e => /第 \d+ \/ \d+ 步/.test(e.textContent)).length;
    if (counters > panels) out.push(`第 ${i + 1} 个动画的步数写了 ${counters} 处（${panels} 幅画）`);
  });
  const html = document.documentElement, saved = html.dataset.theme;
  html.dataset.theme = "dark";
  const light = c => { const v = (c.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
                       return v.length === 3 && (0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]) > 160; };
  players.forEach((p, i) => {
    const button = p.querySelector("button"), box = p.querySelector(".sl-svg rect[rx='5']");
    if (button && light(getComputedStyle(button).backgroundColor)) out.push(`第 ${i + 1} 个动画的按钮在深色模式下是浅色的`);
    if (box && light(getComputedStyle(box).fill)) out.push(`第 ${i + 1} 个动画的设备框在深色模式下是浅色的`);
    const holder = p.closest(".text_html");  // 主题给笔记本 HTML 输出垫的浅色底
    if (holder && light(getComputedStyle(holder).backgroundColor)) out.push(`第 ${i + 1} 个动画在深色模式下垫着浅色底`);
  });
  if (saved === undefined) delete html.dataset.theme; else html.dataset.theme = saved;
  return out;
}
"""


PLAYER_WAIT_STEPS = 2.5  # 点“播放”之后最多等几步的时间（步长是播放器的 data-interval）


def _check_players(page, result: PageResult) -> int:
    """每个播放器：点“播放”，等到步数与画面都变了（最多等最慢那个播放器 PLAYER_WAIT_STEPS 步的时间）；返回检查过的播放器数"""
    for problem in page.evaluate(_PLAYER_LOOK_JS):
        result.add("animation", problem)
    before = page.evaluate(_PLAYER_STATE_JS)
    buttons = page.locator(".shardlab-player .sl-play")
    for i in range(buttons.count()):
        buttons.nth(i).scroll_into_view_if_needed()
        buttons.nth(i).click()
    timeout_ms = PLAYER_WAIT_STEPS * max((float(b["interval"] or 1000) for b in before), default=1000)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        after = page.evaluate(_PLAYER_STATE_JS)
        moved = [a["step"] != b["step"] and a["svg"] != b["svg"] for b, a in zip(before, after)]
        if all(moved) or time.monotonic() > deadline:
            break
        page.wait_for_timeout(150)
    for i, (b, ok) in enumerate(zip(before, moved)):
        if int(b["steps"] or 0) < 1:
            result.add("animation", f"第 {i + 1} 个动画没有步骤")
        elif not ok:
            result.add(
                "animation",
                f"第 {i + 1} 个动画点了“播放” {timeout_ms / 1000:g} 秒后没有变化（步 {b['step']} → {after[i]['step']}）",
            )
    return len(after)


# 搜索页显示结果的同时逐个 fetch 结果页、在主线程里解析它们来做摘要：每个词要几秒 CPU，而摘要不是这里检查的东西，
# 跳到下一个词时没取完的 fetch 还会被记成失败的请求。所以在搜索页里把对 .html 的 fetch 直接答成空页（没有摘要），
# 结果列表、排序与 searchindex.js 的查询都照常
_NO_SUMMARIES_JS = r"""
(() => {
  const fetch0 = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = new URL(typeof input === "string" ? input : input.url, location.href);
    if (url.pathname.endsWith(".html")) {
      return Promise.resolve(new Response("", {status: 200, headers: {"Content-Type": "text/html"}}));
    }
    return fetch0(input, init);
  };
})();
"""


_SEARCH_JS = r"""
async () => {
  for (let i = 0; i < 200; i++) {
    if (!document.querySelector("#search-results")) break;  // 不是 Sphinx 的搜索页
    // 搜索结束时 searchtools.js 在 p.search-summary 里写上结果数（摘要的 fetch 由 _NO_SUMMARIES_JS 直接答空）
    const summary = document.querySelector("#search-results p.search-summary");
    if (summary && summary.innerText.trim() && Search._pulse_status === -1) break;
    await new Promise(r => setTimeout(r, 100));
  }
  return Array.from(document.querySelectorAll("#search-results ul.search li a")).map(a => a.href);
}
"""


def _check_search(page, base: str, terms: dict[str, str], problems: list[str]) -> dict[str, list[str]]:
    """在网站的搜索页里查每个词；结果里要有 terms[词] 那一页"""
    from urllib.parse import quote

    found: dict[str, list[str]] = {}
    for term, want in terms.items():
        page.goto(f"{base}search.html?q={quote(term)}", wait_until="load")
        hrefs = page.evaluate(_SEARCH_JS)  # 等到搜索结束
        hits = sorted({urlparse(h).path.lstrip("/").removesuffix(".html") for h in hrefs})
        found[term] = hits
        if want not in hits:
            problems.append(f"搜索 “{term}” 的结果里没有 {want}（结果：{hits or '无'}）")
    return found


_MOBILE_JS = r"""
async () => {
  const imgs = Array.from(document.images);
  for (const img of imgs) { img.loading = "eager"; }
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(r => { img.addEventListener("load", r); img.addEventListener("error", r); setTimeout(r, 5000); })));
  const article = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;
  const figs = Array.from(article.querySelectorAll("img")).filter(i => !i.closest(".shardlab-strip, .shardlab-player"))
    .map(i => { const a = i.closest("a[href]");
                return {src: i.currentSrc || i.src, width: i.getBoundingClientRect().width, natural: i.naturalWidth,
                        link: a ? a.href : null, alt: i.getAttribute("alt")}; });
  const svgText = [];
  for (const svg of article.querySelectorAll(".shardlab-player svg")) {
    const m = svg.getScreenCTM(); if (!m) continue;
    for (const t of svg.querySelectorAll("text")) {
      svgText.push(parseFloat(t.getAttribute("font-size") || "16") * Math.hypot(m.a, m.b));
    }
  }
  return {figs, svgMin: svgText.length ? Math.min(...svgText) : null,
          overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth};
}
"""


# 比自己的框宽、上面却没有“左右滑动”提示（book/_static/course.js）的表格、代码块（含笔记本的代码单元与输出）
# 与行间式子（MathJax 的 mjx-container；提示在整个 div.math 的前面）。先等 MathJax 排版完
_WIDE_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await new Promise(r => setTimeout(r, 300));
  const sel = ["article.bd-article .pst-scrollable-table-container", "article.bd-article div.highlight > pre",
               "article.bd-article mjx-container[display]"].join(", ");
  const anchor = b => b.matches("mjx-container") ? (b.closest("div.math") || b)
                      : b.matches("pre") ? b.parentNode : b;
  const kind = b => b.matches("mjx-container") ? "式子" : b.closest(".cell") ? "笔记本单元" : "表格或代码块";
  return Array.from(document.querySelectorAll(sel))
    .filter(b => b.scrollWidth > b.clientWidth + 2 && b.getBoundingClientRect().height > 0)
    .filter(b => { const p = anchor(b).previousElementSibling;
                   return !(p && p.classList.contains("course-scroll-cue")); })
    .map(b => kind(b) + "：" + (b.matches("mjx-container")
        ? (b.closest("div.math") || b).textContent.replace(/\s+/g, "").slice(0, 30)
        : (b.innerText || "").replace(/\s+/g, " ").trim().slice(0, 30)));
}
"""

# 手机上的图与表：比屏幕（正文框）宽的图与动画，窄于 MIN_CELL_PX 的表格单元格，比自己的框宽的表格（数一数，
# 有滑动提示时允许）。等 MathJax 排版完（表格里的式子会改变列宽），再等 course.js 的 resize 处理。
_LAYOUT_JS = r"""
async (minCell) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await new Promise(r => setTimeout(r, 300));
  const article = document.querySelector("article.bd-article") || document.body;
  const box = article.getBoundingClientRect();
  const limit = Math.min(box.right, document.documentElement.clientWidth) + 1;
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const text = e => (e.getAttribute("alt") || e.getAttribute("aria-label") || e.innerText || "")
    .replace(/\s+/g, " ").trim().slice(0, 40);
  const wideFigs = [];
  const figs = Array.from(article.querySelectorAll("img, .shardlab-player svg"))
    .filter(e => shown(e) && !e.closest(".shardlab-strip"));
  for (const e of figs) {
    const r = e.getBoundingClientRect();
    if (r.right > limit || r.left < box.left - 1) wideFigs.push(`${text(e)}（${Math.round(r.width)} px）`);
  }
  const tables = Array.from(article.querySelectorAll("table")).filter(shown);
  let overflowing = 0;
  const narrow = [];
  for (const t of tables) {
    const holder = t.parentElement;
    if (t.getBoundingClientRect().width > holder.clientWidth + 2) overflowing += 1;
    for (const c of t.querySelectorAll("th, td")) {
      const r = c.getBoundingClientRect();
      if (r.height > 0 && r.width < minCell - 0.5 && (c.innerText || "").trim())
        narrow.push(`${text(c)}（${r.width.toFixed(0)} px）`);
    }
  }
  return {figures: figs.length, wideFigs, tables: tables.length, overflowing, narrow};
}
"""

# 手机上改成卡片的表格（book/_static/course.js）：每个格子前面的标签要和表头看起来一样。读者看到的标签
# （::before 的文字，加上 .course-label 里的内容）与表头比：式子算作“[式]”，MathJax 的无障碍文本
# （mjx-assistive-mml，逐个字母的 “V A”）不算。表头里排好的式子在标签里也要是排好的式子，不是散开的字母
_CARDS_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await new Promise(r => setTimeout(r, 300));
  const seen = e => {
    if (!e) return "";
    const c = e.cloneNode(true);
    c.querySelectorAll("mjx-container").forEach(m => m.replaceWith("[式]"));
    c.querySelectorAll("span.math").forEach(m => m.replaceWith("[式]"));
    return c.textContent.replace(/\s+/g, " ").trim();
  };
  const bad = [];
  let cards = 0;
  for (const t of document.querySelectorAll("article.bd-article table.course-cards")) {
    const head = t.tHead && t.tHead.rows[t.tHead.rows.length - 1];
    if (!head) continue;
    for (const row of Array.from(t.tBodies).flatMap(b => Array.from(b.rows))) {
      Array.from(row.cells).forEach((td, i) => {
        cards += 1;
        const before = getComputedStyle(td, "::before").content;
        const pseudo = before && before !== "none" && before !== "normal" ? before.replace(/^"|"$/g, "") : "";
        const label = (pseudo + " " + seen(td.querySelector(":scope > .course-label"))).trim();
        const want = seen(head.cells[i]);
        if (label !== want) bad.push(`“${label}”（表头：“${want}”）`);
      });
    }
  }
  return {cards, bad: Array.from(new Set(bad))};
}
"""

# 点手机上看得见的 ☰ 与“本页目录”按钮：侧栏（对话框）要打开
_NAV_JS = r"""
async () => {
  const out = [];
  for (const [kind, dialog] of [["primary", "pst-primary-sidebar-modal"], ["secondary", "pst-secondary-sidebar-modal"]]) {
    const button = Array.from(document.querySelectorAll("." + kind + "-toggle"))
      .find(b => b.getBoundingClientRect().width > 0 && getComputedStyle(b).visibility !== "hidden");
    const d = document.getElementById(dialog);
    if (!button || !d) continue;
    button.click();
    await new Promise(r => setTimeout(r, 200));
    if (!d.open) out.push(kind);
    else d.close();
  }
  return out;
}
"""


def _check_mobile(page, result: PageResult, site: Path, shot: Path | None) -> int:
    """390 px 宽的手机屏幕：图里的字与播放器里的字不小于 MIN_TEXT_PX；返回检查过的图数"""
    from tools import site_pages

    page.goto(result.url, wait_until="load")
    info = page.evaluate(_MOBILE_JS)
    checked = 0
    for fig in info["figs"]:
        path = urlparse(fig["src"]).path
        # 点一下看原图（book/_static/course.js 的 linkFigures）
        if fig["link"] != fig["src"] and not fig["src"].startswith("data:"):
            result.add("mobile", f"手机上图 {Path(path).name} 点不开原图（链接：{fig['link'] or '无'}）")
        if not path.endswith(".png") or not fig["natural"]:
            continue
        facts = site_pages.figure_facts(site / unquote(path).lstrip("/"))
        pt = float(facts.get("shardlab:min-font-pt", 10))
        dpi = float(facts.get("shardlab:dpi", 110))
        px = pt * dpi / 72 * fig["width"] / fig["natural"]
        checked += 1
        if px < MIN_TEXT_PX:
            result.add(
                "mobile",
                f"手机上图 {Path(path).name} 显示为 {fig['width']:.0f} px 宽，最小的字（{pt:g} pt）只有 {px:.1f} px",
            )
    if info["svgMin"] is not None and info["svgMin"] < MIN_TEXT_PX:
        result.add("mobile", f"手机上动画里最小的字只有 {info['svgMin']:.1f} px")
    if info["overflow"] > 2:
        result.add("mobile", f"手机上整页横向溢出 {info['overflow']} px（应只有图自己能横向滑动）")
    if shot is not None:  # 截图停在正文的第一张图（没有图时是页首），看得出手机上图里的字
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.evaluate(
            "() => { const f = document.querySelector('article figure img, article .cell_output img');"
            " if (f) f.scrollIntoView({block: 'start'}); else window.scrollTo(0, 0); }"
        )
        page.screenshot(path=str(shot))
    wide = page.evaluate(_WIDE_JS)
    if wide:
        result.add(
            "mobile",
            f"手机上 {len(wide)} 个表格、代码块或式子比自己的框宽，上面没有滑动提示（例如 {wide[:3]}）",
        )
    layout = page.evaluate(_LAYOUT_JS, MIN_CELL_PX)
    result.layout = layout
    if layout["wideFigs"]:
        result.add(
            "mobile",
            f"手机上 {len(layout['wideFigs'])} 张图或动画比正文宽（要横向滑动或被裁掉），例如 “{layout['wideFigs'][0]}”",
        )
    if layout["narrow"]:
        result.add(
            "mobile",
            f"手机上 {len(layout['narrow'])} 个表格单元格窄于 {MIN_CELL_PX:g} px，例如 “{layout['narrow'][0]}”",
        )
    cards = page.evaluate(_CARDS_JS)
    if cards["bad"]:
        result.add(
            "mobile",
            f"手机上 {len(cards['bad'])} 种卡片标签与表头不一样（式子散成了字母？），例如 {cards['bad'][:3]}",
        )
    dead = page.evaluate(_NAV_JS)
    if dead:
        names = {"primary": "☰（全书目录）", "secondary": "本页目录"}
        result.add("mobile", "手机上点了 " + "、".join(names[k] for k in dead) + " 按钮，侧栏没有打开")
    return checked


def _judge_page(result: PageResult, info: dict, notebook: bool, exercise: bool, slug: str, branch: str, root: Path):
    p = result
    if info["math"]:
        if not info["mathjaxLoaded"]:
            p.add("math", "页面有数学式，但 MathJax 没有加载")
        if info["mjx"] == 0:
            p.add("math", f"页面有 {info['math']} 处数学式，但没有 MathJax 输出（mjx-container）")
        if info["untypeset"]:
            p.add("math", f"没有排版的数学式：{info['untypeset'][:5]}")
    if info["merror"]:
        p.add("math", f"MathJax 报 TeX 错误：{info['merror'][:5]}")
    if info["raw"]:
        p.add("math", f"正文里残留 TeX 定界符：{info['raw'][:5]}")
    short = [m for m in info.get("anchorMargin", []) if m < info.get("headerHeight", 0)]
    if short:
        p.add("link", f"锚点会落在顶栏下面：scroll-margin-top {short[0]:.0f} px < 顶栏 {info['headerHeight']} px")
    for problem in info.get("captions", [])[:5]:
        p.add("caption", f"图注的样式与正文不同：{problem}")
    for img in info["images"]:
        if not img["ok"]:
            p.add("image", f"图片没有加载：{img['src']}")
        if img["inArticle"]:
            alt = (img["alt"] or "").strip()
            # myst-nb 没有 alt 时把图片路径当 alt（../_images/<哈希>.png）：这不算说明
            if (
                len(alt) < 4
                or re.search(r"\.(png|jpe?g|gif|svg|webp)$", alt, re.I)
                or re.fullmatch(r"[0-9a-f]{16,}", alt)
            ):
                p.add("image", f"正文图片缺少说明性的 alt 文字：{img['src']}（alt={img['alt']!r}）")
    colab_prefix = f"{COLAB}{slug}/blob/{branch}/"
    for href in info["colab"]:
        if not href.startswith(colab_prefix) or not href.endswith(".ipynb"):
            p.add("colab", f"Colab 链接不指向 {colab_prefix}…ipynb：{href}")
        elif not (root / href.removeprefix(colab_prefix)).exists():
            p.add("colab", f"Colab 链接指向仓库里不存在的笔记本：{href.removeprefix(colab_prefix)}")
    if notebook:
        want = f"{colab_prefix}{result.page}.ipynb"
        if want not in info["colab"]:
            p.add("colab", f"笔记本页面缺少 Colab 按钮 {want}")
        downloads = [urlparse(d).path for d in info["downloads"]]
        for ext in (".ipynb", ".md"):
            if not any(d.endswith(f"/_sources/{result.page}{ext}") for d in downloads):
                p.add("download", f"笔记本页面的下载按钮没有提供 {result.page}{ext}（有：{downloads}）")
    if exercise or info["exercises"]:
        nb_links = [h for h in info["links"] if urldefrag(h)[0].endswith(".ipynb")]
        if not nb_links:
            p.add("exercise", "练习页面没有链接到任何笔记本（.ipynb）")


def _check_links(report: SiteReport, origin: str) -> None:
    status: dict[str, tuple[int, bytes]] = {}
    ids: dict[str, set[str]] = {}
    for result in report.pages:
        for href in set(result.info.get("links", [])):
            if not href.startswith(origin + "/"):
                continue
            url, frag = urldefrag(href)
            if url not in status:
                status[url] = _fetch(url)
            code, body = status[url]
            if code != 200:
                result.add("link", f"站内链接 HTTP {code}：{href.removeprefix(origin)}")
                continue
            if frag and url.endswith((".html", "/")):
                if url not in ids:
                    parser = _Ids()
                    parser.feed(body.decode("utf-8", errors="replace"))
                    ids[url] = parser.ids
                if unquote(frag) not in ids[url]:
                    result.add("link", f"锚点不存在：{href.removeprefix(origin)}")
    report.checked_links = len(status)


def colab_url(page: str, root: Path = ROOT) -> str:
    slug, branch = repository(root)
    return f"{COLAB}{slug}/blob/{branch}/{page}.ipynb"


__all__ = [
    "SiteReport",
    "check_site",
    "colab_url",
    "find_chromium",
    "is_notebook_page",
    "static_external_resources",
    "toc_pages",
]
