"""网站上的中文阅读：中文搜索、中文标点后不留空格、稳定的节锚点（Sphinx 扩展，_config.yml 的 local_extensions）

搜索
    Sphinx 的中文搜索（``sphinx.search.zh``）用 jieba 给正文分词；没有装 jieba 时索引里一个中文词也没有。
    这里再做两件事：

    - 建索引前把 ``SEARCH_TERMS`` 里的课程术语加进 jieba 的词典，于是“集合通信”“规约散射”这样的词
      既作为整词、也作为“集合”“通信”进入索引（``jieba.cut_for_search``）；
    - 浏览器里的查询没有 jieba：``_SPLITTER_JS`` 替换 Sphinx 的 ``splitQuery``，把一串汉字按索引里已有的词
      做正向最大匹配（索引是 jieba 切出来的，所以查询和正文用同一套词），英文照旧按空白与标点切开。

标点后的空格
    正文一句一行，HTML 把行尾的换行显示成一个空格：“时间。 下一章”。``JoinCjkLines`` 在读入文档后删掉
    这样的换行：换行前是中文标点，或两边都是汉字/中文标点时删；汉字与拉丁字母之间的换行仍是一个空格。
    代码、数学式、原始 HTML 里的文字不动。

节锚点
    标题是中文时 docutils 给节起的 id 是 ``id12`` 这样的流水号，加一节就全变。``stable_section_ids`` 给没有
    显式标签的节加一个由标题算出的 id（``heading_slug``：小写、空白换成连字符、去掉标点，汉字保留），
    并把它排在第一位，页内目录和标题旁的链接都用它；有显式标签（``(sec-...)=``）的节用标签。
"""

from __future__ import annotations

import re
import unicodedata

from docutils import nodes
from docutils.transforms import Transform

# 课程术语：加进 jieba 的词典，让它们作为整词进入搜索索引
SEARCH_TERMS = (
    "集合通信",
    "环形算法",
    "环形模拟器",
    "双向环",
    "单向环",
    "延迟受限",
    "带宽受限",
    "计算受限",
    "通信受限",
    "规约散射",
    "全收集",
    "全规约",
    "全对全",
    "收缩维",
    "分片矩阵乘法",
    "分片记号",
    "总线带宽",
    "算法带宽",
    "回绕",
    "环面",
    "张量并行",
    "数据并行",
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\u2014\u2026\u201c\u201d\u2018\u2019"
# 删掉的换行：前面是中文标点；或前面是汉字、后面是汉字或中文标点
_JOIN = re.compile(rf"(?<=[{_CJK_PUNCT}])[ \t]*\n[ \t]*|(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}{_CJK_PUNCT}])")
_SKIP = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.comment)


def join_cjk_lines(text: str) -> str:
    """删掉中文之间（或中文标点之后）的换行：'时间。\\n下一章' → '时间。下一章'；'数组\\nAllGather' 不变"""
    return _JOIN.sub("", text)


class JoinCjkLines(Transform):
    """正文里中文之间的换行不显示成空格（见模块说明）

    MyST 把源文件里的换行（softbreak）解析成单独的 ``Text("\\n")`` 节点，所以既要看一个文字节点内部，
    也要看这种只有换行的节点两边的文字。
    """

    default_priority = 800

    def apply(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.Text)):
            parent = node.parent
            text = str(node)
            if parent is None or "\n" not in text or _inside(parent, _SKIP):
                continue
            if not text.strip():
                # 按身份找位置：Text 按字符串比较相等，parent.index / parent.remove 会找到同一段里第一个 "\n"
                i = next(k for k, child in enumerate(parent.children) if child is node)
                before = next((t[-1] for t in (c.astext() for c in reversed(parent[:i])) if t), "")
                after = next((t[0] for t in (c.astext() for c in parent[i + 1 :]) if t), "")
                if before and after and join_cjk_lines(before + "\n" + after) == before + after:
                    del parent[i]
                continue
            new = join_cjk_lines(text)
            if new != text:
                parent.replace(node, nodes.Text(new))


def _inside(node, kinds) -> bool:
    while node is not None:
        if isinstance(node, kinds):
            return True
        node = node.parent
    return False


def heading_slug(title: str) -> str:
    """标题 → 锚点：'5.1 为什么需要集合通信' → '51-为什么需要集合通信'；'AllGather 的代价' → 'allgather-的代价'"""
    text = unicodedata.normalize("NFKC", title).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s_]+", "-", text).strip("-")


_AUTO_ID = re.compile(r"id\d+|section-\d+")  # docutils 的流水号（Sphinx 用 id 前缀，docutils 默认 section-）


def stable_section_ids(document) -> None:
    """每一节的第一个 id 是显式标签或由标题算出的 slug，不是 id12（见模块说明）

    在 Sphinx 的 doctree-read 里运行：这时 MyST 的 ``(label)=`` 已经放到节上了。
    """
    used = set(document.ids)
    for section in document.findall(nodes.section):
        ids = section["ids"]
        title = section.next_node(nodes.title)
        slug = heading_slug(title.astext()) if title is not None else ""
        heading = title.astext() if title is not None else ""
        auto = {nodes.make_id(heading), nodes.make_id(nodes.fully_normalize_name(heading)), slug}
        explicit = [i for i in ids if not _AUTO_ID.fullmatch(i) and i not in auto]
        if explicit:  # 显式标签在前
            section["ids"] = explicit + [i for i in ids if i not in explicit]
            continue
        if not slug or (ids and ids[0] == slug):
            continue
        base, n = slug, 1
        while slug in used and slug not in ids:
            n += 1
            slug = f"{base}-{n}"
        used.add(slug)
        document.ids.setdefault(slug, section)
        section["ids"] = [slug] + [i for i in ids if i != slug]


# 浏览器里的查询分词（替换 searchtools.js 的默认 splitQuery；Search._index 在查询时已经载入）
_SPLITTER_JS = r"""
function splitQuery(query) {
  const parts = query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter(t => t);
  const han = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/;
  const index = (typeof Search !== "undefined" && Search._index) ? Search._index : null;
  const known = w => index && (Object.prototype.hasOwnProperty.call(index.terms, w) ||
                               Object.prototype.hasOwnProperty.call(index.titleterms, w));
  const out = [];
  for (const part of parts) {
    if (!han.test(part) || known(part) || !index) { out.push(part); continue; }
    // 汉字串：按索引里的词做正向最大匹配；拉丁字母串保持整体
    const runs = part.match(/[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu);
    for (const run of runs) {
      if (!han.test(run)) { out.push(run); continue; }
      let i = 0;
      while (i < run.length) {
        let len = Math.min(8, run.length - i);
        while (len > 1 && !known(run.substr(i, len))) len--;
        if (len > 1 || known(run.substr(i, 1))) out.push(run.substr(i, len));
        i += len;
      }
    }
  }
  return out;
}
"""


def _search_language():
    from sphinx.search.zh import SearchChinese

    class CourseChinese(SearchChinese):
        """Sphinx 的中文搜索，加上课程术语词典和浏览器里的按索引分词"""

        js_splitter_code = _SPLITTER_JS

        def init(self, options):
            super().init(options)
            try:
                import jieba
            except ImportError as err:
                from sphinx.errors import ExtensionError

                raise ExtensionError("中文搜索需要 jieba（在 requirements.txt 里；运行 make venv）") from err
            import logging

            jieba.setLogLevel(logging.WARNING)
            for term in SEARCH_TERMS:
                jieba.add_word(term, freq=10_000)

    return CourseChinese


def setup(app):
    app.add_transform(JoinCjkLines)
    app.connect("doctree-read", lambda app, doctree: stable_section_ids(doctree), priority=100)
    app.add_search_language(_search_language())
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["SEARCH_TERMS", "heading_slug", "join_cjk_lines", "setup", "stable_section_ids"]
