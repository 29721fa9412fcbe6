"""笔记本配对：MyST `.md`（源文件）⇄ 旁边的 `.ipynb`（供 Colab 打开，不含输出）

用法：
    python tools/nbsync.py            # 同步全部配对（make sync）
    python tools/nbsync.py --check    # 只检查，不一致时退出码 1（测试与 pre-commit 用）
    python tools/nbsync.py book/x.md  # 只处理指定文件（.md 或 .ipynb 均可）

规则：`.md` 是源。只有当 `.ipynb` 比 `.md` 新、并且两者的单元（类型、源码、标签等元数据）不同时，
才认为有人在 Jupyter / Colab 里改了 `.ipynb`，先把改动写回 `.md`；然后总是从 `.md` 重新生成
不含输出的 `.ipynb`。笔记本源文件是 book/、solutions/、exercises/ 下带 jupytext 头的 `.md`。

这里自己写而不直接用 `jupytext --sync`：`--sync` 会把 Jupyter 里保存的输出留在 `.ipynb` 里，
而我们要求提交的 `.ipynb` 永远没有输出，且生成结果逐字节确定（测试按字节比较）。
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIRS = ("book", "solutions", "exercises")
MD_FORMAT = "md:myst"


def is_notebook_source(md: Path) -> bool:
    """带 jupytext 头（front matter 里有 jupytext: 与 kernelspec:）的 .md 才是笔记本"""
    text = md.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return False
    header = text.split("\n---", 1)[0]
    return "jupytext:" in header and "kernelspec:" in header


def notebook_sources(root: Path = ROOT) -> list[Path]:
    """全部笔记本源文件，按路径排序"""
    found = []
    for d in NOTEBOOK_DIRS:
        found.extend(p for p in (root / d).rglob("*.md") if is_notebook_source(p))
    return sorted(found)


def _without_volatile_metadata(nb):
    """去掉随 jupytext 版本变化的元数据，避免无意义的 diff"""
    rep = nb.metadata.get("jupytext", {}).get("text_representation", {})
    rep.pop("jupytext_version", None)
    return nb


def _clean(nb):
    """清掉输出与执行计数"""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.pop("id", None)
    return nb


def expected_ipynb(md: Path) -> str:
    """由 .md 生成的 .ipynb 全文（无输出、确定性）"""
    nb = _without_volatile_metadata(jupytext.read(md, fmt=MD_FORMAT))
    nb = _clean(nb)
    nb.nbformat, nb.nbformat_minor = 4, 4  # 4.4：没有随机的单元 id，生成结果确定
    return nbformat.writes(nb, version=4) + "\n"


def _cells_signature(nb) -> list[tuple]:
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", []))) for c in nb.cells]


def _ipynb_edited(md: Path, ipynb: Path) -> bool:
    """.ipynb 比 .md 新，且单元内容不同：视为在 Jupyter 里被编辑过"""
    if not ipynb.exists() or ipynb.stat().st_mtime <= md.stat().st_mtime:
        return False
    return _cells_signature(jupytext.read(ipynb)) != _cells_signature(jupytext.read(md, fmt=MD_FORMAT))


def sync(md: Path) -> list[str]:
    """同步一个配对，返回做了什么（可能为空）"""
    done = []
    ipynb = md.with_suffix(".ipynb")
    if _ipynb_edited(md, ipynb):
        edited = jupytext.read(ipynb)
        edited.metadata = jupytext.read(md, fmt=MD_FORMAT).metadata  # 保留 .md 的头
        jupytext.write(edited, md, fmt=MD_FORMAT)
        done.append(f"{ipynb.relative_to(ROOT)} → {md.relative_to(ROOT)}（.ipynb 较新，改动写回 .md）")
    text = expected_ipynb(md)
    if not ipynb.exists() or ipynb.read_text(encoding="utf-8") != text:
        ipynb.write_text(text, encoding="utf-8")
        done.append(f"{md.relative_to(ROOT)} → {ipynb.relative_to(ROOT)}")
    return done


def check(md: Path) -> list[str]:
    """检查一个配对，返回问题列表（空表示一致）"""
    ipynb = md.with_suffix(".ipynb")
    rel = ipynb.relative_to(ROOT)
    if not ipynb.exists():
        return [f"{rel} 不存在：运行 make sync"]
    problems = []
    nb = nbformat.reads(ipynb.read_text(encoding="utf-8"), as_version=4)
    if any(c.cell_type == "code" and (c.get("outputs") or c.get("execution_count")) for c in nb.cells):
        problems.append(f"{rel} 含有输出（outputs）：提交的 .ipynb 必须不含输出，运行 make sync")
    if ipynb.read_text(encoding="utf-8") != expected_ipynb(md):
        problems.append(f"{rel} 与 {md.relative_to(ROOT)} 不同步（out of sync）：运行 make sync")
    return problems


def orphan_ipynbs(root: Path = ROOT) -> list[Path]:
    """没有 .md 源文件的 .ipynb"""
    sources = {p.with_suffix(".ipynb") for p in notebook_sources(root)}
    return sorted(p for d in NOTEBOOK_DIRS for p in (root / d).rglob("*.ipynb") if p not in sources)


def _resolve(paths: list[str]) -> list[Path]:
    if not paths:
        return notebook_sources()
    mds = []
    for p in paths:
        md = Path(p).resolve().with_suffix(".md")
        if not md.exists() or not is_notebook_source(md):
            raise SystemExit(f"{p}：找不到对应的笔记本源文件 {md.name}（带 jupytext 头的 .md）")
        mds.append(md)
    return mds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="只检查，不修改")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    mds = _resolve(args.paths)
    if args.check:
        problems = [msg for md in mds for msg in check(md)]
        problems += [f"{p.relative_to(ROOT)} 没有对应的 .md 源文件" for p in orphan_ipynbs()]
        print("\n".join(problems) or f"{len(mds)} 个笔记本配对一致")
        return 1 if problems else 0
    for md in mds:
        for line in sync(md):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
