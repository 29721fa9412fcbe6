"""tools/site_pages.py 的每项检查都能失败：在植入了问题的小网站上报告它，在改好的版本上不报告"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_pages  # noqa: E402

from shardlab import plots  # noqa: E402


def _page(site: Path, name: str, body: str) -> None:
    path = site / f"{name}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<html><body><article class="bd-article">{body}</article></body></html>', encoding="utf-8")


def _glue_output(name: str, text: str) -> dict:
    return {
        "output_type": "display_data",
        "data": {"application/papermill.record/text/plain": text},
        "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}},
    }


def test_stray_glue_output_is_reported(tmp_path):
    site = tmp_path / "_build" / "html"
    site.mkdir(parents=True)
    executed = tmp_path / "_build" / "jupyter_execute" / "book"
    executed.mkdir(parents=True)
    cells = [
        # 旧的 gtext：glue 之后又 return text，单元最后一行的返回值显示成一个输出框
        {"cell_type": "code", "outputs": [_glue_output("ch05-w", "'90 GB/s'"), _result("'90 GB/s'")]},
        # glue_text 返回 None：只有 glue 的（隐藏的）输出
        {"cell_type": "code", "outputs": [_glue_output("ch05-t", "'2.84 ms'")]},
        # 正常的计算结果不算
        {"cell_type": "code", "outputs": [_result("42")]},
    ]
    (executed / "ch.ipynb").write_text(json.dumps({"cells": cells}), encoding="utf-8")
    found = site_pages.stray_glue_outputs(site)
    assert len(found) == 1 and "90 GB/s" in found[0] and "ch05-w" in found[0]


def _result(text: str) -> dict:
    return {"output_type": "execute_result", "data": {"text/plain": text}, "metadata": {}, "execution_count": 1}


def test_cjk_spaces_anchors_and_long_lines(tmp_path):
    long = "x = " + "1 + " * 30 + "1"
    _page(
        tmp_path,
        "bad",
        '<section id="id12"><h2>环形算法</h2><p>时间。 下一章</p><p>一个数组 AllGather 之后</p>'
        f'<div class="cell_input"><pre>{long}</pre></div>'
        f'<details><div class="cell_input"><pre>{long}</pre></div></details></section>',
    )
    _page(
        tmp_path,
        "good",
        '<section id="环形算法"><h2>环形算法</h2><p>时间。下一章</p>'
        # 数学式与代码里的空格不算：数学式换成 X，代码整块跳过
        '<p>公式<span class="math notranslate nohighlight">\\(\\text{单向。 带宽}\\)</span>在这</p>'
        '<div class="highlight"><pre>中文。 中文</pre></div><div class="cell_input"><p>代码。 单元</p></div></section>',
    )
    spaces = site_pages.cjk_spaces(tmp_path, ["bad", "good"])
    assert len(spaces) == 1 and "时间。 下一章" in spaces[0]
    assert [m.split(":")[0] for m in site_pages.auto_section_ids(tmp_path, ["bad", "good"])] == ["bad"]
    lines = site_pages.long_code_lines(tmp_path, ["bad", "good"])
    assert len(lines) == 1 and "bad" in lines[0]


def _figure_png(path: Path, nrows: int, ncols: int, color: str) -> None:
    fig, axes = plots.figure(nrows, ncols)
    for ax in getattr(axes, "flat", [axes]):
        ax.plot([0, 1], color=plots.COLORS[color])
    path.write_bytes(plots.figure_png(fig, close=True))


def test_captions_are_checked_against_the_figure(tmp_path):
    (tmp_path / "_images").mkdir()
    _figure_png(tmp_path / "_images" / "stacked.png", 2, 1, "orange")
    _figure_png(tmp_path / "_images" / "side.png", 1, 2, "orange")

    def fig(src, caption):
        return f'<figure id="f-{src}"><img src="_images/{src}.png" alt="x"><figcaption><p>{caption}</p></figcaption></figure>'

    _page(
        tmp_path,
        "p",
        fig("stacked", "时间（左）与总线带宽（右）；红色的块")  # 上下排列的两幅图，橙色说成红色
        + fig("side", "时间（左，橙色）与带宽（右）"),
    )
    problems, checked = site_pages.caption_problems(tmp_path, ["p"])
    assert checked == 2
    assert len(problems) == 2, problems
    assert any("左/右" in m and "2 行 1 列" in m for m in problems)
    assert any("红色" in m and "orange" in m for m in problems)
    assert site_pages.colour_words("天蓝色的线和蓝色的线") == [("天蓝", ("sky",)), ("蓝", ("blue", "sky"))]
    facts = site_pages.figure_facts(tmp_path / "_images" / "side.png")
    assert facts["shardlab:layout"] == "1x2" and int(facts["width-px"]) > 700


def test_generator_markers_are_reported(tmp_path):
    code = (
        '<div class="highlight"><pre><span class="c1"># STUB: p1a = ...  # 时间（秒）</span>\n'
        '<span class="c1"># BEGIN SOLUTION</span>\n<span class="n">p1a</span> = 1\n'
        '    <span class="c1"># END SOLUTION</span>\n</pre></div>'
    )
    _page(tmp_path, "bad", f"<!-- BEGIN SOLUTION -->\n<h1>解答</h1>\n<!-- EXERCISE: # 练习 -->\n{code}")
    _page(
        tmp_path,
        "good",
        '<h1>解答</h1><div class="highlight"><pre><span class="n">p1a</span> = 1  # STUB 不算\n</pre></div>',
    )
    found = site_pages.generator_markers(tmp_path, ["bad", "good"])
    assert [m.split(": ", 1)[1] for m in found] == [
        "# STUB: p1a = ...  # 时间（秒）",
        "# BEGIN SOLUTION",
        "# END SOLUTION",
        "<!-- BEGIN SOLUTION -->",
        "<!-- EXERCISE: # 练习 -->",
    ], found
