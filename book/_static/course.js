/* 课程网站的小脚本（tests/test_site_phone.py 在 Chromium 里检查它的效果）。

   1. 侧栏按钮：主题（pydata-sphinx-theme 0.17 + sphinx-book-theme 1.3）只给页面上第一个 .primary-toggle /
      .secondary-toggle 接上了点击处理，而第一个是顶栏里隐藏的那个；手机上看得见的 ☰ 和“本页目录”按钮点了没有反应。
      这里把其余的同类按钮的点击转给第一个。
   2. 手机上放不下的表格和代码块：在它上面加一行“左右滑动”的提示（手机浏览器不显示滚动条，看不出右边还有内容）。 */
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

  function markWide() {
    // 横向滚动的是表格的容器和代码块里的 <pre>；提示放在表格容器或整个代码块（div.highlight）的前面
    var boxes = document.querySelectorAll(
      ".bd-article .pst-scrollable-table-container, .bd-article div.highlight > pre",
    );
    // 笔记本的代码单元与输出不加：章节里几十个，每个都加一行提示反而碍事（它们本来就是代码框）
    Array.prototype.forEach.call(boxes, function (box) {
      if (box.closest(".cell")) {
        return;
      }
      var anchor = box.matches("pre") ? box.parentNode : box;
      var wide = box.scrollWidth > box.clientWidth + 2;
      var cue = anchor.previousElementSibling;
      var has = cue && cue.classList.contains(CUE);
      if (wide && !has) {
        cue = document.createElement("div");
        cue.className = CUE;
        cue.setAttribute("aria-hidden", "true");
        cue.textContent = box.matches("pre") ? "代码较宽：左右滑动查看 ⇆" : "表格较宽：左右滑动查看 ⇆";
        anchor.parentNode.insertBefore(cue, anchor);
      } else if (!wide && has) {
        cue.remove();
      }
    });
  }

  function start() {
    forwardToggles();
    markWide();
    var timer;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(markWide, 150);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
