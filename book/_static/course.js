/* 课程网站的小脚本（tests/test_site_phone.py 在 Chromium 里检查它的效果）。

   1. 侧栏按钮：主题（pydata-sphinx-theme 0.17 + sphinx-book-theme 1.3）只给页面上第一个 .primary-toggle /
      .secondary-toggle 接上了点击处理，而第一个是顶栏里隐藏的那个；手机上看得见的 ☰ 和“本页目录”按钮点了没有反应。
      这里把其余的同类按钮的点击转给第一个。
   2. 手机上放不下的表格、代码块（含笔记本的代码单元与输出）和行间式子：在它上面加一行“左右滑动”的提示
      （手机浏览器不显示滚动条，看不出右边还有内容）；只宽出一点（≤ 15%）的式子先缩小到放得下。
   3. 手机上挤不下的表格（比框宽，或有单元格窄于 MIN_CELL 像素，一行只放得下一两个汉字）：四列以上的
      （以及宽出四分之一以上的三列表）改成每行一张卡片（表头的副本写在每个格子前面，course.css 的 .course-cards）；
      其余的给每列一个最小宽度。
   4. 正文里的图（图注的图与笔记本输出的图）包进一个指向这张 PNG 本身的链接：手机上图里的字只有 10 px 左右，
      点一下就在浏览器里看原图（2 倍分辨率），能放大。alt 留在图上（链接的名字就是它）；鼠标指上去时提示一句。
      动画的逐步图（.shardlab-strip）与本来就在链接里的图不动。 */
(function () {
  "use strict";

  function forwardToggles() {
    ["primary", "secondary"].forEach(function (kind) {
      var buttons = document.querySelectorAll("." + kind + "-toggle");
      var wired = buttons[0];
      Array.prototype.forEach.call(buttons, function (button, i) {
        if (i === 0) {
          return;
        }
        button.addEventListener("click", function (event) {
          event.preventDefault();
          event.stopPropagation();
          wired.click();
        });
      });
    });
  }

  var CUE = "course-scroll-cue";
  var MIN_CELL = 48; // 与 tools/site_check.py 的 MIN_CELL_PX 相同
  var PHONE = 600; // 与 course.css 里手机的断点相同

  function labelCells(table) {
    // 每个格子前面放一份它那一列的表头（卡片里的标签），内容包进一个 span（卡片是两列的网格）。
    // 标签是表头内容的副本，不是表头的纯文字：MathJax 排好的式子（V_A、2V_C）的纯文字是
    // 逐个字母的无障碍文本（“V A”“2 V C”），照抄进标签就成了散开的字母。表头变了（MathJax 排版完）就重新抄一份
    var head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    if (!head) {
      return false;
    }
    var signature = head.innerHTML;
    if (table.dataset.courseLabels === signature) {
      return true;
    }
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        Array.prototype.forEach.call(row.cells, function (cell, i) {
          var label = cell.querySelector(":scope > .course-label");
          var span = cell.querySelector(":scope > .course-cell");
          if (!span) {
            span = document.createElement("span");
            span.className = "course-cell";
            while (cell.firstChild) {
              span.appendChild(cell.firstChild);
            }
            cell.appendChild(span);
          }
          if (!label) {
            label = document.createElement("span");
            label.className = "course-label";
            label.setAttribute("aria-hidden", "true"); // 读屏软件从表头读列名，不重复
            cell.insertBefore(label, span);
          }
          label.replaceChildren();
          var th = head.cells[i];
          if (th) {
            Array.prototype.forEach.call(th.childNodes, function (node) {
              label.appendChild(node.cloneNode(true));
            });
          }
        });
      });
    });
    table.dataset.courseLabels = signature;
    return true;
  }

  function cramped(table) {
    var holder = table.parentElement;
    if (table.getBoundingClientRect().width > holder.clientWidth + 2) {
      return true;
    }
    return Array.prototype.some.call(table.querySelectorAll("th, td"), function (cell) {
      var r = cell.getBoundingClientRect();
      return r.height > 0 && r.width < MIN_CELL - 0.5 && (cell.textContent || "").trim() !== "";
    });
  }

  function fitTables() {
    var phone = document.documentElement.clientWidth <= PHONE;
    Array.prototype.forEach.call(document.querySelectorAll(".bd-article table"), function (table) {
      table.classList.remove("course-cards", "course-min-cols");
      if (!phone || table.getBoundingClientRect().height === 0 || !cramped(table)) {
        return;
      }
      var cols = table.rows.length ? table.rows[0].cells.length : 0;
      // 三列的表宽出正文四分之一以上（教师指南里 450–730 px 的表）也改成卡片：滑动着读三列长文字很累
      var wide = table.getBoundingClientRect().width > 1.25 * table.parentElement.clientWidth;
      if ((cols >= 4 || (cols === 3 && wide)) && labelCells(table)) {
        table.classList.add("course-cards");
      } else {
        table.classList.add("course-min-cols");
      }
    });
  }

  function refresh() {
    fitTables();
    markWide();
  }

  var MATH_SHRINK = 0.85; // 宽出不到 15% 的式子在手机上缩小到放得下（最多缩到 85%），不用滑动

  function fitMath(box) {
    // 手机上略宽的行间式子缩小一点；每次先恢复原来的字号再量（窗口变宽时不再缩小）
    if (box.dataset.courseFont === undefined) {
      box.dataset.courseFont = box.style.fontSize || "";
    }
    box.style.fontSize = box.dataset.courseFont;
    var ratio = box.clientWidth / box.scrollWidth;
    if (document.documentElement.clientWidth > PHONE || ratio >= 1 || ratio < MATH_SHRINK) {
      return;
    }
    var px = parseFloat(getComputedStyle(box).fontSize);
    box.style.fontSize = Math.floor(px * ratio * 0.98 * 10) / 10 + "px";
  }

  function markWide() {
    // 横向滚动的是表格的容器、代码块（含笔记本的代码单元与输出）里的 <pre>、MathJax 的行间式子
    // （mjx-container）；提示放在表格容器、整个代码块（div.highlight）或整个式子（div.math）的前面
    var boxes = document.querySelectorAll(
      ".bd-article .pst-scrollable-table-container, .bd-article div.highlight > pre, " +
        ".bd-article mjx-container[display]",
    );
    Array.prototype.forEach.call(boxes, function (box) {
      var math = box.matches("mjx-container");
      if (math) {
        fitMath(box);
      }
      var anchor = math ? box.closest("div.math") || box : box.matches("pre") ? box.parentNode : box;
      var wide = box.scrollWidth > box.clientWidth + 2;
      var cue = anchor.previousElementSibling;
      var has = cue && cue.classList.contains(CUE);
      if (wide && !has) {
        cue = document.createElement("div");
        cue.className = CUE;
        cue.setAttribute("aria-hidden", "true");
        cue.textContent = math
          ? "式子较宽：左右滑动查看 ⇆"
          : box.matches("pre")
            ? "代码较宽：左右滑动查看 ⇆"
            : "表格较宽：左右滑动查看 ⇆";
        anchor.parentNode.insertBefore(cue, anchor);
      } else if (!wide && has) {
        cue.remove();
      }
    });
  }

  var ZOOM = "course-zoom";

  function linkFigures() {
    var imgs = document.querySelectorAll(".bd-article img");
    Array.prototype.forEach.call(imgs, function (img) {
      var src = img.getAttribute("src");
      if (!src || /^data:/.test(src) || img.closest("a, .shardlab-strip, .shardlab-player")) {
        return;
      }
      var link = document.createElement("a");
      link.className = ZOOM;
      link.href = src;
      link.title = "点按查看原图";
      img.parentNode.insertBefore(link, img);
      link.appendChild(img);
    });
  }

  function start() {
    linkFigures();
    forwardToggles();
    refresh();
    var timer;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 150);
    });
    // 表格里的式子由 MathJax 排版之后列宽会变：排版完再量一次
    window.addEventListener("load", function () {
      refresh();
      if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
        window.MathJax.startup.promise.then(refresh);
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
