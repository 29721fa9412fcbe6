"""把笔记本里的答案导出成纯数据：生成注入到笔记本末尾（或答案单元之后）的代码

导出的代码只用标准库，把答案变量转成 JSON 能表示的数（函数答案则在给定输入上调用后的结果），
打印成一行 ``@@SHARDLAB-ANSWERS@@{...}``。答案表的生成（``shardlab.grade.key``）和评分器都用它。
每条记录是 ``{"value": x}``、``{"missing": true}``、``{"invalid": 类型名}``（不是数）或 ``{"error": 说明}`` 之一。
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

from shardlab.exercise.judge import as_number
from shardlab.grade.markers import EXPORT_TAG, MARKER

__all__ = ["EXPORT_TAG", "MARKER", "ExportItem", "export_source", "parse_exports"]


@dataclass(frozen=True)
class ExportItem:
    answer_id: str
    var: str
    kind: str = "value"  # 'value' | 'function'
    inputs: tuple[tuple, ...] = ()  # 函数答案的输入


# 自检的类型规则（shardlab.check.as_number）的源码原样放进导出单元：评分与自检对“是不是数”只有一个答案
_TYPE_RULE = "from __future__ import annotations\n" + inspect.getsource(as_number)


def export_source(items: list[ExportItem]) -> str:
    """生成一个代码单元的源码：读出每个答案变量，打印一行带标记的 JSON"""
    spec = json.dumps([[i.answer_id, i.var, i.kind, [list(a) for a in i.inputs]] for i in items], ensure_ascii=True)
    return f"""\
def __shardlab_export(spec):
    import builtins, json, math
    from numbers import Real
    rule = {{"Real": Real, "__builtins__": builtins}}  # 干净的命名空间：学生的全局变量遮不住规则里的名字
    exec({_TYPE_RULE!r}, rule)
    as_number = rule["as_number"]
    def plain(v):
        if v is Ellipsis or v is None:
            return {{"missing": True}}
        try:
            x = as_number(v)
        except Exception as exc:
            x = None
        if x is None:
            return {{"invalid": type(v).__name__}}
        return {{"value": x if math.isfinite(x) else str(x)}}
    out = {{}}
    for aid, var, kind, inputs in spec:
        if var not in globals():
            out[aid] = {{"error": "没有定义变量 " + var}}
        elif kind == "function":
            f = globals()[var]
            results = []
            for args in inputs:
                try:
                    results.append(plain(f(*args)) if callable(f) else {{"error": var + " 不是函数"}})
                except Exception as exc:
                    results.append({{"error": type(exc).__name__ + ": " + str(exc)[:200]}})
            out[aid] = {{"cases": results}}
        else:
            out[aid] = plain(globals()[var])
    print({MARKER!r} + json.dumps(out, ensure_ascii=True))
__shardlab_export(__import__("json").loads({spec!r}))
del __shardlab_export
"""


def parse_exports(text: str) -> dict:
    """从输出文本里取出所有导出行，合并成 {answer_id: record}；后出现的覆盖先出现的"""
    found: dict = {}
    for line in text.splitlines():
        if line.startswith(MARKER):
            found.update(json.loads(line[len(MARKER) :]))
    return found
