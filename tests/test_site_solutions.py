"""网站上的解答（tools/site_check.py 的浏览器）：题目看得见，每道题的解答折叠着，点开才看到；
每个数值答案下面看得见一行“答案：……”，值与评分用的答案表一致；练习页不显示“未作答”

网站来自 SHARDLAB_SITE（make test-site 构建的 _build/html）或 conftest.py 的 built_site；没有 Chromium 时跳过（CI 里失败）。
"""

import math
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import make_exercises, site_cells, site_check, site_pages  # noqa: E402

SOLUTION_PAGES = [p for p in site_check.toc_pages() if p.startswith("solutions/")]
EXERCISE_PAGES = [p for p in site_check.toc_pages() if p.startswith("exercises/")]

_STATE_JS = r"""
() => {
  // 关着的 <details> 里的内容在 Chromium 里仍有尺寸（content-visibility），所以另外判断
  const shown = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
                       const closed = e.closest("details:not([open])");
                       const inSummary = closed && closed.querySelector("summary").contains(e);
                       return s.display !== "none" && s.visibility !== "hidden" && r.width > 0 && r.height > 0
                              && (!closed || inSummary) && (!e.checkVisibility || e.checkVisibility()); };
  const cells = sel => Array.from(document.querySelectorAll(sel));
  const input = c => c.querySelector(".cell_input");
  const worked = () => cells("div.admonition").filter(d => {   // 每段解答文字：标题是“问题 N：解答”
    const t = d.querySelector(".admonition-title"); return t && /^问题\s*\d+：解答/.test(t.textContent.trim()); });
  return {
    problems: cells("section[id^='ch']").filter(s => /-sol-p\d+$/.test(s.id)).map(s => s.id)
      .concat(cells("span[id*='-sol-p']").map(s => s.id)),
    headingsShown: cells("h2").filter(h => /问题\s*\d+/.test(h.textContent)).filter(shown).length,
    dropdowns: worked().length,
    dropdownBodiesShown: worked().filter(d =>
        Array.from(d.children).filter(c => !c.classList.contains("admonition-title")).some(shown)).length,
    answerCells: cells("div.cell").filter(c => /(^| )tag_ch\d\d-p/.test(c.className)).length,
    answerInputsShown: cells("div.cell").filter(c => /(^| )tag_ch\d\d-p/.test(c.className))
        .filter(c => input(c) && shown(input(c))).length,
    solutionCells: cells("div.cell.tag_solution").length,
    solutionCellsShown: cells("div.cell.tag_solution").filter(c =>
        Array.from(c.querySelectorAll(".cell_input, .cell_output")).some(shown)).length,
    checkMarks: document.body.innerText.split("✓").length - 1,
    unanswered: cells(".cell_output").filter(shown).filter(o => o.innerText.includes("未作答")).length,
    emptyOutputs: cells(".cell_output .output").filter(shown).filter(o => !o.querySelector("img, table, mjx-container")
        && !o.innerText.trim()).map(o => (o.closest("div.cell").querySelector(".cell_input") || o).innerText.trim()
        .slice(0, 40)),
    solutionLinks: cells("a[href*='-sol-p']").map(a => a.href),
    answerLines: cells("div.cell").filter(c => /(^| )tag_ch\d\d-p/.test(c.className)).map(c => ({
      id: c.className.match(/(?:^| )tag_(ch\d\d-p[^ ]+)/)[1],
      lines: Array.from(c.querySelectorAll(".cell_output")).filter(shown)
        .flatMap(o => o.innerText.split("\n")).map(l => l.trim()).filter(l => /^(\([a-z]\) )?答案：/.test(l)),
    })),
  };
}
"""


@pytest.fixture(scope="module")
def states(site, chromium):
    """每页：加载时的状态，以及点开第一个折叠的解答之后它是否显示出来"""
    from playwright.sync_api import sync_playwright

    out = {}
    with site_check.SiteServer(site) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=site_check.VIEWPORT, locale="zh-CN")
            context.route(
                "**/*",
                lambda r: r.continue_() if urlparse(r.request.url).hostname == site_check.HOST else r.abort(),
            )
            page = context.new_page()
            for name in SOLUTION_PAGES + EXERCISE_PAGES:
                page.goto(server.base + name + ".html", wait_until="load")
                state = page.evaluate(_STATE_JS)
                if name in SOLUTION_PAGES and state["dropdowns"]:
                    page.locator(".dropdown.admonition .admonition-title").first.click()  # 点开第一段解答
                    page.wait_for_timeout(300)
                    state["afterClick"] = page.evaluate(_STATE_JS)["dropdownBodiesShown"]
                out[name] = state
        finally:
            browser.close()
    return out


_ANSWER_LINE = re.compile(
    r"^(?:\([a-z]\) )?答案：.*?(?:（)?(\w+) = (-?[\d,]+(?:\.\d+)?(?:e[+-]?\d+)?)(?: (?:s|B|FLOP))?）?$"
)


def answer_line_problems(answer_lines: list[dict], chapter: str) -> list[str]:
    """每个数值答案单元下面有且只有一行看得见的“答案：……”，写的值与评分用的答案表（发布版参数）一致"""
    from shardlab.exercise import answers
    from shardlab.grade import key

    reference = key.registry_key()
    problems, seen = [], set()
    for cell in answer_lines:
        spec = answers.get(cell["id"])
        seen.add(spec.id)
        if spec.kind != "value":
            continue
        if len(cell["lines"]) != 1:
            problems.append(f"{spec.id}：看得见的“答案：”行有 {len(cell['lines'])} 行，应当 1 行")
            continue
        part = re.search(r"-p\d+([a-z])(?:-[a-z]+)?$", spec.id)  # ch06-p8a-bytes 也是 (a)
        if part and not cell["lines"][0].startswith(f"({part.group(1)}) 答案："):
            problems.append(f"{spec.id}：答案行没有写出小问（({part.group(1)})）：{cell['lines'][0]!r}")
            continue
        m = _ANSWER_LINE.match(cell["lines"][0])
        if not m or m.group(1) != spec.var:
            problems.append(f"{spec.id}：答案行读不出 {spec.var} 的值：{cell['lines'][0]!r}")
            continue
        shown, want = float(m.group(2).replace(",", "")), reference[spec.id]["value"]
        if not math.isclose(shown, want, rel_tol=1e-3, abs_tol=1e-300):
            problems.append(f"{spec.id}：答案行写 {shown:g}，答案表是 {want:g}")
    missing = sorted(a.id for a in answers.chapter_answers(chapter) if a.kind == "value" and a.id not in seen)
    problems += [f"{aid}：解答页上没有它的答案单元" for aid in missing]
    return problems


def test_solutions_are_pages_of_the_site():
    assert SOLUTION_PAGES == ["solutions/ch05_solutions", "solutions/ch06_solutions"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SOLUTION_PAGES)
def test_each_problems_worked_answer_is_folded(states, name):
    state = states[name]
    n_problems = {"solutions/ch05_solutions": 7, "solutions/ch06_solutions": 10}[name]
    assert state["headingsShown"] == n_problems  # 题目本身看得见
    assert state["dropdowns"] >= n_problems - 1
    assert state["dropdownBodiesShown"] == 0, "有解答的文字没有折叠"
    assert state["answerCells"] > 0 and state["answerInputsShown"] == 0, "有答案单元的代码没有折叠"
    assert state["solutionCells"] > 0 and state["solutionCellsShown"] == 0, "有解答单元没有折叠"
    assert state["checkMarks"] >= state["answerCells"]  # 每个自检都显示 ✓
    assert state["afterClick"] == 1  # 点开一个，它就显示出来
    assert state["emptyOutputs"] == [], "有空的输出框（一行输出被拆成了两段，第二段只有换行）"


@pytest.mark.slow
@pytest.mark.parametrize("name", SOLUTION_PAGES)
def test_every_value_answer_is_shown_on_its_own_line(states, name):
    """解答页上每一问的数值答案：答案单元（代码折叠着）下面看得见一行“答案：23.3 µs（p1a = 2.33e-05 s）”"""
    chapter = name.split("/")[1][:4]
    problems = answer_line_problems(states[name]["answerLines"], chapter)
    assert problems == [], "\n".join(problems)


def test_answer_line_check_catches_a_missing_or_wrong_line():
    """不需要浏览器：answer_line_problems 认出少了的、多了的与写错的答案行"""
    from shardlab.exercise import answers
    from shardlab.grade import key
    from shardlab.notebook import answer_line

    ref = key.registry_key()
    good = [
        {"id": a.id, "lines": [answer_line(a.id, ref[a.id]["value"])] if a.kind == "value" else []}
        for a in answers.chapter_answers("ch05")
    ]
    assert answer_line_problems(good, "ch05") == []
    assert len(answer_line_problems([dict(c, lines=[]) for c in good], "ch05")) == 16
    wrong = [dict(c, lines=[answer_line(c["id"], 2 * ref[c["id"]]["value"] + 1)]) if c["lines"] else c for c in good]
    assert len(answer_line_problems(wrong, "ch05")) == 16
    assert answer_line_problems(good[1:], "ch05") == [f"{good[0]['id']}：解答页上没有它的答案单元"]
    ch06 = [
        {"id": a.id, "lines": [answer_line(a.id, ref[a.id]["value"])] if a.kind == "value" else []}
        for a in answers.chapter_answers("ch06")
    ]
    assert answer_line_problems(ch06, "ch06") == []  # ch06-p8a-bytes 这样带后缀的编号也写出小问 (a)


@pytest.mark.slow
@pytest.mark.parametrize("name", EXERCISE_PAGES)
def test_exercise_pages_link_every_problem_to_its_solution_and_hide_unanswered(states, name):
    state = states[name]
    assert state["unanswered"] == 0, "练习页上显示了“未作答”"
    chapter = name.split("/")[1][:4]
    links = {urlparse(u).fragment for u in state["solutionLinks"]}
    solution = states[f"solutions/{chapter}_solutions"]
    assert links == {f"{chapter}-sol-p{k}" for k in range(1, solution["headingsShown"] + 1)}


def test_solution_markup_folds_every_worked_answer():
    """不需要浏览器：解答笔记本里每段解答文字都在折叠块里，每个答案单元与解答单元都带折叠标签"""
    import jupytext

    for md in make_exercises.solution_sources():
        nb = jupytext.read(md)
        seen_problem = False
        for k, cell in enumerate(nb.cells, start=1):
            where = f"{md.name} 第 {k} 个单元"
            tags = cell.metadata.get("tags", [])
            if cell.cell_type == "markdown":
                seen_problem = seen_problem or "## 问题" in cell.source
                blocks = cell.source.split(make_exercises._MD_BEGIN)[1:]
                for block in blocks if seen_problem else []:
                    body = block.split(make_exercises._MD_END)[0].strip()
                    assert body.startswith(":::{admonition}") and ":class: dropdown" in body, where
                    assert body.endswith(":::"), where
            elif "solution" in tags:
                assert "hide-cell" in tags, f"{where}：解答单元要加 hide-cell 标签"
            elif any(t.startswith(("ch05-p", "ch06-p")) for t in tags):
                assert "hide-input" in tags, f"{where}：答案单元要加 hide-input 标签"


@pytest.mark.slow
def test_solution_pages_show_no_generator_markers(site):
    """不需要浏览器：解答页上没有 # STUB、# BEGIN/END SOLUTION、<!-- EXERCISE: --> 这些标记行"""
    import jupytext
    from bs4 import BeautifulSoup

    found = site_pages.generator_markers(site, SOLUTION_PAGES)
    assert found == [], "\n".join(found[:20]) + f"\n……共 {len(found)} 行"
    for md in make_exercises.solution_sources():  # 解答代码本身一行不少
        page = f"solutions/{md.stem}"
        soup = BeautifulSoup((site / f"{page}.html").read_text(encoding="utf-8"), "html.parser")
        shown = {line.strip() for pre in soup.find_all("pre") for line in pre.get_text().splitlines()}
        cells = [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]
        code = [line.strip() for c in cells for line in c.splitlines() if line.strip()]
        missing = [line for line in code if line not in shown and not make_exercises.is_marker(line)]
        assert missing == [] and len(code) > 100, (page, missing[:5])


def test_marker_lines_are_removed_from_solution_cells_only():
    """site_cells 删掉代码单元与原始 HTML 里的标记行，解答代码原样留下；练习照旧由带标记的源文件生成"""
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    code = "# STUB: p4 = ...  # 比值\n# BEGIN SOLUTION\np4 = 8 * 2  # STUB: 不是标记\n    # END SOLUTION\ncheck(p4)"
    doc = new_document("<test>", get_default_settings(Parser))
    cell = nodes.container(nb_element="cell_code")
    source = nodes.container(nb_element="cell_code_source")
    source += nodes.literal_block(code, code)
    cell += source
    fence = nodes.literal_block("# BEGIN SOLUTION", "# BEGIN SOLUTION")  # Markdown 里的代码块（讲标记的例子）不动
    doc += [
        nodes.raw("", "<!-- BEGIN SOLUTION -->\n", format="html"),
        cell,
        nodes.raw("", "<!-- END SOLUTION -->\n<!-- EXERCISE: # 练习 -->", format="html"),
        nodes.raw("", "<b>留下</b>\n<!-- END SOLUTION -->", format="html"),
        fence,
    ]
    assert site_cells.strip_solution_markers(doc) == 4
    assert doc.next_node(nodes.literal_block).astext() == "p4 = 8 * 2  # STUB: 不是标记\ncheck(p4)"
    assert [r.astext() for r in doc.findall(nodes.raw)] == ["<b>留下</b>"]
    assert fence.astext() == "# BEGIN SOLUTION"
    assert site_cells.strip_solution_markers(doc) == 0
    # 每个解答单元：去掉标记后的代码 = 源文件去掉标记行；生成的练习仍与 exercises/ 一致
    import jupytext

    for md in make_exercises.solution_sources():
        for cell in jupytext.read(md).cells:
            kept = [line for line in cell.source.splitlines() if not make_exercises.is_marker(line)]
            assert make_exercises.without_markers(cell.source) == "\n".join(kept).strip("\n")
        assert make_exercises.render(md) == make_exercises.exercise_path(md).read_text(encoding="utf-8")
