"""每章各自编号的图、表与公式：图 5.1、式 (6.3)、附录里的图 A.1（Sphinx 扩展，_config.yml 的 local_extensions）

Sphinx 的 numfig 只在有编号的目录树（numbered toctree）下按节编号；本书的目录没有编号（标题里的“5.1”是手写的），
于是图和公式从头到尾连续编号：第 6 章从“图 7”、“(15)”开始。这里在 Sphinx 编完号之后（``env-get-updated``，
排在它自己的编号之后）把每一页的编号改成 (章, 页内序号)：``course_chapter_numbers`` 里列出的页用它的章号，
别的页（练习、解答、前言）从 1 开始、不带章号。

图注（caption）、``{numref}`` 引用、公式的编号与 ``{eq}`` 引用都读 ``env.toc_fignumbers``，所以改这一处就都跟着变；
公式按 ``math_numsep``（默认 “.”）连起来写成 (6.3)。
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment


def renumber(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """把 env.toc_fignumbers 里每页每种编号（figure、table、code-block、displaymath）改成页内从 1 起、带章号"""
    chapters: dict[str, str] = app.config.course_chapter_numbers
    unknown = sorted(set(chapters) - set(env.found_docs))
    if unknown:
        raise ValueError(f"course_chapter_numbers 里的页不在书里：{unknown}")
    changed = []
    for docname, kinds in env.toc_fignumbers.items():
        prefix = (chapters[docname],) if docname in chapters else ()
        new = {}
        for figtype, numbers in kinds.items():
            ordered = sorted(numbers, key=lambda fig_id: numbers[fig_id])  # Sphinx 按文档顺序编的号
            new[figtype] = {fig_id: (*prefix, k) for k, fig_id in enumerate(ordered, start=1)}
        if new != kinds:
            env.toc_fignumbers[docname] = new
            changed.append(docname)
    return changed


def setup(app: Sphinx) -> dict:
    app.add_config_value("course_chapter_numbers", {}, "env", dict)
    app.connect("env-get-updated", renumber, priority=900)  # Sphinx 的 TocTreeCollector 用默认的 500，先编号
    return {"parallel_read_safe": True, "parallel_write_safe": True}
