"""测试的共同设置：在任何测试触碰 JAX 设备之前建立 8 个模拟 CPU 设备；整本书的共享构建"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

os.environ.setdefault("COURSE_PROFILE", "cpu")

from shardlab import runtime  # noqa: E402
from shardlab.grade.key import registry_key  # noqa: E402

RT = runtime.setup("cpu")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import site_check, site_pages  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def key_file(tmp_path_factory) -> Path:
    """评分器测试用的答案表（与 make answer-key 同样的格式），数值来自参考算法；另有测试保证它与解答笔记本一致"""
    path = tmp_path_factory.mktemp("key") / "answer_key.json"
    path.write_text(json.dumps(registry_key()), encoding="utf-8")
    return path


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


# ---- 整本书的共享构建：收集完就在后台开始，与前面的测试同时进行 ----


def _uses_build(item) -> bool:
    """用到构建结果的测试：site 在运行时才取 built_site，所以两个都算；给了 SHARDLAB_SITE 时 site 用现成的网站"""
    users = {"built_site"} if os.environ.get("SHARDLAB_SITE") else {"built_site", "site"}
    return bool(users & set(getattr(item, "fixturenames", ())))


def _shared_dir(config) -> Path:
    """这次 pytest 运行的所有 xdist 进程共用的临时目录（pytest 负责清理旧的）"""
    base = config._tmp_path_factory.getbasetemp()  # pytest 的 tmp_path_factory；夹具之外只能这样取
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


class BookBuild:
    """一次 ``jupyter-book build -W -n``：第一个需要它的进程在后台启动，所有进程等同一个结果

    构建由 ``sh`` 包一层，退出码写进 ``rc`` 文件，所以哪个进程都能等它结束，而不只是启动它的那个。
    """

    def __init__(self, shared: Path):
        self.dir = shared / "book-build"
        self.html = self.dir / "_build" / "html"
        self.log, self.rc = shared / "book-build.log", shared / "book-build.rc"
        self.lock = FileLock(str(shared / "book-build.lock"))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with self.lock:
            if self.log.exists():
                return  # 另一个进程已经启动了它
            jb = Path(sys.executable).with_name("jupyter-book")
            env = dict(os.environ, COURSE_PROFILE="cpu", JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))
            cmd = [str(jb), "build", "-W", "-n", "--keep-going", "--path-output", str(self.dir), str(ROOT)]
            quoted = " ".join(shlex.quote(c) for c in cmd)
            script = f"{quoted} > {shlex.quote(str(self.log))} 2>&1; echo $? > {shlex.quote(str(self.rc))}.tmp && "
            script += f"mv {shlex.quote(str(self.rc))}.tmp {shlex.quote(str(self.rc))}"
            self.log.touch()
            self.proc = subprocess.Popen(["sh", "-c", script], env=env, start_new_session=True)

    def wait(self, timeout: float = 1500) -> Path:
        """等构建结束；失败时每个用到它的测试都报告同样的输出"""
        self.start()  # 没有在收集时启动（比如只选了一个测试）时现在启动
        deadline = time.monotonic() + timeout
        while not self.rc.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter-book build 超过 {timeout:.0f} s 没有结束（日志：{self.log}）")
            time.sleep(0.5)
        rc = self.rc.read_text().strip()
        if rc != "0":
            tail = self.log.read_text(encoding="utf-8", errors="replace")[-12000:]
            pytest.fail(f"jupyter-book build 失败（退出码 {rc}）：\n{tail}")
        return self.html

    def stop(self) -> None:
        """这个进程启动的构建还在跑：被中断时停掉整个进程组，否则等它完（别的 xdist 进程可能还要用）"""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.wait(timeout=1500)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGTERM)
            raise


BUILD_KEY = pytest.StashKey[BookBuild]()


@pytest.hookimpl(trylast=True)  # 在 -k / -m 取消选择之后
def pytest_collection_modifyitems(config, items):
    """排定测试文件的顺序，并在后台开始整本书的构建

    make test 用 ``--dist loadfile --no-loadscope-reorder``：xdist 按这里的顺序一个文件一个文件地分给空闲的进程。
    顺序是：有 slow 测试的文件（评分器、执行笔记本的，最费时）在前，用到构建的文件其次，其余单元测试最后。
    构建与第一组同时进行，轮到第二组时它已经好了；两遍浏览器检查（test_site.py 的桌面、test_site_phone.py 的手机与搜索）
    分给两个进程同时跑，之后两个进程一起做单元测试。
    """
    if config.option.collectonly:
        return
    late = {i.path for i in items if _uses_build(i)}
    slow = {i.path for i in items if i.get_closest_marker("slow")} - late
    rank = {path: 0 if path in slow else 1 if path in late else 2 for path in {i.path for i in items}}
    items.sort(key=lambda i: rank[i.path])  # 稳定排序：同一组里保持收集的顺序
    if not late:
        return
    build = config.stash[BUILD_KEY] = BookBuild(_shared_dir(config))
    build.start()


def pytest_unconfigure(config):
    build = config.stash.get(BUILD_KEY, None)
    if build is not None:
        build.stop()


@pytest.fixture(scope="session")
def built_site(request) -> Path:
    """整本书从零构建一次（-W -n），在同一次 pytest 运行的所有 xdist 进程之间共享（见 BookBuild）"""
    build = request.config.stash.get(BUILD_KEY, None) or BookBuild(_shared_dir(request.config))
    return build.wait()


@pytest.fixture(scope="session")
def glued_text(built_site):
    """``glued_text("book/ch05_collectives")``：那一页在构建时 glue 的文字（键 → 字符串，tools/site_pages.py 读出）"""
    return lambda page: site_pages.glued_strings(built_site, page)
