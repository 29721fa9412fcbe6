"""构建好的网站读起来怎样：不需要浏览器的检查（tests/test_site.py 调用；浏览器里的检查在 site_check.py）

- ``stray_glue_outputs``：代码单元的输出里只有一个 glue 调用的返回值（'2'、'90 GB/s'）——读者看到一个莫名的框；
  依据是构建时执行过的笔记本（``_build/jupyter_execute``）：同一单元里 glue 过的值又作为 execute_result 出现；
- ``cjk_spaces``：正文里中文标点后面、或两个汉字之间出现空白（源文件一句一行留下的换行）；
- ``auto_section_ids``：节的锚点是 ``id12`` 这样的流水号；
- ``long_code_lines``：展开显示的代码单元里超过 88 个字符的行（在手机和窄屏上要横向滚动）；
- ``caption_problems``：图注与图不符：写了（左）/（右）却只有一列子图、写了（上）/（下）却只有一行，
  或图注说的颜色图里没有用到。图的事实来自 ``shardlab.plots.glue_figure`` 写进 PNG 的 tEXt 块；
- ``figure_facts``：读出那些事实（子图排列、颜色、最小字号、dpi），浏览器里的手机检查用它算字的 CSS 像素；
- ``english_ui``：界面上没有译成中文的英文提示（表在 ``tools/site_ui.py`` 的 ``VOCAB``）；
- ``generator_markers``：解答页上显示了练习生成器的标记（``# STUB: ...``、``# BEGIN SOLUTION`` 等）。
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

from bs4 import BeautifulSoup, CData, Comment, NavigableString

from tools import make_exercises, site_ui

CODE_LINE_LIMIT = 88
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_PUNCT = "\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f"  # 、。，；：！？
# 句读之后的任何空白都多余；两个汉字之间只查换行（源文件的断行），作者有意打的空格（“第 5 章 集合通信”）不算
_SPACE_AFTER_PUNCT = re.compile(rf"[{_CJK_PUNCT}][ \t\n\u00a0]+(?=\S)")
_SPACE_BETWEEN_HAN = re.compile(rf"[{_CJK}][ \t]*\n[ \t\n]*[{_CJK}]")
_AUTO_ID = re.compile(r"id\d+")

# 图注里的方位词 → 需要的子图行数或列数
# 只认指子图的说法；“左侧是延迟受限区”这样指同一幅图里的区域的不算
_LEFT_RIGHT = re.compile(r"（[左右][）,，、]|[左右](?:图|栏|子图|边的图|侧的图)")
_TOP_BOTTOM = re.compile(r"（[上下][）,，、]|[上下](?:栏|子图|半幅)|(?:上|下)(?:方|面|边)的(?:子)?图")


def _soup(path: Path) -> BeautifulSoup:
    """解析过的页面。几项检查读同一批页面，解析一次（按路径、修改时间与大小缓存）；不要改动它"""
    st = path.stat()
    return _parsed(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, mtime_ns: int, size: int) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _article(soup: BeautifulSoup):
    return soup.select_one("article.bd-article") or soup.select_one("article") or soup.body


# ---------- 多余的输出 ----------


def _text(output: dict) -> str | None:
    data = output.get("data", {})
    plain = data.get("text/plain")
    if plain is None:
        return None
    return "".join(plain) if isinstance(plain, list) else str(plain)


def glue_outputs(nb_path: Path) -> dict[str, dict]:
    """myst-nb 写在执行过的笔记本旁边的 glue 数据（<页>.glue.json）：名字 → 输出；这一页没有 glue 时为空"""
    side = nb_path.with_suffix(".glue.json")
    return json.loads(side.read_text(encoding="utf-8")) if side.exists() else {}


def glued_strings(site: Path, page: str) -> dict[str, str]:
    """构建时一页 glue 交给正文的文字：名字 → 字符串（字符串的 text/plain 是它的 repr）"""
    nb_path = Path(site).parent / "jupyter_execute" / f"{page}.ipynb"
    if not nb_path.exists():
        raise FileNotFoundError(f"构建里没有执行过的 {page}：{nb_path}")
    out = {}
    for name, output in glue_outputs(nb_path).items():
        plain = _text(output)
        if plain and plain[0] in "'\"" and isinstance(value := ast.literal_eval(plain), str):
            out[name] = value
    return out


def _glued_texts(nb_path: Path, cells: list) -> dict[str, str]:
    """这个笔记本 glue 过的值的 text/plain → 名字（myst-nb 把它们存在旁边的 .glue.json；也认单元里的 glue 输出）"""
    outputs = [out for cell in cells for out in cell.get("outputs", [])]
    outputs += list(glue_outputs(nb_path).values())
    glued = {}
    for out in outputs:
        book = out.get("metadata", {}).get("scrapbook")
        if not book:
            continue
        data = out.get("data", {})
        plain = data.get("application/papermill.record/text/plain", data.get("text/plain"))
        if plain is not None:
            glued["".join(plain) if isinstance(plain, list) else str(plain)] = book.get("name", "?")
    return glued


def stray_glue_outputs(site: Path) -> list[str]:
    """执行过的笔记本里，某个单元的 execute_result 就是一个 glue 过的值（glue 助手的返回值漏了出来）"""
    executed = Path(site).parent / "jupyter_execute"
    found = []
    for nb_path in sorted(executed.rglob("*.ipynb")):
        cells = json.loads(nb_path.read_text(encoding="utf-8")).get("cells", [])
        glued = _glued_texts(nb_path, cells)
        for i, cell in enumerate(c for c in cells if c.get("cell_type") == "code"):
            for out in cell.get("outputs", []):
                text = _text(out) if out.get("output_type") == "execute_result" else None
                if text is not None and text in glued:
                    rel = nb_path.relative_to(executed).with_suffix("")
                    found.append(f"{rel}: 第 {i + 1} 个代码单元输出了 glue 的值 {text[:40]}（{glued[text]}）")
    return found


# ---------- 正文的排版 ----------


_NOT_PROSE = "pre, script, style, .highlight, div.cell_input, .output, mjx-container"
_PROSE_TAGS = ["p", "li", "figcaption", "td", "th", "dt", "h1", "h2", "h3", "h4"]


def _prose(article) -> list[tuple[object, str]]:
    """正文段落与它的文字：去掉代码、数学式、脚本，数学式换成占位符 X（免得它两边的空格被当成问题）

    不改动解析好的页面（它是缓存的）：跳过的子树与数学式按 id 记下，取文字时绕开。
    p、figcaption、td、th、dt 取全部文字；其余（li、标题）只取自己直接的文字，子段落各算各的。
    """
    skipped, maths = article.select(_NOT_PROSE), article.select(".math")
    skip, math = {id(t) for t in skipped}, {id(t) for t in maths}
    inside = skip | math | {id(d) for t in skipped + maths for d in t.find_all(_PROSE_TAGS)}

    def text(node, deep: bool) -> str:
        out = []
        for child in node.children:
            if isinstance(child, NavigableString):
                if not deep or type(child) in (NavigableString, CData):
                    out.append(str(child))
            elif id(child) in skip:
                continue
            elif id(child) in math:
                out.append("X")
            elif deep:
                out.append(text(child, True))
        return "".join(out)

    return [
        (el, text(el, el.name in ("p", "figcaption", "td", "th", "dt")))
        for el in article.find_all(_PROSE_TAGS)
        if id(el) not in inside
    ]


def cjk_spaces(site: Path, pages: list[str]) -> list[str]:
    """中文标点后面或两个汉字之间的空白（网页上显示成一个多余的空格）"""
    found = []
    for page in pages:
        for _, text in _prose(_article(_soup(Path(site) / f"{page}.html"))):
            for m in list(_SPACE_AFTER_PUNCT.finditer(text)) + list(_SPACE_BETWEEN_HAN.finditer(text)):
                found.append(f"{page}: “{text[max(0, m.start() - 8) : m.end() + 8].strip()}”")
    return found


def auto_section_ids(site: Path, pages: list[str]) -> list[str]:
    """锚点是流水号（id12）的节：它们在加一节之后就全变了"""
    found = []
    for page in pages:
        for section in _article(_soup(Path(site) / f"{page}.html")).find_all("section"):
            sid = section.get("id", "")
            if not sid or _AUTO_ID.fullmatch(sid):
                title = section.find(re.compile(r"h[1-6]"))
                found.append(f"{page}: 节 “{title.get_text(strip=True) if title else '?'}” 的锚点是 #{sid}")
    return found


def long_code_lines(site: Path, pages: list[str], limit: int = CODE_LINE_LIMIT) -> list[str]:
    """展开显示的代码单元里超过 limit 个字符的行（折叠起来的单元不算）"""
    found = []
    for page in pages:
        for cell in _article(_soup(Path(site) / f"{page}.html")).select("div.cell_input"):
            if cell.find_parent("details") is not None:
                continue
            for line in cell.get_text().splitlines():
                if len(line) > limit:
                    found.append(f"{page}: {len(line)} 个字符：{line[:60]}…")
    return found


# ---------- 图与图注 ----------


def figure_facts(png: Path) -> dict[str, str]:
    """shardlab.plots.glue_figure 写进 PNG 的事实；不是它画的图返回空字典"""
    from PIL import Image

    try:
        with Image.open(png) as im:
            text = dict(getattr(im, "text", {}) or {})
            size = im.size
    except (OSError, ValueError):
        return {}
    facts = {k: v for k, v in text.items() if k.startswith("shardlab:")}
    if facts:
        facts["width-px"] = str(size[0])
    return facts


def colour_words(caption: str) -> list[tuple[str, tuple[str, ...]]]:
    """图注里的颜色词（“橙色”“天蓝色”“红色的块”）及它们能指的 plots.COLORS 名字"""
    from shardlab.plots import COLOR_WORDS

    found, rest = [], caption
    for word in sorted(COLOR_WORDS, key=len, reverse=True):
        pattern = re.compile(rf"{word}(?=色)")
        if pattern.search(rest):
            found.append((word, COLOR_WORDS[word]))
            rest = pattern.sub("□", rest)
    return found


def caption_problems(site: Path, pages: list[str]) -> tuple[list[str], int]:
    """核对图注与图；返回 (问题, 核对过的图数)"""
    found, checked = [], 0
    for page in pages:
        html_path = Path(site) / f"{page}.html"
        for fig in _article(_soup(html_path)).find_all("figure"):
            img, cap = fig.find("img"), fig.find("figcaption")
            if img is None or cap is None or not img.get("src", "").endswith(".png"):
                continue
            facts = figure_facts((html_path.parent / img["src"]).resolve())
            if not facts:
                continue
            checked += 1
            caption = cap.get_text(" ", strip=True)
            name = fig.get("id") or img["src"]
            rows, cols = (int(x) for x in facts["shardlab:layout"].split("x"))
            if _LEFT_RIGHT.search(caption) and cols < 2:
                found.append(
                    f"{page} {name}: 图注说左/右（{_LEFT_RIGHT.search(caption).group()}），但子图是 {rows} 行 {cols} 列"
                )
            if _TOP_BOTTOM.search(caption) and rows < 2:
                found.append(
                    f"{page} {name}: 图注说上/下（{_TOP_BOTTOM.search(caption).group()}），但子图是 {rows} 行 {cols} 列"
                )
            used = set(filter(None, facts.get("shardlab:colors", "").split(",")))
            for word, names in colour_words(caption):
                if not used & set(names):
                    found.append(
                        f"{page} {name}: 图注说 “{word}色”，但图里用的颜色是 {sorted(used) or '（无课程颜色）'}"
                    )
    return found, checked


# ---------- 界面文字与解答页 ----------

_NOT_UI_TEXT = "script, style, pre, code, kbd"
_ENGLISH_WORD = re.compile(r"[A-Za-z]{2,}")
_HAN = re.compile(f"[{_CJK}]")


def html_pages(site: Path) -> list[str]:
    """网站上的全部页面（不带扩展名），包括搜索页与索引页；_static 等目录里的不算"""
    site = Path(site)
    return sorted(
        str(p.relative_to(site).with_suffix(""))
        for p in site.rglob("*.html")
        if not p.relative_to(site).parts[0].startswith("_")
    )


def english_ui(site: Path, pages: list[str]) -> list[str]:
    """界面上的英文提示：

    - title、aria-label、placeholder、data-bs-title、alt 的值，或正文以外的一段文字，整个是表里的英文；
    - title、aria-label、placeholder、data-bs-title 的值有英文单词却没有一个汉字（表里还没有的提示）；
    - ``_static`` 的脚本（MathJax 除外）里带引号的表里的多词英文。
    """
    vocab = site_ui.Vocabulary()
    found = []
    for page in pages:
        soup = _soup(Path(site) / f"{page}.html")
        for tag in soup.find_all(True):
            for attr in site_ui.UI_ATTRS:
                value = tag.get(attr)
                if not isinstance(value, str) or not value.strip():
                    continue
                if vocab.translate(value) is not None:
                    found.append(f'{page}: <{tag.name} {attr}="{value}">')
                elif attr != "alt" and _ENGLISH_WORD.search(value) and not _HAN.search(value):
                    found.append(f'{page}: <{tag.name} {attr}="{value}">（不在 tools/site_ui.py 的表里）')
        # 文字只查正文以外（页头、侧栏、页脚、搜索页）：正文里的英文是作者写的，代码里的 next 是 Python
        skip = {id(s) for el in soup.select(_NOT_UI_TEXT) for s in el.find_all(string=True)}
        skip |= {id(s) for el in soup.select("article.bd-article") for s in el.find_all(string=True)}
        for text in soup.find_all(string=True):
            if type(text) is NavigableString and id(text) not in skip and vocab.translate(text) is not None:
                found.append(f"{page}: 文字 “{text.strip()}”")
    _, scripts = site_ui.site_files(site)
    for path in scripts:
        source = path.read_text(encoding="utf-8", errors="replace")
        for english in site_ui.js_phrases():
            if f'"{english}"' in source or f"'{english}'" in source:
                found.append(f"{path.relative_to(site)}: “{english}”")
    return found


def generator_markers(site: Path, pages: list[str]) -> list[str]:
    """页面上（代码、文字与 HTML 注释里）练习生成器的标记行（tools/make_exercises.py 的 is_marker）"""
    found = []
    for page in pages:
        soup = _soup(Path(site) / f"{page}.html")
        pres = soup.find_all("pre")
        lines = [line for pre in pres for line in pre.get_text().splitlines()]  # 代码按行（高亮把一行拆成几段）
        in_pre = {id(s) for pre in pres for s in pre.find_all(string=True)}
        lines += [
            line
            for s in soup.find_all(string=True)
            if type(s) is NavigableString and id(s) not in in_pre
            for line in s.splitlines()
        ]
        lines += [f"<!--{c}-->" for c in soup.find_all(string=lambda s: isinstance(s, Comment))]
        found += [f"{page}: {line.strip()}" for line in lines if make_exercises.is_marker(line)]
    return found


__all__ = [
    "CODE_LINE_LIMIT",
    "auto_section_ids",
    "caption_problems",
    "cjk_spaces",
    "colour_words",
    "english_ui",
    "figure_facts",
    "generator_markers",
    "html_pages",
    "long_code_lines",
    "stray_glue_outputs",
]
