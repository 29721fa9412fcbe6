"""评分沙箱：在隔离的进程里用 nbval 运行一份注入过导出单元的提交

做法（以 root 运行、装有 bubblewrap 时，即 ``mode == "bwrap"``）：

* ``bwrap`` 建立新的 pid / 网络 / IPC / UTS（/ cgroup）命名空间：没有网络（只有一个未启用的 lo），
  看不见评分器和其他学生的进程，评分器一杀沙箱，命名空间里的所有进程都一起结束（``--die-with-parent``）；
* 文件系统是白名单：只读挂载 ``/usr``、``/etc``、Python 的安装目录、虚拟环境和一份**去掉参考算法**的
  ``shardlab``（``answers.py``、``check.py`` 换成不含参考值的版本）；工作目录是一块限定大小的 tmpfs，
  里面只有这一份评分用的笔记本；``/tmp`` 也是私有 tmpfs。仓库、解答、答案表、提交目录、输出目录都不可见；
* 进入沙箱后用 ``setpriv`` 换成一个随机的非特权 uid（没有任何能力、``no_new_privs``），
  于是只读挂载写不进去，``RLIMIT_NPROC`` 也真正生效（root 不受它限制）；
* 资源限制（``setrlimit``，对每个进程）：地址空间、进程/线程数、单个文件大小、CPU 时间、core 文件；
  外加整份提交的墙钟时间（超时杀掉整个进程组）和读回的输出大小上限。

``mode == "uid"``（Gradescope 的容器里 bubblewrap 用不了时；本机要明确加 ``--sandbox uid``）：没有命名空间，
学生的代码以一个专用的非特权 uid 运行（``setpriv``，没有能力、``no_new_privs``），工作目录属于它、别人进不去，
资源限制同上；它能读到机器上所有人都能读的文件，读不到只有 root 能读的（Gradescope 里的答案表、参数都是 0600）、
也写不进 root 的目录（结果）。评完一份，用这个 uid 调 ``kill(-1, SIGKILL)`` 并等到它的进程一个不剩
（``setsid`` 加两次 fork 脱离出去的守护进程也算），之后评分器才写结果。

``mode == "rlimit"`` 只有资源限制、独立的进程组和临时工作目录，没有命名空间，也不换 uid，只用于可信的提交；
评分器只在明确要求（``--sandbox rlimit``）时才这样运行，并在 gradebook.json 里记下实际用的模式。
"""

from __future__ import annotations

import compileall
import os
import pwd
import re
import resource
import secrets
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import shardlab
from shardlab.grade import redacted
from shardlab.grade.markers import PROGRESS_FD, RUNNING_MARK
from shardlab.xla_flags import with_device_count

SANDBOX_HOME = "/home/student"
NOTEBOOK_NAME = "graded.ipynb"
RC_MARK = b"@@SHARDLAB-RC="
LOG_MARK = b"@@SHARDLAB-LOG@@\n"
JUNIT_MARK = b"@@SHARDLAB-JUNIT@@\n"
MiB = 1 << 20
PLUGIN = "shardlab.grade.plugin"  # 沙箱里的 pytest 插件（-p）
REDACTED = Path(redacted.__file__).parent  # 替换参考算法与自检的两个文件
REDACTED_FILES = {"answers.py": "exercise/answers.py", "check.py": "check.py"}  # redacted/ 里的文件 → 副本里的位置
PACKAGE = Path(shardlab.__file__).resolve().parent  # 评分器自己的 shardlab 包；沙箱里同一路径挂的是去掉参考算法的副本


class Interrupted(Exception):
    """评分被中断（Ctrl-C）：不再启动新的沙箱；正在运行的被结束，它们的结果不算数"""


@dataclass(frozen=True)
class Limits:
    """每份提交的限制；默认值够一个正常的练习笔记本用上好几倍"""

    wall_s: float = 120.0  # 整份提交（含内核启动）的墙钟时间
    cell_s: float = 30.0  # 每个单元的时间（nbval --nbval-cell-timeout）
    memory_bytes: int = 4 << 30  # 每个进程的地址空间（RLIMIT_AS）；JAX 内核本身约 1.7 GiB 的虚拟地址
    nproc: int = 512  # 沙箱 uid 的进程 + 线程数（RLIMIT_NPROC）；JAX 内核自己就有上百个线程
    file_bytes: int = 64 * MiB  # 单个文件（RLIMIT_FSIZE）
    tmp_bytes: int = 128 * MiB  # 工作目录与 /tmp 这两块 tmpfs 各自的大小
    output_bytes: int = 8 * MiB  # 从沙箱读回的标准输出（JUnit 报告等）
    cpu_s: int = 300  # 每个进程的 CPU 时间（RLIMIT_CPU）

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class RunResult:
    rc: int | None  # pytest 的退出码；沙箱没能报告时为 None
    junit: str | None
    log_tail: str
    wall_s: float
    timed_out: bool = False
    output_truncated: bool = False
    sandbox_rc: int | None = None
    stderr_tail: str = ""
    running: int | None = None  # 最后一个开始运行的单元（nbval 的 Cell N）：被杀时正在跑它


def bwrap_problem() -> str | None:
    """为什么用不了 bubblewrap 沙箱；能用时为 None"""
    if os.environ.get("SHARDLAB_GRADE_SANDBOX") == "rlimit":
        return "环境变量 SHARDLAB_GRADE_SANDBOX=rlimit"
    if os.geteuid() != 0:
        return "评分器不是以 root 运行（换成非特权 uid 需要 root）"
    missing = [tool for tool in ("bwrap", "setpriv") if not shutil.which(tool)]
    if missing:
        return "找不到 " + "、".join(missing) + "（apt-get install bubblewrap util-linux）"
    try:
        probe = subprocess.run(
            ["bwrap", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "true"],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"试运行 bwrap 失败：{exc}"
    if probe.returncode != 0:
        err = probe.stderr.decode("utf-8", "replace").strip()[-500:]
        return f"试运行 bwrap 失败（退出码 {probe.returncode}）：{err}"
    return None


def detect_mode() -> str:
    """'bwrap'（命名空间 + 换 uid + 资源限制）或 'rlimit'（只有资源限制）"""
    return "bwrap" if bwrap_problem() is None else "rlimit"


def stage_library(dest: Path) -> Path:
    """把 shardlab 复制到 dest/shardlab，并把参考算法（exercise/answers.py）与自检（check.py）换成不含参考值的版本"""
    pkg = dest / "shardlab"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name, target in REDACTED_FILES.items():
        shutil.copyfile(REDACTED / name, pkg / target)
    # 先编译好：沙箱里 PYTHONDONTWRITEBYTECODE=1、副本只读，否则每份提交的内核与 pytest 都要从源码重新编译一遍
    compileall.compile_dir(pkg, quiet=1)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return pkg


def _python_roots() -> list[str]:
    roots = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    exe = os.path.realpath(sys.executable)
    if not any(exe.startswith(r + os.sep) for r in roots):
        roots.add(os.path.dirname(os.path.dirname(exe)))
    return sorted(roots)


def _python_binds() -> list[tuple[str, str]]:
    """沙箱里要有的 Python 目录：(真实路径, 沙箱里的路径)。除了真实路径，虚拟环境经符号链接到达时（``~/course`` 是链接、
    ``.venv`` 是链接）也挂在评分器用的那个路径上：沙箱里运行的是 ``sys.executable``，Python 按它找 ``pyvenv.cfg``"""
    binds = {(root, root) for root in _python_roots()}
    for prefix in (sys.prefix, sys.base_prefix):
        shown, real = os.path.abspath(prefix), os.path.realpath(prefix)
        if shown != real:
            binds.add((real, shown))
    return sorted(binds, key=lambda b: (b[1].count(os.sep), b[1]))


class Sandbox:
    """运行 ``pytest --nbval-lax`` 的沙箱；一个实例可以被多个线程同时使用"""

    def __init__(
        self, staged: Path, limits: Limits, mode: str | None = None, workdir: Path | None = None, uid: int | None = None
    ):
        """staged：stage_library 返回的 shardlab 副本（一个包目录）；workdir：每次运行的临时目录建在这里；
        uid：学生代码用的 uid（默认每次随机取一个 ≥ 200000 的；Gradescope 里是 setup.sh 建的专用用户）"""
        self.staged = Path(staged)
        self.workdir = Path(workdir).absolute() if workdir is not None else None  # 沙箱里的路径必须是绝对的
        self._stopped = False
        self.limits = limits
        self.mode = mode or detect_mode()
        self.uid = uid
        self._procs: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    # ---- 命令行 ----
    def _env(self, home: str) -> dict[str, str]:
        return {
            "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "IPYTHONDIR": f"{home}/.ipython",
            "JUPYTER_RUNTIME_DIR": f"{home}/.jupyter-runtime",
            "JUPYTER_PLATFORM_DIRS": "1",
            "JUPYTER_PATH": os.path.join(sys.prefix, "share", "jupyter"),
            "MPLCONFIGDIR": f"{home}/.mpl",
            "MPLBACKEND": "agg",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "COURSE_PROFILE": "cpu",
            "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": with_device_count("", 8),
            "TF_CPP_MIN_LOG_LEVEL": "3",
        }

    def _script(self, home: str) -> str:
        lim = self.limits
        pytest = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            f"{home}/.pytest.ini",
            "--rootdir",
            home,
            "-p",
            "nbval.plugin",
            "-p",
            PLUGIN,
            "-p",
            "no:cacheprovider",
            "--assert=plain",  # 沙箱里没有要改写断言的测试代码；改写的结果也不能缓存（只读、不写字节码）
            "--nbval-lax",
            "--nbval-current-env",
            f"--nbval-cell-timeout={lim.cell_s:g}",
            "--nbval-kernel-startup-timeout=60",
            "-o",
            "junit_family=xunit1",
            "--junitxml",
            f"{home}/.junit.xml",
            NOTEBOOK_NAME,
        ]
        quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in pytest)
        return (
            f"printf '[pytest]\\n' > .pytest.ini; {quoted} {PROGRESS_FD}>&1 > .pytest.log 2>&1; rc=$?; "
            f"printf '\\n{RC_MARK.decode()}%s\\n' \"$rc\"; printf '{LOG_MARK.decode()[:-1]}\\n'; "
            "tail -c 3000 .pytest.log; "
            f"printf '\\n{JUNIT_MARK.decode()[:-1]}\\n'; cat .junit.xml 2>/dev/null"
        )

    def command(self, notebook: Path, workdir: Path, uid: int) -> tuple[list[str], str | None]:
        """返回 (argv, cwd)"""
        if self.mode == "uid":
            home = str(workdir)
            return [*_setpriv(uid), "--", "/bin/sh", "-c", self._script(home)], home
        if self.mode != "bwrap":
            home = str(workdir)
            return ["/bin/sh", "-c", self._script(home)], home
        home = SANDBOX_HOME
        lim = self.limits
        argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        argv += ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
        env = {**self._env(home), "PYTHONPATH": str(PACKAGE.parent)}  # 副本挂在评分器自己的包的位置，先于 .pth 找到
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = Path("/") / name
            if path.is_symlink():
                argv += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                argv += ["--ro-bind", str(path), str(path)]
        # 先挂私有的 /tmp，再挂只读目录：仓库或虚拟环境本身可能就在 /tmp 下（例如 CI 的克隆），后挂的才不会被盖住
        argv += ["--perms", "1777", "--size", str(lim.tmp_bytes), "--tmpfs", "/tmp"]
        binds = [*_python_binds(), (str(self.staged), str(PACKAGE))]
        parents = sorted({str(p) for _, dest in binds for p in Path(dest).parents if str(p) not in ("/", "/usr")})
        for parent in parents:  # bwrap 自己建的上级目录是 0700，非特权 uid 进不去
            argv += ["--perms", "0755", "--dir", parent]
        for src, dest in binds:
            argv += ["--ro-bind", src, dest]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--perms", "1777", "--size", str(lim.tmp_bytes), "--tmpfs", home]
        argv += ["--ro-bind", str(notebook), f"{home}/{NOTEBOOK_NAME}", "--chdir", home]
        argv += ["--cap-add", "CAP_SETUID,CAP_SETGID", "--"]
        argv += [*_setpriv(uid), "--", "/bin/sh", "-c", self._script(home)]
        return argv, None

    def _rlimits(self) -> dict:
        lim = self.limits
        return {
            resource.RLIMIT_AS: lim.memory_bytes,
            resource.RLIMIT_NPROC: lim.nproc,
            resource.RLIMIT_FSIZE: lim.file_bytes,
            resource.RLIMIT_CPU: lim.cpu_s,
            resource.RLIMIT_CORE: 0,
        }

    def _prlimit_prefix(self) -> list[str]:
        """用 util-linux 的 prlimit 设资源限制再 exec：不需要在（多线程的）评分器里用 preexec_fn"""
        lim = self.limits
        return [
            "prlimit",
            f"--as={lim.memory_bytes}",
            f"--nproc={lim.nproc}",
            f"--fsize={lim.file_bytes}",
            f"--cpu={lim.cpu_s}",
            "--core=0",
            "--",
        ]

    # ---- 运行 ----
    def run(self, graded_notebook: Path) -> RunResult:
        lim = self.limits
        uid = self.uid if self.uid is not None else free_uid()
        with tempfile.TemporaryDirectory(prefix="sbx-", dir=self.workdir) as tmp:
            workdir = Path(tmp)
            if self.mode == "uid":  # 学生的 uid 拥有的私有目录；上级目录只能穿过（0711），看不到别的东西
                workdir.chmod(0o711)
                workdir = workdir / "home"
                workdir.mkdir(mode=0o700)
                os.chown(workdir, uid, uid)
            if self.mode != "bwrap":
                shutil.copy(graded_notebook, workdir / NOTEBOOK_NAME)
                os.chmod(workdir / NOTEBOOK_NAME, 0o644)
                env = self._env(str(workdir))
                env["PYTHONPATH"] = str(self.staged.parent)
            else:
                env = {"PATH": "/usr/bin:/bin"}
            argv, cwd = self.command(graded_notebook, workdir, uid)
            preexec = None
            if shutil.which("prlimit"):
                argv = self._prlimit_prefix() + argv
            else:  # 没有 prlimit：退回 preexec_fn（在多线程进程里 fork 后调用，只做 setrlimit）
                limits = self._rlimits()

                def preexec():
                    for res, value in limits.items():
                        resource.setrlimit(res, (value, value))

            start = time.monotonic()
            with self._lock:  # 在锁里检查并启动：stop() 之后不会再有新的沙箱
                if self._stopped:
                    raise Interrupted
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    preexec_fn=preexec,
                    start_new_session=True,
                    close_fds=True,
                )
                self._procs.add(proc)
            out = _CappedReader(proc.stdout, lim.output_bytes)
            err = _CappedReader(proc.stderr, 64 * 1024)
            timed_out = False
            try:
                proc.wait(timeout=lim.wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                proc.wait()
            finally:
                with self._lock:
                    self._procs.discard(proc)
            _kill_group(proc)  # 以防万一：没有命名空间时，留下的后台进程也一起结束
            if self.mode in ("uid", "bwrap"):
                reap_uid(uid)  # 脱离了进程组的（setsid + 两次 fork）也不放过；等到一个不剩
            if self.mode == "uid":
                remove_uid_files(uid)  # 没有私有的 /tmp：它在公共目录里留下的文件也删掉
            out.join()
            err.join()
            wall = time.monotonic() - start
        return _parse_output(out.data, out.truncated, err.data, proc.returncode, wall, timed_out)

    def probe(self) -> str | None:
        """评分之前在沙箱里试运行评分要用的 Python（与真正评分同一条路：/bin/sh 再启动 Python）：
        uid 模式下上级目录不能进入时、bwrap 里缺了虚拟环境的路径时都运行不了；能时为 None。
        以前 bwrap 模式不试：虚拟环境经符号链接到达时每份提交都“崩溃”，全班 0 分，退出码 0"""
        if self.mode not in ("uid", "bwrap"):
            return None
        uid = self.uid if self.uid is not None else free_uid()
        line = f"{shlex.quote(sys.executable)} -c 'import nbval, shardlab.grade.plugin'"
        with tempfile.TemporaryDirectory(prefix="probe-", dir=self.workdir) as tmp:
            if self.mode == "uid":
                argv, cwd = [*_setpriv(uid), "--", "/bin/sh", "-c", line], "/"
                env = {**self._env("/"), "PYTHONPATH": str(self.staged.parent)}
            else:
                empty = Path(tmp) / NOTEBOOK_NAME
                empty.write_text("{}", encoding="utf-8")
                Path(tmp).chmod(0o755)
                argv, cwd = self.command(empty, Path(tmp), uid)
                argv, env = [*argv[:-1], line], None
            try:
                proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=60)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"试运行失败：{exc}"
            finally:
                if self.mode == "uid":
                    reap_uid(uid)
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip()[-300:]
            if self.mode == "bwrap":
                return (
                    f"沙箱（bubblewrap）里运行不了 {sys.executable}（{tail}）：评分器要用的 Python 与虚拟环境在沙箱里找不到。"
                    "什么也没有评"
                )
            return (
                f"非特权 uid {uid} 运行不了 {sys.executable}（{tail}）：Python、虚拟环境和它们的上级目录"
                "要让所有人都能进入（o+x）、能读（o+r）"
            )
        return None

    def kill_all(self) -> None:
        """Ctrl-C 时：不再启动新的沙箱，结束所有正在运行的"""
        with self._lock:
            self._stopped = True
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)


UID_RANGE = (200_000, 300_000)  # 随机 uid 的范围；真正用之前确认它没有被占用


def _subid_ranges() -> list[tuple[int, int]]:
    """/etc/subuid 与 /etc/subgid 分出去的 uid 段（无根容器里的进程在宿主上就用这些 uid）"""
    out = []
    for path in ("/etc/subuid", "/etc/subgid"):
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.strip().split(":")
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                out.append((int(parts[1]), int(parts[1]) + int(parts[2])))
    return out


def free_uid() -> int:
    """一个没人用的 uid：不在 /etc/passwd 里、不在 subuid / subgid 的段里、此刻没有进程。
    评完一份会以这个 uid 杀掉它的全部进程，所以绝不能碰上真正的用户"""
    reserved = _subid_ranges()
    for _ in range(1000):
        uid = secrets.randbelow(UID_RANGE[1] - UID_RANGE[0]) + UID_RANGE[0]
        if any(lo <= uid < hi for lo, hi in reserved) or uid_processes(uid):
            continue
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise RuntimeError(f"在 {UID_RANGE} 里找不到没人用的 uid")


def _setpriv(uid: int) -> list[str]:
    """换成 uid（组也是 uid），清掉附加组和全部能力，no_new_privs"""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs"]  # fmt: skip


def uid_processes(uid: int) -> list[int]:
    """真实 uid 是 uid 的进程（读 /proc/<pid>/status）"""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(pid))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def reap_uid(uid: int, timeout: float = 10.0) -> bool:
    """以 uid 的身份 kill(-1, SIGKILL)（内核把信号发给这个 uid 的每一个进程，同时挡住新的 fork），直到一个不剩；
    超时返回 False（僵尸进程由它们的父进程收走，不算）"""
    deadline = time.monotonic() + timeout
    kill = [*_setpriv(uid), "--", sys.executable, "-I", "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"]
    while True:
        alive = [pid for pid in uid_processes(uid) if not _zombie(pid)]
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        subprocess.run(kill, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=10, check=False)  # fmt: skip
        time.sleep(0.05)


SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")  # 所有人都能写的目录


def remove_uid_files(uid: int, roots=SHARED_DIRS, limit: int = 200_000) -> int:
    """删掉 roots 里（和它们下面所有人都能写的子目录里）属于 uid 的文件和目录（不跟随符号链接）；返回删掉了几个。
    uid 模式没有私有的 /tmp，用这个收尾；最多看 limit 个目录项"""
    removed, seen = 0, 0
    stack = [r for r in roots if os.path.isdir(r) and not os.path.islink(r)]
    while stack and seen < limit:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                info = entry.stat(follow_symlinks=False)
                if info.st_uid == uid:
                    if stat.S_ISDIR(info.st_mode):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                    removed += 1
                elif (
                    stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002
                ):  # 别人的、所有人都能写的目录：uid 可能在里面留了东西
                    stack.append(entry.path)
            except OSError:
                continue
    return removed


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _CappedReader(threading.Thread):
    """读完一个管道，只保留前 cap 个字节（其余读掉丢弃，免得子进程卡在写管道上）"""

    def __init__(self, stream, cap: int):
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False
        self.start()

    def run(self) -> None:
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
            if not chunk:
                break
            if self.size < self.cap:
                keep = chunk[: self.cap - self.size]
                self.chunks.append(keep)
                self.size += len(keep)
                if len(keep) < len(chunk):
                    self.truncated = True
            else:
                self.truncated = True
        self.stream.close()

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


def _running(data: bytes) -> int | None:
    """输出里最后一个“开始运行 Cell N”的记录（插件写的；学生的代码能伪造，只影响他自己的说明）"""
    found = re.findall(rb"^" + re.escape(RUNNING_MARK.encode()) + rb"Cell (\d{1,6})$", data, re.MULTILINE)
    return int(found[-1]) if found else None


def _parse_output(data: bytes, truncated: bool, err: bytes, sandbox_rc, wall: float, timed_out: bool) -> RunResult:
    rc = None
    junit = None
    log_tail = ""
    pos = data.rfind(RC_MARK)
    if pos >= 0:
        rest = data[pos + len(RC_MARK) :]
        line, _, rest = rest.partition(b"\n")
        try:
            rc = int(line.strip())
        except ValueError:
            rc = None
        log_part, _, junit_part = rest.partition(JUNIT_MARK)
        log_tail = log_part.replace(LOG_MARK, b"", 1).decode("utf-8", "replace").strip()
        if junit_part.strip():
            junit = junit_part.decode("utf-8", "replace")
    return RunResult(
        rc=rc,
        junit=junit,
        log_tail=log_tail,
        wall_s=wall,
        timed_out=timed_out,
        output_truncated=truncated,
        sandbox_rc=sandbox_rc,
        stderr_tail=err[-2000:].decode("utf-8", "replace"),
        running=_running(data[:pos] if pos >= 0 else data),
    )
