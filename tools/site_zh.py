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
from dataclasses import dataclass
from pathlib import Path

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

CH05, CH06, APP_A = "book/ch05_collectives", "book/ch06_sharded_matmul", "book/appendix_hardware"


@dataclass(frozen=True)
class Definition:
    """一个课程术语在哪里定义：哪一页（doc）、哪一节（section：节的 id，显式标签或 heading_slug 算出的）

    定义处是这一节里（含小节，按文档顺序）第一个在正文文字里含 ``term`` 的标题或段落；代码单元、代码块、
    数学式、折叠起来的块不算。aliases 是同一处的其他叫法（中文名、英文名、缩写），搜索它们也先到这里。
    sentence=True 时跳过标题，定义处是第一个含这个词的段落（节的标题就是这个词、定义它的是标题下的那句话时）。
    """

    term: str
    doc: str
    section: str
    aliases: tuple[str, ...] = ()
    sentence: bool = False


# 课程术语 → 定义它的地方。构建时在那里加一个锚点（id ``def-<词>``）和一条主索引条目：
# 搜索页先列出这些条目（带锚点），点开就落在定义处。找不到这一节或这个词时构建失败。
DEFINITIONS = {
    d.term: d
    for d in (
        Definition("集合通信", CH05, "sec-ch05-why", ("collective communication",)),
        Definition("数据并行", CH05, "sec-ch05-why", ("data parallelism",)),
        Definition("混合专家", CH05, "sec-ch05-why", ("MoE", "Mixture of Experts")),
        Definition("环形算法", CH05, "sec-ch05-ring", ("ring algorithm",)),
        Definition("环面", CH05, "sec-ch05-ring", ("torus",)),
        Definition("单向环", CH05, "单向环与双向环"),
        Definition("双向环", CH05, "单向环与双向环", ("bidirectional ring",)),
        Definition("回绕", CH05, "单向环与双向环", ("wraparound",)),
        Definition("ppermute", CH05, "用-ppermute-手写一个环"),
        Definition("AllGather", CH05, "allgather", ("全收集",)),
        Definition("FSDP", CH05, "allgather", ("完全分片数据并行", "Fully Sharded Data Parallel")),
        Definition("ReduceScatter", CH05, "reducescatter", ("规约散射",)),
        Definition("AllReduce", CH05, "allreduce", ("全规约",)),
        Definition("AllToAll", CH05, "alltoall", ("全交换",)),
        Definition("延迟受限", CH05, "sec-ch05-regimes", ("latency-bound",)),
        Definition("带宽受限", CH05, "sec-ch05-regimes", ("bandwidth-bound",)),
        Definition("多轴 AllGather", CH05, "多轴-allgather", ("多轴",)),
        Definition("带宽项", CH05, "带宽项", sentence=True),
        Definition("延迟项", CH05, "延迟项nccl-模型的下包络"),
        Definition("总线带宽", CH05, "延迟项nccl-模型的下包络", ("busbw", "bus bandwidth")),
        Definition("算法带宽", CH05, "延迟项nccl-模型的下包络", ("algbw", "algorithm bandwidth")),
        Definition("序列并行", CH05, "megatron-里的重叠与序列并行", ("sequence parallelism",)),
        Definition("NCCL", CH05, "sec-ch05-nccl"),
        Definition("NVLink", APP_A, "gpu"),
        Definition("分片矩阵乘法", CH06, "sec-ch06", ("sharded matrix multiplication",)),
        Definition("分片记号", CH06, "sec-ch06-notation"),
        Definition("张量并行", CH06, "sec-ch06-notation", ("tensor parallelism",)),
        Definition("模型并行", CH06, "sec-ch06-notation", ("model parallelism",)),
        Definition("网格轴", CH06, "网格与记号", ("mesh axis",)),
        Definition("PartitionSpec", CH06, "在-jax-里写分片partitionspec-与-namedsharding", ("NamedSharding",)),
        Definition("收缩维", CH06, "sec-ch06-cases", ("contracting dimension",)),
        Definition("roofline", CH06, "sec-ch06-roofline"),
        Definition("通信临界强度", CH06, "sec-ch06-roofline", ("临界算术强度", "临界强度", "critical intensity")),
        Definition("集合矩阵乘法", CH06, "sec-ch06-collective-matmul", ("collective matmul",)),
        Definition("Megatron", CH06, "sec-ch06-megatron"),
    )
}

# 不是定义、但读者会找的地方：附录 A 讲回绕的那一节。次要索引条目（排在定义与正文结果之后），
# text 是那一节里实际用的词
SEE_ALSO = (Definition("回绕", APP_A, "回绕wraparound什么时候一条轴是完整的环", ("wraparound",)),)

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


def _prose(node) -> str:
    """段落或标题里读者看得到的正文文字：不含代码、数学式、原始 HTML"""
    out = []
    for text in node.findall(nodes.Text):
        parent = text.parent
        if parent is not None and not _inside_until(parent, _SKIP, node):
            out.append(str(text))
    return "".join(out)


def _inside_until(node, kinds, stop) -> bool:
    while node is not None and node is not stop:
        if isinstance(node, kinds):
            return True
        node = node.parent
    return False


def _hidden(node) -> bool:
    """代码单元（myst-nb 的 cell 容器）、折叠起来的块（dropdown、toggle）里的文字不算定义处"""
    while node is not None:
        classes = node.get("classes", []) if isinstance(node, nodes.Element) else []
        if {"cell", "dropdown", "toggle"} & set(classes) or isinstance(node, _SKIP):
            return True
        node = node.parent
    return False


def definition_site(section, words, sentence: bool = False) -> nodes.Element | None:
    """这一节里第一个正文含 words 之一的标题或段落（见 Definition）；标题返回它所在的节。sentence=True 时只看段落"""
    kinds = (nodes.paragraph,) if sentence else (nodes.title, nodes.paragraph)
    for node in section.findall(lambda n: isinstance(n, kinds)):
        if _hidden(node) or _inside_until(node.parent, (nodes.table, nodes.caption), section):
            continue
        text = _prose(node)
        if any(w in text for w in words):
            return node.parent if isinstance(node, nodes.title) else node
    return None


def definition_id(term: str) -> str:
    """定义处的锚点：'多轴 AllGather' → 'def-多轴-allgather'"""
    return "def-" + heading_slug(term)


def mark_definitions(document, docname: str, definitions=None, see_also=None) -> list[str]:
    """在这一页的定义处加锚点与索引条目（DEFINITIONS 是主条目，SEE_ALSO 是次要条目）；返回加上的锚点

    找不到节或词时抛出 ExtensionError：章节改了标题或措辞，DEFINITIONS 要跟着改，否则搜索会悄悄变差。
    """
    from sphinx import addnodes
    from sphinx.errors import ExtensionError

    definitions = DEFINITIONS.values() if definitions is None else definitions
    see_also = SEE_ALSO if see_also is None else see_also
    marked = []
    for main, table in (("main", definitions), ("", see_also)):
        for d in table:
            if d.doc != docname:
                continue
            section = document.ids.get(d.section)
            if not isinstance(section, nodes.section):
                raise ExtensionError(
                    f"tools/site_zh.py 的 DEFINITIONS：{docname} 里没有 id 为 {d.section!r} 的节（术语 {d.term!r}）；"
                    "章节改了标题或标签时改这张表"
                )
            words = (d.term,) if main else (d.term, *d.aliases)
            site = definition_site(section, words, d.sentence)
            if site is None:
                raise ExtensionError(
                    f"tools/site_zh.py 的 DEFINITIONS：{docname} 的 {d.section!r} 一节的正文里没有 {' / '.join(words)!r}"
                    "（代码、数学式、折叠块不算）；章节改了措辞时改这张表"
                )
            anchor = definition_id(d.term) if main else f"see-{heading_slug(d.term)}"
            if anchor not in site["ids"]:
                site["ids"].append(anchor)
                document.ids[anchor] = site
            entries = [("single", word, anchor, main, None) for word in (d.term, *d.aliases)]
            index = addnodes.index(entries=entries, inline=False)
            if isinstance(site, nodes.section):
                site.insert(1, index)  # 标题之后
            else:
                site.parent.insert(site.parent.index(site), index)
            marked.append(anchor)
    return marked


def _check_definition_docs(app, env) -> None:
    from sphinx.errors import ExtensionError

    missing = sorted({d.doc for d in (*DEFINITIONS.values(), *SEE_ALSO)} - set(env.found_docs))
    if missing:
        raise ExtensionError(f"tools/site_zh.py 的 DEFINITIONS 指向不存在的页面：{missing}")


def _config_inited(app, config) -> None:
    if not config.html_search_scorer:  # 搜索页的排序、摘要与结果链接（tools/site_search.js）
        config.html_search_scorer = str(SEARCH_PAGE_JS)


SEARCH_PAGE_JS = Path(__file__).with_name("site_search.js")
LANDING_JS = "course_search.js"  # book/_static：点开结果后高亮并滚到这个词


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


def _chinese_definition_words() -> list[str]:
    """DEFINITIONS 里全是汉字的词（“集合矩阵乘法”“全交换”）：也作为整词进索引"""
    words = [w for d in DEFINITIONS.values() for w in (d.term, *d.aliases)]
    return [w for w in words if re.fullmatch(f"[{_CJK}]+", w)]


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
            for term in (*SEARCH_TERMS, *_chinese_definition_words()):
                jieba.add_word(term, freq=10_000)

    return CourseChinese


def setup(app):
    app.add_transform(JoinCjkLines)
    app.connect("doctree-read", lambda app, doctree: stable_section_ids(doctree), priority=100)
    app.connect("doctree-read", lambda app, doctree: mark_definitions(doctree, app.env.docname), priority=110)
    app.connect("env-check-consistency", _check_definition_docs)
    app.connect("config-inited", _config_inited)
    app.add_js_file(LANDING_JS)
    app.add_search_language(_search_language())
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = [
    "DEFINITIONS",
    "SEARCH_TERMS",
    "SEE_ALSO",
    "Definition",
    "definition_id",
    "definition_site",
    "heading_slug",
    "join_cjk_lines",
    "mark_definitions",
    "setup",
    "stable_section_ids",
]
