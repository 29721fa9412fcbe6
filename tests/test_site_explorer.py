"""交互探索器在真实的 Chromium 里（tools/site_explorer.py、book/_static/shardlab-explorer.js）

不需要构建整本书：在临时目录里放一页（两个探索器）和构建时复制进网站的同一批文件（Pyodide 运行时、
NOTICE、当场打包的 shardlab-core.zip），由 tools/site_check.py 的本地服务器提供。

- 点“启动”之前不请求 Pyodide 的任何文件；
- 改动控件后，data-state 里的参数原样交给本机的 shardlab.explorer，结果相差不超过 1e-12（相对）；
- 没有请求离开 127.0.0.1、没有失败的请求、控制台没有错误；桌面 1400 px 与手机 390 px 各一遍；
- file:// 打开、或 .wasm 的 MIME 类型不对时，几秒内用中文说明怎么办。
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import math
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_check, site_explorer  # noqa: E402

from shardlab import explorer, units  # noqa: E402

slow = pytest.mark.slow
MAX_GROWTH = 16 * 1024 * 1024
WIDTHS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}


def _page_html() -> str:
    widgets = "".join(site_explorer.widget_html(kind) for kind in site_explorer.KINDS)
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="_static/shardlab-explorer.css">'
        '<script src="_static/shardlab-explorer.js" defer></script><title>探索器</title></head>'
        # 网站上正文两边有留白：这里也留 24 px，手机上的宽度检查才不比网站宽松
        f'<body style="margin: 8px 24px">{widgets}</body></html>'
    )


@pytest.fixture(scope="module")
def explorer_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("explorer-site")
    site_explorer.copy_into(site / "_static" / site_explorer.STATIC_DIR)
    for name in ("shardlab-explorer.js", "shardlab-explorer.css"):
        shutil.copy2(ROOT / "book" / "_static" / name, site / "_static" / name)
    (site / "index.html").write_text(_page_html(), encoding="utf-8")
    return site


# ---------- 不需要浏览器 ----------


def test_pyodide_is_pinned():
    from tools import site_assets

    version = site_assets.pinned_version(package="pyodide")
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/pyodide"]["version"] == version == "314.0.8"
    assert "pyodide" in site_assets.PINNED


def test_runtime_files_notice_and_size(explorer_site):
    static = explorer_site / "_static" / site_explorer.STATIC_DIR
    names = {p.name for p in static.iterdir()}
    assert {"pyodide.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json", "NOTICE"} <= names
    assert not any(n.endswith((".map", ".d.ts", ".html")) for n in names)
    notice = (static / "NOTICE").read_text(encoding="utf-8")
    assert "Mozilla Public License Version 2.0" in notice and "PYTHON SOFTWARE FOUNDATION LICENSE" in notice
    # “启动”旁写的下载量与进度的总数（data-download）都是网站里这些文件的字节数
    shipped = site_explorer.shipped_sizes(static)
    assert shipped == site_explorer.download_sizes() and set(shipped) >= {"pyodide.asm.wasm", site_explorer.CORE_ZIP}
    page = (explorer_site / "index.html").read_text(encoding="utf-8")
    assert f"Pyodide，约 {units.fmt_bytes(sum(shipped.values()))}）" in page
    for found in re.findall(r'data-download="([^"]*)"', page):
        assert json.loads(html.unescape(found)) == {
            "files": shipped,
            "total_text": units.fmt_bytes(sum(shipped.values())),
        }
    size = sum(p.stat().st_size for p in static.iterdir())
    size += sum(
        (ROOT / "book" / "_static" / n).stat().st_size for n in ("shardlab-explorer.js", "shardlab-explorer.css")
    )
    assert size <= MAX_GROWTH, f"网站增加 {size / 2**20:.1f} MiB"


def test_core_zip_is_the_library_source_and_standard_library_only(explorer_site, tmp_path):
    zpath = explorer_site / "_static" / site_explorer.STATIC_DIR / site_explorer.CORE_ZIP
    with zipfile.ZipFile(zpath) as zf:
        for mod in site_explorer.CORE_MODULES:
            assert zf.read(f"shardlab/{mod}.py") == (ROOT / "lib" / "shardlab" / f"{mod}.py").read_bytes()
    assert site_explorer.core_zip() == zpath.read_bytes()  # 可重现
    # 只有标准库与 zip 时也能算出结果（-I：不读环境变量与用户目录，-S：不加 site-packages）
    code = (
        f"import sys; sys.path.insert(0, {str(zpath)!r}); from shardlab import explorer; "
        "s = explorer.collective_state('v5e', 'all_gather', 10**6, axes=['X'], mesh={'X': 16, 'Y': 16}); "
        "assert 'numpy' not in sys.modules and 'jax' not in sys.modules; print(repr(s['time_s']))"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    native = explorer.collective_state("v5e", "all_gather", 10**6, axes=["X"], mesh={"X": 16, "Y": 16})
    assert float(out.stdout) == native["time_s"]


# ---------- 浏览器 ----------


def _close(a, b, path="") -> list[str]:
    """递归比较 JSON：数值相对误差 ≤ 1e-12，其余相等"""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: 键不同 {sorted(a.keys() ^ b.keys())}"]
        return [m for k in a for m in _close(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: 长度 {len(a)} ≠ {len(b)}"]
        return [m for i, (x, y) in enumerate(zip(a, b)) for m in _close(x, y, f"{path}[{i}]")]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return [] if math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) else [f"{path}: {a!r} ≠ {b!r}"]
    return [] if a == b else [f"{path}: {a!r} ≠ {b!r}"]


def _native(state: dict) -> dict:
    args = state["args"]
    if "collective" in args:
        return explorer.collective_state(**args)
    return explorer.sharding_state(**args)


# 每一步：(探索器, 控件名, 值)
STEPS = [
    ("collectives", "nbytes", "4.5"),
    ("collectives", "chip", "h100"),
    ("collectives", "mesh", "X=8"),
    ("collectives", "collective", "all_to_all"),
    ("collectives", "chip", "v5p"),
    ("collectives", "mesh", "X=4,Y=4,Z=4"),
    ("collectives", "axes", "X,Y,Z"),
    ("collectives", "nbytes", "8.25"),
    ("collectives", "chip", "v5e"),  # v5e 没有 3D 网格：3D 网格不可选，换成第一个可选的网格
    ("collectives", "mesh", "X=8,Y=16"),
    ("sharding", "scenario", "fsdp"),
    ("sharding", "B", "5"),
    ("sharding", "chip", "h100"),
    ("sharding", "mesh", "X=2,Y=4"),
    ("sharding", "F", "12"),
    ("sharding", "mesh", "Y=8"),
    ("sharding", "scenario", "fsdp_tp"),  # 要 X、Y 两条轴：只有 Y 的网格不可选，换成第一个含 X、Y 的网格
    ("sharding", "D", "11"),
    ("sharding", "scenario", "tp_row"),
    # GB200、Y=8、B 最小、D 与 F 最大：线性刻度上最快的几种做法不到 1 px，条至少 MIN_BAR 宽
    ("sharding", "chip", "gb200"),
    ("sharding", "mesh", "Y=8"),
    ("sharding", "B", "4"),
    ("sharding", "D", "15"),
    ("sharding", "F", "17"),
]

# 画面上的检查：图里的文字互不重叠；表格里的时间不折行；比框宽的表格上面有“左右滑动”的提示
_LAYOUT_JS = """root => {
  const problems = [];
  for (const svg of root.querySelectorAll('svg')) {
    const boxes = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [ta, a] = boxes[i], [tb, b] = boxes[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
        problems.push(`图里的文字重叠：${ta} / ${tb}`);
    }
  }
  for (const td of root.querySelectorAll('td.time')) {
    const r = document.createRange(); r.selectNodeContents(td);
    const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
    if (lines.size > 1) problems.push(`时间折行：${td.textContent}`);
  }
  for (const wrap of root.querySelectorAll('.shardlab-explorer-scroll')) {
    const cue = wrap.previousElementSibling;
    if (wrap.scrollWidth > wrap.clientWidth + 2 && !(cue && cue.textContent.includes('左右滑动')))
      problems.push('表格比框宽，却没有“左右滑动”的提示');
  }
  return problems;
}"""


# 手机上没有哪个元素超出屏幕（可以左右滑动的表格框里面的除外），整页也不能左右滚动
_WIDE_JS = """root => {
  const out = [];
  for (const e of root.querySelectorAll('*')) {
    if (e.closest('.shardlab-explorer-scroll') || e.closest('option')) continue;
    const r = e.getBoundingClientRect();
    if (r.width && r.right > window.innerWidth + 1) out.push(`${e.tagName}.${e.className} 右边 ${Math.round(r.right)} px`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    out.push(`整页宽 ${document.documentElement.scrollWidth} px`);
  return out.slice(0, 5);
}"""


_TOTAL_HIDDEN_JS = """root => {
  const wrap = root.querySelector('.shardlab-explorer-scroll');
  const th = [...wrap.querySelectorAll('th')].find(t => t.textContent === '总时间');
  const cells = [th, ...wrap.querySelectorAll('td.total')];
  return Math.max(...cells.map(c => c.getBoundingClientRect().right - wrap.getBoundingClientRect().right));
}"""


def _set(root, name: str, value: str) -> None:
    control = root.locator(f'[name="{name}"]')
    if control.evaluate("e => e.tagName") == "SELECT":
        control.select_option(value)
    else:
        control.evaluate(
            "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }",
            value,
        )


def _exercise(site: Path, page_path: str, chromium: str, width: str) -> None:
    """打开一页，启动其中每种探索器，按 STEPS 改动控件，每一步把 data-state 与本机的库比较"""
    from playwright.sync_api import sync_playwright

    requests, blocked, failed, console = [], [], [], []
    with site_check.SiteServer(site) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=WIDTHS[width], locale="zh-CN", service_workers="block")

            def route(r):
                if urlparse(r.request.url).hostname == site_check.HOST:
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort("blockedbyclient")

            context.route("**/*", route)
            page = context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            workers = []
            page.on("worker", lambda w: workers.append(w.url))
            page.on("console", lambda m: m.type == "error" and console.append(m.text))
            page.on("pageerror", lambda e: console.append(f"未捕获的异常 {e}"))
            page.on("requestfailed", lambda r: failed.append(f"{r.method} {r.url} ({r.failure})"))
            page.on("response", lambda r: r.status >= 400 and failed.append(f"HTTP {r.status} {r.url}"))
            page.goto(server.base + page_path, wait_until="load")
            page.wait_for_timeout(500)
            early = [u for u in requests if "/pyodide/" in u]
            assert not early, f"{page_path}：启动前就请求了运行时：{early}"
            kinds = page.evaluate(
                "[...new Set([...document.querySelectorAll('.shardlab-explorer')].map(e => e.dataset.kind))]"
            )
            assert kinds, f"{page_path} 里没有探索器"

            problems, states = [], 0
            for kind in kinds:
                sel = f".shardlab-explorer[data-kind={kind}]"
                root = page.locator(sel).first
                root.scroll_into_view_if_needed()
                for out in root.locator("output[data-for]").all():  # 启动前滑块旁就有值
                    assert out.inner_text().strip(), "滑块旁的值是空的"
                # 加载 Python 时网页不卡：记下主线程两次计时器回调之间最长的间隔
                page.evaluate(
                    "() => { window._gap = 0; let last = performance.now(); window._tick = setInterval(() => {"
                    " const now = performance.now(); window._gap = Math.max(window._gap, now - last); last = now;"
                    " }, 50); }"
                )
                root.locator(".shardlab-explorer-button").click()
                page.wait_for_function(
                    f"['is-ready', 'is-failed'].some(c => document.querySelector('{sel}').classList.contains(c))",
                    timeout=180_000,
                )
                assert "is-ready" in root.get_attribute("class"), root.locator(".shardlab-explorer-status").inner_text()
                # 启动以后不留一个灰掉的“启动”按钮
                assert not root.locator(".shardlab-explorer-button").is_visible()
                gap = page.evaluate("() => { clearInterval(window._tick); return window._gap; }")
                # Python 在 Web Worker 里：主线程上没有 Pyodide。卡顿的上限放宽到 5 s：机器忙时（CI 里两个进程加浏览器）
                # 单是抢不到 CPU 就能停顿 3 s 多；Pyodide 若在主线程上启动，这一项与上面两项都会失败
                assert workers, "运行时没有放在 Web Worker 里"
                assert page.evaluate("typeof window.loadPyodide === 'undefined' && !('pyodide' in window)")
                assert gap < 5000, f"启动时主线程卡住了 {gap:.0f} ms"
                steps = [("", "", "")] + [s for s in STEPS if s[0] == kind]
                for _, name, value in steps:
                    if name:
                        before = root.get_attribute("data-state")
                        _set(root, name, value)
                        page.wait_for_function(
                            "([sel, s]) => document.querySelector(sel).dataset.state !== s", arg=[sel, before]
                        )
                    state = json.loads(root.get_attribute("data-state"))
                    problems += [f"{kind} {name}={value} {m}" for m in _close(state, _native(state))]
                    states += 1
                    assert "error" not in state, f"{kind} {name}={value}：{state.get('error')}"
                    why = root.evaluate("e => (e.querySelector('.shardlab-explorer-why') || {}).textContent || ''")
                    if name == "chip" and value == "v5e" and kind == "collectives":
                        assert state["mesh"] == {"X": 16, "Y": 16}
                        assert root.evaluate(
                            "e => e.querySelector('select[name=mesh] option[value=\"X=4,Y=4,Z=4\"]').disabled"
                        )
                        # 灰掉的选项写明原因：选项的 title 与控件下面看得见的一行
                        title = root.evaluate(
                            "e => e.querySelector('select[name=mesh] option[value=\"X=4,Y=4,Z=4\"]').title"
                        )
                        assert "二维环面" in title and f"网格 X=4，Y=4，Z=4：{title}" in why, (title, why)
                    if name == "scenario" and value == "fsdp_tp":
                        assert state["mesh"] == {"X": 2, "Y": 4}
                        assert root.evaluate("e => e.querySelector('select[name=mesh] option[value=\"Y=8\"]').disabled")
                        title = root.evaluate("e => e.querySelector('select[name=mesh] option[value=\"Y=8\"]').title")
                        assert "没有 X" in title and title in why, (title, why)
                    if kind == "sharding":
                        thin = root.evaluate(
                            "e => [...e.querySelectorAll('.shardlab-explorer-bars rect')].map(r => +r.getAttribute('width'))"
                            ".filter(w => w > 0 && w < 4)"
                        )
                        assert not thin, f"{name}={value}：条形图里有看不见的细条 {thin}"
                    layout = root.evaluate(_LAYOUT_JS)
                    assert not layout, f"{width} {kind} {name}={value}：{layout}"
                    if width == "phone":
                        wide = root.evaluate(_WIDE_JS)
                        assert not wide, f"{kind} {name}={value}：手机上超出屏幕：{wide}"
                    if width == "phone" and kind == "sharding":  # 最要紧的总时间不用左右滑动就看得到
                        hidden = root.evaluate(_TOTAL_HIDDEN_JS)
                        assert hidden <= 1, f"{name}={value}：手机上“总时间”一栏在屏幕外 {hidden:.0f} px"
                if width == "phone":
                    right = root.evaluate("e => e.getBoundingClientRect().right - window.innerWidth")
                    assert right <= 1, f"{page_path}：手机上探索器超出屏幕 {right:.0f} px"
                    overflow = root.evaluate("e => e.scrollWidth - e.clientWidth")
                    assert overflow <= 1, f"{page_path}：手机上探索器的内容比它宽 {overflow} px"
                    if kind == "collectives":
                        smallest = root.evaluate(
                            "e => Math.min(...[...e.querySelectorAll('.shardlab-explorer-plot text')].map("
                            "t => t.getBoundingClientRect().height), Infinity)"
                        )
                        assert 10 <= smallest < 100, f"图里的字只有 {smallest:.1f} px 高"
            assert not problems, "\n".join(problems[:20])
            assert states == sum(1 + sum(s[0] == k for s in STEPS) for k in kinds)
            runtime = {urlparse(u).path.rsplit("/", 1)[-1] for u in requests if "/pyodide/" in u}
            assert {"pyodide.mjs", "pyodide.asm.wasm", "python_stdlib.zip", site_explorer.CORE_ZIP} <= runtime
        finally:
            browser.close()
    assert not blocked, f"{page_path}：请求离开了网站：{blocked}"
    assert not failed, f"{page_path}：失败的请求：{failed}"
    assert not console, f"{page_path}：控制台错误：{console}"


@slow
@pytest.mark.parametrize("width", list(WIDTHS))
def test_explorers_match_the_native_library(explorer_site, chromium, width):
    _exercise(explorer_site, "index.html", chromium, width)


@slow
def test_built_site_carries_the_runtime_and_its_explorers_work(site, chromium):
    """构建好的网站：运行时、NOTICE 与 shardlab-core.zip 都在，大小不超过上限；用到探索器的每一页在两种宽度下都对"""
    static = site / "_static" / site_explorer.STATIC_DIR
    assert (static / site_explorer.CORE_ZIP).read_bytes() == site_explorer.core_zip()
    assert "Mozilla Public License" in (static / "NOTICE").read_text(encoding="utf-8")
    assert {p.name for p in site_explorer.runtime_files()} <= {p.name for p in static.iterdir()}
    size = sum(p.stat().st_size for p in static.iterdir())
    assert size <= MAX_GROWTH, f"网站增加 {size / 2**20:.1f} MiB"
    pages = sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if 'class="shardlab-explorer"' in p.read_text(encoding="utf-8", errors="replace")
    )
    for page_path in pages:
        for width in WIDTHS:
            _exercise(site, page_path, chromium, width)


class _WrongWasmType(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**site_check._Handler.extensions_map, ".wasm": "application/octet-stream"}

    def log_message(self, format, *args):
        pass


@slow
@pytest.mark.parametrize("how", ["file", "wrong-mime"])
def test_watchdog_says_what_to_do(explorer_site, chromium, how):
    from playwright.sync_api import sync_playwright

    httpd = None
    if how == "file":
        url = (explorer_site / "index.html").as_uri()
        expected = "python3 -m http.server"
    else:
        handler = functools.partial(_WrongWasmType, directory=str(explorer_site))
        httpd = http.server.ThreadingHTTPServer((site_check.HOST, 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://{site_check.HOST}:{httpd.server_address[1]}/index.html"
        expected = "application/wasm"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(url, wait_until="load")
                root = page.locator(".shardlab-explorer[data-kind=collectives]")
                root.locator(".shardlab-explorer-button").click()
                page.wait_for_function(
                    "document.querySelector('.shardlab-explorer').classList.contains('is-failed')", timeout=5_000
                )
                status = root.locator(".shardlab-explorer-status").inner_text()
                assert expected in status and "请" in status, status
            finally:
                browser.close()
    finally:
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()


class _SlowStdlib(http.server.SimpleHTTPRequestHandler):
    """python_stdlib.zip 晚 3 秒才开始发送：模拟慢网络上一段没有进展的时间"""

    extensions_map = site_check._Handler.extensions_map

    def do_GET(self):
        if self.path.endswith("python_stdlib.zip"):
            time.sleep(3)
        super().do_GET()

    def log_message(self, format, *args):
        pass


@slow
def test_slow_start_shows_progress_and_warns_only_while_stalled(explorer_site, chromium):
    """状态行显示已下载的字节数；停顿超过阈值才提示（这里阈值设成 1 秒），之后的步骤照常显示，最后就绪"""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_SlowStdlib, directory=str(explorer_site))
    httpd = http.server.ThreadingHTTPServer((site_check.HOST, 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.add_init_script("window.SHARDLAB_EXPLORER_STALL_MS = 1000;")
                page.goto(f"http://{site_check.HOST}:{httpd.server_address[1]}/index.html", wait_until="load")
                sel = ".shardlab-explorer[data-kind=collectives]"
                statuses = [t for t, _ in _start_and_record(page, sel)]
                assert "is-ready" in page.locator(sel).get_attribute("class"), statuses[-3:]
                assert any("已下载" in t and "MB" in t for t in statuses), statuses
                warned = [i for i, t in enumerate(statuses) if "没有进展" in t]
                assert warned, statuses
                later = statuses[warned[0] + 1 :]
                assert any("第 2 步" in t for t in later) and any("第 3 步" in t for t in later), later
                assert "is-slow" not in page.locator(sel).get_attribute("class")
            finally:
                browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def _start_and_record(page, sel: str) -> list[list[str]]:
    """点“启动”，记下状态行的每一次变化（[文字, 探索器的 class]），等到就绪或失败"""
    page.evaluate(
        """sel => { window._statuses = []; const r = document.querySelector(sel);
        const s = r.querySelector('.shardlab-explorer-status');
        new MutationObserver(() => window._statuses.push([s.textContent, r.className])).observe(
          s, {childList: true, characterData: true, subtree: true}); }""",
        sel,
    )
    page.locator(sel).locator(".shardlab-explorer-button").click()
    page.wait_for_function(
        f"['is-ready', 'is-failed'].some(c => document.querySelector('{sel}').classList.contains(c))",
        timeout=180_000,
    )
    return page.evaluate("window._statuses")


@slow
def test_after_the_download_it_says_compiling_not_a_server_problem(explorer_site, chromium):
    """字节都到了以后只剩编译（慢的机器上要十几秒）：状态行说“正在编译（运行时已下载完）”，不提网络或 MIME 类型；
    进度的总数就是“启动”旁写的数（以前进度只数 fetch 到的文件，写着 12.3 MB，旁边却写 13.6 MB）"""
    from playwright.sync_api import sync_playwright

    with site_check.SiteServer(explorer_site) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.add_init_script("window.SHARDLAB_EXPLORER_STALL_MS = 300;")
            page.goto(server.base + "index.html", wait_until="load")
            sel = ".shardlab-explorer[data-kind=collectives]"
            before = page.locator(sel).locator(".shardlab-explorer-status").inner_text()
            statuses = _start_and_record(page, sel)
            texts = [t for t, _ in statuses]
            compiling = [i for i, t in enumerate(texts) if "正在编译（运行时已下载完" in t]
            stated = units.fmt_bytes(sum(site_explorer.shipped_sizes(explorer_site / "_static" / "pyodide").values()))
            assert f"约 {stated}" in before, before
            progress = [t for t in texts if "已下载" in t and "正在编译" not in t]
            assert progress and all(f" / {stated}（" in t for t in progress), progress
            # 以前停在“已下载 13.5 MB / 13.6 MB（99%）”十几秒（只差下一步才取的 shardlab-core.zip），像是卡住了
            assert compiling and not any("%" in texts[i] for i in compiling), texts
            assert any("第 2 步" in t and "（100%）" in t for t in texts), texts
            step2 = next(i for i, t in enumerate(texts) if "第 2 步" in t)
            between = statuses[compiling[0] : step2]
            assert not any("没有进展" in t or "application/wasm" in t for t, _ in between), between
            assert not any("is-slow" in c for _, c in between), between
        finally:
            browser.close()


def test_size_slider_starts_at_the_chapter_example():
    """第 5 章在探索器上面写的例子是 V = 10**6 字节（v5e，16×16，轴 X）：滑块与其余控件一开始就在这里，不在 1 kB"""
    text = (ROOT / "book" / "ch05_collectives.md").read_text(encoding="utf-8")
    call = 'explorer.collective_state("v5e", "all_gather", 10**6, axes=["X"], mesh={"X": 16, "Y": 16})'
    assert call in text and text.index(call) < text.index("{shardlab-explorer} collectives")
    page = site_explorer.widget_html("collectives")
    value = float(re.search(r'name="nbytes" min="3" max="9" step="0.05" value="([0-9.]+)"', page)[1])
    assert round(10**value) == 10**6
    assert re.search(r'data-for="nbytes"[^>]*>([^<]*)</output>', page)[1] == units.fmt_bytes(10**6)
    for name, selected in (("chip", "v5e"), ("collective", "all_gather"), ("mesh", "X=16,Y=16"), ("axes", "X")):
        assert re.search(rf'<select name="{name}"[^>]*>.*?value="{re.escape(selected)}"[^>]*selected', page), name


def _theme_colors(mode: str) -> dict[str, str]:
    """书所用主题（pydata-sphinx-theme）在浅色 / 暗色模式下的背景色与表格行的底色（surface）"""
    import pydata_sphinx_theme

    css = next(Path(pydata_sphinx_theme.__file__).parent.rglob("pydata-sphinx-theme.css")).read_text(encoding="utf-8")
    block = re.search(rf"html\[data-theme={mode}\]\{{([^}}]*)\}}", css)[1]
    found = {
        k: re.search(rf"--pst-color-{k}:#([0-9a-fA-F]{{6}}|[0-9a-fA-F]{{3}})\b", block)[1]
        for k in ("background", "surface")
    }
    return {k: "#" + (v if len(v) == 6 else "".join(c * 2 for c in v)) for k, v in found.items()}


def _contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    def lum(rgb):
        c = [x / 255 for x in rgb[:3]]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@slow
@pytest.mark.parametrize("mode", ["light", "dark"])
def test_warning_text_is_readable_in_both_modes(explorer_site, chromium, mode):
    """第 6 章表中 ⚠ 的说明：以前用主题的 warning-text（#14181e，写在警告底色上的字），暗色页面上看不见；
    现在在浅色与暗色的背景、以及表格行的底色上，对比度都至少 4.5"""
    from playwright.sync_api import sync_playwright

    colors = _theme_colors(mode)
    with site_check.SiteServer(explorer_site) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(server.base + "index.html", wait_until="load")
            # 主题的暗色模式：html 上的 data-theme 与主题的变量（这一页没有主题的样式表）
            page.evaluate(
                """([mode, bg]) => {
                  document.documentElement.dataset.theme = mode;
                  document.documentElement.style.setProperty('--pst-color-warning-text', '#14181e');
                  document.body.style.background = bg;
                  const root = document.querySelector('.shardlab-explorer[data-kind=sharding]');
                  root.insertAdjacentHTML('beforeend', '<table class="shardlab-explorer-table"><tr><td>'
                    + '<span class="warn" id="probe">⚠ 说明</span></td></tr></table>');
                }""",
                [mode, colors["background"]],
            )
            rgb = page.evaluate("getComputedStyle(document.getElementById('probe')).color")
        finally:
            browser.close()
    fg = tuple(float(x) for x in re.findall(r"[\d.]+", rgb)[:3])
    assert fg[0] > fg[2] + 60, rgb  # 警告的颜色（琥珀 / 棕），不是正文的近黑或近白
    for name, bg in colors.items():
        bg_rgb = tuple(int(bg[i : i + 2], 16) for i in (1, 3, 5))
        assert _contrast(fg, bg_rgb) >= 4.5, (mode, rgb, name, bg)
