"""跨进程的集合通信：本机起几个进程，用 ``jax.distributed`` 连成一个全局网格，与单进程比较

``run_multiprocess(processes=2)``（或 ``python -m shardlab.bench --processes 2``）做三件事：

1. 找一个空闲端口，启动 ``processes`` 个子进程 ``python -m shardlab.bench.worker CONFIG``
   （CONFIG 是 `WorkerConfig` 的 JSON，参数只传这一次），每个子进程有 ``devices_per_process`` 个模拟 CPU 设备，
   调用 ``jax.distributed.initialize("127.0.0.1:PORT", num_processes, process_id)``；CPU 集合通信走 gloo；
2. 子进程在全局网格（全部进程的设备，一维轴 'X'）上跑集合通信，检查 psum 的值，计时后写 JSON；
3. 父进程在自己里面用同样多的设备（单进程）跑同样的大小，给出 跨进程 / 单进程 的时间比。

全部参数与默认值只在 `MultiProcessConfig` 里定义一次（命令行、`run_multiprocess` 与 worker 都用它）。
每次等待都有超时；出错、超时或 Ctrl-C 时杀掉全部子进程（按进程组），不留孤儿进程。

同一个 worker 在真正的多机环境上也能运行：CONFIG 里不给 ``coordinator`` 时，
``jax.distributed.initialize()`` 不带参数，自己从环境里找协调者（coordinator）、进程数与编号：

- 多主机 TPU 切片（如 v5e-32，每台主机 4 或 8 颗芯片）：在每台主机上运行同一条命令，例如
  ``gcloud compute tpus tpu-vm ssh NAME --worker=all --command='python -m shardlab.bench.worker {"profile": "tpu"}'``；
  网格是全部芯片，集合通信走 ICI（跨切片时走 DCN）；
- GPU 集群（SLURM）：``srun --ntasks-per-node=8 --gpus-per-task=1 python -m shardlab.bench.worker '{"profile": "gpu"}'``，
  JAX 从 SLURM 变量读出进程数与编号，集合通信走 NCCL（NVLink / InfiniBand）。

这时 rank 0 把结果写到 CONFIG 的 ``result``（默认 build/bench/worker-rank0.json）。
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import jax
import numpy as np

from shardlab import hardware, runtime, units, xla_flags
from shardlab.bench.measure import measure_rows, metadata, target_chip
from shardlab.bench.model import DISPLAY, BenchError, canonical, fmt_size, parse_sizes
from shardlab.bench.result import BenchResult, BenchRow, make_table, render_text

WORKER_MODULE = "shardlab.bench.worker"


class MultiProcessError(RuntimeError):
    """子进程启动失败、超时或结果不对"""


@dataclass(frozen=True)
class MultiProcessConfig:
    """一次跨进程基准的全部参数；默认值只在这里（sizes 4 KiB、64 KiB、1 MiB）

    构造时在边界上解析一次：collectives 变成解析过的名字，sizes 变成字节数（可写 "4k:1M:16" 或列表）。
    """

    processes: int = 2
    devices_per_process: int = 4
    collectives: tuple[str, ...] = ("all_reduce", "all_gather")
    sizes: tuple[int, ...] = tuple(parse_sizes("4k:1M:16"))
    repeats: int = 5
    warmup: int = 2
    timeout_s: float = 180.0

    def __post_init__(self):
        if self.processes < 2:
            raise BenchError(f"跨进程至少要 2 个进程，收到 {self.processes}")
        if self.devices_per_process < 1 or self.repeats < 1 or self.warmup < 0 or not self.timeout_s > 0:
            raise BenchError(
                "devices_per_process、repeats 必须 ≥ 1，warmup ≥ 0，timeout_s > 0；"
                f"收到 {self.devices_per_process}、{self.repeats}、{self.warmup}、{self.timeout_s}"
            )
        colls = [self.collectives] if isinstance(self.collectives, str) else self.collectives
        object.__setattr__(self, "collectives", tuple(canonical(c) for c in colls))
        object.__setattr__(self, "sizes", tuple(parse_sizes(self.sizes)))


@dataclass(frozen=True)
class WorkerConfig:
    """一个 worker 进程需要的全部东西，以 JSON 在命令行上传一次

    rank / coordinator（"host:port"）省略时由 ``jax.distributed.initialize()`` 从集群环境得出；
    result 是写结果的 JSON 路径（省略时 rank 0 写 build/bench/worker-rank0.json）。
    """

    job: MultiProcessConfig = field(default_factory=MultiProcessConfig)
    rank: int | None = None
    coordinator: str | None = None
    result: str | None = None
    profile: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        """JSON 对象；只写要改的键即可，如 ``{"profile": "tpu", "job": {"repeats": 10}}``"""
        try:
            data = json.loads(text)
            known = {f.name for f in fields(cls)}
            if not isinstance(data, dict) or set(data) - known:
                raise TypeError(f"只接受键 {sorted(known)}")
            return cls(**{**data, "job": MultiProcessConfig(**data.get("job", {}))})
        except (TypeError, ValueError) as e:
            raise BenchError(f"worker 的配置不是合法的 WorkerConfig JSON（{e}）：{text[:200]!r}") from None


def free_port(host: str = "127.0.0.1") -> int:
    """让操作系统挑一个空闲端口（绑定端口 0）"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def child_env(devices_per_process: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """子进程的环境变量：XLA_FLAGS 里的设备数改为 devices_per_process（替换父进程已有的设置），只用 CPU"""
    env = dict(os.environ if base is None else base)
    env["XLA_FLAGS"] = xla_flags.with_device_count(env.get("XLA_FLAGS", ""), devices_per_process, replace=True)
    env.update(COURSE_PROFILE="cpu", JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    return env


@dataclass
class CompareRow:
    collective: str
    bytes: int
    in_process_s: float
    cross_process_s: float
    slowdown: float  # cross / in
    check: str


@dataclass
class MultiProcessResult:
    """跨进程与单进程的比较；ranks 是每个子进程报告的 rank、world size、设备数"""

    rows: list[CompareRow]
    ranks: list[dict[str, Any]]
    cross: BenchResult
    local: BenchResult | None
    metadata: dict[str, Any] = field(default_factory=dict)

    def table(self) -> str:
        lines = [f"rank {r['rank']} / world size {r['world']}：{r['line']}" for r in self.ranks]
        head = ("原语", "V", "进程内", "跨进程", "跨进程/进程内", "核对")
        body = [
            (
                DISPLAY[r.collective],
                fmt_size(r.bytes),
                units.fmt_time(r.in_process_s) if r.in_process_s else "—",
                units.fmt_time(r.cross_process_s),
                f"{r.slowdown:.3g}×" if math.isfinite(r.slowdown) else "—",
                r.check,
            )
            for r in self.rows
        ]
        return "\n".join([*lines, render_text(make_table(head, body))])

    def to_json(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"metadata": self.metadata, "ranks": self.ranks, "rows": [asdict(r) for r in self.rows]}
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1))
        return path


# ---- 父进程 ----


def _kill(procs: Sequence[subprocess.Popen]) -> None:
    """杀掉仍在运行的子进程（整个进程组）并回收"""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def worker_command(config: WorkerConfig) -> list[str]:
    """启动一个 worker 的命令：``python -m shardlab.bench.worker CONFIG_JSON``"""
    return [sys.executable, "-m", WORKER_MODULE, config.to_json()]


def launch(config: MultiProcessConfig, *, port: int | None = None) -> tuple[list[dict[str, Any]], BenchResult]:
    """启动 config.processes 个子进程并等待它们结束；返回（各 rank 的报告, rank 0 的计时结果）"""
    coordinator = f"127.0.0.1:{port or free_port()}"
    env = child_env(config.devices_per_process)
    with tempfile.TemporaryDirectory(prefix="shardlab-mp-") as tmp:
        procs: list[subprocess.Popen] = []
        logs = [Path(tmp) / f"rank{i}.log" for i in range(config.processes)]
        results = [Path(tmp) / f"rank{i}.json" for i in range(config.processes)]
        try:
            for i in range(config.processes):
                cmd = worker_command(WorkerConfig(config, rank=i, coordinator=coordinator, result=str(results[i])))
                with logs[i].open("w") as log:
                    procs.append(
                        subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
                    )
            deadline = time.monotonic() + config.timeout_s
            for p in procs:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill(procs)
            raise MultiProcessError(
                f"{config.processes} 个子进程在 {config.timeout_s:.0f} s 内没有结束，已全部终止。\n" + _tail(logs)
            ) from None
        except BaseException:  # 包括 KeyboardInterrupt：不留孤儿进程
            _kill(procs)
            raise
        failed = [i for i, p in enumerate(procs) if p.returncode != 0]
        if failed or not all(r.exists() for r in results):
            raise MultiProcessError(f"子进程 {failed} 失败（返回码 {[p.returncode for p in procs]}）。\n" + _tail(logs))
        reports = [json.loads(r.read_text()) for r in results]
    cross = BenchResult([BenchRow(**r) for r in reports[0]["rows"]], reports[0]["metadata"])
    ranks = [{k: v for k, v in rep.items() if k not in ("rows", "metadata")} for rep in reports]
    return ranks, cross


def _tail(logs: Sequence[Path], n: int = 15) -> str:
    out = []
    for i, log in enumerate(logs):
        text = log.read_text(errors="replace").splitlines() if log.exists() else []
        out.append(f"--- rank {i} 的最后输出 ---\n" + "\n".join(text[-n:]))
    return "\n".join(out)


def run_multiprocess(
    config: MultiProcessConfig | None = None, *, compare_in_process: bool = True, rt=None, **fields: Any
) -> MultiProcessResult:
    """跨进程计时，再在本进程里用同样多的设备计时，逐行比较（见模块说明）

    参数是 `MultiProcessConfig` 或它的字段（``run_multiprocess(processes=2, sizes="4k,256k")``）。
    本进程需要 processes × devices_per_process 个 CPU 设备（cpu 档位默认 8 个，正好是 2 × 4）。
    子进程先跑完，本进程再计时，两者不抢 CPU。
    """
    config = replace(config, **fields) if config is not None else MultiProcessConfig(**fields)
    ranks, cross = launch(config)
    local = None
    if compare_in_process:
        total = config.processes * config.devices_per_process
        rt = rt if rt is not None else runtime.setup("cpu", n_devices=total)
        cpus = [d for d in rt.mesh_devices if d.platform == "cpu"]
        if len(cpus) < total:
            raise MultiProcessError(f"本进程只有 {len(cpus)} 个 CPU 设备，比较需要 {total} 个")
        mesh = runtime.make_mesh((total,), ("X",), devices=cpus[:total])
        rows, _ = worker_body(mesh, config, hardware.CPU)
        local = BenchResult(rows, metadata(rt, mesh, "X", chip=hardware.CPU.name))
    by_key = {(r.collective, r.bytes): r for r in (local.rows if local else [])}
    checks = ranks[0].get("checks", {})
    rows = []
    for r in cross.rows:
        loc = by_key.get((r.collective, r.bytes))
        t_in = loc.median_s if loc else 0.0
        rows.append(
            CompareRow(
                r.collective,
                r.bytes,
                t_in,
                r.median_s,
                r.median_s / t_in if t_in else math.nan,
                checks.get(f"{r.collective}:{r.bytes}", ""),
            )
        )
    meta = {**cross.metadata, "processes": config.processes, "devices_per_process": config.devices_per_process}
    return MultiProcessResult(rows, ranks, cross, local, meta)


# ---- 子进程（worker） ----


def check_output(collective: str, y, mesh, axis: str = "X") -> str:
    """检查一维网格上 `measure.make_input` 的结果：psum 处处为 0+1+…+(n-1)，AllGather 的各块依次为 0…n-1"""
    n = mesh.shape[axis]
    shards = [np.asarray(s.data) for s in y.addressable_shards]
    if collective == "all_reduce":
        want = n * (n - 1) / 2
        ok = all(np.all(s == want) for s in shards)
        return f"psum = {want:g} ✓" if ok else f"psum ≠ {want:g} ✗"
    if collective == "all_gather":
        ok = all(np.array_equal(np.unique(s), np.arange(n)) and s[0] == 0 and s[-1] == n - 1 for s in shards)
        return "all_gather 0…n-1 ✓" if ok else "all_gather ✗"
    return ""


def worker_body(mesh, config: MultiProcessConfig, chip: hardware.Chip, slice_shape=None, axis: str = "X"):
    """在（全局）网格上检查并计时；各进程调用次数相同（不用时间预算）。返回 (行, 检查结果)"""
    return measure_rows(
        mesh,
        axis,
        config.collectives,
        config.sizes,
        chip=chip,
        slice_shape=slice_shape,
        repeats=config.repeats,
        warmup=config.warmup,
        budget_s=None,
        check=check_output,
    )


def worker_main(config: WorkerConfig) -> int:  # pragma: no cover - 只在子进程里运行（tests/test_bench.py 检查它的结果）
    """``python -m shardlab.bench.worker CONFIG`` 做的事"""
    job = config.job
    given = config.coordinator is not None
    rt = runtime.init_distributed(
        config.coordinator,
        job.processes if given else None,
        config.rank if given else None,
        local_devices=job.devices_per_process,
        profile=config.profile,
        timeout_s=int(job.timeout_s),
    )
    try:
        mesh = rt.mesh((rt.n_devices,), ("X",))
        rank, world = jax.process_index(), jax.process_count()
        line = (
            f"pid {os.getpid()}，{socket.gethostname()}，本进程 {jax.local_device_count()} 个设备，全局 {mesh.size} 个"
        )
        print(f"rank {rank} / world size {world}：{line}", flush=True)
        chip, slice_shape = target_chip(rt, mesh)
        rows, checks = worker_body(mesh, job, chip, slice_shape)
        meta = metadata(rt, mesh, "X", chip=chip.name, repeats=job.repeats, warmup=job.warmup)
        report = {
            "rank": rank,
            "world": world,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "local_devices": jax.local_device_count(),
            "global_devices": mesh.size,
            "line": line,
            "checks": checks,
            "metadata": meta,
            "rows": [asdict(r) for r in rows],
        }
        if config.result or rank == 0:
            out = Path(config.result or f"build/bench/worker-rank{rank}.json")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, ensure_ascii=False))
        bad = [k for k, v in checks.items() if "✗" in v]
        return 1 if bad else 0
    finally:
        runtime.shutdown_distributed()
