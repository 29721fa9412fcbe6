"""生成练习的 strip 步骤与答案导出代码"""

import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import make_exercises  # noqa: E402

from shardlab.grade.export import ExportItem, export_source, parse_exports  # noqa: E402

HEADER = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

MASTER = (
    HEADER
    + """
<!-- EXERCISE: # 练习 -->
<!-- BEGIN SOLUTION -->
# 解答
<!-- END SOLUTION -->

题目：算一个数。

```{code-cell} ipython3
:tags: [ch05-p4]

# STUB: p4 = ...  # 比值
# BEGIN SOLUTION
p4 = 8 * 2
# END SOLUTION
```

```{code-cell} ipython3
:tags: [solution]

print("只在解答里")
```

```{code-cell} ipython3
:tags: [ch05-p3-fn]

def ratio(n, bidirectional):
    \"\"\"比值\"\"\"
    # STUB: ...
    # BEGIN SOLUTION
    return 0.25 if bidirectional else 0.5
    # END SOLUTION
```

```{code-cell} ipython3
# BEGIN SOLUTION
helper = 1
# END SOLUTION
```
"""
)


def _strip(text):
    return make_exercises.strip(jupytext.reads(text, fmt="md:myst"), "test")


def test_strip_removes_solutions_and_keeps_stubs():
    nb = _strip(MASTER)
    sources = [c.source for c in nb.cells]
    assert sources[0] == "# 练习\n\n题目：算一个数。"
    assert sources[1] == "p4 = ...  # 比值"
    assert nb.cells[1].metadata["tags"] == ["ch05-p4"]
    assert sources[2] == 'def ratio(n, bidirectional):\n    """比值"""\n    ...'
    assert sources[3] == "..."
    assert not any("只在解答里" in s or "8 * 2" in s or "解答" in s for s in sources)


@pytest.mark.parametrize(
    ("code", "msg"),
    [
        ("# BEGIN SOLUTION\nx = 1", "没有对应的 END"),
        ("# END SOLUTION", "之前没有 BEGIN"),
        ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION", "嵌套"),
    ],
)
def test_strip_rejects_broken_markup(code, msg):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    with pytest.raises(make_exercises.MarkupError, match=msg):
        make_exercises.strip(nb)


def test_strip_rejects_broken_markdown_markup():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("<!-- BEGIN SOLUTION -->\n秘密")])
    with pytest.raises(make_exercises.MarkupError, match="Markdown"):
        make_exercises.strip(nb)


def test_exercises_are_up_to_date():
    assert make_exercises.main(["--check"]) == 0, "运行 make exercises"


def test_export_source_runs_and_reports_plain_data(capsys):
    items = [
        ExportItem("a", "x"),
        ExportItem("b", "missing_var"),
        ExportItem("c", "stub"),
        ExportItem("d", "f", "function", ((2,), (0,))),
        ExportItem("e", "text"),
        ExportItem("g", "h", "function", ((4, True), (4, False))),
    ]
    namespace = {"x": 2.5, "stub": ..., "f": lambda n: 1 / n, "text": "abc", "h": lambda n, bi: n / (4 if bi else 2)}
    exec(export_source(items), namespace)
    got = parse_exports(capsys.readouterr().out)
    assert got["a"] == {"value": 2.5}
    assert "error" in got["b"]
    assert got["c"] == {"missing": True}
    assert got["d"]["cases"][0] == {"value": 0.5} and "ZeroDivisionError" in got["d"]["cases"][1]["error"]
    assert got["e"] == {"invalid": "str"}  # 不是数：导出自己说 invalid
    assert got["g"]["cases"] == [{"value": 1.0}, {"value": 2.0}]  # 布尔参数（JSON 的 true/false）也能传进去
    assert "__shardlab_export" not in namespace


FOLDED = (
    HEADER
    + """
(ch05-sol-p4)=
## 问题 4：复制了多少份

题目。

<!-- BEGIN SOLUTION -->
:::{admonition} 问题 4：解答
:class: dropdown

推导。
:::
<!-- END SOLUTION -->

```{code-cell} ipython3
:tags: [ch05-p4, hide-input]

# STUB: p4 = ...
# BEGIN SOLUTION
p4 = 16
# END SOLUTION
```

```{code-cell} ipython3
check("ch05-p4", p4)
```

```{code-cell} ipython3
:tags: [hide-input]

print("不是答案单元：标签保留")
```
"""
)


def test_strip_turns_the_solution_anchor_into_a_link_and_unfolds_answer_cells():
    nb = _strip(FOLDED)
    assert (
        nb.cells[0].source == "## 问题 4：复制了多少份\n\n做完以后，可以对照[问题 4 的解答](#ch05-sol-p4)。\n\n题目。"
    )
    assert nb.cells[1].metadata["tags"] == ["ch05-p4"] and nb.cells[1].source == "p4 = ..."
    assert nb.cells[2].metadata["tags"] == [make_exercises.CHECK_TAG]
    assert nb.cells[3].metadata["tags"] == ["hide-input"]
    assert not any("admonition" in c.source or "sol-p4)=" in c.source for c in nb.cells)
