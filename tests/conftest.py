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
