"""把笔记本里的答案导出成纯数据：生成注入到笔记本末尾（或答案单元之后）的代码

导出的代码只用标准库，把答案变量转成 JSON 能表示的数（函数答案则在给定输入上调用后的结果），
打印成一行 ``@@SHARDLAB-ANSWERS@@{...}``。答案表的生成（``shardlab.grade.key``）和评分器都用它。
每条记录是 ``{"value": x}``、``{"missing": true}``、``{"invalid": 类型名}``（不是数）或 ``{"error": 说明}`` 之一。
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MARKER = "@@SHARDLAB-ANSWERS@@"
EXPORT_TAG = "autograder-export"  # 评分器注入的导出单元的标签


@dataclass(frozen=True)
class ExportItem:
    answer_id: str
    var: str
    kind: str = "value"  # 'value' | 'function'
    inputs: tuple[tuple, ...] = ()  # 函数答案的输入


def export_source(items: list[ExportItem]) -> str:
    """生成一个代码单元的源码：读出每个答案变量，打印一行带标记的 JSON"""
    spec = json.dumps([[i.answer_id, i.var, i.kind, [list(a) for a in i.inputs]] for i in items], ensure_ascii=True)
    return f"""\
def __shardlab_export(spec):
    import json, math
    def plain(v):
        if v is Ellipsis or v is None:
            return {{"missing": True}}
        try:
            x = float(v)
        except Exception as exc:
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
