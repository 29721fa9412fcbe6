"""一致性检查：笔记本配对、第一个代码单元、目录、依赖锁定"""

import re
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import course_config, nbsync, site_check  # noqa: E402

NOTEBOOKS = nbsync.notebook_sources()
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]
CONFIG = course_config.load_config()


def test_there_are_notebooks():
    assert any(p.parts[-2] == "book" for p in NOTEBOOKS)


@pytest.mark.parametrize("md", NOTEBOOKS, ids=IDS)
def test_pair_in_sync_and_without_outputs(md):
    assert nbsync.check(md) == []


def test_no_orphan_ipynb():
    assert nbsync.orphan_ipynbs() == []


def test_check_detects_outputs_and_drift(tmp_path, monkeypatch):
    """检查本身能失败：输出、内容漂移、缺少配对都会被报告"""
    src = NOTEBOOKS[0]
    book = tmp_path / "book"
    book.mkdir()
    md = book / src.name
    md.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(nbsync, "ROOT", tmp_path)
    assert any("不存在" in m for m in nbsync.check(md))
    nbsync.sync(md)
    assert nbsync.check(md) == []
    ipynb = md.with_suffix(".ipynb")
    nb = jupytext.read(ipynb)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    code.execution_count = 1
    jupytext.write(nb, ipynb)
    problems = nbsync.check(md)
    assert any("含有输出" in m for m in problems)
    nbsync.sync(md)
    md.write_text(md.read_text(encoding="utf-8") + "\n再加一句。\n", encoding="utf-8")
    assert any("不同步" in m for m in nbsync.check(md))


def test_sync_carries_jupyter_edits_back_to_md(tmp_path, monkeypatch):
    """在 Jupyter 里改了 .ipynb（更新的文件）：make sync 把改动写回 .md，再生成无输出的 .ipynb"""
    import os

    (tmp_path / "book").mkdir()
    md = tmp_path / "book" / NOTEBOOKS[0].name
    md.write_text(NOTEBOOKS[0].read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(nbsync, "ROOT", tmp_path)
    nbsync.sync(md)
    ipynb = md.with_suffix(".ipynb")
    nb = jupytext.read(ipynb)
    nb.cells.append(jupytext.read(md).cells[1].copy())
    nb.cells[-1].source = "x_new = 42"
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    jupytext.write(nb, ipynb)
    st = md.stat()
    os.utime(ipynb, (st.st_atime + 10, st.st_mtime + 10))
    nbsync.sync(md)
    assert "x_new = 42" in md.read_text(encoding="utf-8")
    assert nbsync.check(md) == []


@pytest.mark.parametrize("md", NOTEBOOKS, ids=IDS)
def test_first_code_cell_is_the_setup_cell(md):
    nb = jupytext.read(md)
    first = next(c for c in nb.cells if c.cell_type == "code")
    page = str(md.relative_to(ROOT).with_suffix(""))
    want = course_config.setup_cell_lines(CONFIG, devices=page not in course_config.NO_DEVICE_PAGES)
    assert first.source.splitlines()[: len(want)] == want, (
        f"{md.name} 的第一个代码单元必须以 tools/course_config.py 的 setup_cell_lines() 开头"
    )


def test_toc_lists_existing_files_and_every_book_page():
    listed = set(site_check.toc_pages())
    for entry in listed:
        assert (ROOT / f"{entry}.md").exists(), f"_toc.yml 列出的 {entry}.md 不存在"
    pages = {str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "book").glob("*.md")}
    assert pages <= listed, f"book/ 中这些页面不在 _toc.yml 里：{sorted(pages - listed)}"


def test_config_is_chinese_strict_and_excludes_pairs():
    assert CONFIG["sphinx"]["config"]["language"] == "zh_CN"
    assert "**/*.ipynb" in CONFIG["exclude_patterns"]
    assert CONFIG["execute"]["raise_on_error"] is True
    assert CONFIG["repository"]["url"].startswith("https://github.com/")


def test_every_requirement_is_pinned():
    lines = [ln.strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()]
    reqs = [ln for ln in lines if ln and not ln.startswith("#")]
    assert reqs and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.\-+]+", r) for r in reqs), [
        r for r in reqs if "==" not in r
    ]
    names = {r.split("==")[0].lower().replace("_", "-") for r in reqs}
    assert {"jupyter-book", "jax", "jupytext", "nbval", "pytest-xdist", "hypothesis", "rich"} <= names
    assert any(r.startswith("jax==0.10.2") for r in reqs)
    assert any(r.startswith("jupyter-book==1.") for r in reqs)


def _pins(path: Path) -> dict[str, str]:
    """名字（小写，- 与 _ 不分）→ 版本；每一行都必须是 名字==版本"""
    lines = [ln.split("#")[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    reqs = [ln for ln in lines if ln]
    loose = [r for r in reqs if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.\-+]+", r)]
    assert not loose, f"{path.name} 里没有锁定版本的行：{loose}"
    return {r.split("==")[0].lower().replace("_", "-"): r.split("==")[1] for r in reqs}


def test_compat_requirements_pin_colab_jax_and_otherwise_match_the_main_pins():
    """make test-compat 的环境：jax/jaxlib 是 Colab 的 0.7.2，其余与 requirements.txt 相同，装得下课程库声明的全部依赖"""
    main, compat = _pins(ROOT / "requirements.txt"), _pins(ROOT / "requirements-compat.txt")
    assert compat["jax"] == compat["jaxlib"] == "0.7.2"
    differ = {n: (v, main.get(n)) for n, v in compat.items() if n not in ("jax", "jaxlib") and main.get(n) != v}
    assert not differ, f"requirements-compat.txt 与 requirements.txt 的版本不同（兼容环境 → 主环境）：{differ}"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r"^dependencies = \[(.*?)\]", pyproject, re.M | re.S).group(1)
    names = {re.split(r"[<>=!~ ]", d.strip().strip('"'))[0].lower().replace("_", "-") for d in declared.split(",")}
    assert names - {""} <= set(compat), f"课程库的依赖没有全部装进兼容环境：{sorted(names - set(compat) - {''})}"
    assert not {"jupytext", "myst-nb", "jupyter-book"} & set(compat)  # 像 Colab 一样没有构建工具


def test_environment_yml_installs_the_same_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-r requirements.txt" in pip_section
    assert "python=3.11" in env["dependencies"]
