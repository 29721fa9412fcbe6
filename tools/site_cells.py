"""网站上的代码单元：每个笔记本的第一个代码单元（设置单元）折叠起来（Sphinx 扩展，_config.yml 的 local_extensions）

设置单元（``tools/course_config.py`` 的 ``setup_cell_lines``）每页都一样，读者不需要每次先看一屏安装命令。
myst-nb 对带 ``hide-input`` 标签的单元生成“显示代码”的折叠块；这里在读入文档后给第一个代码单元补上
同样的设置（已经有隐藏设置的单元不动），所以源文件里不写标签也会折叠。
``SHOW_SETUP_CELL`` 里的页面例外：环境自检页就是来讲这个单元的。
"""

from __future__ import annotations

from docutils import nodes

SHOW_SETUP_CELL = {"book/environment"}


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


def _doctree_read(app, doctree) -> None:
    config = getattr(app.env, "mystnb_config", None)
    show = getattr(config, "code_prompt_show", None) or app.config["nb_code_prompt_show"]
    hide = getattr(config, "code_prompt_hide", None) or app.config["nb_code_prompt_hide"]
    collapse_setup_cell(doctree, app.env.docname, show, hide)


def setup(app):
    app.connect("doctree-read", _doctree_read)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
