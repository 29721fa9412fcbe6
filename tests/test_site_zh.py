"""tools/site_zh.py：中文行尾的换行不变成空格、节的 id 稳定、搜索语言用 jieba 与课程术语"""

import re
import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_zh  # noqa: E402


@pytest.mark.parametrize(
    ("source", "want"),
    [
        ("时间。\n下一章", "时间。下一章"),
        ("我们先\n数一数", "我们先数一数"),
        ("（见上）\n然后", "（见上）然后"),
        ("结束；\nAllGather 开始", "结束；AllGather 开始"),
        ("一个数组\nAllGather 之后", "一个数组\nAllGather 之后"),  # 汉字与拉丁字母之间保留空格
        ("The end.\nNext line", "The end.\nNext line"),
        ("中文\n\n新段落", "中文\n\n新段落"),
    ],
)
def test_join_cjk_lines(source, want):
    assert site_zh.join_cjk_lines(source) == want


def _doc(text: str):
    settings = get_default_settings(Parser)
    settings.report_level = 5
    doc = new_document("<test>", settings)
    Parser().parse(text, doc)
    return doc


def test_transform_joins_softbreak_nodes_but_not_literals():
    doc = _doc("第一句。\n第二句\n在这里。\n\n``代码。\n保持``\n")
    # MyST 把换行解析成单独的 Text 节点：模拟这种结构
    para = doc.next_node(nodes.paragraph)
    para.children = []
    para += [
        nodes.Text("第一句。"),
        nodes.Text("\n"),
        nodes.strong(text="第二句"),
        nodes.Text("\n"),
        nodes.Text("在这里。"),
    ]
    site_zh.JoinCjkLines(doc).apply()
    assert para.astext() == "第一句。第二句在这里。"
    literal = doc.next_node(nodes.literal)
    assert literal.astext() == "代码。\n保持"


def test_transform_removes_the_right_softbreak_when_a_paragraph_has_several():
    """Text 节点按字符串比较相等：以前删掉的是同一段里第一个 "\n"（那一个本该留着），该删的反而留下了"""
    doc = _doc("占位\n")
    para = doc.next_node(nodes.paragraph)
    para.children = []
    para += [
        nodes.Text("数组"),
        nodes.Text("\n"),
        nodes.Text("AllGather 之后。"),
        nodes.Text("\n"),
        nodes.Text("下一句"),
    ]
    site_zh.JoinCjkLines(doc).apply()
    assert para.astext() == "数组\nAllGather 之后。下一句"


def test_sections_get_readable_stable_ids():
    from docutils.core import publish_doctree

    text = ".. _sec-why:\n\n为什么需要集合通信\n==================\n\n正文\n\n环形算法\n--------\n\n正文\n"
    doc = publish_doctree(text, settings_overrides={"auto_id_prefix": "id", "report_level": 5, "doctitle_xform": False})
    before = [s["ids"][0] for s in doc.findall(nodes.section)]
    assert re.fullmatch(r"id\d+", before[1]), before  # 没有这个扩展时：流水号
    site_zh.stable_section_ids(doc)
    first, second = list(doc.findall(nodes.section))
    assert first["ids"][0] == "sec-why"
    assert second["ids"][0] == "环形算法"
    assert site_zh.heading_slug("5.1 为什么需要集合通信") == "51-为什么需要集合通信"
    assert site_zh.heading_slug("AllGather 的代价（Cost）") == "allgather-的代价cost"


def test_search_language_knows_the_course_terms():
    cls = site_zh._search_language()
    lang = cls({})
    words = set(lang.split("集合通信与规约散射的延迟受限区间"))
    assert {"集合通信", "规约散射", "延迟受限"} <= words
    assert "splitQuery" in cls.js_splitter_code
