"""网站上的代码单元（Sphinx 扩展，_config.yml 的 local_extensions）

设置单元折叠起来
    设置单元（``tools/course_config.py`` 的 ``setup_cell_lines``）每页都一样，读者不需要每次先看一屏安装命令。
    myst-nb 对带 ``hide-input`` 标签的单元生成“显示代码”的折叠块；这里在读入文档后给第一个代码单元补上
    同样的设置（已经有隐藏设置的单元不动），所以源文件里不写标签也会折叠。
    ``SHOW_SETUP_CELL`` 里的页面例外：环境自检页就是来讲这个单元的。

解答页不显示练习生成器的标记
    解答笔记本（``solutions/``）的代码里有 ``# STUB: p1a = ...``、``# BEGIN SOLUTION``、``# END SOLUTION`` 这样的行，
    Markdown 里有 ``<!-- BEGIN SOLUTION -->`` 之类的注释：它们是给 ``tools/make_exercises.py`` 看的。
    读入文档后从代码单元与原始 HTML 里删掉这些行（``make_exercises.without_markers``），解答本身不动；
    源文件、配对的 .ipynb、下载的文件和生成的练习都照旧带着标记。
"""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # 作为 local_extensions 载入时只有 tools/ 在 sys.path 上
    sys.path.insert(0, str(ROOT))

from tools import make_exercises  # noqa: E402

SHOW_SETUP_CELL = {"book/environment"}
SOLUTION_DIR = "solutions/"


def collapse_setup_cell(doctree, docname: str, prompt_show: str, prompt_hide: str) -> bool:
    """把第一个代码单元折叠起来（只折叠源码，输出照常显示）；改了返回 True"""
    if docname in SHOW_SETUP_CELL:
        return False
    for node in doctree.findall(nodes.container):
        if node.get("nb_element") != "cell_code":
            continue
        if node.get("hide_mode"):
            return False
        node["hide_mode"] = "input"
        node["prompt_show"] = prompt_show
        node["prompt_hide"] = prompt_hide
        node["classes"].append("tag_hide-input")
        return True
    return False


def strip_solution_markers(doctree) -> int:
    """删掉代码单元与原始 HTML 里的标记行；返回改动的节点数"""
    changed = 0
    for node in list(doctree.findall(nodes.literal_block)):
        if node.parent.get("nb_element") != "cell_code_source":
            continue
        text = node.astext()
        new = make_exercises.without_markers(text)
        if new != text:
            node.children = [nodes.Text(new)]
            node.rawsource = new
            changed += 1
    for node in list(doctree.findall(nodes.raw)):
        text = node.astext()
        new = make_exercises.without_markers(text)
        if new != text.strip("\n"):
            if new.strip():
                node.children = [nodes.Text(new)]
                node.rawsource = new
            else:
                node.parent.remove(node)
            changed += 1
    return changed


def _doctree_read(app, doctree) -> None:
    config = getattr(app.env, "mystnb_config", None)
    show = getattr(config, "code_prompt_show", None) or app.config["nb_code_prompt_show"]
    hide = getattr(config, "code_prompt_hide", None) or app.config["nb_code_prompt_hide"]
    collapse_setup_cell(doctree, app.env.docname, show, hide)
    if app.env.docname.startswith(SOLUTION_DIR):
        strip_solution_markers(doctree)


def setup(app):
    app.connect("doctree-read", _doctree_read)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
