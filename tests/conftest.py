"""测试的共同设置：在任何测试触碰 JAX 设备之前建立 8 个模拟 CPU 设备；整本书的共享构建"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

os.environ.setdefault("COURSE_PROFILE", "cpu")

from shardlab import runtime  # noqa: E402

RT = runtime.setup("cpu")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_check  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def chromium() -> str:
    """浏览器测试用的 Chromium：本地没有时跳过并说明原因，CI 里没有时失败"""
    path = site_check.find_chromium()
    reason = None
    if path is None:
        reason = "没有找到 Chromium（Debian：apt-get install chromium；或设 CHROMIUM=/路径）"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "没有安装 playwright（在 requirements.txt 里；运行 make venv）"
    if reason:
        if IN_CI:
            pytest.fail(f"CI 必须运行浏览器测试：{reason}")
        pytest.skip(f"跳过浏览器测试：{reason}")
    return path


@pytest.fixture(scope="module")
def site(request) -> Path:
    """要检查的网站：SHARDLAB_SITE（make test-site 构建的 _build/html），否则是共享的从零构建 built_site"""
    given = os.environ.get("SHARDLAB_SITE")
    if given:
        path = Path(given)
        assert (path / "index.html").exists(), f"SHARDLAB_SITE={given} 里没有构建好的网站"
        return path
    return request.getfixturevalue("built_site")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """整本书从零构建一次（-W -n），在同一次 pytest 运行的所有 xdist 进程之间共享

    第一个需要它的进程在共享的临时目录里构建，其他进程等锁、复用结果；构建失败时把输出存下来，
    每个用到它的测试都报告同样的失败，而不是再构建一遍。
    """
    shared = tmp_path_factory.getbasetemp().parent
    out, failure = shared / "book-build", shared / "book-build.failed"
    with FileLock(str(shared / "book-build.lock")):
        if not (out / "_build" / "html" / "index.html").exists() and not failure.exists():
            jb = Path(sys.executable).with_name("jupyter-book")
            env = dict(os.environ, COURSE_PROFILE="cpu", JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))
            cmd = [str(jb), "build", "-W", "-n", "--keep-going", "--path-output", str(out), str(ROOT)]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
            if proc.returncode != 0:
                failure.write_text(f"{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}", encoding="utf-8")
    if failure.exists():
        pytest.fail("jupyter-book build 失败：\n" + failure.read_text(encoding="utf-8"))
    return out / "_build" / "html"
