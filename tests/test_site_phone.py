"""读者在手机上、在搜索框里遇到的网站（tools/site_check.py，与 test_site.py 的桌面检查分开、同时进行）

- 搜索：中文和英文的术语都找得到定义它的那一章（SEARCH_TERMS）；
- 手机（390 px）：正文每页一张截图（_build/screenshots/mobile/），图里和动画里的字不小于 10 CSS px，整页不横向溢出；
- 这一遍里同样不许有站外请求、失败的请求和控制台错误。

网站与 Chromium 从哪里来，和 test_site.py 一样（conftest.py 的 site 与 chromium）。
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_check  # noqa: E402

SCREENSHOTS = Path(os.environ.get("SHARDLAB_SCREENSHOTS", ROOT / "_build" / "screenshots"))
MOBILE_PAGES = [p for p in site_check.toc_pages() if p.startswith(("book/", "solutions/"))]  # 正文与解答各截一张
CH05, CH06 = "book/ch05_collectives", "book/ch06_sharded_matmul"
# 读者会搜的词 → 定义它的那一页
SEARCH_TERMS = {
    "集合通信": CH05,
    "环形算法": CH05,
    "回绕": CH05,
    "带宽": CH05,
    "延迟受限": CH05,
    "规约散射": CH05,
    "全收集": CH05,
    "分片": CH06,
    "收缩维": CH06,
    "AllGather": CH05,
    "shard_map": CH05,
}
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def report(site, chromium):
    return site_check.check_site(
        site,
        MOBILE_PAGES,
        chromium=chromium,
        screenshots=SCREENSHOTS,
        search_terms=SEARCH_TERMS,
        mobile=True,
        desktop=False,
    )


def _ok(problems):
    return "\n".join(problems) or "无"


@slow
def test_search_finds_chinese_and_english_terms(report):
    assert report.problems("search") == [], _ok(report.problems("search"))
    assert set(report.search) == set(SEARCH_TERMS)


@slow
def test_pages_are_legible_on_a_phone(report):
    assert report.problems("mobile") == [], _ok(report.problems("mobile"))
    assert report.mobile_figures >= 1
    for page in MOBILE_PAGES:
        assert (SCREENSHOTS / "mobile" / f"{page}.png").exists(), page


@slow
def test_no_request_leaves_the_site_and_nothing_fails(report):
    assert report.blocked == [], _ok(report.problems("external"))
    problems = report.problems("failed") + report.problems("console") + report.problems("load")
    assert problems == [], _ok(problems)
