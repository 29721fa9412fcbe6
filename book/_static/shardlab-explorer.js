// 交互探索器：点“启动”后在一个 Web Worker 里用 Pyodide 运行 shardlab.explorer（与笔记本里同一份代码），
// 网页本身不会因为加载 Python 而卡住。每次重算把 explorer 返回的字典（含原样的参数）画出来，再写进元素的 data-state。
// 显示的数字（包括刻度与滑块旁的值）都是 explorer 用 shardlab.units 写好的文字；这里只负责画。
// 启动前不加载运行时的任何文件；file:// 打开或 .wasm 的 MIME 类型不对时几秒内用中文说明怎么办。
// 下载时状态行显示已下载的字节数；只有一段时间（STALL_MS）没有任何进展才提示“加载比预期慢”，之后进展照常显示。
// 运行时的字节都到了之后（COMPILED_AFTER 里的文件都下载完）只剩编译：状态行说“正在编译（运行时已下载完）”，
// 不再提示网络或服务器的问题，过了 2 × STALL_MS 才温和地说一句“仍在编译”。
(() => {
  "use strict";
  const script = document.currentScript;
  const BASE = new URL("pyodide/", script ? script.src : location.href).href;
  const STALL_MS = () => Number(window.SHARDLAB_EXPLORER_STALL_MS) || 15000; // 这么久没有新的字节或步骤才提示
  const COLORS = { all_gather: "#1f77b4", reduce_scatter: "#2ca02c", all_reduce: "#d62728", all_to_all: "#9467bd" };
  const NAMES = { all_gather: "AllGather", reduce_scatter: "ReduceScatter", all_reduce: "AllReduce", all_to_all: "AllToAll" };
  const BAR_COLORS = { math: "#1f77b4", comms: "#ff7f0e" };
  const COMPILED_AFTER = ["pyodide.asm.wasm", "python_stdlib.zip"]; // 这些下载完，第 1 步只剩编译
  let runtime = null; // Promise：调用 Python 的函数（异步，经 Worker）
  let progressAt = 0; // 上一次有进展（新的字节或步骤）的时刻
  let downloaded = false; // 第 1 步的文件都下载完了（只剩编译）

  class ExplorerError extends Error {}

  function el(tag, attrs = {}, text = "") {
    const e = document.createElementNS(tag === "svg" || attrs.svg ? "http://www.w3.org/2000/svg" : "http://www.w3.org/1999/xhtml", tag);
    for (const [k, v] of Object.entries(attrs)) if (k !== "svg") e.setAttribute(k, v);
    if (text) e.textContent = text;
    return e;
  }

  function checkServing() {
    if (location.protocol === "file:") {
      throw new ExplorerError(
        "这一页是从本地文件（file://）打开的，浏览器不允许这样加载 WebAssembly。" +
          "请在网站目录（_build/html）里运行 python3 -m http.server 8000，再打开 http://localhost:8000/ 上的这一页。",
      );
    }
  }

  // Worker 里运行的代码：加载 Pyodide 与 shardlab-core.zip，逐个回答调用。
  // Pyodide 用全局的 fetch 取 .wasm：加载期间查看它的响应头，MIME 类型不对就立即报告（不多发请求）。
  const WORKER_SOURCE = `
let call = null;
// 读响应的一份副本（clone），边读边报告已下载的字节数；原来的响应原样交给 Pyodide
function countBytes(url, response) {
  const file = url.split("/").pop().split("?")[0];
  const total = Number(response.headers.get("content-length")) || 0;
  if (!response.ok || !response.body) return;
  const reader = response.clone().body.getReader();
  let loaded = 0, last = 0;
  postMessage({ type: "bytes", file, loaded, total });
  (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      loaded += value.byteLength;
      const now = Date.now();
      if (now - last > 200) { last = now; postMessage({ type: "bytes", file, loaded, total }); }
    }
    postMessage({ type: "bytes", file, loaded, total: total || loaded, done: true });
  })().catch(() => {});
}
function watchWasm() {
  const realFetch = self.fetch;
  self.fetch = async function (input, init) {
    const response = await realFetch.call(this, input, init);
    const url = String(typeof input === "string" || input instanceof URL ? input : input.url);
    countBytes(url, response);
    if (url.endsWith(".wasm")) {
      const type = (response.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
      if (!response.ok) {
        postMessage({ type: "problem", text: "网站上找不到 Pyodide 的文件（HTTP " + response.status + "）：请重新构建网站，确认 _static/pyodide/ 已上传。" });
      } else if (type !== "application/wasm") {
        postMessage({ type: "problem", text: "服务器把 .wasm 文件的类型报成“" + (type || "（空）") + "”，浏览器要求 application/wasm。" +
          "请在服务器的 MIME 类型里加上 .wasm → application/wasm（例如 nginx 的 mime.types 写 application/wasm wasm;），" +
          "或者改用 python3 -m http.server 提供网站。" });
      }
    }
    return response;
  };
  return () => { self.fetch = realFetch; };
}
// import() 载入的模块（pyodide.mjs、pyodide.asm.mjs）不经 fetch：下载完时从 Resource Timing 报告
function watchModules(base) {
  if (typeof PerformanceObserver === "undefined") return;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (!e.name.startsWith(base)) continue;
      const file = e.name.split("/").pop().split("?")[0];
      const size = e.decodedBodySize || 0;
      postMessage({ type: "bytes", file, loaded: size, total: size, done: true, timing: true });
    }
  }).observe({ type: "resource", buffered: true });
}
async function boot(base) {
  watchModules(base);
  postMessage({ type: "progress", step: 1, text: "第 1 步（共 3 步）：正在下载并编译 Python 运行时（Pyodide）……" });
  const { loadPyodide } = await import(base + "pyodide.mjs");
  const restore = watchWasm();
  let py;
  try {
    py = await loadPyodide({ indexURL: base, stdout: () => {}, stderr: (t) => console.warn(t) });
  } finally {
    restore();
  }
  postMessage({ type: "progress", step: 2, text: "第 2 步（共 3 步）：正在载入课程的 shardlab 库……" });
  const zip = await fetch(base + "shardlab-core.zip");
  countBytes(base + "shardlab-core.zip", zip);
  if (!zip.ok) throw new Error("网站上找不到 shardlab-core.zip（HTTP " + zip.status + "）：请重新构建网站。");
  py.FS.writeFile("/shardlab-core.zip", new Uint8Array(await zip.arrayBuffer()));
  py.runPython([
    "import json, sys",
    "sys.path.insert(0, '/shardlab-core.zip')",
    "from shardlab import explorer",
    "def _shardlab_call(name, args):",
    "    return json.dumps(getattr(explorer, name)(**json.loads(args)), allow_nan=False, ensure_ascii=False)",
  ].join("\\n"));
  const fn = py.globals.get("_shardlab_call");
  call = (name, args) => fn(name, JSON.stringify(args));
  postMessage({ type: "progress", step: 3, text: "第 3 步（共 3 步）：正在计算……" });
}
self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "boot") {
    try {
      await boot(msg.base);
      postMessage({ type: "ready" });
    } catch (err) {
      postMessage({ type: "failed", text: String(err && err.message ? err.message : err) });
    }
  } else if (msg.type === "call") {
    try {
      postMessage({ type: "result", id: msg.id, json: call(msg.name, msg.args) });
    } catch (err) {
      postMessage({ type: "result", id: msg.id, error: String(err).split("\\n").filter(Boolean).pop() });
    }
  }
};
`;

  // 下载进度：已下载 / 总数。总数与“启动”旁写的是同一个数：构建时由网站里的文件算出，写在 data-download
  // （每个文件的字节数与写好的总数）；已下载的字节数按这些文件逐个数，不超过各自的大小
  function bytesText(files, download) {
    const sizes = (download && download.files) || {};
    const names = Object.keys(sizes);
    const mb = (b) => (b / 1e6).toFixed(1);
    if (names.length) {
      let loaded = 0, total = 0;
      for (const name of names) {
        total += sizes[name];
        const f = files.get(name);
        if (f) loaded += f.done ? sizes[name] : Math.min(f.loaded, sizes[name]);
      }
      return `已下载 ${mb(loaded)} MB / ${download.total_text}（${Math.floor((100 * loaded) / total)}%）`;
    }
    let loaded = 0, total = 0, unknown = false;
    for (const f of files.values()) {
      loaded += f.loaded;
      total += f.total;
      unknown = unknown || !f.total;
    }
    if (unknown || !total) return `已下载 ${mb(loaded)} MB`;
    return `已下载 ${mb(loaded)} MB / ${mb(total)} MB（${Math.floor((100 * loaded) / total)}%）`;
  }

  // 已经下载完的字节数（只数这一步的文件）
  function downloadedText(files, download) {
    const sizes = (download && download.files) || {};
    let loaded = 0;
    for (const [name, f] of files) loaded += f.done && sizes[name] ? sizes[name] : f.loaded;
    return `${(loaded / 1e6).toFixed(1)} MB`;
  }

  // 启动 Worker；返回 Promise<(name, args) => Promise<state>>。onProgress 接收进度文字，onProblem 接收问题说明
  function boot(onProgress, onProblem, download) {
    const files = new Map(); // 各文件的进度，各步累计（总数是全部要下载的文件）
    let stepText = "";
    checkServing();
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    const worker = new Worker(url, { type: "module", name: "shardlab-explorer" });
    URL.revokeObjectURL(url);
    const pending = new Map();
    let next = 0;
    return new Promise((resolve, reject) => {
      worker.onerror = (event) => reject(new ExplorerError(`启动失败：${event.message || "Worker 出错"}`));
      worker.onmessage = (event) => {
        const msg = event.data;
        if (msg.type === "progress") {
          stepText = msg.text;
          if (msg.step > 1) for (const f of files.values()) f.done = true; // 第 1 步的文件到这时都已载入
          downloaded = false;
          onProgress(stepText);
        } else if (msg.type === "bytes") {
          const old = files.get(msg.file);
          if (!(old && old.done && !msg.done)) files.set(msg.file, msg); // 已下载完的不退回
          const step = stepText.replace(/……$/, "");
          const text = step ? `${step}：${bytesText(files, download)}` : bytesText(files, download);
          downloaded =
            stepText.startsWith("第 1 步") &&
            COMPILED_AFTER.every((name) => files.has(name) && files.get(name).done) &&
            [...files.values()].every((f) => f.done);
          // 字节都到了：不再显示停在 99% 的进度（课程的库下一步才取），只说下载完、正在编译
          onProgress(downloaded ? `${stepText.split("：")[0]}：正在编译（运行时已下载完，${downloadedText(files, download)}）……` : text);
        }
        if (msg.type === "problem") onProblem(msg.text);
        else if (msg.type === "failed") reject(new ExplorerError(msg.text));
        else if (msg.type === "result") {
          const done = pending.get(msg.id);
          pending.delete(msg.id);
          if (done) done(msg);
        } else if (msg.type === "ready") {
          resolve(
            (name, args) =>
              new Promise((settle) => {
                const id = next++;
                pending.set(id, (reply) => settle(reply.error ? { args, error: reply.error } : JSON.parse(reply.json)));
                worker.postMessage({ type: "call", id, name, args });
              }),
          );
        }
      };
      worker.postMessage({ type: "boot", base: BASE });
    });
  }

  function parseMesh(text) {
    const mesh = {};
    for (const part of text.split(",")) {
      const [name, size] = part.split("=");
      mesh[name] = Number(size);
    }
    return mesh;
  }

  // 算不了的组合设为不可选：哪些组合算得了由 shardlab.explorer 在构建时写进 option 的 data-ok / data-needs；
  // 当前的选项变得不可选时换成第一个可选的
  function pick(select) {
    const current = select.options[select.selectedIndex];
    if (current && current.disabled) {
      const first = [...select.options].find((o) => !o.disabled);
      if (first) select.value = first.value;
    }
  }

  // 灰掉的选项写明为什么（title），并在控件下面列出（触屏上看不到 title）
  function explainDisabled(form, reasons) {
    let note = form.parentNode.querySelector(".shardlab-explorer-why");
    if (!note) {
      note = el("p", { class: "shardlab-explorer-why shardlab-explorer-note" });
      form.after(note);
    }
    note.textContent = reasons.length ? `灰色（不可选）的选项：${reasons.join("；")}。` : "";
    note.hidden = !reasons.length;
  }

  function syncChoices(form, kind) {
    const reasons = [];
    if (kind === "collectives") {
      const why = (o) => JSON.parse(o.dataset.why || "{}")[form.chip.value] || {};
      for (const o of form.mesh.options) {
        o.disabled = !(JSON.parse(o.dataset.ok || "{}")[form.chip.value] || []).length;
        o.title = o.disabled ? Object.values(why(o))[0] || "" : "";
        if (o.disabled) reasons.push(`网格 ${o.textContent}：${o.title}`);
      }
      pick(form.mesh);
      const meshOption = form.mesh.options[form.mesh.selectedIndex];
      const ok = JSON.parse(meshOption.dataset.ok || "{}")[form.chip.value] || [];
      const names = Object.keys(parseMesh(form.mesh.value));
      const wanted = names.map((n) => [n, n]);
      if (names.length > 1) wanted.push([names.join(","), names.join(" 和 ")]);
      const old = form.axes.value;
      form.axes.replaceChildren(
        ...wanted.map(([v, t]) =>
          el("option", ok.includes(v) ? { value: v } : { value: v, disabled: "", title: why(meshOption)[v] || "" }, t),
        ),
      );
      for (const [v, t] of wanted) if (!ok.includes(v)) reasons.push(`经过的轴 ${t}：${why(meshOption)[v] || ""}`);
      form.axes.value = wanted.some(([v]) => v === old) ? old : names[0];
      pick(form.axes);
    } else {
      const needs = (form.scenario.options[form.scenario.selectedIndex].dataset.needs || "").split(",").filter(Boolean);
      for (const o of form.mesh.options) {
        const axes = Object.keys(parseMesh(o.value));
        const missing = needs.filter((a) => !axes.includes(a));
        o.disabled = missing.length > 0;
        o.title = o.disabled ? `这个场景用到网格轴 ${needs.join("、")}，这个网格没有 ${missing.join("、")}` : "";
        if (o.disabled) reasons.push(`网格 ${o.textContent}：${o.title}`);
      }
      pick(form.mesh);
    }
    explainDisabled(form, reasons);
  }

  function argsOf(root) {
    const f = root.querySelector("form");
    if (root.dataset.kind === "collectives") {
      return [
        "collective_state",
        {
          chip: f.chip.value,
          collective: f.collective.value,
          nbytes: Math.round(10 ** Number(f.nbytes.value)),
          axes: f.axes.value.split(","),
          mesh: parseMesh(f.mesh.value),
        },
      ];
    }
    return [
      "sharding_state",
      {
        B: 2 ** Number(f.B.value),
        D: 2 ** Number(f.D.value),
        F: 2 ** Number(f.F.value),
        chip: f.chip.value,
        mesh: parseMesh(f.mesh.value),
        scenario: f.scenario.value,
      },
    ];
  }

  // 滑块旁的文字：构建时由 shardlab.explorer.range_labels 写进 data-labels，这里只按格取
  function showRanges(root) {
    for (const out of root.querySelectorAll("output[data-for]")) {
      const input = root.querySelector(`input[name="${out.dataset.for}"]`);
      const labels = JSON.parse(out.dataset.labels);
      const k = Math.round((Number(input.value) - Number(input.min)) / Number(input.step));
      out.textContent = labels[Math.max(0, Math.min(labels.length - 1, k))];
    }
  }

  function plot(state) {
    const W = 480, H = 340, L = 96, R = 20, T = 14, B = 80;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "shardlab-explorer-plot" });
    const xs = state.curve.nbytes;
    const yt = state.y_ticks;
    const x0 = Math.log10(xs[0]), x1 = Math.log10(xs[xs.length - 1]);
    const y0 = Math.log10(yt[0][0]), y1 = Math.log10(yt[yt.length - 1][0]);
    const px = (v) => L + ((Math.log10(v) - x0) / (x1 - x0)) * (W - L - R);
    const py = (t) => T + (1 - (Math.log10(t) - y0) / (y1 - y0 || 1)) * (H - T - B);
    svg.append(el("title", { svg: 1 }, `${state.chip}：四种集合通信的时间随数组大小 V 变化（双对数坐标）`));
    // 横轴每个十倍都画网格线，文字隔一个写一个（手机上也不重叠）
    state.x_ticks.forEach(([v, label], i) => {
      svg.append(el("line", { svg: 1, x1: px(v), x2: px(v), y1: T, y2: H - B, class: "grid" }));
      if (i % 2 === 0) svg.append(el("text", { svg: 1, x: px(v), y: H - B + 36, "text-anchor": "middle" }, label));
    });
    for (const [t, label] of yt) {
      svg.append(el("line", { svg: 1, x1: L, x2: W - R, y1: py(t), y2: py(t), class: "grid" }));
      svg.append(el("text", { svg: 1, x: L - 6, y: py(t) + 5, "text-anchor": "end" }, label));
    }
    svg.append(el("text", { svg: 1, x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "axis-title" }, "数组大小 V（字节，对数刻度）"));
    const yMid = (T + H - B) / 2;
    svg.append(
      el("text", { svg: 1, x: 18, y: yMid, "text-anchor": "middle", transform: `rotate(-90 18 ${yMid})`, class: "axis-title" }, "时间（对数刻度）"),
    );
    // 选中的集合通信最后画，压在同样时间的曲线上面
    const order = Object.keys(state.curve.time_s).sort((a, b) => (a === state.collective) - (b === state.collective));
    for (const coll of order) {
      const times = state.curve.time_s[coll];
      if (!times) continue;
      const d = times.map((t, i) => `${i ? "L" : "M"}${px(xs[i]).toFixed(1)},${py(Math.max(t, yt[0][0])).toFixed(1)}`).join("");
      const width = coll === state.collective ? 3.5 : 1.5;
      svg.append(el("path", { svg: 1, d, fill: "none", stroke: COLORS[coll], "stroke-width": width, "data-collective": coll }));
    }
    const cross = state.crossover_bytes[state.collective];
    if (cross && cross >= xs[0] && cross <= xs[xs.length - 1]) {
      svg.append(el("line", { svg: 1, x1: px(cross), x2: px(cross), y1: T, y2: H - B, class: "crossover" }));
    }
    // 圆点与曲线用同一个时间（plot_time_s：组跨节点而 cost.estimate 偏乐观时是跨节点模型的时间）
    if (state.plot_time_s > 0) {
      svg.append(el("circle", { svg: 1, cx: px(Math.min(Math.max(state.nbytes, xs[0]), xs[xs.length - 1])), cy: py(state.plot_time_s), r: 6, fill: COLORS[state.collective], class: "current" }));
    }
    return svg;
  }

  function renderCollectives(out, state) {
    out.append(el("p", { class: "shardlab-explorer-summary" }, `${state.summary}（${state.chip}）`));
    out.append(el("p", { class: state.crosses_nodes ? "shardlab-explorer-where is-warning" : "shardlab-explorer-where" }, state.where));
    const legend = el("p", { class: "shardlab-explorer-legend" });
    for (const [coll, name] of Object.entries(NAMES)) {
      const item = el("span", {}, name);
      item.style.borderColor = COLORS[coll];
      if (!state.curve.time_s[coll]) item.textContent += "（无公式）";
      legend.append(item);
    }
    if (state.crossover_bytes[state.collective]) legend.append(el("span", { class: "crossover-key" }, `交点 V*（${NAMES[state.collective]}）`));
    out.append(legend);
    for (const text of state.coincide_text) out.append(el("p", { class: "shardlab-explorer-note" }, `注意：${text}。`));
    out.append(plot(state));
    out.append(el("p", { class: "shardlab-explorer-note" }, state.crossover_text));
    const details = el("details");
    details.append(el("summary", {}, "公式（formula）"), el("code", {}, state.formula_text));
    out.append(details);
  }

  const MIN_BAR = 4; // 条形图里一段的最小宽度（viewBox 单位；手机上约 3 px）

  function barChart(state) {
    const rows = state.chart.rows;
    const ticks = state.chart.ticks;
    const W = 480, L = 44, R = 92, T = 8, row = 32, B = 60;
    const H = T + rows.length * row + B;
    const max = ticks[ticks.length - 1][0] || 1;
    const px = (t) => L + (t / max) * (W - L - R);
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "shardlab-explorer-plot shardlab-explorer-bars" });
    svg.append(el("title", { svg: 1 }, "前几种做法的 T_math（蓝）与 T_comms（橙），首尾相接就是总时间"));
    for (const [t, label] of ticks) {
      svg.append(el("line", { svg: 1, x1: px(t), x2: px(t), y1: T, y2: H - B, class: "grid" }));
      svg.append(el("text", { svg: 1, x: px(t), y: H - B + 21, "text-anchor": "middle" }, label));
    }
    svg.append(el("text", { svg: 1, x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "axis-title" }, "时间（T_math + T_comms，线性刻度）"));
    rows.forEach((i, r) => {
      const o = state.options[i];
      const y = T + r * row + 5;
      svg.append(el("text", { svg: 1, x: L - 8, y: y + 16, "text-anchor": "end", class: i === state.chosen ? "chosen" : "" }, `#${i + 1}`));
      // 线性刻度上最短的条可能不到 1 px：每一段至少 MIN_BAR 宽，看得见（旁边的数字才是准的）
      const mathW = o.t_math > 0 ? Math.max(MIN_BAR, px(o.t_math) - px(0)) : 0;
      const commsW = o.t_comms > 0 ? Math.max(MIN_BAR, px(o.t_total) - px(o.t_math)) : 0;
      svg.append(el("rect", { svg: 1, x: px(0), y, width: mathW, height: row - 10, fill: BAR_COLORS.math }));
      svg.append(el("rect", { svg: 1, x: px(0) + mathW, y, width: commsW, height: row - 10, fill: BAR_COLORS.comms }));
      svg.append(el("text", { svg: 1, x: px(0) + mathW + commsW + 6, y: y + 16, class: i === state.chosen ? "chosen" : "" }, (o.warn_text ? "⚠ " : "") + o.t_total_text));
    });
    return svg;
  }

  // 做法的名字只在步骤之间（“→”之后）折行，不在 AllGather_Y(Out) 这样的名字中间断开
  function labelNode(text) {
    const span = el("span", { class: "steps" });
    text.split(" → ").forEach((part, k) => {
      if (k) span.append(document.createTextNode(" → "));
      span.append(el("span", { class: "step" }, part));
    });
    return span;
  }

  function optionRow(state, i, group) {
    const o = state.options[i];
    const line = state.figure_lines.find((ln) => ln.index === i);
    const row = el("tr", { class: [i === state.chosen ? "chosen" : "", line ? "figure-line" : ""].join(" ").trim() });
    const label = el("td", { class: "label" });
    label.append(labelNode(o.label));
    if (line) label.append(el("span", { class: "line" }, `← ${line.line}`));
    if (group && group.members.length > 1) label.append(el("span", { class: "more" }, `（同样的通信组合另有 ${group.members.length - 1} 种）`));
    if (o.warn_text) label.append(el("span", { class: "warn" }, o.warn_text));
    // 偏乐观的时间（组跨节点而代价模型按连续放置算）前面标 ⚠，说明在做法一栏。
    // 总时间紧跟名次、在做法之前：手机上不用左右滑动就看得到最要紧的一栏
    const mark = o.warn_text ? "⚠ " : "";
    row.append(el("td", { class: "num" }, `#${i + 1}`), el("td", { class: "time total" }, mark + o.t_total_text), label);
    for (const text of [o.t_math_text, mark + o.t_comms_text]) row.append(el("td", { class: "time" }, text));
    return row;
  }

  function renderTable(state, all) {
    const table = el("table", { class: "shardlab-explorer-table" });
    const head = el("tr");
    const what = all ? "做法（按总时间排序）" : "做法（每种通信组合只列最快的一种）";
    for (const h of ["名次", "总时间", what, "T_math", "T_comms"]) head.append(el("th", h === what ? { class: "label" } : {}, h));
    table.append(head);
    const groupOf = new Map(state.groups.map((g) => [g.members[0], g]));
    const rows = all ? state.options.map((_, i) => i) : state.shown;
    for (const i of rows) table.append(optionRow(state, i, all ? null : groupOf.get(i)));
    return table;
  }

  // 表格比框宽时在上面加一行“左右滑动”的提示（与 course.js 给正文表格加的提示一样）
  function scrollCue(wrap) {
    const old = wrap.previousElementSibling;
    if (old && old.classList.contains("course-scroll-cue")) old.remove();
    if (wrap.scrollWidth > wrap.clientWidth + 2) {
      const cue = el("div", { class: "course-scroll-cue shardlab-explorer-cue", "aria-hidden": "true" }, "表格较宽：左右滑动查看 ⇆");
      wrap.parentNode.insertBefore(cue, wrap);
    }
  }

  function renderSharding(out, state) {
    const layout = el("p", { class: "shardlab-explorer-layout" });
    layout.append(el("strong", {}, "假设的分片："), document.createTextNode(state.layout));
    if (state.unused_axes_text) layout.append(document.createTextNode(state.unused_axes_text));
    const topo = el("p", { class: state.topology_warning ? "shardlab-explorer-where is-warning" : "shardlab-explorer-where" });
    topo.append(el("strong", {}, "假设的拓扑："), document.createTextNode(state.topology_text));
    out.append(layout, topo, el("p", { class: "shardlab-explorer-summary" }, `${state.summary}（${state.chip}）`));
    const legend = el("p", { class: "shardlab-explorer-legend" });
    for (const [key, name] of [["math", "T_math（计算）"], ["comms", "T_comms（通信）"]]) {
      const item = el("span", {}, name);
      item.style.borderColor = BAR_COLORS[key];
      legend.append(item);
    }
    out.append(legend, barChart(state));
    if (state.figure_text) out.append(el("p", { class: "shardlab-explorer-note shardlab-explorer-lines" }, state.figure_text));
    out.append(el("p", { class: "shardlab-explorer-note" }, state.rank_note));
    const wrap = el("div", { class: "shardlab-explorer-scroll" });
    let all = false;
    wrap.append(renderTable(state, all));
    out.append(wrap);
    const hidden = state.options.length - state.shown.length;
    if (hidden > 0) {
      const toggle = el("button", { type: "button", class: "shardlab-explorer-toggle" }, `显示全部 ${state.options.length} 种做法`);
      toggle.addEventListener("click", () => {
        all = !all;
        wrap.replaceChildren(renderTable(state, all));
        toggle.textContent = all ? "只列每种通信组合里最快的一种" : `显示全部 ${state.options.length} 种做法`;
        scrollCue(wrap);
      });
      out.append(toggle);
    }
    const details = el("details");
    details.append(el("summary", {}, "规划器的说明"), el("pre", {}, state.explain));
    out.append(details);
    scrollCue(wrap); // out 已在页面里，宽度此刻就量得出；字体晚到时下一帧再量一次
    requestAnimationFrame(() => scrollCue(wrap));
  }

  async function recompute(root, call) {
    showRanges(root);
    const [name, args] = argsOf(root);
    const ticket = (root._ticket = (root._ticket || 0) + 1);
    const t0 = performance.now();
    let state;
    try {
      state = await call(name, args);
    } catch (err) {
      state = { args, error: String(err).split("\n").filter(Boolean).pop() };
    }
    if (ticket !== root._ticket) return; // 之后又改了控件：只显示最新的结果
    root.dataset.ms = String(performance.now() - t0);
    const out = root.querySelector(".shardlab-explorer-output");
    if (state.error) {
      // 保留上一次的结果，在上面加一行说明
      for (const old of out.querySelectorAll(".shardlab-explorer-error")) old.remove();
      out.prepend(el("p", { class: "shardlab-explorer-error" }, `这组参数算不了：${state.error}${out.childElementCount ? "（下面仍是上一组参数的结果）" : ""}`));
    } else {
      out.replaceChildren();
      if (root.dataset.kind === "collectives") renderCollectives(out, state);
      else renderSharding(out, state);
    }
    root.dataset.state = JSON.stringify(state); // 画完才写：等 data-state 变化的人看到的是画好的结果
    root.dispatchEvent(new CustomEvent("shardlab-explorer-update"));
  }

  const starters = new Set(); // 正在等运行时的各个探索器：进度文字同时显示在它们上面

  async function start(root) {
    const button = root.querySelector(".shardlab-explorer-button");
    const status = root.querySelector(".shardlab-explorer-status");
    button.disabled = true;
    root.classList.remove("is-failed", "is-slow");
    root.classList.add("is-loading");
    status.textContent = "正在启动（Python 在后台的 Web Worker 里加载，网页可以照常滚动和阅读）……";
    // 只在一段时间里没有任何进展（新的字节或步骤）时提示；之后一有进展就接着显示进度
    progressAt = performance.now();
    const watchdog = setInterval(() => {
      const idle = performance.now() - progressAt;
      if (idle < STALL_MS() || root.classList.contains("is-failed")) return;
      if (downloaded) {
        // 字节都到了，只是编译慢：不提网络与服务器，过一阵才说一句
        if (idle >= 2 * STALL_MS() && !status.textContent.includes("仍在编译")) {
          status.textContent += "（仍在编译，慢的设备上可能要半分钟）";
        }
        return;
      }
      status.textContent =
        `已有 ${Math.round(idle / 1000)} 秒没有进展（可能是网络慢或正在编译）。如果一直停在这里：确认页面是经 http(s):// 打开的、` +
        "服务器对 .wasm 返回 application/wasm；也可以在笔记本里直接调用 shardlab.explorer 得到同样的数字。";
      root.classList.add("is-slow");
    }, 1000);
    let problem = null;
    const onProblem = (text) => {
      problem = problem || text;
      for (const r of starters) {
        r.querySelector(".shardlab-explorer-status").textContent = problem;
        r.classList.add("is-failed");
      }
    };
    const onProgress = (text) => {
      progressAt = performance.now();
      for (const r of starters) {
        if (r.classList.contains("is-failed")) continue;
        r.classList.remove("is-slow");
        r.querySelector(".shardlab-explorer-status").textContent = text;
      }
    };
    starters.add(root);
    try {
      const t0 = performance.now();
      runtime = runtime || boot(onProgress, onProblem, JSON.parse(root.dataset.download || "{}"));
      const call = await Promise.race([
        runtime,
        new Promise((_, reject) => {
          const poll = setInterval(() => problem && (clearInterval(poll), reject(new ExplorerError(problem))), 100);
          const stop = () => clearInterval(poll);
          runtime.then(stop, stop);
        }),
      ]);
      const form = root.querySelector("form");
      for (const c of form.elements) c.disabled = false;
      syncChoices(form, root.dataset.kind);
      form.addEventListener("input", (event) => {
        if (["chip", "mesh", "scenario"].includes(event.target.name)) syncChoices(form, root.dataset.kind);
        recompute(root, call);
      });
      await recompute(root, call);
      root.dataset.startMs = String(performance.now() - t0);
      status.textContent = "已就绪：改动上面的控件，结果立即重算。";
      root.classList.remove("is-slow");
      root.classList.add("is-ready");
    } catch (err) {
      runtime = null;
      status.textContent = problem || (err instanceof ExplorerError ? err.message : `启动失败：${err}`);
      root.classList.add("is-failed");
      button.disabled = false;
    } finally {
      starters.delete(root);
      root.classList.remove("is-loading");
      clearInterval(watchdog);
    }
  }

  function init() {
    for (const root of document.querySelectorAll(".shardlab-explorer")) {
      root.querySelector(".shardlab-explorer-button").addEventListener("click", () => start(root));
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
