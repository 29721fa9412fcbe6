"""练习的自检（self-check）：``check("ch05-p1a", p1a)`` 用中文告诉你对不对，并认出常见失误

自检只为学习：它运行在你自己的内核里，当然可以被绕过；正式评分由评分器（``shardlab.grade``）完成。
它从不打印参考答案；参考值由 ``shardlab.exercise.answers`` 现算，不写在练习笔记本里。

题目参数取自笔记本的**参数单元**（第一行是 ``# 题目参数`` 的单元）最近一次运行时写下的数，而不是变量的当前值：
答案单元里改写了 ``D`` 之类的变量不会改变判定，评分器也按同样的参数判定（``shardlab.exercise.judge`` 是唯一的判定）。
不在 IPython / Jupyter 里（例如 ``python script.py``）时，没有运行记录可读，才退而用调用处的同名变量。
"""

from __future__ import annotations

import builtins
import inspect
import sys

from shardlab.exercise import answers, problems
from shardlab.exercise.judge import CORRECT, INVALID, MISSING, WRONG, Verdict, as_number, evaluate

__all__ = ["CORRECT", "INVALID", "MISSING", "WRONG", "Verdict", "as_number", "check", "evaluate", "notebook_params"]


def _history() -> list[str] | None:
    """这个内核运行过的单元源码（IPython 把 get_ipython 放进运行中代码的内置名字里）；不在 IPython 里时为 None"""
    get_ipython = getattr(builtins, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    hist = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return list(hist) if isinstance(hist, list) else None


def notebook_params(assignment: str, namespace=None) -> dict:
    """本章的题目参数：参数单元的最近一次运行（按运行顺序，后运行的覆盖先运行的）；没有运行记录时用 namespace 的同名变量"""
    history = _history()
    if history is not None:
        cells = [src for src in history if problems.is_param_cell(src)]
        if cells:
            return problems.from_cells(assignment, cells)
    return problems.from_namespace(assignment, namespace or {})


def check(answer_id: str, value) -> None:
    """打印一行中文判定：✓ 正确、✗ 不对（附提示）或 … 未作答；从不打印参考答案"""
    spec = answers.get(answer_id)
    frame = inspect.currentframe()
    caller = frame.f_back.f_globals if frame is not None and frame.f_back is not None else {}
    # 一次写出整行（含换行）：print 分两次写，笔记本有时把换行单独送成第二段输出（网站上一个空的输出框）
    sys.stdout.write(f"{evaluate(answer_id, value, notebook_params(spec.assignment, caller))}\n")
