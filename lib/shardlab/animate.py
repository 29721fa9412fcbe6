"""集合通信的动画：由环形模拟器记录下的每一步生成（不是手画的）

数据从哪里来
    ``record(collective, n, ...)`` 用 `shardlab.ring` 真的跑一遍带标签的模拟（每一步每个设备持有哪些块，
    ``SimResult.steps``），再用 `shardlab.torus` 的同一份调度（``detail=True``）列出每一步哪些块走哪条链路；
    两者按链路字节核对一遍（``SimResult.link_bytes``），对不上就报错，所以动画画的就是模拟器算的。
    ``record_matmul(n, ...)`` 用 `shardlab.collective_matmul.step_schedule`（逐设备函数用的同一套下标公式）
    列出 collective matmul 每一步每台设备乘哪一块、把哪一块发给谁。

怎样显示
    ``player(*recordings)`` 返回一个可显示的对象（``_repr_html_``）：一段自带的 HTML/SVG/JavaScript，
    有“上一步 / 播放 / 暂停 / 下一步 / 重来”按钮，不引用任何外部资源，所以离线网站和 Colab 上都能播放。
    几份记录并排显示、同步播放（如“线 vs 环”）。同一段 HTML 里还有一张静态的逐步图（PNG，``step_strip``），
    只在打印时显示；打印时播放器隐藏。

    ``ring_player(collective, n, bidirectional=..., wraparound=...)``、``line_vs_ring_player(n)``、
    ``matmul_player(n, bidirectional=..., kind=...)`` 是常用的组合；``step_strip(recording)`` 返回
    matplotlib Figure（可以交给 ``plots.glue_figure``）。

颜色
    AllGather / ReduceScatter / AllReduce 按块的名字（A、B、…，即它属于哪个设备）着色；AllToAll 按块的目的设备着色，
    所以结束时每个设备只剩自己的颜色；collective matmul 按 A 的 D 块编号着色。
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import itertools
import json
from dataclasses import dataclass, field

import numpy as np
from matplotlib.patches import Rectangle

from shardlab import collective_matmul, names, plots, ring, torus

__all__ = [
    "PALETTE",
    "Recording",
    "line_vs_ring_player",
    "matmul_player",
    "player",
    "record",
    "record_matmul",
    "ring_player",
    "step_strip",
]

# 块的颜色（Okabe–Ito，见 shardlab.plots）；第 i 个块用 PALETTE[i % 8]
PALETTE = [plots.COLORS[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "grey")]
ZH = {"all_gather": "全收集", "reduce_scatter": "规约散射", "all_reduce": "全规约", "all_to_all": "全对全"}
LABELS = ("第 {s} / {n} 步", "初始状态", "完成", "线（无回绕）", "环", "单向环", "双向环", "设备")


@dataclass
class Chip:
    """一个数据块在图上的样子：文字、颜色编号、填充程度（部分和加了几份，0–1）、完整标签"""

    text: str
    color: int
    fill: float = 1.0
    full: str = ""

    def as_json(self) -> list:
        return [self.text, self.color, round(self.fill, 3), self.full or self.text]


@dataclass
class Recording:
    """一段动画的全部数据

    frames[s][d]：第 s 步之后设备 d 持有的块（s = 0 为初始状态）；
    moves[s]：从第 s 帧到第 s+1 帧的传输 (源, 目的, 方向 +1/-1, [块])；
    notes[s][d]：可选的每设备说明（collective matmul 里“这一步乘哪一块”）。
    """

    title: str
    n: int
    layout: str  # "ring" 或 "line"
    frames: list[list[list[Chip]]]
    moves: list[list[tuple[int, int, int, list[Chip]]]]
    notes: list[list[str]] | None = None
    links: list[tuple[int, int]] = field(default_factory=list)

    @property
    def n_steps(self) -> int:
        return len(self.frames) - 1

    def as_json(self) -> dict:
        return {
            "title": self.title,
            "n": self.n,
            "layout": self.layout,
            "links": [list(map(int, link)) for link in self.links],
            "frames": [[[c.as_json() for c in dev] for dev in frame] for frame in self.frames],
            "moves": [
                [[int(s), int(t), int(d), [c.as_json() for c in chips]] for s, t, d, chips in m] for m in self.moves
            ],
            "notes": self.notes,
        }


# ---------- 记录：由模拟器得到每一帧 ----------


def _schedules(collective: str, topo: torus.Torus) -> list[torus.Schedule]:
    """与 shardlab.ring 的标签模式相同的调度（一维环 / 线：每块 1 个单位，不切片）；AllReduce 是两段"""
    n = topo.n
    ones = np.ones((n, 1))
    if collective == "all_gather":
        return [torus.allgather_schedule(topo, ones, detail=True)]
    if collective == "reduce_scatter":
        return [torus.reducescatter_schedule(topo, ones, detail=True)]
    if collective == "all_reduce":
        return [
            torus.reducescatter_schedule(topo, ones, detail=True),
            torus.allgather_schedule(topo, ones, detail=True),
        ]
    routes = torus.alltoall_routes(topo, np.ones((n, n)))
    return [torus.alltoall_schedule(topo, None, detail=True, routes=routes)]


def _step_link_bytes(topo: torus.Torus, sched: torus.Schedule) -> np.ndarray:
    """调度每一步经过每条有向链路的字节（与模拟器的 SimResult.link_bytes 同样的形状）"""
    out = np.zeros((sched.n_steps, topo.n_links))
    np.add.at(out, (sched.step, topo.link_index(sched.src, sched.port)), sched.nbytes)
    return out


def _chip(collective: str, label: str, letters: list[str], n: int) -> Chip:
    """把模拟器的标签（'A'、'A0+A3'、'ΣA'、'B3a'）变成图上的块"""
    if collective == "all_to_all":
        dst = int("".join(ch for ch in label[1:] if ch.isdigit()))
        return Chip(label, dst, 1.0, label)
    if label.startswith("Σ"):
        return Chip(label, letters.index(label[1:]), 1.0, label)
    letter = label.split("+")[0].rstrip("0123456789") if "+" in label or label[-1:].isdigit() else label
    if collective == "all_gather" or label == letter:
        return Chip(letter, letters.index(letter), 1.0, label)
    k = label.count("+") + 1  # 部分和已经加了 k 份（共 n 份）
    text = label if len(label) <= 5 else f"{letter}({k})"
    return Chip(text, letters.index(letter), k / n, f"{label}（{k}/{n} 份）")


def _move_chip(collective: str, key, letters: list[str]) -> Chip:
    if collective == "all_to_all":
        s, t, suffix = key
        return Chip(f"{letters[s]}{t}{suffix}", int(t), 1.0)
    d = key[0]
    return Chip(letters[d], int(d), 1.0)


def record(collective: str, n: int, *, bidirectional: bool = True, wraparound: bool = True) -> Recording:
    """模拟一维环（或 wraparound=False 的线）上的集合通信，记下每一步：``record("all_gather", 8)``"""
    name = names.canonical(collective)
    topo = torus.Ring(n, bidirectional=bidirectional, wraparound=wraparound)
    result = ring.simulate(name, topo)
    scheds = _schedules(name, topo)
    # 核对：调度逐步逐链路的字节与模拟器数出来的完全相同
    check = np.concatenate([_step_link_bytes(topo, sched) for sched in scheds])
    if check.shape != result.link_bytes.shape or not np.allclose(check, result.link_bytes):
        raise RuntimeError("动画用的调度与模拟器记录的链路字节不一致（内部错误）")
    letters = [chr(ord("A") + i) for i in range(n)]  # 与模拟器的默认标签相同
    frames = [[[_chip(name, lab, letters, n) for lab in dev] for dev in step] for step in result.steps]
    moves: list[list] = [[] for _ in range(result.n_steps)]
    offset = 0
    for sched in scheds:
        for m in np.argsort(sched.step, kind="stable").tolist():
            src, dst, port = int(sched.src[m]), int(sched.dst[m]), int(sched.port[m])
            chips = [_move_chip(name, key, letters) for key in sched.items[m]]
            moves[offset + int(sched.step[m])].append((src, dst, -1 if port % 2 else 1, chips))
        offset += sched.n_steps
    kind = "双向" if bidirectional else "单向"
    shape = "环" if wraparound else "线（无回绕）"
    title = f"{ZH[name]}（{names.ALL[name].display}）：{n} 个设备的{kind}{shape}"
    return Recording(title, n, "ring" if wraparound else "line", frames, moves, None, list(topo.links))


def record_matmul(n: int, *, bidirectional: bool = False, kind: str = "allgather") -> Recording:
    """collective matmul 的每一步（`collective_matmul.step_schedule`，逐设备函数用的同一套下标）

    kind='allgather'：A 的 D 块沿环传，每台设备每步用手里的块乘 W 的对应行块并累加；
    kind='reducescatter'：累加器沿环传，每到一台设备加上它的那一份贡献。
    帧里每台设备显示本步手里的块；说明写出这一步算的是什么。
    """
    per_device = [collective_matmul.step_schedule(n, bidirectional, kind, j) for j in range(n)]
    mark = {"all": "", "lo": "↻", "hi": "↺"}
    frames, moves, notes = [], [], []
    done = [[] for _ in range(n)]
    for s in range(n):
        frame, note, step_moves = [], [], []
        for j in range(n):
            entry = per_device[j][s]
            held = [Chip(f"{'A' if kind == 'allgather' else 'C'}{k}{mark[p]}", k, 1.0) for k, p in entry["compute"]]
            frame.append(held)
            if kind == "allgather":
                done[j] += [k for k, _ in entry["compute"]]
                note.append("C += " + " + ".join(f"{c.text}·W{k}" for c, (k, _) in zip(held, entry["compute"])))
            else:
                note.append(" ".join(f"C{t} += A·W[:, {t}]" for t, _ in entry["compute"]))
            for k, p, dst in entry["send"]:
                direction = 1 if (dst - j) % n == 1 else -1
                step_moves.append((j, dst, direction, [Chip(held[0].text[0] + f"{k}{mark[p]}", k, 1.0)]))
        frames.append(frame)
        notes.append(note)
        moves.append(step_moves)
    moves = moves[:-1]
    what = "AllGather-matmul" if kind == "allgather" else "matmul-ReduceScatter"
    title = f"collective matmul（{what}）：{n} 个设备的{'双向' if bidirectional else '单向'}环"
    topo = torus.Ring(n, bidirectional=bidirectional)
    return Recording(title, n, "ring", frames, moves, notes, list(topo.links))


# ---------- 静态的逐步图（打印用） ----------


def step_strip(*recordings: Recording):
    """逐步图：每一步一行、每个设备一列，格子里画出这个设备持有的块（打印时代替动画）

    几份记录时上下排列。返回 matplotlib Figure。
    """
    if not recordings:
        raise ValueError("step_strip 需要至少一份记录（record(...) 或 record_matmul(...)）")
    rows = [len(r.frames) for r in recordings]
    fig, axes = plots.figure(len(recordings), 1, height=0.42 * sum(rows) + 0.55 * len(recordings) + 0.3, squeeze=False)
    for ax, rec in zip(axes[:, 0], recordings):
        n, per_row = rec.n, max(1, max(len(dev) for f in rec.frames for dev in f))
        cols_in_cell = min(per_row, 4)
        lines_in_cell = -(-per_row // cols_in_cell)
        cw, ch = 1.0 / cols_in_cell, 0.8 / lines_in_cell
        for s, frame in enumerate(rec.frames):
            for d, dev in enumerate(frame):
                for i, chip in enumerate(dev):
                    x = d + 0.02 + (i % cols_in_cell) * cw * 0.96
                    y = s + 0.1 + (i // cols_in_cell) * ch
                    color = PALETTE[chip.color % len(PALETTE)]
                    ax.add_patch(
                        Rectangle((x, y), cw * 0.9, ch * 0.9, facecolor=color, alpha=0.25 + 0.75 * chip.fill, lw=0)
                    )
                    ax.text(
                        x + cw * 0.45, y + ch * 0.45, chip.text, ha="center", va="center", fontsize=plots.MIN_FONT_PT
                    )
        ax.set_xlim(0, n)
        ax.set_ylim(len(rec.frames), 0)
        ax.set_xticks(np.arange(n) + 0.5, [f"D{d}" for d in range(n)])
        ax.set_yticks(np.arange(len(rec.frames)) + 0.5, [f"{s}" for s in range(len(rec.frames))])
        ax.set_ylabel("步")
        ax.tick_params(length=0)
        ax.grid(False)
        for d in range(1, n):
            ax.axvline(d, color="#cccccc", lw=0.8)
        ax.set_title(rec.title, fontsize=plots.MIN_FONT_PT + 1, loc="left")
    return fig


# ---------- 播放器 ----------

_STYLE = """
.shardlab-player{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","PingFang SC",sans-serif;
  margin:.5rem 0 1rem 0;max-width:100%}
.shardlab-player .sl-panels{display:flex;flex-wrap:wrap;gap:.5rem}
.shardlab-player .sl-panel{flex:1 1 100%;min-width:0;max-width:560px}
.shardlab-player svg{width:100%;height:auto;display:block}
.shardlab-player .sl-title{font-size:.9rem;margin:.2rem 0}
.shardlab-player .sl-controls{display:flex;flex-wrap:wrap;gap:.3rem;align-items:center;margin-top:.3rem}
.shardlab-player button{font:inherit;font-size:.9rem;padding:.15rem .7rem;border:1px solid #999;border-radius:.25rem;
  background:#f5f5f5;color:#222;cursor:pointer}
.shardlab-player .sl-step{font-size:.9rem;margin-left:.4rem}
html[data-theme=dark] .shardlab-player button{background:#2b2f36;color:#e6e6e6;border-color:#777}
html[data-theme=dark] .shardlab-player .sl-dev{fill:#23262b;stroke:#9a9a9a}
html[data-theme=dark] .shardlab-player .sl-txt{fill:#e0e0e0}
html[data-theme=dark] .shardlab-player .sl-note{fill:#e0e0e0;stroke:#121212}
html[data-theme=dark] .shardlab-player .sl-link{stroke:#4a4a4a}
html[data-theme=dark] .shardlab-player .sl-ink{stroke:#c8c8c8}
html[data-theme=dark] .shardlab-player .sl-inkfill{fill:#c8c8c8}
.shardlab-strip{display:none}
.shardlab-strip img{max-width:100%}
@media print{.shardlab-player{display:none!important}.shardlab-strip{display:block!important}}
"""

_SCRIPT = r"""
(function(){
const root=document.getElementById("%(id)s");
if(!root||root.dataset.ready)return; root.dataset.ready="1";
const data=JSON.parse(root.querySelector("script[type='application/json']").textContent);
const pal=data.palette, recs=data.recordings, total=Math.max(...recs.map(r=>r.frames.length-1));
const NS="http://www.w3.org/2000/svg";
let step=0, timer=null;
function el(tag,attrs,text){const e=document.createElementNS(NS,tag);
  for(const k in attrs)e.setAttribute(k,attrs[k]); if(text!==undefined)e.textContent=text; return e;}
// 设备框的大小在整段动画里不变：按最多的块数和最长的标签定
for(const r of recs){const all=r.frames.flat(), most=Math.max(1,...all.map(c=>c.length));
  r.per=Math.min(r.layout==="line"?2:4,most); r.cw=Math.max(22,...all.flat().map(c=>8*c[0].length+6));
  r.bw=r.per*r.cw+6; r.bh=Math.ceil(most/r.per)*19+21;
  // 设备下方的说明（collective matmul 的 “C += A1·W1”）比设备框宽时，按它留出左右的位置，不在 SVG 边上被截掉
  r.nw=r.notes?Math.max(0,...r.notes.flat().map(t=>7.5*t.length+8)):0; r.w=Math.max(r.bw,r.nw);
  r.R=Math.max(120,r.n*(r.bw+24)/(2*Math.PI));}
// SVG 按 viewBox 缩放到播放器的宽度（手机上 342 px）：画面的宽度约 350–400 个单位，12 的字在手机上不小于 10 px
function size(r){return r.layout==="ring"?[2*r.R+r.w+24,2*r.R+r.bh+70]:[r.n*(r.w+44)+20,r.bh+150];}
function pos(r,d){const [W,H]=size(r);
  if(r.layout==="ring"){const a=-Math.PI/2+2*Math.PI*d/r.n;
    return [W/2+r.R*Math.cos(a),(H-20)/2+r.R*Math.sin(a)];}
  return [10+(r.w+44)*(d+0.5),H/2-10];}
function draw(panel,r){
  const s=Math.min(step,r.frames.length-1), [W,H]=size(r);
  const svg=el("svg",{viewBox:`0 0 ${W} ${H}`,role:"img","aria-label":r.title+"，第 "+s+" 步"});
  const defs=el("defs",{}); const mk=el("marker",{id:"%(id)s-arrow",viewBox:"0 0 10 10",refX:"9",refY:"5",
    markerWidth:"6",markerHeight:"6",orient:"auto-start-reverse"}); mk.appendChild(el("path",{d:"M0,0L10,5L0,10z",fill:"#555",class:"sl-inkfill"}));
  defs.appendChild(mk); svg.appendChild(defs);
  const seen=new Set();
  for(const [a,b] of r.links){const k=Math.min(a,b)+"-"+Math.max(a,b); if(seen.has(k))continue; seen.add(k);
    const [x1,y1]=pos(r,a),[x2,y2]=pos(r,b);
    svg.appendChild(el("line",{x1,y1,x2,y2,stroke:"#d0d0d0","stroke-width":"2",class:"sl-link"}));}
  const moves=s<r.moves.length?r.moves[s]:[];
  for(const [a,b,dir,chips] of moves){const [x1,y1]=pos(r,a),[x2,y2]=pos(r,b);
    const mx=(x1+x2)/2,my=(y1+y2)/2,dx=x2-x1,dy=y2-y1,L=Math.hypot(dx,dy)||1;
    // 法向取传输方向的右手边：同一条链路上反方向的两次传输（a→b 与 b→a）一个在线这边、一个在那边，不画在同一处
    // （再乘 dir 会把反方向的那次翻回同一边）
    const off=r.layout==="ring"?18:28, nx=-dy/L*off, ny=dx/L*off;
    const sx=x1+dx*0.28,sy=y1+dy*0.28,ex=x2-dx*0.28,ey=y2-dy*0.28;
    svg.appendChild(el("path",{d:`M${sx},${sy} Q${mx+nx},${my+ny} ${ex},${ey}`,fill:"none",stroke:"#555",class:"sl-ink",
      "stroke-width":"1.6","marker-end":`url(#%(id)s-arrow)`}));
    chips.forEach((c,i)=>{const w=Math.max(20,8*c[0].length+8), cx=mx+nx*1.6+(i-(chips.length-1)/2)*(w+2)-w/2, cy=my+ny*1.6-9;
      svg.appendChild(el("rect",{x:cx,y:cy,width:w,height:18,rx:3,fill:pal[c[1]%%pal.length],stroke:"#333","stroke-width":"0.6"}));
      svg.appendChild(el("text",{x:cx+w/2,y:cy+13,"text-anchor":"middle","font-size":"12",fill:"#000"},c[0]));});}
  r.frames[s].forEach((chips,d)=>{const [x,y]=pos(r,d), per=r.per, cw=r.cw, bw=r.bw, bh=r.bh;
    svg.appendChild(el("rect",{x:x-bw/2,y:y-bh/2,width:bw,height:bh,rx:5,fill:"#fff",stroke:"#777",class:"sl-dev"}));
    svg.appendChild(el("text",{x:x-bw/2+4,y:y-bh/2+13,"font-size":"12",fill:"#333",class:"sl-txt"},"D"+d));
    chips.forEach((c,i)=>{const cx=x-bw/2+3+(i%%per)*cw, cy=y-bh/2+17+Math.floor(i/per)*19;
      const g=el("g",{}); g.appendChild(el("title",{},c[3]));
      // 块下面垫一层白底：深色模式里半透明的块也和浅色模式一样，上面的黑字看得清
      g.appendChild(el("rect",{x:cx,y:cy,width:cw-2,height:17,rx:3,fill:"#fff"}));
      g.appendChild(el("rect",{x:cx,y:cy,width:cw-2,height:17,rx:3,fill:pal[c[1]%%pal.length],"fill-opacity":0.25+0.75*c[2]}));
      g.appendChild(el("text",{x:cx+(cw-2)/2,y:cy+13,"text-anchor":"middle","font-size":"12",fill:"#000"},c[0]));
      svg.appendChild(g);});
    if(r.notes&&r.notes[s]){svg.appendChild(el("text",{x:x,y:y+bh/2+14,"text-anchor":"middle","font-size":"12",
      fill:"#333",stroke:"#fff","stroke-width":"3","paint-order":"stroke",class:"sl-note"},r.notes[s][d]));}});
  // 几份记录并排时每幅画里写自己的步数（步数可以不同）；只有一幅时步数只写在按钮旁边
  if(recs.length>1)svg.appendChild(el("text",{x:8,y:H-8,"font-size":"13",fill:"#333",class:"sl-txt"},
    `第 ${s} / ${r.frames.length-1} 步 ${status(s,r.frames.length-1)}`));
  panel.querySelector(".sl-svg").replaceChildren(svg);}
function status(s,n){return s===0?"初始状态":(s>=n?"完成":"");}
function render(){root.dataset.step=String(step);
  root.querySelectorAll(".sl-panel").forEach((p,i)=>draw(p,recs[i]));
  root.querySelector(".sl-step").textContent=recs.length>1?"":`第 ${step} / ${total} 步 ${status(step,total)}`.trim();
  root.querySelector(".sl-play").textContent=timer?"■ 暂停":"▶ 播放";}
function stop(){if(timer){clearInterval(timer);timer=null;}}
function go(s){step=Math.max(0,Math.min(total,s));render();}
root.querySelector(".sl-prev").onclick=()=>{stop();go(step-1);};
root.querySelector(".sl-next").onclick=()=>{stop();go(step+1);};
root.querySelector(".sl-reset").onclick=()=>{stop();go(0);};
root.querySelector(".sl-play").onclick=()=>{
  if(timer){stop();render();return;}
  if(step>=total)step=0;
  timer=setInterval(()=>{if(step>=total){stop();render();return;} go(step+1);},%(interval)d); render();};
render();
})();
"""

_ids = itertools.count()


INTERVAL_MS = 1100  # 播放时每一步停留的毫秒数（播放器的 data-interval）


class Player:
    """可显示的动画播放器（Jupyter / Colab / 网站上显示为 HTML）；``html()`` 返回那段 HTML"""

    def __init__(self, recordings: list[Recording], *, interval_ms: int = INTERVAL_MS, strip: bool = True):
        if not recordings:
            raise ValueError("player 需要至少一份记录")
        self.recordings = recordings
        self.interval_ms = int(interval_ms)
        self.strip = strip

    @property
    def n_steps(self) -> int:
        return max(r.n_steps for r in self.recordings)

    @functools.cached_property
    def _strip_png(self) -> str:
        """打印用的逐步图：每个播放器只画一次（matplotlib 画一张图要几百毫秒）"""
        png = plots.figure_png(step_strip(*self.recordings), close=True)
        return base64.b64encode(png).decode("ascii")

    def html(self) -> str:
        payload = json.dumps(
            {"palette": PALETTE, "recordings": [r.as_json() for r in self.recordings]}, ensure_ascii=False
        )
        digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:10]
        pid = f"shardlab-player-{digest}-{next(_ids)}"
        safe = payload.replace("</", "<\\/")
        panels = "".join(
            f'<div class="sl-panel"><div class="sl-title">{html.escape(r.title)}</div><div class="sl-svg"></div></div>'
            for r in self.recordings
        )
        titles = "；".join(r.title for r in self.recordings)
        strip = ""
        if self.strip:
            strip = (
                f'<div class="shardlab-strip"><img alt="{html.escape(titles)}：逐步图（打印版）" '
                f'src="data:image/png;base64,{self._strip_png}"></div>'
            )
        script = _SCRIPT % {"id": pid, "interval": self.interval_ms}
        return (
            f"<style>{_STYLE}</style>"
            f'<div class="shardlab-player" id="{pid}" data-steps="{self.n_steps}" data-step="0"'
            f' data-interval="{self.interval_ms}">'
            f'<script type="application/json">{safe}</script>'
            f'<div class="sl-panels">{panels}</div>'
            '<div class="sl-controls">'
            '<button type="button" class="sl-reset" title="回到初始状态">重来</button>'
            '<button type="button" class="sl-prev">◀ 上一步</button>'
            '<button type="button" class="sl-play">▶ 播放</button>'
            '<button type="button" class="sl-next">下一步 ▶</button>'
            '<span class="sl-step"></span></div></div>'
            f"{strip}<script>{script}</script>"
        )

    def _repr_html_(self) -> str:
        return self.html()


def player(*recordings: Recording, interval_ms: int = INTERVAL_MS, strip: bool = True) -> Player:
    """把一份或几份记录做成播放器（几份时并排、同步播放）"""
    return Player(list(recordings), interval_ms=interval_ms, strip=strip)


def ring_player(collective: str, n: int, *, bidirectional: bool = True, wraparound: bool = True, **kwargs) -> Player:
    """``ring_player("all_gather", 8, bidirectional=False)``：一维环（或线）上一种集合通信的动画"""
    return player(record(collective, n, bidirectional=bidirectional, wraparound=wraparound), **kwargs)


def line_vs_ring_player(n: int, collective: str = "all_gather", **kwargs) -> Player:
    """同一种集合通信在没有回绕的线和有回绕的双向环上并排播放：线要 N-1 步，环只要 ⌊N/2⌋ 步"""
    return player(record(collective, n, wraparound=False), record(collective, n, wraparound=True), **kwargs)


def matmul_player(n: int, *, bidirectional: bool = False, kind: str = "allgather", **kwargs) -> Player:
    """collective matmul 的动画：``matmul_player(4, bidirectional=True)``"""
    return player(record_matmul(n, bidirectional=bidirectional, kind=kind), **kwargs)
