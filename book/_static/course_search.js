/* 从搜索结果点进来的页面：高亮查询的词，并把它滚到屏幕里（tools/site_zh.py 在每一页载入它；
   tests/test_site_search.py 在 Chromium 里检查效果）。

   Sphinx 的 sphinx_highlight.js 把查询切成单个的词、在整个 <body>（连同侧栏和目录）里高亮，也不滚动：
   页首以外的结果点开后看不到高亮在哪。这里替换它的 highlightSearchWords：

   - 查询来自链接上的 ?highlight=（搜索页 tools/site_search.js 加上的整个查询），没有时用 Sphinx 放在 localStorage 里的词；
   - 只在正文（article）里高亮，不碰数学式（MathJax 还要排版它）；整个查询（“多轴 AllGather”）出现时只高亮整个查询，
     否则逐个词高亮；
   - 有锚点时浏览器已经滚到锚点：锚点之后的第一处高亮不在屏幕里才滚过去；没有锚点时滚到第一处可见的高亮。
     MathJax 排完版后版面会变，那时再看一次（读者已经动手滚动或按键时不再动）。 */
(function () {
  "use strict";

  if (typeof SphinxHighlight === "undefined") {
    return;
  }

  var SKIP = "script, style, textarea, button, select, .math, mjx-container, .headerlink, .highlighted";

  function textNodes(root) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var el = node.parentElement;
        return el && !el.closest(SKIP) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
      },
    });
    var out = [];
    for (var n = walker.nextNode(); n; n = walker.nextNode()) {
      out.push(n);
    }
    return out;
  }

  // 把 root 里每一处 word（不分大小写）包进 span.highlighted；返回包了几处
  function mark(root, word) {
    var count = 0;
    textNodes(root).forEach(function (node) {
      var rest = node;
      for (;;) {
        var pos = rest.nodeValue.toLowerCase().indexOf(word);
        if (pos < 0) {
          return;
        }
        var hit = rest.splitText(pos);
        rest = hit.splitText(word.length);
        var span = document.createElement("span");
        span.className = "highlighted";
        hit.parentNode.replaceChild(span, hit);
        span.appendChild(hit);
        count++;
      }
    });
    return count;
  }

  function visible(el) {
    return el.getClientRects().length > 0;
  }

  function onScreen(el) {
    var r = el.getBoundingClientRect();
    var header = document.querySelector("header.bd-header");
    var top = header ? header.getBoundingClientRect().bottom : 0;
    return r.top >= top && r.bottom <= window.innerHeight;
  }

  // 要看的那一处：锚点之内或之后的第一处可见高亮；没有锚点时第一处可见高亮
  function focusTarget(article) {
    var marks = Array.prototype.filter.call(article.querySelectorAll("span.highlighted"), visible);
    var hash = decodeURIComponent(window.location.hash.slice(1));
    var anchor = hash ? document.getElementById(hash) : null;
    if (!anchor) {
      return marks[0] || null;
    }
    for (var i = 0; i < marks.length; i++) {
      if (anchor.contains(marks[i]) || anchor.compareDocumentPosition(marks[i]) & Node.DOCUMENT_POSITION_FOLLOWING) {
        return marks[i];
      }
    }
    return null;
  }

  var touched = false;
  ["wheel", "touchstart", "keydown", "mousedown"].forEach(function (kind) {
    window.addEventListener(
      kind,
      function () {
        touched = true;
      },
      { passive: true, once: true },
    );
  });

  function bringIntoView(article) {
    if (touched) {
      return;
    }
    var target = focusTarget(article);
    if (target && !onScreen(target)) {
      target.scrollIntoView({ block: "center" });
    }
  }

  var done = false;

  function highlight() {
    if (done) {
      return;
    }
    done = true;
    var url = new URL(window.location.href);
    var phrase = (url.searchParams.get("highlight") || "").trim().replace(/\s+/g, " ").toLowerCase();
    var stored = localStorage.getItem("sphinx_highlight_terms") || "";
    localStorage.removeItem("sphinx_highlight_terms");
    if (url.searchParams.has("highlight")) {
      url.searchParams.delete("highlight");
      window.history.replaceState(window.history.state, "", url.href);
    }
    var words = (phrase || stored.toLowerCase()).split(/\s+/).filter(function (w) {
      return w;
    });
    if (!phrase && !words.length) {
      return;
    }
    var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    if (!(phrase && mark(article, phrase)) && words.length > 1) {
      words.forEach(function (w) {
        mark(article, w);
      });
    } else if (!phrase) {
      mark(article, words[0]);
    }
    bringIntoView(article);
    window.addEventListener("load", function () {
      bringIntoView(article);
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
        MathJax.startup.promise.then(function () {
          bringIntoView(article);
        });
      }
    });
  }

  // sphinx_highlight.js 只在没有全局 Search 时才高亮，而这个主题的每一页都有一个 Search 对象：
  // Sphinx 自己从不高亮。所以在正文页自己调用（搜索页上不高亮：那里的词是上一次搜索的）
  SphinxHighlight.highlightSearchWords = highlight;
  function start() {
    if (!document.getElementById("search-results")) {
      highlight();
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
