"""播放器在浏览器里真正画出来的样子（Chromium 跑播放器自带的 JavaScript，量 SVG 里的矩形）

- 每一步在路上的块互不重叠（双向线上向左、向右的块不能画在同一个位置，否则一个方向的块看不见）；
- 设备在第 k+1 步新得到（或新加上一份部分和）的每一块，第 k 步都画在路上：在这台设备与一个邻居之间、
  同样的颜色（即同一个块；规约散射的部分和在路上只标块名）。

Chromium 与 playwright 从哪里来见 conftest.py 的 chromium。
"""

import pytest

from shardlab import animate

# 每一步：设备框（rx=5）、设备里的块（无描边）、路上的块（描边 0.6）
_MEASURE = r"""
(p) => {
  const out = [];
  const next = p.querySelector(".sl-next");
  for (let s = 0; s <= Number(p.dataset.steps); s++) {
    out.push(Array.from(p.querySelectorAll(".sl-svg svg")).map(svg => {
      const box = r => { const b = r.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
      const label = r => (r.parentNode.tagName === "g" ? r.parentNode.querySelector("text")
                          : r.nextElementSibling).textContent;
      const devices = Array.from(svg.querySelectorAll("rect[rx='5']")).map(r => ({
        box: box(r),
        chips: Array.from(svg.querySelectorAll("g rect[fill-opacity]"))
          .filter(c => { const b = box(c), d = box(r); return b[0] >= d[0] && b[2] <= d[2] && b[1] >= d[1] && b[3] <= d[3]; })
          .map(c => [c.getAttribute("fill"), label(c)])}));
      const flying = Array.from(svg.querySelectorAll("rect[stroke-width='0.6']"))
        .map(r => ({box: box(r), fill: r.getAttribute("fill"), text: label(r)}));
      return {devices, flying};
    }));
    next.click();
  }
  return out;
}
"""


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5


def _centre(b):
    return ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)


def _between(p, a, b) -> bool:
    """点 p 落在以 a、b 两个设备中心连线为直径的圆里（即画在这两台设备之间）"""
    (px, py), (ax, ay), (bx, by) = p, a, b
    mx, my = (ax + bx) / 2, (ay + by) / 2
    return (px - mx) ** 2 + (py - my) ** 2 <= ((ax - bx) ** 2 + (ay - by) ** 2) / 4


def _problems(player: animate.Player, chromium: str) -> list[str]:
    from playwright.sync_api import sync_playwright
    from tools import site_check

    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=site_check.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 900})
            page.set_content(f"<!doctype html><meta charset=utf-8><body>{player.html()}</body>")
            steps = page.locator(".shardlab-player").evaluate(_MEASURE)
        finally:
            browser.close()
    for i, rec in enumerate(player.recordings):
        panel = [step[i] for step in steps]
        for s in range(rec.n_steps):
            flying = panel[s]["flying"]
            for a in range(len(flying)):
                for b in range(a + 1, len(flying)):
                    if _overlap(flying[a]["box"], flying[b]["box"]):
                        problems.append(
                            f"{rec.title} 第 {s} 步：路上的块 {flying[a]['text']} 与 {flying[b]['text']} 重叠"
                        )
            devices = panel[s]["devices"]
            centres = [_centre(d["box"]) for d in devices]
            for d, dev in enumerate(panel[s + 1]["devices"]):
                gained = list(dev["chips"])
                for c in devices[d]["chips"]:
                    if c in gained:
                        gained.remove(c)
                for fill, text in gained:
                    seen = [
                        f
                        for f in flying
                        if f["fill"] == fill
                        and any(
                            _between(_centre(f["box"]), centres[d], centres[(d + k) % rec.n])
                            for k in (1, -1)
                            if rec.layout == "ring" or 0 <= d + k < rec.n
                        )
                    ]
                    if not seen:
                        problems.append(f"{rec.title} 第 {s + 1} 步：D{d} 得到 {text}，上一步没有画它在路上")
    return problems


PLAYERS = {
    "line_vs_ring_4": lambda: animate.line_vs_ring_player(4, strip=False),
    "line_reduce_scatter_5": lambda: animate.ring_player("reduce_scatter", 5, wraparound=False, strip=False),
    "ring_allgather_8": lambda: animate.ring_player("all_gather", 8, strip=False),
    "ring_allgather_8_uni": lambda: animate.ring_player("all_gather", 8, bidirectional=False, strip=False),
    "matmul_bidi_4": lambda: animate.matmul_player(4, bidirectional=True, strip=False),
}


@pytest.mark.parametrize("name", sorted(PLAYERS))
def test_blocks_in_flight_are_apart_and_explain_every_gain(name, chromium):
    problems = _problems(PLAYERS[name](), chromium)
    assert problems == [], "\n".join(problems[:20])
