"""库的结构规则：导入契约（import-linter，配置在 pyproject.toml）与几条它表达不了的规则

每条契约都在一份植入了违规的库副本上检查一次，证明它真的会失败。
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "shardlab"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# 允许放在函数里的导入：可选依赖，或与 JAX 版本有关的退路。键是模块（相对 lib/shardlab 的路径），值是 {被导入的顶层包: 原因}
LAZY_IMPORTS_ALLOWED = {
    "runtime.py": {"jax": "jax < 0.7 没有 jax.shard_map，只在那时才导入 jax.experimental.shard_map"},
    "notebook.py": {
        "myst_nb": "可选：只有构建网站时才有 myst-nb，Colab 上没有",
        "IPython": "可选：只在笔记本里显示时需要",
    },
    "plots.py": {
        "matplotlib": "只在画图时导入：导入 shardlab.plots 不启动 matplotlib 的后端",
        "cycler": "matplotlib 的依赖，随它一起按需导入",
    },
}


def _lint_imports(config: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        cwd=pythonpath,
        timeout=300,
    )


def test_import_contracts_hold():
    proc = _lint_imports(ROOT / "pyproject.toml", ROOT / "lib")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "broken" in proc.stdout and " 0 broken" in proc.stdout


# 每条契约一个植入的违规：(契约 id, 文件, 追加的一行)
PLANTED = [
    ("core-pure-python", "cost.py", "import jax  # planted"),
    ("grade-no-jax", "grade/__init__.py", "import jax  # planted"),
    ("layers", "collectives.py", "from shardlab import plots  # planted"),
    ("exercise-layers", "exercise/problems.py", "from shardlab.exercise import judge  # planted"),
    ("no-cycles", "bench/model.py", "from shardlab.bench import cli  # planted"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("contract", "target", "line"), PLANTED, ids=[p[0] for p in PLANTED])
def test_each_contract_fails_on_a_planted_violation(tmp_path, contract, target, line):
    copy = tmp_path / "lib" / "shardlab"
    shutil.copytree(LIB, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert (copy / target).exists(), f"植入违规的文件 {target} 不存在：库的结构变了，请更新 PLANTED"
    with open(copy / target, "a", encoding="utf-8") as f:
        f.write("\n" + line + "\n")
    config = tmp_path / "pyproject.toml"
    shutil.copy(ROOT / "pyproject.toml", config)
    proc = _lint_imports(config, tmp_path / "lib")
    assert proc.returncode != 0, proc.stdout[-3000:]
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    names = _contract_names()
    assert names[contract] in broken, proc.stdout[-3000:]


def _contract_names() -> dict[str, str]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c["name"] for c in config["tool"]["importlinter"]["contracts"]}


def test_every_module_has_a_layer():
    """新模块必须在分层契约里有位置（否则契约对它不起作用）"""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    placed = {name.strip() for layer in layers["layers"] for name in re.split(r"[|:]", layer)}
    top_level = {p.stem for p in LIB.glob("*.py") if p.stem != "__init__"}
    top_level |= {p.name for p in LIB.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert top_level - placed == set(), f"这些模块不在 pyproject.toml 的分层契约里：{sorted(top_level - placed)}"


def _function_level_imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import):
                    yield sub.lineno, [a.name for a in sub.names]
                elif isinstance(sub, ast.ImportFrom) and sub.level == 0:
                    yield sub.lineno, [sub.module or ""]


def test_no_import_inside_a_function_except_optional_dependencies():
    found = []
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB).as_posix()
        allowed = LAZY_IMPORTS_ALLOWED.get(rel, {})
        for lineno, modules in _function_level_imports(path):
            for module in modules:
                if module.split(".")[0] not in allowed:
                    found.append(f"{rel}:{lineno} import {module}")
    assert found == [], "函数里的导入（放到模块顶部，或在 LAZY_IMPORTS_ALLOWED 里写明原因）：\n" + "\n".join(found)


def test_library_never_reaches_into_the_repository():
    """装好的 shardlab 里没有 tools/、solutions/：库不能导入 tools，也不能从 __file__ 往上算仓库的路径"""
    bad = []
    for path in sorted(LIB.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(LIB).as_posix()
        for pattern in (r"^\s*(from|import)\s+tools\b", r"parents\[\s*[1-9]", r"\.parent\.parent\.parent"):
            for m in re.finditer(pattern, text, re.MULTILINE):
                bad.append(f"{rel}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0).strip()}")
    assert bad == [], "\n".join(bad)


_ALIAS = re.compile(
    r"^\s*(?:from\s+shardlab(?:\.[\w.]+)?\s+import\s+[\w, ]*\bas\b|import\s+shardlab[\w.]*\s+as\b)", re.M
)


def _python_sources_outside_lib():
    for folder in ("book", "solutions", "exercises", "tests", "tools", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".md"} and "fixtures" not in path.parts and path.name != "README.md":
                yield path


def test_one_name_per_module_everywhere():
    """章节、解答、练习与测试里，shardlab 的模块都用它自己的名字导入（不起别名），读者在各处看到同一个名字"""
    bad = []
    for path in _python_sources_outside_lib():
        for m in _ALIAS.finditer(path.read_text(encoding="utf-8")):
            line = path.read_text(encoding="utf-8")[: m.start()].count("\n") + 1
            bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0).strip()}")
    assert bad == [], "给 shardlab 模块起了别名：\n" + "\n".join(bad)
