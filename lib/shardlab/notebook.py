"""笔记本里的小工具：把算出的数字交给正文（glue）

在构建网站时，myst-nb 的 ``glue`` 把值存进笔记本输出，正文用 ``{glue:text}`name``` 引用；
在 Colab 或没有 myst-nb 的环境里，同一个调用只是把值记下来：数字在 ``display=True`` 时打印，
图（matplotlib Figure 或 PNG 图像）总是直接显示，这样读者在 Colab 上也能看到图。

``glue`` 与 ``glue_text`` 都返回 None：即使写在单元的最后一行，也不会在网页上留下一个只有返回值的输出框。
"""

from __future__ import annotations

import re
import sys
from typing import Any

from shardlab import units
from shardlab.exercise import answers

GLUED: dict[str, Any] = {}


def _is_figure(value: Any) -> bool:
    module = type(value).__module__
    is_mpl = module.startswith("matplotlib") and hasattr(value, "savefig")
    return is_mpl or (module.startswith("IPython.core.display") and type(value).__name__ == "Image")


def glue(name: str, value: Any, display: bool = False) -> None:
    """记下一个供正文引用的值；有 myst-nb 时交给 myst_nb.glue。返回 None（不留输出框）"""
    GLUED[name] = value
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if _is_figure(value):
            from IPython.display import display as show

            show(value)
        elif display:
            print(f"{name} = {value}")
        return None
    myst_glue(name, value, display=display)
    return None


def glue_png(name: str, png: bytes) -> None:
    """把一张 PNG（``plots.figure_png`` 的结果）交给正文的 ``{glue:figure}``；没有 myst-nb 时直接显示它"""
    from IPython.display import Image

    glue(name, Image(data=png, format="png"), display=False)


def glue_text(name: str, text: Any) -> None:
    """把一段算好的文字交给正文的 ``{glue:text}`name```：``glue_text("ch05-q1-w", units.fmt_bw(w))``

    文字按 ``str(text)`` 原样放进正文（先用 ``shardlab.units`` 的 fmt_* 格式化好）；返回 None。
    """
    if not isinstance(name, str) or not name:
        raise ValueError("glue_text 的第一个参数是正文里引用的名字（非空字符串）")
    glue(name, str(text), display=False)


def answer_part(answer_id: str) -> str:
    """答案编号里的小问：``"ch05-p1a"``、``"ch06-p8a-bytes"`` → ``"(a)"``；没有小问字母的编号（``"ch05-p5-8"``、``"ch05-p3-uni"``）是空字符串"""
    m = re.search(r"-p\d+([a-z])(?:-[a-z]+)?$", answer_id)
    return f"({m.group(1)})" if m else ""


def answer_line(answer_id: str, value: Any) -> str:
    """解答页上一问的答案行：``(a) 答案：23.3 µs（p1a = 2.33e-05 s）``

    有小问字母的编号在前面写上小问（``answer_part``）；SI 的值写四位有效数字，单位取自答案登记表
    """
    spec = answers.get(answer_id)
    x = float(value)
    part = answer_part(answer_id)
    head = f"{part} 答案：" if part else "答案："
    if spec.unit == "s":
        return f"{head}{units.fmt_time(x)}（{spec.var} = {x:.4g} s）"
    if spec.unit == "B":
        exact = f"{int(x):,}" if x.is_integer() else f"{x:.4g}"
        return f"{head}{units.fmt_bytes(x)}（{spec.var} = {exact} B）"
    if spec.unit == "FLOP":
        return f"{head}{spec.var} = {x:.4g} FLOP"
    return f"{head}{spec.var} = {units.fmt_num(x, 4)}"


def show_answer(answer_id: str, value: Any) -> None:
    """在解答的答案单元下面打印一行“答案：……”（值由同一个单元算出，单位取自答案登记表）；返回 None"""
    sys.stdout.write(answer_line(answer_id, value) + "\n")  # 一次写出整行，不拆成两段输出


def md_table(headers: list[str], rows: list[list[Any]]):
    """由代码生成的 Markdown 表格（网站与 Colab 都能渲染）：``md_table(['芯片', '带宽'], [['v5e', '45 GB/s']])``"""
    from IPython.display import Markdown

    if any(len(r) != len(headers) for r in rows):
        raise ValueError(f"每一行都必须有 {len(headers)} 列（与表头相同）")

    def cell(x: Any) -> str:
        return ("—" if x is None else str(x)).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return Markdown("\n".join(lines))
