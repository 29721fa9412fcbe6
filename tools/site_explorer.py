"""交互探索器（Sphinx 扩展）：在浏览器里用 Pyodide 运行 shardlab 的纯 Python 核心

章节里写::

    ```{shardlab-explorer} collectives
    ```

（或 ``sharding``）就得到一个 ``<div class="shardlab-explorer">``：控件、“启动”按钮与输出区。
读者点“启动”之前，网页不加载 Pyodide 的任何文件；启动后 ``book/_static/shardlab-explorer.js`` 加载
``_static/pyodide/`` 里的运行时与 ``shardlab-core.zip``，每次改动控件都调用 ``shardlab.explorer``
（与笔记本里调用的是同一份代码），把结果写进元素的 ``data-state``（JSON）再画出来。

构建结束时复制进网站（约 14 MB；读者点“启动”后要下载的字节数由 download_sizes 算出，写在“启动”旁，状态行的进度用同一个总数）：

- ``_static/pyodide/``：锁定版本（package.json）的 pyodide.js / pyodide.mjs、pyodide.asm.mjs（旧版本叫 pyodide.asm.js）、
  pyodide.asm.wasm、python_stdlib.zip、pyodide-lock.json，以及 NOTICE（Pyodide 的 MPL-2.0 与 CPython 的 PSF 许可证）；
- ``_static/pyodide/shardlab-core.zip``：由 lib/shardlab 当场打包的核心模块（CORE_MODULES），只用标准库。
"""

from __future__ import annotations

import html
import io
import json
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYODIDE_DIR = ROOT / "node_modules" / "pyodide"
LICENSES = Path(__file__).resolve().parent / "licenses"
LIB = ROOT / "lib" / "shardlab"
CORE_MODULES = ("units", "names", "hardware", "cost", "sharding", "planner", "explorer")
# 运行时需要的文件；括号里是可以互相替代的名字（不同版本的 Pyodide）
RUNTIME_FILES = (
    ("pyodide.js",),
    ("pyodide.mjs",),
    ("pyodide.asm.mjs", "pyodide.asm.js"),
    ("pyodide.asm.wasm",),
    ("python_stdlib.zip",),
    ("pyodide-lock.json",),
)
STATIC_DIR = "pyodide"
CORE_ZIP = "shardlab-core.zip"
KINDS = ("collectives", "sharding")

CHIPS = (
    ("v5e", "TPU v5e"),
    ("v5p", "TPU v5p"),
    ("v6e", "TPU v6e"),
    ("v4", "TPU v4p"),
    ("h100", "H100"),
    ("h200", "H200"),
    ("b200", "B200"),
    ("gb200", "GB200 NVL72"),
    ("cpu", "CPU（模拟设备）"),
)
COLLECTIVE_MESHES = ("X=16,Y=16", "X=8,Y=16", "X=4,Y=4", "X=4,Y=4,Z=4", "X=8", "X=64")
SHARDING_MESHES = ("Y=4", "Y=8", "X=2,Y=4", "X=4,Y=4")
COLLECTIVES = (
    ("all_gather", "AllGather"),
    ("reduce_scatter", "ReduceScatter"),
    ("all_reduce", "AllReduce"),
    ("all_to_all", "AllToAll"),
)


def pyodide_version() -> str:
    return json.loads((PYODIDE_DIR / "package.json").read_text(encoding="utf-8"))["version"]


def runtime_files(pyodide_dir: Path = PYODIDE_DIR) -> list[Path]:
    """要复制进网站的 Pyodide 文件；缺了就报错"""
    found = []
    for names in RUNTIME_FILES:
        path = next((pyodide_dir / n for n in names if (pyodide_dir / n).is_file()), None)
        if path is None:
            raise RuntimeError(f"node_modules/pyodide 里没有 {' 或 '.join(names)}；删除 node_modules 后重新构建")
        found.append(path)
    return found


# 启动时浏览器下载的文件（pyodide.js 与 NOTICE 不下载）
DOWNLOADED = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)


def download_sizes() -> dict[str, int]:
    """点“启动”后浏览器要下载的每个文件的字节数（构建时由复制进网站的同一批文件算出）；没有 node_modules/pyodide 时为空

    “启动”旁写的总数与状态行的进度（已下载 … / 总数）都用它，所以两处是同一个数。
    """
    try:
        files = runtime_files()
    except RuntimeError:
        return {}
    sizes = {p.name: p.stat().st_size for p in files if p.name in DOWNLOADED}
    return sizes | {CORE_ZIP: len(core_zip())}


def shipped_sizes(dest: Path) -> dict[str, int]:
    """网站里 dest（_static/pyodide）中浏览器会下载的文件的字节数"""
    return {p.name: p.stat().st_size for p in dest.iterdir() if p.name in (*DOWNLOADED, CORE_ZIP)}


def core_zip() -> bytes:
    """把 lib/shardlab 的核心模块打成 zip（固定时间戳，内容相同则字节相同）"""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:

        def add(name: str, text: str) -> None:
            info = zipfile.ZipInfo(f"shardlab/{name}", date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, text)

        add("__init__.py", '"""shardlab 的纯 Python 核心（网页里的交互探索器用）"""\n')
        for mod in CORE_MODULES:
            add(f"{mod}.py", (LIB / f"{mod}.py").read_text(encoding="utf-8"))
    return buf.getvalue()


def notice() -> str:
    version = pyodide_version()
    python = json.loads((PYODIDE_DIR / "pyodide-lock.json").read_text(encoding="utf-8"))["info"]["python"]
    return "\n".join(
        [
            "本目录的第三方软件与许可证",
            "==========================",
            "",
            f"Pyodide {version}（https://github.com/pyodide/pyodide，npm 包 pyodide@{version}）：",
            "pyodide.js、pyodide.mjs、pyodide.asm.*、pyodide-lock.json，Mozilla Public License 2.0（全文见下）。",
            "源码：https://github.com/pyodide/pyodide/tree/" + version,
            "",
            f"CPython {python}（编译进 pyodide.asm.wasm；标准库在 python_stdlib.zip）：",
            "Python Software Foundation License（PSF 许可证；下面的全文取自 CPython 3.11 的 LICENSE，各版本用同一协议）。",
            "",
            "shardlab-core.zip：本课程的 shardlab 核心模块，MIT 许可证（仓库根目录的 LICENSE）。",
            "",
            "",
            (LICENSES / "MPL-2.0.txt").read_text(encoding="utf-8"),
            "",
            "",
            (LICENSES / "CPython-LICENSE.txt").read_text(encoding="utf-8"),
        ]
    )


def copy_into(dest: Path) -> None:
    """把运行时、NOTICE 与 shardlab-core.zip 放进 dest（即 <outdir>/_static/pyodide）"""
    if str(ROOT) not in sys.path:  # 作为 local_extensions 载入时只有 tools/ 在 sys.path 上
        sys.path.insert(0, str(ROOT))
    from tools import site_assets

    site_assets.ensure_installed()
    dest.mkdir(parents=True, exist_ok=True)
    for path in runtime_files():
        shutil.copy2(path, dest / path.name)
    (dest / "NOTICE").write_text(notice(), encoding="utf-8")
    (dest / CORE_ZIP).write_bytes(core_zip())
    shipped, stated = shipped_sizes(dest), download_sizes()
    if shipped != stated:  # 网页上写的下载量必须是网站里的这些文件
        raise RuntimeError(f"网站里的运行时文件 {shipped} 与网页上写的下载量 {stated} 不符")


# ---- 控件 ----


def _select(name: str, label: str, options, selected, data=None) -> str:
    """data：{选项的值: {属性名: 值}}，写成 option 的 data-* 属性（探索器据此禁用算不了的组合）"""
    data = data or {}

    def attrs(v: str) -> str:
        return "".join(f' data-{k}="{html.escape(str(x))}"' for k, x in data.get(v, {}).items())

    opts = "".join(
        f'<option value="{html.escape(v)}"{attrs(v)}{" selected" if v == selected else ""}>{html.escape(t)}</option>'
        for v, t in options
    )
    return f'<label>{label}<select name="{name}" disabled>{opts}</select></label>'


def _range(name: str, label: str, lo, hi, step, value, hint: str) -> str:
    """滑块与它旁边的值：每一格的文字由 shardlab.explorer.range_labels 算好写进 data-labels，启动前就显示当前值"""
    from shardlab import explorer

    labels = explorer.range_labels(name)
    current = labels[round((value - lo) / step)]
    return (
        f'<label>{label}<input type="range" name="{name}" min="{lo}" max="{hi}" step="{step}" value="{value}" '
        f'disabled title="{html.escape(hint)}"><output data-for="{name}" '
        f'data-labels="{html.escape(json.dumps(labels, ensure_ascii=False))}">{html.escape(current)}</output></label>'
    )


def _lib() -> None:
    """作为 Sphinx 扩展载入时 lib/ 未必在 sys.path 上（笔记本的环境里 shardlab 以可编辑方式安装）"""
    lib = str(ROOT / "lib")
    if lib not in sys.path:
        sys.path.insert(0, lib)


def widget_html(kind: str) -> str:
    """一个探索器的 HTML（控件先禁用，启动后由脚本启用）"""
    _lib()
    from shardlab import explorer
    from shardlab.units import fmt_bytes

    if kind == "collectives":
        title = "集合通信的代价：改芯片、网格与大小，看时间和延迟 / 带宽的分界"
        choices = explorer.control_choices([c for c, _ in CHIPS], COLLECTIVE_MESHES)
        why = explorer.control_reasons([c for c, _ in CHIPS], COLLECTIVE_MESHES)
        ok = {
            m: {
                "ok": json.dumps(c, separators=(",", ":")),
                "why": json.dumps(why[m], ensure_ascii=False, separators=(",", ":")),
            }
            for m, c in choices.items()
        }
        controls = [
            _select("chip", "芯片", CHIPS, "v5e"),
            _select("collective", "集合通信", COLLECTIVES, "all_gather"),
            _range("nbytes", "数组大小 V（对数刻度）", 3, 9, 0.05, 6, "1 kB 到 1 GB"),
            _select("mesh", "网格", [(m, m.replace(",", "，")) for m in COLLECTIVE_MESHES], "X=16,Y=16", data=ok),
            _select("axes", "经过的轴", [("X", "X"), ("Y", "Y"), ("X,Y", "X 和 Y")], "X"),
        ]  # fmt: skip
    elif kind == "sharding":
        title = "分片矩阵乘法 In[B, D] · W[D, F]：选分片场景，看规划器的各种做法与时间"
        lo = {name: lo for name, (lo, _) in explorer.SLIDERS.items()}
        hi = {name: hi for name, (_, hi) in explorer.SLIDERS.items()}
        scenarios = [(key, sc.title) for key, sc in explorer.SCENARIOS.items()]
        needs = {key: {"needs": ",".join(explorer.scenario_axes(key))} for key in explorer.SCENARIOS}
        controls = [
            _select("scenario", "分片场景", scenarios, "replicated", data=needs),
            _range("B", "批量 B（词元数）", lo["B"], hi["B"], 1, 16, "2 的幂：16 到 131,072"),
            _range("D", "D（模型维度）", lo["D"], hi["D"], 1, 13, "2 的幂：1,024 到 32,768"),
            _range("F", "F（前馈维度）", lo["F"], hi["F"], 1, 15, "2 的幂：1,024 到 131,072"),
            _select("chip", "芯片", CHIPS, "v5p"),
            _select("mesh", "网格", [(m, m.replace(",", "，")) for m in SHARDING_MESHES], "Y=4"),
        ]
    else:
        raise ValueError(f"未知的探索器 {kind!r}：可选 {', '.join(KINDS)}")
    sizes = download_sizes()
    total = fmt_bytes(sum(sizes.values())) if sizes else ""
    size = f"，约 {total}" if total else ""
    download = html.escape(json.dumps({"files": sizes, "total_text": total}, separators=(",", ":")))
    return (
        f'<div class="shardlab-explorer" data-kind="{kind}" data-state="" data-download="{download}">'
        f'<div class="shardlab-explorer-title">{html.escape(title)}</div>'
        '<div class="shardlab-explorer-start"><button type="button" class="shardlab-explorer-button">'
        '启动交互探索器</button> <span class="shardlab-explorer-status" role="status">'
        f"点“启动”后才在浏览器里加载 Python（Pyodide{size}）：同一页上的探索器共用这一份；"
        "刷新或换到别的页要重新加载（下载的文件通常有浏览器缓存）。加载在后台进行，不影响阅读。</span></div>"
        f'<form class="shardlab-explorer-controls" onsubmit="return false">{"".join(controls)}</form>'
        '<div class="shardlab-explorer-output" aria-live="polite"></div>'
        "</div>"
    )


# ---- Sphinx 扩展 ----


def setup(app):
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class ExplorerDirective(SphinxDirective):
        required_arguments = 1
        has_content = False

        def run(self):
            kind = self.arguments[0].strip()
            if kind not in KINDS:
                raise self.error(f"shardlab-explorer 的参数应是 {' 或 '.join(KINDS)}，而不是 {kind!r}")
            return [nodes.raw("", widget_html(kind), format="html")]

    def build_finished(app, exception) -> None:
        if exception is None and app.builder.format == "html":
            copy_into(Path(app.outdir) / "_static" / STATIC_DIR)

    app.add_directive("shardlab-explorer", ExplorerDirective)
    app.add_js_file("shardlab-explorer.js", defer="defer")
    app.add_css_file("shardlab-explorer.css")
    app.connect("build-finished", build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
