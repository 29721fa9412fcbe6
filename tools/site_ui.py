"""网站界面的中文：主题、Sphinx 与插件留下的英文提示换成简体中文（Sphinx 扩展，_config.yml 的 local_extensions）

界面文字来自好几处：主题模板里写死的英文（``Toggle primary sidebar``、``aria-label="Main"``）、翻译目录里没有的词
（``Link to this heading``、``Color mode``）、繁体用语（“列印成 PDF”）、拼出来的句子（``"Launch on" + " Colab"``）、
插件直接写出的 HTML（myst-nb 折叠块的 ``Toggle hidden content``）和脚本（sphinx-togglebutton）。
所以不去逐个改它们的来源，而是在构建结束后改写生成的网页与脚本，全部依据一张表 ``VOCAB``（英文 → 中文）：

- 属性 title、aria-label、placeholder、data-bs-title、alt：整个值是表里的一项时换成中文（正文里也换）；
- 正文（``article.bd-article``）以外的文字：整段是表里的一项时换成中文；中文标点后的空白删掉（“作者： 某某”）；
- ``_static`` 里的脚本（MathJax 除外）：带引号的多词英文换成中文（单个词可能是程序里的名字，不动）。

表里的英文可以带 ``{名字}`` 占位（``© Copyright {copyright}.``），匹配任意文字并原样填进中文。
主题的翻译目录给表里某个英文的译法与表里不同时（``Print to PDF`` → “列印成 PDF”），那个译法也换成表里的中文。
``tools/site_pages.py`` 的 ``english_ui`` 用同一张表检查构建好的网站。
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from pathlib import Path

VOCAB = {
    # 标题、公式、图、表旁边的链接（Sphinx）
    "Link to this heading": "链接到此标题",
    "Link to this equation": "链接到此公式",
    "Link to this image": "链接到此图片",
    "Link to this table": "链接到此表格",
    "Link to this code": "链接到此代码",
    "Link to this definition": "链接到此定义",
    "Link to this term": "链接到此术语",
    # 折叠块（myst-nb、sphinx-togglebutton）
    "Toggle hidden content": "显示或隐藏内容",
    # 页头的按钮
    "Toggle primary sidebar": "显示或隐藏全书目录",
    "Toggle secondary sidebar": "显示或隐藏本页目录",
    "Site navigation": "全书目录",
    "On this page": "本页目录",
    "Search": "搜索",
    "Search this book...": "搜索本书……",
    "Color mode": "颜色模式",
    "Light": "亮色",
    "Dark": "暗色",
    "System Settings": "跟随系统",
    "Fullscreen mode": "全屏模式",
    "Source repository": "源码库",
    "Launch interactive content": "在线运行",
    "Launch on Colab": "在 Colab 中打开",
    "Colab logo": "Colab 标志",
    "Download this page": "下载此页面",
    "Download source file": "下载源文件",
    "Download notebook file": "下载笔记本文件",
    "Print to PDF": "打印成 PDF",
    # 导航
    "Main": "全书目录",
    "Page": "本页目录",
    "Contents": "目录",
    "Skip to main content": "跳转至主要内容",
    "Back to top": "回到顶部",
    "previous page": "上一页",
    "next page": "下一页",
    "previous": "上一页",
    "next": "下一页",
    # 页脚
    "By {author}": "作者：{author}",
    "© Copyright {copyright}.": "© {copyright} 版权所有",
}

UI_ATTRS = ("title", "aria-label", "placeholder", "data-bs-title", "alt")
_ATTR = re.compile(rf'(\s(?:{"|".join(UI_ATTRS)})=")([^"]*)(")')
# 标签、脚本、样式、注释；其余是文字
_TOKENS = re.compile(r"(<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>)", re.S | re.I)
_ARTICLE = re.compile(r"<article\b[^>]*\bbd-article\b", re.I)
_CJK_PUNCT_SPACE = re.compile(r"([，。：；！？、])[ \t]+(?=\S)")
_FIELD = re.compile(r"\{(\w+)\}")


class Vocabulary:
    """英文（或主题的另一种译法）→ 中文；``translate`` 只认整段文字"""

    def __init__(self, vocab: dict[str, str] = VOCAB, gettexts: Iterable[Callable[[str], str]] = ()):
        self.exact: dict[str, str] = {}
        self.patterns: list[tuple[re.Pattern, str]] = []
        gettexts = list(gettexts)
        for english, chinese in vocab.items():
            parts = _FIELD.split(english)
            if len(parts) == 1:
                self.exact[english] = chinese
                for gettext in gettexts:  # 主题已经译过、但译法与表里不同
                    rendered = str(gettext(english))
                    if rendered not in (english, chinese):
                        self.exact.setdefault(rendered, chinese)
            else:
                regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
                self.patterns.append((re.compile(regex), chinese))

    def translate(self, text: str) -> str | None:
        text = text.strip()
        if text in self.exact:
            return self.exact[text]
        for pattern, chinese in self.patterns:
            m = pattern.fullmatch(text)
            if m:
                return chinese.format(**m.groupdict())
        return None


def _attr(vocab: Vocabulary, m: re.Match) -> str:
    new = vocab.translate(html.unescape(m.group(2)))
    return m.group(0) if new is None else m.group(1) + html.escape(new, quote=True) + m.group(3)


def _chrome_text(vocab: Vocabulary, text: str) -> str:
    new = vocab.translate(html.unescape(text))
    if new is not None:
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        text = lead + html.escape(new, quote=False) + trail
    return _CJK_PUNCT_SPACE.sub(r"\1", text)


def rewrite_html(page: str, vocab: Vocabulary) -> str:
    """一页 HTML 的界面文字换成中文（见模块说明）；正文里只换属性"""
    out, in_article = [], False
    for i, part in enumerate(_TOKENS.split(page)):
        if i % 2:
            if _ARTICLE.match(part):
                in_article = True
            elif part[:9].lower() == "</article":
                in_article = False
            if not part[:7].lower().startswith(("<!--", "<script", "<style")):
                part = _ATTR.sub(lambda m: _attr(vocab, m), part)
        elif not in_article and part.strip():
            part = _chrome_text(vocab, part)
        out.append(part)
    return "".join(out)


def js_phrases(vocab: dict[str, str] = VOCAB) -> dict[str, str]:
    """脚本里要换的英文：多词、没有占位的项"""
    return {en: zh for en, zh in vocab.items() if " " in en and not _FIELD.search(en)}


def rewrite_js(source: str, vocab: dict[str, str] = VOCAB) -> str:
    for english, chinese in js_phrases(vocab).items():
        for quote in "\"'":
            source = source.replace(f"{quote}{english}{quote}", f"{quote}{chinese}{quote}")
    return source


def site_files(outdir: Path) -> tuple[list[Path], list[Path]]:
    """要改写的网页（不含 _static、_sources 里的）与脚本（_static 里的，MathJax 除外）"""
    outdir = Path(outdir)
    pages = [p for p in outdir.rglob("*.html") if not p.relative_to(outdir).parts[0].startswith("_")]
    scripts = [p for p in (outdir / "_static").rglob("*.js") if "mathjax" not in p.relative_to(outdir).parts]
    return sorted(pages), sorted(scripts)


def rewrite_site(outdir: Path, vocab: Vocabulary) -> int:
    """改写整个网站；返回改动的文件数"""
    pages, scripts = site_files(outdir)
    changed = 0
    for path, rewrite in [(p, lambda s: rewrite_html(s, vocab)) for p in pages] + [(p, rewrite_js) for p in scripts]:
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def _theme_gettexts() -> list[Callable[[str], str]]:
    """这次构建载入的全部翻译目录（Sphinx、主题、插件）"""
    from sphinx.locale import translators

    return [t.gettext for t in translators.values()]


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    rewrite_site(Path(app.outdir), Vocabulary(VOCAB, _theme_gettexts()))


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["UI_ATTRS", "VOCAB", "Vocabulary", "js_phrases", "rewrite_html", "rewrite_js", "rewrite_site", "setup"]
