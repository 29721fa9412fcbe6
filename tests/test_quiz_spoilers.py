"""第 5、6 章的小测验不提前泄露答案

读者先看到问题，再展开折叠的答案。答案里引用的数（`{glue:text}` 的名字）由代码单元算出；
算它的单元如果排在问题之前，而且代码展开显示，或者把结果打印出来，读者在问题之前就看到了答案。

- 读 .md 的检查（快，不用构建）：答案独有的 glue 名字由哪个单元算出；那个单元在问题之前时，
  代码必须不显示（``remove-input`` / ``remove-cell`` / ``hide-input``），也不能 print 或 display 任何东西
  （``remove-cell`` 或 ``remove-output`` 除外）。
- 读执行过的笔记本的检查（有构建时）：问题之前所有显示出来的输出与展开的代码里，都不出现答案的值。
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ["book/ch05_collectives", "book/ch06_sharded_matmul"]
HIDDEN_INPUT = {"remove-input", "remove-cell", "hide-input", "hide-cell"}
HIDDEN_OUTPUT = {"remove-output", "remove-cell"}
GLUE_REF = re.compile(r"\{glue:text\}`([^`]+)`")
# 执行过的笔记本的 Markdown 单元里的一道小测验：(标题, 问题, 答案)
QUIZ = re.compile(
    r"```\{admonition\} 小测验：([^\n]*)\n(.*?)```\s*```\{admonition\} 答案\n:class: dropdown\n(.*?)```", re.S
)


def _blocks(text: str) -> list[tuple]:
    """按顺序：('code', 标签集合, 源码) 与 ('quiz', 标题, 问题, 答案)；其余的 Markdown 按 ('md', 文字)"""
    blocks, pos = [], 0
    cell = re.compile(r"^```\{code-cell\}[^\n]*\n(?::tags: \[([^\]]*)\]\n\n?)?(.*?)^```$", re.M | re.S)
    quiz = re.compile(
        r"^```\{admonition\} 小测验：([^\n]*)\n(.*?)^```\n+```\{admonition\} 答案\n:class: dropdown\n(.*?)^```$",
        re.M | re.S,
    )
    while True:
        found = [m for m in (cell.search(text, pos), quiz.search(text, pos)) if m]
        if not found:
            blocks.append(("md", text[pos:]))
            return blocks
        m = min(found, key=lambda m: m.start())
        blocks.append(("md", text[pos : m.start()]))
        if m.re is cell:
            tags = {t.strip() for t in (m.group(1) or "").split(",") if t.strip()}
            blocks.append(("code", tags, m.group(2)))
        else:
            blocks.append(("quiz", m.group(1), m.group(2), m.group(3)))
        pos = m.end()


def _glued_here(source: str) -> set[str]:
    return set(re.findall(r"""glue(?:_text)?\(\s*["']([^"']+)["']""", source))


def _shows_output(source: str) -> bool:
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.startswith((" ", "#", ")", "]"))]
    last = lines[-1] if lines else ""
    bare_last = not re.match(
        r"^(\w[\w, ]*=|for |if |def |assert |import |from |glue|plots\.glue|print\(|display\()", last
    )
    return "print(" in source or "display(" in source or bare_last


def spoiled_in_source(text: str) -> list[str]:
    """答案独有的 glue 名字在问题之前由显示代码或输出的单元算出"""
    blocks = _blocks(text)
    problems = []
    for i, block in enumerate(blocks):
        if block[0] != "quiz":
            continue
        _, title, question, answer = block
        before = "".join(b[1] for b in blocks[:i] if b[0] == "md") + question
        secret = set(GLUE_REF.findall(answer)) - set(GLUE_REF.findall(before))
        for earlier in blocks[:i]:
            if earlier[0] != "code":
                continue
            _, tags, source = earlier
            keys = sorted(_glued_here(source) & secret)
            if not keys:
                continue
            if not tags & HIDDEN_INPUT:
                problems.append(f"小测验“{title}”：问题之前展开的代码算出答案 {keys}")
            elif not tags & HIDDEN_OUTPUT and _shows_output(source):
                problems.append(f"小测验“{title}”：问题之前算出答案 {keys} 的单元有显示出来的输出")
    return problems


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_quiz_answer_is_computed_in_view_before_the_question(page):
    text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    assert len([b for b in _blocks(text) if b[0] == "quiz"]) >= 8
    problems = spoiled_in_source(text)
    assert problems == [], "\n".join(problems)


def test_the_source_check_catches_a_printed_answer():
    shown = (
        '```{code-cell} ipython3\nt = 1\nglue_text("q-t", str(t))\n```\n\n'
        "```{admonition} 小测验：多久？\n要多久？\n```\n\n"
        "```{admonition} 答案\n:class: dropdown\n{glue:text}`q-t`\n```\n"
    )
    assert len(spoiled_in_source(shown)) == 1
    printed = shown.replace("```{code-cell} ipython3\n", "```{code-cell} ipython3\n:tags: [remove-input]\n\n")
    printed = printed.replace("str(t))\n", "str(t))\nprint(t)\n")
    assert "输出" in spoiled_in_source(printed)[0]
    quiet = printed.replace("print(t)\n", "")
    assert spoiled_in_source(quiet) == []
    after = quiet.replace("remove-input", "hide-input")
    assert spoiled_in_source(after) == []


# ---------- 执行过的笔记本（有构建时） ----------


def _executed(site: Path, page: str) -> Path:
    """构建时执行过的笔记本（网站目录旁边的 jupyter_execute/）：这次构建的，不是本地留下的旧构建"""
    path = site.parent / "jupyter_execute" / f"{page}.ipynb"
    assert path.exists(), f"构建没有留下执行过的笔记本 {path}"
    return path


def _text_of(out: dict) -> str:
    if out.get("output_type") == "stream":
        return "".join(out.get("text", ""))
    data = out.get("data", {})
    for kind in ("text/markdown", "text/plain", "text/html"):
        if kind in data:
            value = data[kind]
            return "".join(value) if isinstance(value, list) else str(value)
    return ""


def _shown_outputs(cell: dict) -> list[str]:
    """代码单元显示出来的输出的文字（glue 的记录不算，remove-output 的不算）"""
    if set(cell.get("metadata", {}).get("tags", [])) & HIDDEN_OUTPUT:
        return []
    return [_text_of(o) for o in cell.get("outputs", []) if "scrapbook" not in o.get("metadata", {})]


def _countable(value: str) -> bool:
    """值够具体，出现在别处才算泄露：至少 4 个字符、带数字（“2 µs”“16”太常见）"""
    return len(value) >= 4 and bool(re.search(r"\d", value))


def _appears(value: str, text: str) -> bool:
    """按整个数出现（'3 µs' 不算在 '243 µs' 里）"""
    return bool(re.search(rf"(?<![\d.,]){re.escape(value)}(?![\d])", text))


def spoiled_in_executed(nb: dict, glue: dict[str, str]) -> list[str]:
    """问题之前，算出答案的单元（以及紧挨着问题的那个代码单元）显示出来的输出或展开的代码里出现答案的值

    只比较至少 4 个字符、带数字的值，按整个数匹配（'3 µs' 不算在 '243 µs' 里）；正文在问题之前已经引用过的值不算。
    只看算出答案的单元：别处的表格里碰巧出现同一个数（另一种情形的时间）不算泄露。
    """
    cells: list[tuple[set, str, list[str]]] = []  # (glue 的名字, 展开的代码, 显示出来的输出)
    in_prose: set[str] = set()  # 正文里已经引用过的值：问题之前本来就告诉了读者
    problems = []
    for cell in nb["cells"]:
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "code":
            tags = set(cell.get("metadata", {}).get("tags", []))
            cells.append((_glued_here(source), "" if tags & HIDDEN_INPUT else source, _shown_outputs(cell)))
            continue
        for title, question, answer in QUIZ.findall(source):
            told = in_prose | {glue.get(k, "") for k in GLUE_REF.findall(question)}
            keys = set(GLUE_REF.findall(answer))
            near = [c for c in cells if c[0] & keys] + cells[-1:]
            seen = "\n".join(text for glued, code, outs in near for text in [code, *outs])
            for key in sorted(keys):
                value = glue.get(key, "")
                if _countable(value) and value not in told and _appears(value, seen):
                    problems.append(f"小测验“{title}”：答案 {key} = {value!r} 在问题之前就显示了")
        in_prose |= {glue.get(k, "") for k in GLUE_REF.findall(source)}
    return problems


def _glue_values(nb_path: Path, nb: dict) -> dict[str, str]:
    outputs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    side = nb_path.with_suffix(".glue.json")
    if side.exists():
        outputs += list(json.loads(side.read_text(encoding="utf-8")).values())
    values = {}
    for out in outputs:
        name = out.get("metadata", {}).get("scrapbook", {}).get("name")
        data = out.get("data", {})
        plain = data.get("application/papermill.record/text/plain", data.get("text/plain"))
        if name and plain is not None:
            values[name] = ("".join(plain) if isinstance(plain, list) else str(plain)).strip("'\"")
    return values


@pytest.mark.slow
@pytest.mark.parametrize("page", CHAPTERS)
def test_no_quiz_answer_value_is_shown_before_the_question(page, site):
    path = _executed(site, page)
    nb = json.loads(path.read_text(encoding="utf-8"))
    glue = _glue_values(path, nb)
    assert glue, f"{path} 里没有 glue 的值"
    problems = spoiled_in_executed(nb, glue)
    assert problems == [], "\n".join(problems)


# ---------- 同一节里问题之前看得见的文字（有构建时） ----------
#
# 上面的检查只看算出答案的单元；答案也可能早就写在同一节的正文或一张表里（例如问题问的正是表中的一格，
# 或正文刚说出的阈值），读者不用想就能照抄。这里把一节从标题到问题之间看得见的文字（正文的 glue 换成值、
# 展开的代码、显示出来的输出）连起来，查答案独有的值是否按整个数出现。


def _visible(cell: dict, glue: dict[str, str]) -> str:
    source = "".join(cell.get("source", ""))
    if cell["cell_type"] == "markdown":
        return GLUE_REF.sub(lambda m: glue.get(m.group(1), ""), source)
    code = "" if set(cell.get("metadata", {}).get("tags", [])) & HIDDEN_INPUT else source
    return "\n".join([code, *_shown_outputs(cell)])


# 答案里有意复述的、问题之前已经给出的量（小测验标题, glue 名字）：每条写明它为什么不是这道题要读者算的答案
TOLD = {
    ("换成 v5p 能遮住吗？", "ch05-ov-dstar-n2"): "拿来对比的 v5e 阈值；要算的是 v5p 的阈值 ch05-q5-dstar",
    ("13B 模型在 v5e 上的梯度同步", "ch05-v5e-hbm"): "v5e 每颗芯片的 HBM 容量，是题目要用的常数",
    ("普通 TP 一个微批次要花多少通信时间？", "ch05-q6-lat1"): "NCCL 模型里 8 卡 AllReduce 的延迟项，5.6 节的常数",
    ("沿短轴 AllGather", "ch06-lat-thr"): "v5e 的延迟门槛，本节刚讲过的判据",
    ("沿短轴 AllGather", "ch06-q4a-wrapped"): "“若有回绕”的旁注；373 µs 在本节另一处是别的量",
    ("是哪一种情形", "ch06-q2-v"): "67.1 MB 在本节别处是 bf16[4096, 8192] 的 V_A，不是这道题的部分和",
    ("最多能切几份", "ch06-q6-v5e-next"): "问题要读者对照上图与上表的门槛；答案是切几份",
    ("最多能切几份", "ch06-q6-v5p-next"): "同上",
    ("最多能切几份", "ch06-q6-h100-next"): "同上",
    ("最多能切几份", "ch06-q6-v5p-n4-split"): "正文刚讲过的拆半约定下的门槛，答案拿来说明结论不变",
    ("最多能切几份", "ch06-v5e-n4-ring"): "正文给出的链式 AllReduce 门槛，答案拿来说明结论不变",
}


def answered_earlier_in_section(nb: dict, glue: dict[str, str]) -> list[str]:
    """小测验答案独有的值（至少 4 个字符、带数字；问题里没有引用的 glue）在同一节问题之前看得见的文字里出现"""
    problems, section = [], ""
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            section += "\n" + _visible(cell, glue)
            continue
        # 一个 Markdown 单元里可能先有小测验、后有下一节的标题：按标题切开，逐段处理
        for part in re.split(r"(?m)^(?=##? )", "".join(cell.get("source", ""))):
            if re.match(r"##? ", part):
                section = ""
            for m in QUIZ.finditer(part):
                seen = section + _visible({"cell_type": "markdown", "source": part[: m.start()]}, glue)
                asked = set(GLUE_REF.findall(m.group(2)))
                for key in sorted(set(GLUE_REF.findall(m.group(3))) - asked):
                    value = glue.get(key, "")
                    if _countable(value) and (m.group(1), key) not in TOLD and _appears(value, seen):
                        problems.append(f"小测验“{m.group(1)}”：答案 {key} = {value!r} 在同一节问题之前已经看得见")
            section += "\n" + _visible({"cell_type": "markdown", "source": part}, glue)
    return problems


def test_answered_earlier_in_section_catches_a_table_cell_and_a_stated_threshold():
    table = {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": "| Case 3 | 1.49 ms |"}}
    quiz = (
        "```{admonition} 小测验：多久？\n表中是多少？\n```\n\n"
        "```{admonition} 答案\n:class: dropdown\n{glue:text}`q-t`\n```\n"
    )
    cells = [
        {"cell_type": "markdown", "source": "## 6.3 对照\n"},
        {"cell_type": "code", "metadata": {"tags": ["remove-input"]}, "source": "t", "outputs": [table]},
        {"cell_type": "markdown", "source": quiz},
    ]
    assert len(answered_earlier_in_section({"cells": cells}, {"q-t": "1.49 ms"})) == 1
    assert answered_earlier_in_section({"cells": cells}, {"q-t": "11.49 ms"}) == []
    # 另一节里的同一个数不算
    moved = [cells[1], {"cell_type": "markdown", "source": "## 6.4 下一节\n\n" + quiz}]
    assert answered_earlier_in_section({"cells": moved}, {"q-t": "1.49 ms"}) == []
    # 正文刚说出的阈值（同一个 glue 名字）也算
    said = {"cell_type": "markdown", "source": "## 5.8\n阈值 {glue:text}`d`。\n\n" + quiz.replace("q-t", "d")}
    assert len(answered_earlier_in_section({"cells": [said]}, {"d": "8,756"})) == 1


@pytest.mark.slow
@pytest.mark.parametrize("page", CHAPTERS)
def test_no_quiz_answer_is_visible_earlier_in_its_section(page, site):
    path = _executed(site, page)
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = answered_earlier_in_section(nb, _glue_values(path, nb))
    assert problems == [], "\n".join(problems)


# ---------- 正文不给出章末习题的答案（有构建时） ----------
#
# 小测验、提示与表格是读者在做习题之前就看到的：它们若恰好写出某道习题的答案（哪怕情形不同、数恰好相同），
# 读者就丢了那道题。只比较有单位（秒、字节）、至少 3 位数字的答案：像 2 µs、16 倍、1/4 这样的数太常见，不算。


def answer_values(chapter: int) -> dict[str, str]:
    """这一章习题的发布版答案，按正文写数的格式（units.fmt_time / fmt_bytes，三位有效数字）"""
    from shardlab import units
    from shardlab.exercise import answers

    fmt = {"s": units.fmt_time, "B": units.fmt_bytes}
    values = {}
    for a in answers.ANSWER_LIST:
        if a.chapter != chapter or a.kind != "value" or a.unit not in fmt:
            continue
        text = fmt[a.unit](a.value())
        if len(re.findall(r"\d", text)) >= 3:
            values[a.id] = text
    return values


# 数恰好相同、说的却是另一个量的地方（答案 id → 那一行里的一段文字）：每条都写明为什么不算泄露
COINCIDENCES = {
    ("ch05-p7-prefill-bytes", "bf16[2048, 8192]"): "5.7 节原书实测的 AllGather 输入，不是 TP 的 AllReduce",
    ("ch05-p7-prefill-bytes", "34 MB 取整"): "同上，原书实测的数组",
    ("ch06-p8a-bytes", "3 跳共约"): "6.4 节小测验（原书的实测例子）里线上 AllGather 的每块，不是部分和缓冲区",
    ("ch06-p5-weight-bytes-per-chip", "2V_C"): "6.3 节 Case 2 规约输出的字节数，不是权重",
    ("ch06-p5-weight-bytes-per-chip", "| 4096, 8192, 16384 |"): "同上，6.3 节的对照表",
    ("ch06-p5-t-math", "要先对齐"): "收缩轴不一致那一行的时间，不是 MLP 的计算时间",
    ("ch06-p2c", "解码（decode）"): "6.8 节解码一行的计算时间，不是 AllReduce_Z",
}


def answers_shown(nb: dict, glue: dict[str, str], secret: dict[str, str]) -> list[str]:
    """正文（glue 换成它的值）与显示出来的输出（表格、打印）里，按整个数出现的习题答案

    习题一节（“## 5.12 习题” / “## 6.9 习题”）与之后的内容不查：那里本来就是题目。
    """
    problems = []
    for cell in nb["cells"]:
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            if re.search(r"^## \d+\.\d+ 习题", source, re.M):
                break
            texts = [("正文", GLUE_REF.sub(lambda m: glue.get(m.group(1), ""), source))]
        elif cell["cell_type"] == "code":
            texts = [("输出", text) for text in _shown_outputs(cell)]
        else:
            continue
        for where, text in texts:
            for key, value in secret.items():
                if re.search(rf"(?<![\d.,]){re.escape(value)}(?!/s)", text):
                    line = next(ln for ln in text.splitlines() if value in ln)
                    if any(k == key and part in line for k, part in COINCIDENCES):
                        continue
                    problems.append(f"{where}写出了习题答案 {key} = {value!r}：{line.strip()[:120]}")
    return problems


def test_answers_shown_catches_a_table_cell():
    secret = {"ch05-p7-prefill-bytes": "33.6 MB"}
    table = {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": "| AllReduce | 33.6 MB |"}}
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": "t", "outputs": [table]}]}
    assert len(answers_shown(nb, {}, secret)) == 1
    nb["cells"][0]["metadata"]["tags"] = ["remove-output"]
    assert answers_shown(nb, {}, secret) == []
    prose = {"cell_type": "markdown", "source": "V = {glue:text}`x`，不是 133.6 MB"}
    assert len(answers_shown({"cells": [prose]}, {"x": "33.6 MB"}, secret)) == 1
    assert answers_shown({"cells": [prose]}, {"x": "3.6 MB"}, secret) == []
    problems = {"cell_type": "markdown", "source": "## 5.12 习题\n\n答案 {glue:text}`x`"}
    assert answers_shown({"cells": [problems]}, {"x": "33.6 MB"}, secret) == []


@pytest.mark.slow
@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_body_does_not_show_an_exercise_answer(page, site):
    path = _executed(site, page)
    nb = json.loads(path.read_text(encoding="utf-8"))
    chapter = int(re.search(r"ch(\d\d)", page).group(1))
    problems = answers_shown(nb, _glue_values(path, nb), answer_values(chapter))
    assert problems == [], "\n".join(problems)


# ---------- 小测验不照搬章末习题的设定（读 .md，不用构建） ----------
#
# 小测验若与某道习题是同一个数组、同一种轴长（例如都在长度 4 的轴上收集 bf16[128]），读者做小测验时就把那道题做掉了。
# 习题的设定取自 ``shardlab.exercise.problems`` 的题目文字（TEXT：发布版原文里的数组形状与网格）。

SHAPE = re.compile(r"bf16\[[\d, ]+\]")


def problem_setups(assignment: str) -> list[tuple[int, str, set[int]]]:
    """(题号, 数组形状, 那道题网格的轴长)：只列题目文字里写出 bf16 形状的题"""
    from shardlab.exercise import problems

    subs = problems.TEXT[assignment]
    setups = []
    for sub in subs:
        for shape in SHAPE.findall(sub.published):
            lengths = {
                int(n)
                for s in subs
                if s.problem == sub.problem and ("'X'" in s.published or re.fullmatch(r"\d+([x×]\d+)+", s.published))
                for n in re.findall(r"\d+", s.published)
            }
            setups.append((sub.problem, shape, lengths))
    return setups


def _axis_lengths(question: str) -> set[int]:
    found = re.findall(r"长度为 (\d+)", question)
    for dims in re.findall(r"(\d+(?:[×x]\d+)+) ?切片", question):
        found += re.findall(r"\d+", dims)
    for pair in re.findall(r"[XYZ]\{:\}\\,(\d+)|'[XYZ]': (\d+)", question):  # 网格 {X: 8, Y: 4}
        found += [n for n in pair if n]
    return {int(n) for n in found}


def setup_repeats_a_problem(text: str, assignment: str) -> list[str]:
    """小测验的问题与一道习题用同一个数组形状、同一种轴长"""
    problems = []
    setups = problem_setups(assignment)
    for block in _blocks(text):
        if block[0] != "quiz":
            continue
        _, title, question, _ = block
        lengths = _axis_lengths(question)
        for n, shape, problem_lengths in setups:
            if shape in question and lengths & problem_lengths:
                problems.append(
                    f"小测验“{title}”与习题 {n} 的设定相同：{shape}，轴长 {sorted(lengths & problem_lengths)}"
                )
    return problems


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_quiz_repeats_an_exercise_setup(page):
    text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    assignment = re.search(r"ch\d\d", page).group(0)
    assert problem_setups(assignment), "题目文字里找不到数组形状：检查没有在比较任何东西"
    problems = setup_repeats_a_problem(text, assignment)
    assert problems == [], "\n".join(problems)


def test_setup_check_catches_a_quiz_that_is_problem_2():
    old = (
        "```{admonition} 小测验：带宽受限还是延迟受限？\n"
        "在 TPU v5e 的 4×4 切片上，沿一个长度为 4 的轴 AllGather 一个 bf16[128] 数组。\n要多久？\n```\n\n"
        "```{admonition} 答案\n:class: dropdown\n约 3 µs。\n```\n"
    )
    assert len(setup_repeats_a_problem(old, "ch05")) == 1
    longer = old.replace("4×4 切片上，沿一个长度为 4 的轴", "16×16 切片上，沿一个长度为 16 的轴")
    assert setup_repeats_a_problem(longer, "ch05") == []
    assert setup_repeats_a_problem(old.replace("bf16[128]", "bf16[1024, 512]"), "ch05") == []
