/* 搜索页的排序、摘要与结果链接（tools/site_zh.py 把它设为 html_search_scorer；Sphinx 把它放进 language_data.js，
   在 searchtools.js 之后、搜索开始之前载入，所以可以改写 Scorer 和 Search 的方法）。tests/test_site_search.py 检查效果。

   1. 排序：课程术语的定义处是主索引条目（tools/site_zh.py 的 DEFINITIONS），searchtools.js 已经把它们排在全文结果前面；
      这里只把练习、解答、前言、教师指南的全文结果（没有锚点的整页结果）往后放，让正文各章先出来。
   2. 摘要：Sphinx 取整页文字里第一次出现的位置前后 240 个字，常常是页首的目录、原样的 TeX 或代码。
      这里只看正文段落（不看目录、代码、输出、表格），取含查询词的那一句；数学式换成简单的文字。
      有锚点时先找锚点之后的段落。
   3. 同一页只列一次（分数最高的那个结果）。
   4. 结果链接带上 ?highlight=查询：落地页（book/_static/course_search.js）高亮整个查询并滚到它那里，
      在新标签页打开或第二次点开也一样（Sphinx 只用 localStorage 传一次）。

   开头的分号：language_data.js 里前面那段代码不以分号结尾，没有它这个 IIFE 会被当成对那段代码的调用。 */

;(function () {
  "use strict";

  const DEMOTED = /^(exercises|solutions)\/|^book\/(preface|instructor_guide)$/;
  Scorer.score = (result) => {
    const [docname, , anchor, , score] = result;
    return !anchor && DEMOTED.test(docname) ? score - 20 : score;
  };

  // 同一页只列一次：Sphinx 只去掉五项全同的结果，定义的索引条目、节标题的匹配与整页的全文结果
  // （锚点或标题不同）就把同一页、同一节列了几遍。_performSearch 返回的数组最后一项先显示（分数最高），
  // 从后往前保留每页第一次出现的那一个，即分数最高的那个（有定义时是定义处）。
  const performSearch = Search._performSearch;
  Search._performSearch = (...args) => {
    const results = performSearch(...args);
    const seen = new Set();
    const kept = [];
    for (let i = results.length - 1; i >= 0; i--) {
      if (seen.has(results[i][0])) continue;
      seen.add(results[i][0]);
      kept.push(results[i]);
    }
    return kept.reverse();
  };

  const query = () =>
    (new URLSearchParams(window.location.search).get("q") || "").trim().replace(/\s+/g, " ");

  // ---------- 数学式 → 文字 ----------
  const SYMBOLS = {
    cdot: "·", times: "×", to: "→", rightarrow: "→", leftarrow: "←", leq: "≤", le: "≤", geq: "≥", ge: "≥",
    approx: "≈", neq: "≠", ne: "≠", infty: "∞", lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉",
    ldots: "…", cdots: "…", dots: "…", lvert: "|", rvert: "|", vert: "|", sum: "Σ", prod: "Π",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", lambda: "λ", mu: "μ", pi: "π", sigma: "σ",
    tau: "τ", phi: "φ", Delta: "Δ", Sigma: "Σ", quad: " ", qquad: " ", ",": " ", ";": " ", ":": " ", " ": " ",
    "{": "{", "}": "}", "%": "%", "_": "_", "#": "#", "&": "&",
  };
  const texToText = (tex) => {
    let s = tex.trim().replace(/^\\[([]/, "").replace(/\\[)\]]$/, "").replace(/^\$+|\$+$/g, "");
    for (let i = 0; i < 4; i++) {
      s = s.replace(/\\(?:text|textrm|textbf|mathrm|mathbf|mathit|mathsf|operatorname|boldsymbol)\s*\{([^{}]*)\}/g, "$1");
      s = s.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "$1/$2");
      s = s.replace(/\\sqrt\s*\{([^{}]*)\}/g, "√$1");
    }
    s = s.replace(/\\(?:left|right|big|Big|bigg|Bigg)[lr]?\b/g, "").replace(/\\!/g, "");
    s = s.replace(/\\xrightarrow\s*\{[^{}]*\}/g, "→");
    s = s.replace(/\\([A-Za-z]+|.)/g, (m, name) => (name in SYMBOLS ? SYMBOLS[name] : /^[A-Za-z]+$/.test(name) ? "" : name));
    s = s.replace(/_\{([^{}]*)\}/g, "_$1").replace(/\^\{([^{}]*)\}/g, "^$1").replace(/[{}]/g, "");
    return s.replace(/\s+/g, " ").trim();
  };

  // ---------- 正文段落 ----------
  const NOT_PROSE = [
    "nav", ".toctree-wrapper", "#jb-print-toc", ".bd-toc", ".contents", "pre", ".highlight", ".cell",
    ".cell_output", ".output", "table", "script", "style", ".headerlink", ".admonition-title",
    ".prev-next-area", "footer", "header",
  ].join(", ");

  const paragraphText = (p) => {
    const copy = p.cloneNode(true);
    copy.querySelectorAll(".headerlink, script, style").forEach((el) => el.remove());
    copy.querySelectorAll(".math").forEach((el) => el.replaceWith(texToText(el.textContent)));
    return copy.textContent.replace(/\s+/g, " ").trim();
  };

  // 含查询位置 pos（长 len）的那一句；太长时截取它周围，太短时带上下一句
  const ENDS = /[。！？]|[.!?](?=\s|$)/;
  const MAX = 150;
  const sentence = (text, pos, len) => {
    let start = pos;
    while (start > 0 && !ENDS.test(text[start - 1])) start--;
    let end = pos + len;
    while (end < text.length && !ENDS.test(text[end])) end++;
    end = Math.min(text.length, end + 1);
    while (end - start < 40 && end < text.length) {
      end++;
      while (end < text.length && !ENDS.test(text[end - 1])) end++;
    }
    if (end - start > MAX) {
      const from = Math.max(start, Math.min(pos - 40, end - MAX));
      start = from;
      end = Math.min(end, from + MAX);
    }
    const head = start > 0 ? "……" : "";
    const tail = end < text.length ? "……" : "";
    return head + text.slice(start, end).trim() + tail;
  };

  const summaryFor = (doc, keywords, anchor) => {
    const main = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]') || doc.body;
    if (!main) return "";
    const paragraphs = Array.from(main.querySelectorAll("p")).filter((p) => !p.closest(NOT_PROSE));
    const target = anchor ? doc.getElementById(decodeURIComponent(anchor.replace(/^#/, ""))) : null;
    const after = (p) =>
      target && (target.contains(p) || target.compareDocumentPosition(p) & Node.DOCUMENT_POSITION_FOLLOWING);
    const phrase = query().toLowerCase();
    const words = [...keywords].map((k) => k.toLowerCase()).filter((k) => k);
    const texts = new Map();
    const text = (p) => {
      if (!texts.has(p)) texts.set(p, paragraphText(p));
      return texts.get(p);
    };
    const tries = [
      [(p) => after(p), phrase],
      [() => true, phrase],
      ...words.map((w) => [(p) => after(p), w]),
      ...words.map((w) => [() => true, w]),
    ];
    for (const [where, needle] of tries) {
      if (!needle) continue;
      for (const p of paragraphs) {
        if (!where(p)) continue;
        const t = text(p);
        const pos = t.toLowerCase().indexOf(needle);
        if (pos >= 0) return sentence(t, pos, needle.length);
      }
    }
    // 哪一段都没有这个词（只在标题或代码里）：给这一节（或这一页）的第一段正文
    const first = paragraphs.find((p) => !target || after(p)) || paragraphs[0];
    return first ? sentence(text(first), 0, 0) : "";
  };

  Search.makeSearchSummary = (htmlText, keywords, anchor) => {
    const doc = new DOMParser().parseFromString(htmlText, "text/html");
    const summary = document.createElement("p");
    summary.classList.add("context");
    summary.textContent = summaryFor(doc, keywords, anchor);
    return summary;
  };

  // Sphinx 的 htmlToText 用 querySelector("#id")：以数字开头的 id（“7b-模型的梯度-allreduce”）会抛异常
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    doc.querySelectorAll(".headerlink, script, style").forEach((el) => el.remove());
    const target = anchor ? doc.getElementById(decodeURIComponent(anchor.replace(/^#/, ""))) : null;
    const main = target || doc.querySelector('[role="main"]');
    return main ? main.textContent : "";
  };

  // ---------- 结果链接带上查询 ----------
  const tag = (a) => {
    if (a.dataset.courseHighlight || !query()) return;
    const url = new URL(a.href, window.location.href);
    url.searchParams.set("highlight", query());
    a.href = url.href;
    a.dataset.courseHighlight = "1";
  };
  const watch = () => {
    const box = document.getElementById("search-results");
    if (!box) return;
    new MutationObserver(() => box.querySelectorAll("ul.search li > a").forEach(tag)).observe(box, {
      childList: true,
      subtree: true,
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
