"""网站自带的资源（Sphinx 扩展 + 命令行）：MathJax 放进网站本身，页面脚本不重复

一、MathJax：构建时从 npm 安装锁定的版本，只把用得到的部分复制进网站。

版本锁定在仓库根目录的 ``package.json`` / ``package-lock.json``（mathjax 3.2.2，Apache-2.0；
同一次安装也装上交互探索器用的 pyodide，由 ``tools/site_explorer.py`` 复制进网站）；
``node_modules/`` 不提交。网站里只放这些（约 2 MB）：

- ``_static/mathjax/tex-chtml.js``：TeX 输入 + CHTML 输出（含菜单与 assistive MathML）
- ``_static/mathjax/output/chtml/fonts/woff-v2/``：CHTML 字体（MathJax 按自身 URL 的相对路径加载）
- ``_static/mathjax/input/tex/extensions/``：``\\boldsymbol``、``\\cancel`` 等按需自动加载的 TeX 扩展
- ``_static/mathjax/LICENSE``

两种用法：

1. Sphinx 扩展（``_config.yml`` 的 ``sphinx.local_extensions``）：``builder-inited`` 时确认锁定版本已安装
   （没有就运行 ``npm ci``），构建成功后把上面的文件复制进 ``<outdir>/_static/``；
   ``mathjax_path`` 必须是站内相对路径（``_config.yml`` 里设为 ``mathjax/tex-chtml.js``），否则构建失败。
2. 命令行 ``python tools/site_assets.py``（``make mathjax`` 调用）：只安装，不构建。

``npm ci`` 需要 Node.js 的 npm 与 npm 仓库；并行的构建（``pytest -n 2``）用文件锁排队，不会同时安装。

二、去掉重复的内联脚本：sphinx-thebe 0.3.1 在读文档前才 ``add_js_file(None, body=...)``，
Sphinx 7.4 把它既记进注册表（文件名 ``''``）又记进构建器（文件名 ``None``），页面上出现两段
``const THEBE_JS_URL = ...``，浏览器在每一页报 “Identifier 'THEBE_JS_URL' has already been declared”。
``html-page-context`` 时按（文件名, 属性）去重。thebe 本身没有启用（``launch_buttons`` 里没有 thebe），
它的库只在点击启动按钮时才从 unpkg 加载，所以网站不会请求站外资源。

三、根目录的跳转页（``index.html``，sphinx-external-toc 写的一行 ``<meta>``）加上与其他页面相同的图标链接：
否则浏览器打开它时去要 ``/favicon.ico``，得到 404。
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "node_modules" / "mathjax"
LOCK_FILE = ROOT / "build" / ".mathjax-install.lock"
ENTRY = "tex-chtml.js"
PARTS = (ENTRY, "output/chtml/fonts/woff-v2", "input/tex/extensions")
NPM_CI = ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]


PINNED = ("mathjax", "pyodide")  # 构建时要装好的 npm 包


def pinned_version(root: Path = ROOT, package: str = "mathjax") -> str:
    """package.json 里锁定的版本（必须是精确版本号）"""
    version = json.loads((root / "package.json").read_text(encoding="utf-8"))["dependencies"][package]
    if not version[:1].isdigit():
        raise RuntimeError(f"package.json 里的 {package} 必须锁定精确版本，而不是 {version!r}")
    return version


def installed_version(package_dir: Path = PACKAGE_DIR) -> str | None:
    try:
        return json.loads((package_dir / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return None


class _InstallLock:
    """同一台机器上的并行构建排队安装、复制（npm ci 会先删掉 node_modules）"""

    def __enter__(self):
        LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(LOCK_FILE, "w")  # noqa: SIM115
        fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.file.close()


def _all_pinned() -> bool:
    return all(installed_version(ROOT / "node_modules" / p) == pinned_version(package=p) for p in PINNED)


def ensure_installed() -> Path:
    """确认 node_modules 里是锁定版本的 MathJax 与 Pyodide，否则 npm ci；返回 MathJax 的 es5 目录"""
    if not _all_pinned():
        with _InstallLock():
            if not _all_pinned():  # 等锁期间另一个构建可能已经装好
                if shutil.which("npm") is None:
                    raise RuntimeError(
                        "构建网站需要 npm（Node.js）来安装锁定版本的 MathJax 与 Pyodide；请先安装 Node.js"
                    )
                proc = subprocess.run(NPM_CI, cwd=ROOT, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"npm ci 安装锁定的前端资源失败：\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
                for p in PINNED:
                    if installed_version(ROOT / "node_modules" / p) != pinned_version(package=p):
                        raise RuntimeError(f"npm ci 之后 node_modules/{p} 仍不是 {pinned_version(package=p)}")
    es5 = PACKAGE_DIR / "es5"
    missing = [p for p in PARTS if not (es5 / p).exists()]
    if missing:
        raise RuntimeError(f"node_modules/mathjax 不完整，缺少 {missing}；删除 node_modules 后重新构建")
    return es5


def copy_into(dest: Path) -> None:
    """把网站需要的 MathJax 文件复制到 dest（dest/tex-chtml.js 等）"""
    es5 = ensure_installed()
    dest.mkdir(parents=True, exist_ok=True)
    with _InstallLock():
        for part in PARTS:
            src = es5 / part
            if src.is_dir():
                shutil.copytree(src, dest / part, dirs_exist_ok=True)
            else:
                (dest / part).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / part)
        shutil.copy2(PACKAGE_DIR / "LICENSE", dest / "LICENSE")


# ---- Sphinx 扩展 ----


def _local_target(app) -> PurePosixPath:
    path = app.config.mathjax_path
    if "://" in path or path.startswith("/"):
        from sphinx.errors import ConfigError

        raise ConfigError(
            f"mathjax_path = {path!r} 会从网站外面加载 MathJax；请设为站内路径 mathjax/{ENTRY}（见 tools/site_assets.py）"
        )
    target = PurePosixPath(path)
    if target.name != ENTRY:
        from sphinx.errors import ConfigError

        raise ConfigError(f"mathjax_path 必须以 {ENTRY} 结尾（网站只带这一个 MathJax 组件），而不是 {path!r}")
    return target


def _builder_inited(app) -> None:
    if app.builder.format != "html":
        return
    _local_target(app)
    try:
        ensure_installed()
    except RuntimeError as err:
        from sphinx.errors import ExtensionError

        raise ExtensionError(str(err)) from err


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = _local_target(app)
    copy_into(Path(app.outdir) / "_static" / target.parent)


REDIRECT_MARK = '<meta http-equiv="Refresh"'


def _icon_on_redirect(app, exception) -> None:
    """网站根目录的 index.html 是 sphinx-external-toc 写的一行跳转页（没有 <head>、没有图标）：浏览器打开它时
    去要 /favicon.ico，得到 404。给它加上与其他页面相同的图标链接（html_favicon 由 Sphinx 复制进 _static/）"""
    favicon = app.config.html_favicon
    if exception is not None or app.builder.format != "html" or not favicon:
        return
    index = Path(app.outdir) / "index.html"
    if not index.exists():
        return
    text = index.read_text(encoding="utf-8")
    link = f'<link rel="icon" href="_static/{PurePosixPath(favicon).name}"/>'
    if text.lstrip().startswith(REDIRECT_MARK) and 'rel="icon"' not in text:
        index.write_text(text.rstrip("\n") + "\n" + link + "\n", encoding="utf-8")


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    files = context.get("script_files")
    if not files:
        return
    seen, unique = set(), []
    for js in files:
        key = (getattr(js, "filename", str(js)) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("build-finished", _build_finished)
    app.connect("html-page-context", _dedupe_scripts)
    app.connect("build-finished", _icon_on_redirect, priority=900)  # 在 sphinx-external-toc 写出跳转页之后
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    print(f"MathJax {pinned_version()}：{ensure_installed()}", file=sys.stderr)
