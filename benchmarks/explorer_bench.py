"""交互探索器的基准：冷启动、每次重算的时间，以及网站因此增加的大小

    .venv/bin/python benchmarks/explorer_bench.py [--repeat 3] [--updates 20] [--site _build/html]

不给 --site 时在临时目录里放一页（两个探索器）和构建时复制进网站的同一批文件（tools/site_explorer.py），
由本地服务器提供；给了 --site 就量已构建网站的 _static/pyodide/ 大小（页面仍用临时的那一页）。
每次冷启动用新的浏览器（没有 HTTP 缓存）：从点“启动”到第一次结果写进 data-state；
重算：依次改动控件，从派发 input 事件到 data-state 改变（浏览器里的墙钟），另报 Python 调用本身（data-ms）。
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lib"))

from tools import site_check, site_explorer  # noqa: E402

NBYTES = [str(3 + k * 0.25) for k in range(25)]
CHIPS = ["h100", "v5p", "cpu", "v5e"]


def make_site(dest: Path) -> Path:
    site_explorer.copy_into(dest / "_static" / site_explorer.STATIC_DIR)
    for name in ("shardlab-explorer.js", "shardlab-explorer.css"):
        shutil.copy2(ROOT / "book" / "_static" / name, dest / "_static" / name)
    widgets = "".join(site_explorer.widget_html(kind) for kind in site_explorer.KINDS)
    (dest / "index.html").write_text(
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        '<link rel="stylesheet" href="_static/shardlab-explorer.css">'
        f'<script src="_static/shardlab-explorer.js" defer></script></head><body>{widgets}</body></html>',
        encoding="utf-8",
    )
    return dest


def site_growth(site: Path) -> dict[str, int]:
    static = site / "_static"
    sizes = {p.name: p.stat().st_size for p in sorted((static / site_explorer.STATIC_DIR).iterdir())}
    for name in ("shardlab-explorer.js", "shardlab-explorer.css"):
        path = static / name if (static / name).exists() else ROOT / "book" / "_static" / name
        sizes[name] = path.stat().st_size
    return sizes


_UPDATE_JS = """async ([kind, name, value]) => {
  const root = document.querySelector(`.shardlab-explorer[data-kind=${kind}]`);
  const control = root.querySelector(`[name="${name}"]`);
  const before = root.dataset.state;
  const t0 = performance.now();
  control.value = value;
  control.dispatchEvent(new Event("input", {bubbles: true}));
  while (root.dataset.state === before) await new Promise((r) => setTimeout(r, 0));
  return [performance.now() - t0, Number(root.dataset.ms)];
}"""


def run(site: Path, repeat: int, updates: int) -> dict:
    from playwright.sync_api import sync_playwright

    chromium = site_check.find_chromium()
    if chromium is None:
        raise SystemExit("没有找到 Chromium（Debian：apt-get install chromium；或设 CHROMIUM=/路径）")
    cold, wall, call = [], [], []
    with site_check.SiteServer(site) as server, sync_playwright() as pw:
        for _ in range(repeat):
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(server.base + "index.html", wait_until="load")
                t0 = time.perf_counter()
                page.click(".shardlab-explorer[data-kind=collectives] .shardlab-explorer-button")
                page.wait_for_function(
                    "document.querySelector('.shardlab-explorer[data-kind=collectives]').dataset.state !== ''",
                    timeout=180_000,
                )
                cold.append(time.perf_counter() - t0)
                page.click(".shardlab-explorer[data-kind=sharding] .shardlab-explorer-button")
                page.wait_for_function(
                    "document.querySelector('.shardlab-explorer[data-kind=sharding]').dataset.state !== ''"
                )
                steps = [("collectives", "nbytes", NBYTES[k % len(NBYTES)]) for k in range(updates)]
                steps += [("collectives", "chip", CHIPS[k % len(CHIPS)]) for k in range(updates // 4)]
                steps += [("sharding", "B", str(4 + k % 14)) for k in range(updates // 2)]
                for step in steps:
                    w, c = page.evaluate(_UPDATE_JS, list(step))
                    wall.append((step[0], w))
                    call.append((step[0], c))
            finally:
                browser.close()
    return {"cold": cold, "wall": wall, "call": call}


def _ms(values) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"中位数 {statistics.median(values):.1f} ms，p90 {p90:.1f} ms，最大 {values[-1]:.1f} ms（{len(values)} 次）"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="冷启动次数（每次新的浏览器）")
    parser.add_argument("--updates", type=int, default=20, help="每次冷启动后改动 nbytes 的次数")
    parser.add_argument("--site", type=Path, help="已构建的网站（_build/html），只用来量大小")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = make_site(Path(tmp))
        sizes = site_growth(args.site or site)
        total = sum(sizes.values())
        print(f"网站增加：{total / 2**20:.2f} MiB（{total} 字节；上限 16 MiB）")
        for name, size in sizes.items():
            print(f"  {name:24s} {size / 2**10:10.1f} KiB")
        result = run(site, args.repeat, args.updates)
    print(f"冷启动（点“启动”到第一次结果）：{', '.join(f'{t:.2f} s' for t in result['cold'])}")
    for kind in site_explorer.KINDS:
        print(f"{kind} 重算，浏览器墙钟：{_ms([w for k, w in result['wall'] if k == kind])}")
        print(f"{kind} 重算，其中 Python 调用：{_ms([c for k, c in result['call'] if k == kind])}")
    return 0 if total <= 16 * 2**20 else 1


if __name__ == "__main__":
    sys.exit(main())
