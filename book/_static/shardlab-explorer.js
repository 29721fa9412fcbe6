// 交互探索器：点“启动”后用 Pyodide 在浏览器里运行 shardlab.explorer（与笔记本里同一份代码）。
// 每次重算把 explorer 返回的字典（含原样的参数）写进元素的 data-state，再画出来。
// 启动前不加载运行时的任何文件；file:// 打开或 .wasm 的 MIME 类型不对时几秒内用中文说明怎么办。
(() => {
  "use strict";
  const script = document.currentScript;
  const BASE = new URL("pyodide/", script ? script.src : location.href).href;
  const WATCHDOG_MS = 20000;
  const COLORS = { all_gather: "#1f77b4", reduce_scatter: "#2ca02c", all_reduce: "#d62728", all_to_all: "#9467bd" };
  const NAMES = { all_gather: "AllGather", reduce_scatter: "ReduceScatter", all_reduce: "AllReduce", all_to_all: "AllToAll" };
  let runtime = null; // Promise：Python 里的调用函数

  class ExplorerError extends Error {}

  function fmtTime(s) {
    if (!(s >= 0)) return "—";
    const units = [[1, "s"], [1e-3, "ms"], [1e-6, "µs"], [1e-9, "ns"]];
    const [f, u] = units.find(([f]) => s >= f) || units[units.length - 1];
    return `${Number((s / f).toPrecision(3))} ${u}`;
  }

  function fmtBytes(b) {
    const units = [[1e12, "TB"], [1e9, "GB"], [1e6, "MB"], [1e3, "kB"], [1, "B"]];
    const [f, u] = units.find(([f]) => b >= f) || units[units.length - 1];
    return `${Number((b / f).toPrecision(3))} ${u}`;
  }

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

  // Pyodide 用全局的 fetch 取 .wasm：加载期间查看它的响应头，MIME 类型不对就立即说明（不多发请求）
  function watchWasm(onProblem) {
    const realFetch = window.fetch;
    window.fetch = async function (input, init) {
      const response = await realFetch.call(this, input, init);
      const url = String(typeof input === "string" || input instanceof URL ? input : input.url);
      if (url.endsWith(".wasm")) {
        const type = (response.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
        if (!response.ok) {
          onProblem(`网站上找不到 Pyodide 的文件（HTTP ${response.status}）：请重新构建网站，确认 _static/pyodide/ 已上传。`);
        } else if (type !== "application/wasm") {
          onProblem(
            `服务器把 .wasm 文件的类型报成“${type || "（空）"}”，浏览器要求 application/wasm。` +
              "请在服务器的 MIME 类型里加上 .wasm → application/wasm（例如 nginx 的 mime.types 写 application/wasm wasm;），" +
              "或者改用 python3 -m http.server 提供网站。",
          );
        }
      }
      return response;
    };
    return () => {
      window.fetch = realFetch;
    };
  }

  async function boot(onProblem) {
    checkServing();
    const { loadPyodide } = await import(BASE + "pyodide.mjs");
    const restore = watchWasm(onProblem);
    let py;
    try {
      py = await loadPyodide({ indexURL: BASE, stdout: () => {}, stderr: (t) => console.warn(t) });
    } finally {
      restore();
    }
    const zip = await fetch(BASE + "shardlab-core.zip");
    if (!zip.ok) throw new ExplorerError(`网站上找不到 shardlab-core.zip（HTTP ${zip.status}）：请重新构建网站。`);
    py.FS.writeFile("/shardlab-core.zip", new Uint8Array(await zip.arrayBuffer()));
    py.runPython(
      [
        "import json, sys",
        "sys.path.insert(0, '/shardlab-core.zip')",
        "from shardlab import explorer",
        "def _shardlab_call(name, args):",
        "    return json.dumps(getattr(explorer, name)(**json.loads(args)), allow_nan=False, ensure_ascii=False)",
      ].join("\n"),
    );
    const call = py.globals.get("_shardlab_call");
    return (name, args) => JSON.parse(call(name, JSON.stringify(args)));
  }

  function parseMesh(text) {
    const mesh = {};
    for (const part of text.split(",")) {
      const [name, size] = part.split("=");
      mesh[name] = Number(size);
    }
    return mesh;
  }

  function syncAxes(form) {
    const names = Object.keys(parseMesh(form.mesh.value));
    const wanted = names.map((n) => [n, n]);
    if (names.length > 1) wanted.push([names.join(","), names.join(" 和 ")]);
    const old = form.axes.value;
    form.axes.replaceChildren(...wanted.map(([v, t]) => el("option", { value: v }, t)));
    form.axes.value = wanted.some(([v]) => v === old) ? old : names[0];
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
      { B: 2 ** Number(f.B.value), D: 2 ** Number(f.D.value), F: 2 ** Number(f.F.value), chip: f.chip.value, mesh: parseMesh(f.mesh.value) },
    ];
  }

  function showRanges(root) {
    for (const out of root.querySelectorAll("output[data-for]")) {
      const input = root.querySelector(`input[name="${out.dataset.for}"]`);
      out.textContent = input.name === "nbytes" ? fmtBytes(Math.round(10 ** Number(input.value))) : String(2 ** Number(input.value));
    }
  }

  function plot(state) {
    const W = 480, H = 300, L = 70, R = 26, T = 16, B = 44;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "shardlab-explorer-plot" });
    const xs = state.curve.nbytes;
    const all = Object.values(state.curve.time_s).filter(Boolean).flat().filter((t) => t > 0);
    const x0 = Math.log10(xs[0]), x1 = Math.log10(xs[xs.length - 1]);
    const y0 = Math.floor(Math.log10(Math.min(...all))), y1 = Math.ceil(Math.log10(Math.max(...all)));
    const px = (v) => L + ((Math.log10(v) - x0) / (x1 - x0)) * (W - L - R);
    const py = (t) => T + (1 - (Math.log10(t) - y0) / (y1 - y0 || 1)) * (H - T - B);
    svg.append(el("title", { svg: 1 }, `${state.chip}：四种集合通信的时间随大小 V 变化（双对数坐标）`));
    for (let e = Math.ceil(x0); e <= x1; e++) {
      svg.append(el("line", { svg: 1, x1: px(10 ** e), x2: px(10 ** e), y1: T, y2: H - B, class: "grid" }));
      svg.append(el("text", { svg: 1, x: px(10 ** e), y: H - B + 18, "text-anchor": "middle" }, fmtBytes(10 ** e)));
    }
    const step = Math.max(1, Math.ceil((y1 - y0) / 6));
    for (let e = y0; e <= y1; e += step) {
      svg.append(el("line", { svg: 1, x1: L, x2: W - R, y1: py(10 ** e), y2: py(10 ** e), class: "grid" }));
      svg.append(el("text", { svg: 1, x: L - 6, y: py(10 ** e) + 5, "text-anchor": "end" }, fmtTime(10 ** e)));
    }
    svg.append(el("text", { svg: 1, x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "大小 V（字节）"));
    // 选中的集合通信最后画，压在同样时间的曲线上面
    const order = Object.keys(state.curve.time_s).sort((a, b) => (a === state.collective) - (b === state.collective));
    for (const coll of order) {
      const times = state.curve.time_s[coll];
      if (!times) continue;
      const d = times.map((t, i) => `${i ? "L" : "M"}${px(xs[i]).toFixed(1)},${py(Math.max(t, 10 ** y0)).toFixed(1)}`).join("");
      const width = coll === state.collective ? 3.5 : 1.5;
      svg.append(el("path", { svg: 1, d, fill: "none", stroke: COLORS[coll], "stroke-width": width, "data-collective": coll }));
    }
    const cross = state.crossover_bytes[state.collective];
    if (cross && cross >= xs[0] && cross <= xs[xs.length - 1]) {
      svg.append(el("line", { svg: 1, x1: px(cross), x2: px(cross), y1: T, y2: H - B, class: "crossover" }));
    }
    if (state.time_s > 0) {
      svg.append(el("circle", { svg: 1, cx: px(Math.min(Math.max(state.nbytes, xs[0]), xs[xs.length - 1])), cy: py(state.time_s), r: 6, fill: COLORS[state.collective], class: "current" }));
    }
    return svg;
  }

  function renderCollectives(out, state) {
    const cross = state.crossover_bytes[state.collective];
    const regime = state.regime === "latency-bound" ? "延迟受限" : "带宽受限";
    out.append(el("p", { class: "shardlab-explorer-summary" }, `${state.summary}（${state.chip}）`));
    out.append(
      el("p", {}, cross ? `延迟项与带宽项相等的大小：约 ${fmtBytes(cross)}；比它小是延迟受限，比它大是带宽受限。当前：${regime}。` : `只有一台设备，不需要通信。`),
    );
    const legend = el("p", { class: "shardlab-explorer-legend" });
    for (const [coll, name] of Object.entries(NAMES)) {
      const item = el("span", {}, name);
      item.style.borderColor = COLORS[coll];
      if (!state.curve.time_s[coll]) item.textContent += "（无公式）";
      legend.append(item);
    }
    out.append(legend, plot(state));
    const details = el("details");
    details.append(el("summary", {}, "公式"), el("code", {}, state.formula));
    out.append(details);
  }

  function renderSharding(out, state) {
    const table = el("table", { class: "shardlab-explorer-table" });
    const head = el("tr");
    for (const h of ["做法（规划器的顺序）", "T_math", "T_comms", "总时间"]) head.append(el("th", {}, h));
    table.append(head);
    state.options.forEach((o, i) => {
      const row = el("tr", i === state.chosen ? { class: "chosen" } : {});
      row.append(el("td", {}, o.label), el("td", {}, fmtTime(o.t_math)), el("td", {}, fmtTime(o.t_comms)), el("td", {}, fmtTime(o.t_total)));
      table.append(row);
    });
    const best = state.options[state.chosen];
    const bound = best.bound === "compute-bound" ? "受算力限制" : "受通信限制";
    out.append(el("p", { class: "shardlab-explorer-summary" }, `最快：${best.label}，约 ${fmtTime(best.t_total)}，${bound}（${state.chip}）`));
    const wrap = el("div", { class: "shardlab-explorer-scroll" });
    wrap.append(table);
    out.append(wrap);
    const details = el("details");
    details.append(el("summary", {}, "规划器的说明"), el("pre", {}, state.explain));
    out.append(details);
  }

  async function recompute(root, call) {
    showRanges(root);
    const [name, args] = argsOf(root);
    const t0 = performance.now();
    let state;
    try {
      state = call(name, args);
    } catch (err) {
      state = { args, error: String(err).split("\n").filter(Boolean).pop() };
    }
    root.dataset.ms = String(performance.now() - t0);
    root.dataset.state = JSON.stringify(state);
    const out = root.querySelector(".shardlab-explorer-output");
    out.replaceChildren();
    if (state.error) out.append(el("p", { class: "shardlab-explorer-error" }, `这组参数算不了：${state.error}`));
    else if (root.dataset.kind === "collectives") renderCollectives(out, state);
    else renderSharding(out, state);
    root.dispatchEvent(new CustomEvent("shardlab-explorer-update"));
  }

  async function start(root) {
    const button = root.querySelector(".shardlab-explorer-button");
    const status = root.querySelector(".shardlab-explorer-status");
    button.disabled = true;
    root.classList.remove("is-failed", "is-slow");
    status.textContent = "正在加载 Python（Pyodide）……";
    const watchdog = setTimeout(() => {
      status.textContent =
        "加载比预期慢。如果一直停在这里：确认页面是经 http(s):// 打开的、服务器对 .wasm 返回 application/wasm；" +
        "也可以在笔记本里直接调用 shardlab.explorer 得到同样的数字。";
      root.classList.add("is-slow");
    }, WATCHDOG_MS);
    let problem = null;
    const onProblem = (text) => {
      problem = problem || text;
      status.textContent = problem;
      root.classList.add("is-failed");
    };
    try {
      const t0 = performance.now();
      runtime = runtime || boot(onProblem);
      const call = await Promise.race([
        runtime,
        new Promise((_, reject) => {
          const poll = setInterval(() => problem && (clearInterval(poll), reject(new ExplorerError(problem))), 100);
          const stop = () => clearInterval(poll);
          runtime.then(stop, stop);
        }),
      ]);
      root.dataset.startMs = String(performance.now() - t0);
      const form = root.querySelector("form");
      for (const c of form.elements) c.disabled = false;
      if (root.dataset.kind === "collectives") syncAxes(form);
      form.addEventListener("input", (event) => {
        if (event.target.name === "mesh" && root.dataset.kind === "collectives") syncAxes(form);
        recompute(root, call);
      });
      await recompute(root, call);
      status.textContent = "已就绪：改动上面的控件，结果立即重算。";
      root.classList.remove("is-slow");
      root.classList.add("is-ready");
    } catch (err) {
      runtime = null;
      status.textContent = problem || (err instanceof ExplorerError ? err.message : `启动失败：${err}`);
      root.classList.add("is-failed");
      button.disabled = false;
    } finally {
      clearTimeout(watchdog);
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
