"""测试的共同设置：在任何测试触碰 JAX 设备之前建立 8 个模拟 CPU 设备；整本书的共享构建；nbval 的执行结果交给构建

这个文件也在 make test-compat 的环境（jax 0.7.2，只装 requirements-compat.txt）里加载：那里没有 jupytext、
BeautifulSoup、PyYAML，所以用到它们的模块只在夹具里导入。
"""

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

RT = runtime.setup("cpu")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import notebook_cache  # noqa: E402  tests/notebook_cache.py

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
NBVAL_CACHE = "shardlab-nbval-cache"


KERNEL_START_TRIES = 3


def with_start_retry(start):
    """包住 nbval 的 start_new_kernel：内核还没回 kernel_info 就退出时再试，最多 KERNEL_START_TRIES 次

    这是启动本身的偶发故障，与笔记本无关：一次 CI 里 ch05 的内核起步即退出，它的 61 个单元全部报错，
    其余笔记本都通过。每次重试都留下一条警告（pytest 的 warnings summary 里看得到），不会悄悄吞掉；
    笔记本里的错误照常失败，因为重试只包住启动。
    """
    import warnings

    def start_with_retry(*args, **kwargs):
        for attempt in range(1, KERNEL_START_TRIES + 1):
            try:
                return start(*args, **kwargs)
            except RuntimeError as err:
                if attempt == KERNEL_START_TRIES:
                    raise
                warnings.warn(f"nbval 的内核第 {attempt} 次启动失败（{err}），重试", stacklevel=2)

    start_with_retry.shardlab_retry = True
    return start_with_retry


def pytest_configure(config):
    """注册成全局插件：conftest 的钩子只管 tests/ 里的测试，而 nbval 的单元在 book/、solutions/、exercises/"""
    if not config.pluginmanager.has_plugin(NBVAL_CACHE):
        config.pluginmanager.register(notebook_cache.NbvalCache(), NBVAL_CACHE)
    from nbval import kernel

    if not getattr(kernel.start_new_kernel, "shardlab_retry", False):
        kernel.start_new_kernel = with_start_retry(kernel.start_new_kernel)


def pytest_report_header(config):
    import jax
    import jaxlib

    return f"jax {jax.__version__}，jaxlib {jaxlib.__version__}（{sys.executable}）"


@pytest.fixture(scope="session")
def key_file(tmp_path_factory) -> Path:
    """评分器测试用的答案表（与 make answer-key 同样的格式），数值来自参考算法；另有测试保证它与解答笔记本一致"""
    from shardlab.grade.key import registry_key  # 要 jupytext，兼容环境里没有

    path = tmp_path_factory.mktemp("key") / "answer_key.json"
    path.write_text(json.dumps(registry_key()), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    """浏览器测试用的 Chromium：本地没有时跳过并说明原因，CI 里没有时失败"""
    from tools import site_check

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
    这次运行里 nbval 要执行的笔记本（``notebooks`` 个）先跑：每跑完一个，``notebook_cache`` 把输出写进构建的
    jupyter-cache（``_build/.jupyter_cache``，书的配置是 ``execute_notebooks: cache``）并在 ``done`` 里留一个标记；
    标记齐了（或有进程提前结束、写下 ``release``）构建才开始，于是它直接用缓存里的输出，不再执行第二遍。
    """

    WAIT_FOR_NBVAL_S = 1200  # nbval 卡住时构建最多等这么久，然后自己执行

    def __init__(self, shared: Path):
        self.dir = shared / "book-build"
        self.html = self.dir / "_build" / "html"
        self.cache = self.dir / "_build" / ".jupyter_cache"  # myst-nb 的默认位置：<--path-output>/_build/.jupyter_cache
        self.done, self.release = shared / "nbval-done", shared / "nbval-release"
        self.log, self.rc = shared / "book-build.log", shared / "book-build.rc"
        self.lock = FileLock(str(shared / "book-build.lock"))
        self.proc: subprocess.Popen | None = None

    def start(self, notebooks: int = 0) -> None:
        with self.lock:
            if self.log.exists():
                return  # 另一个进程已经启动了它
            self.done.mkdir(parents=True, exist_ok=True)
            jb = Path(sys.executable).with_name("jupyter-book")
            env = dict(os.environ, COURSE_PROFILE="cpu", JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))
            cmd = [str(jb), "build", "-W", "-n", "--keep-going", "--path-output", str(self.dir), str(ROOT)]
            quoted = " ".join(shlex.quote(c) for c in cmd)
            done, release = shlex.quote(str(self.done)), shlex.quote(str(self.release))
            wait = (
                f"i=0; while [ $(ls {done} | wc -l) -lt {notebooks} ] && [ ! -e {release} ] "
                f"&& [ $i -lt {self.WAIT_FOR_NBVAL_S * 2} ]; do sleep 0.5; i=$((i+1)); done; "
                f'echo "等 nbval：$((i/2)) s，$(ls {done} | wc -l)/{notebooks} 个笔记本" > {shlex.quote(str(self.log))}; '
            )
            script = wait + f"{quoted} >> {shlex.quote(str(self.log))} 2>&1; "
            script += f"echo $? > {shlex.quote(str(self.rc))}.tmp && mv {shlex.quote(str(self.rc))}.tmp {shlex.quote(str(self.rc))}"
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
    顺序是：nbval 的笔记本（大的在前）、有 slow 测试的文件（评分器等，最费时）、用到构建的文件、其余单元测试。
    构建等笔记本跑完（它用 nbval 写进缓存的输出，见 BookBuild），与第二组同时进行，轮到第三组时它已经好了；
    两遍浏览器检查（test_site.py 的桌面、test_site_phone.py 的手机与搜索）分给两个进程同时跑，之后两个进程一起做单元测试。
    """
    if config.option.collectonly:
        return
    notebooks = {i.path for i in items if notebook_cache.is_nbval_cell(i)}
    late = {i.path for i in items if _uses_build(i)}
    slow = {i.path for i in items if i.get_closest_marker("slow")} - late - notebooks
    rank = {path: 1 if path in slow else 2 if path in late else 3 for path in {i.path for i in items}}
    # nbval 的笔记本最先，大的在前（构建等它们跑完）；文件大小大致反映执行时间
    rank.update({path: -path.stat().st_size for path in notebooks})
    items.sort(key=lambda i: rank[i.path])  # 稳定排序：同一组里保持收集的顺序
    if not late:
        return
    build = config.stash[BUILD_KEY] = BookBuild(_shared_dir(config))
    cache = config.pluginmanager.get_plugin(NBVAL_CACHE)
    if cache is not None:
        cache.cache_dir, cache.done_dir = build.cache, build.done
    build.start(len(notebooks))


def pytest_unconfigure(config):
    build = config.stash.get(BUILD_KEY, None)
    if build is not None:
        build.release.touch()  # 这个进程不再跑笔记本了（-x、中断）：别让构建一直等
        build.stop()


@pytest.fixture(scope="session")
def built_site(request) -> Path:
    """整本书从零构建一次（-W -n），在同一次 pytest 运行的所有 xdist 进程之间共享（见 BookBuild）"""
    build = request.config.stash.get(BUILD_KEY, None) or BookBuild(_shared_dir(request.config))
    return build.wait()


@pytest.fixture(scope="session")
def glued_text(built_site):
    """``glued_text("book/ch05_collectives")``：那一页在构建时 glue 的文字（键 → 字符串，tools/site_pages.py 读出）"""
    from tools import site_pages

    return lambda page: site_pages.glued_strings(built_site, page)
