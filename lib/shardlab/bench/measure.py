"""在 JAX 设备上计时：集合通信的扫描（`run_sweep`）与单芯片 matmul（`time_matmul`）

用法（笔记本）::

    from shardlab import bench
    res = bench.run_sweep()                 # 五种集合通信 × 默认大小
    print(res.table()); res.plot("bench.png"); res.to_csv("bench.csv")

命令行：``python -m shardlab.bench --help``（`shardlab.bench.cli`）；跨进程：`shardlab.bench.multiprocess`。

计时方法：每个（集合通信, 大小）只 jit 一次，先预热（warm-up）几次，再重复
``fn(x).block_until_ready()``，用 ``time.perf_counter`` 计时，报告中位数（median）与 p10/p90、min/max。
全包只有一种中位数：``numpy.median``（偶数个样本取中间两个的平均）。

大小 V 与代价模型（`shardlab.cost.estimate`）的约定相同：AllGather 是收集后的整个数组；
ReduceScatter / AllReduce 是每个设备本地未规约的缓冲区；AllToAll 是整个数组（每个设备持有 V/N）；
ppermute 是每个设备送出的缓冲区。

带宽按 nccl-tests（doc/PERFORMANCE.md）定义：algbw = S/t，busbw = algbw × 因子。S 与 V 的关系（`nccl_size`）：

======================  =======================================  ==========  ============
集合通信                nccl-tests 的 S                          S 与 V      busbw 因子
======================  =======================================  ==========  ============
AllGather               收集后的整个数组（sendcount·size·n）     S = V       (n-1)/n
ReduceScatter           整个输入数组（recvcount·size·n）         S = V       (n-1)/n
AllReduce               每个 rank 的缓冲区                       S = V       2(n-1)/n
AllToAll                每个 rank 的发送缓冲区                   S = V/n     (n-1)/n
ppermute（SendRecv）    每个 rank 送出的缓冲区                   S = V       1
======================  =======================================  ==========  ============

**模拟设备上量到的不是互连**：cpu 档位（以及只有一颗芯片、网格退回 CPU 的加速器）上，
集合通信的时间反映的是内存拷贝（memcpy）和 XLA CPU 的调度，与 ICI / NVLink 无关
（同一个 16 MB 数组，AllGather 曾比 ReduceScatter 慢 13 倍）。这时的预测用 ``hardware.CPU`` 的名义值，
``model_valid`` 为 False，measured/predicted 只演示方法，不说明任何硬件。
"""

from __future__ import annotations

import datetime as _dt
import platform
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shardlab import collectives, cost, hardware, runtime, units
from shardlab.bench.model import (
    COLLECTIVES,
    DEFAULT_TIMING,
    DISPLAY,
    EMULATED_NOTE,
    MIN_REPEATS,
    BenchError,
    canonical,
    collective_chip,
    default_sizes,
    fmt_size,
    known,
    parse_sizes,
    profile_kind,
    round_size,
    tpu_slice_shape,
)
from shardlab.bench.result import BenchResult, BenchRow, summarize

# ---- 计时 ----


def timing_defaults(rt, repeats=None, warmup=None, budget_s=None) -> tuple[int, int, float]:
    """(repeats, warmup, budget_s)：省略的按档位取 DEFAULT_TIMING"""
    r, w, b = DEFAULT_TIMING[profile_kind(rt)]
    return (r if repeats is None else repeats), (w if warmup is None else warmup), (b if budget_s is None else budget_s)


def time_call(fn, *args, repeats: int = 10, warmup: int = 2, budget_s: float | None = None) -> list[float]:
    """预热 warmup 次后重复 ``fn(*args).block_until_ready()``，返回每次的秒数

    budget_s：累计时间超过它且已有 MIN_REPEATS 次时提前停止（多进程时必须为 None，各进程次数要一致）。
    """
    if repeats < 1 or warmup < 0:
        raise BenchError(f"repeats 必须 ≥ 1、warmup 必须 ≥ 0，收到 {repeats}、{warmup}")
    for _ in range(warmup):
        fn(*args).block_until_ready()
    times: list[float] = []
    start = time.perf_counter()
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args).block_until_ready()
        times.append(time.perf_counter() - t0)
        if budget_s is not None and len(times) >= MIN_REPEATS and time.perf_counter() - start > budget_s:
            break
    return times


def make_input(collective: str, v_bytes: int, mesh, axis: str, dtype: str = "float32"):
    """按 `collectives.block_spec` 分片的一维输入；网格位置为 k 的设备的块全是 k（跨进程也直接在设备上生成）

    collective 是解析过的名字（`model.canonical` 的结果），这里不再解析。
    """
    coll, n, itemsize = known(collective), mesh.shape[axis], jnp.dtype(dtype).itemsize
    per_dev = v_bytes // n if coll in ("all_gather", "all_to_all") else v_bytes
    b = per_dev // itemsize
    if b * itemsize != per_dev or (coll in ("reduce_scatter", "all_to_all") and b % n):
        raise BenchError(f"{fmt_size(v_bytes)} 不能在 {n} 个设备上整分（请先用 round_size）")
    total = b * mesh.size
    sharding = NamedSharding(mesh, collectives.block_spec(mesh))
    # iota 的形状是 (设备数, b)，值只到设备数：1 GiB × 8 设备也不会让 int32 下标溢出
    make = jax.jit(
        lambda: lax.broadcasted_iota(jnp.int32, (mesh.size, b), 0).astype(dtype).reshape(total), out_shardings=sharding
    )
    return make()


def build_fn(collective: str, mesh, axis: str):
    """`collectives.build` 编好的全局函数（collective 是解析过的名字）；ppermute 是环上移一位"""
    coll = known(collective)
    params: dict[str, Any] = {}
    if coll == "ppermute":
        params["perm"] = collectives.shift_perm(mesh.shape[axis], 1)
    return collectives.build(coll, mesh, axis, **params)


def target_chip(rt, mesh) -> tuple[hardware.Chip, tuple[int, ...] | None]:
    """(集合通信网格所在的芯片, TPU 的物理切片形状或 None)：预测要用的两样，测量开始前定一次"""
    chip = collective_chip(rt)
    slice_shape = tpu_slice_shape(mesh.devices.flat, chip.torus_dims) if isinstance(chip, hardware.TpuChip) else None
    return chip, slice_shape


def metadata(rt, mesh, axis: str, **extra) -> dict[str, Any]:
    """写进 JSON 的环境信息"""
    dev = mesh.devices.flat[0]
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "jax_version": jax.__version__,
        "profile": rt.profile,
        "device_kind": dev.device_kind,
        "compute_device_kind": rt.device_kind,
        "emulated_mesh": rt.emulated_mesh,
        "n_devices": int(mesh.size),
        "mesh": {str(k): int(v) for k, v in mesh.shape.items()},
        "axis": axis,
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "processes": jax.process_count(),
        "note": EMULATED_NOTE if rt.emulated_mesh else "",
        **extra,
    }


def progress_bar(enabled: bool) -> Progress:
    """stderr 上的进度条；不是终端或 Jupyter 时不显示"""
    console = Console(stderr=True)
    on = enabled and (console.is_terminal or console.is_jupyter)
    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*cols, console=console, disable=not on, transient=False)


Check = Callable[[str, Any, Any, str], str]


def measure_rows(
    mesh,
    axis: str,
    colls: Sequence[str],
    sizes: Sequence[int],
    *,
    chip: hardware.Chip,
    slice_shape: Sequence[int] | None = None,
    repeats: int,
    warmup: int,
    budget_s: float | None,
    dtype: str = "float32",
    progress: bool = False,
    check: Check | None = None,
) -> tuple[list[BenchRow], dict[str, str]]:
    """扫描的唯一循环：对每种（解析过的）集合通信、每个大小建输入、计时、汇总成一行

    sizes 先按 `round_size` 取整（去重、排序）；check(coll, y, mesh, axis) 给出时，计时前先检查一次输出，
    结果以 ``"coll:V"`` 为键返回（跨进程的 worker 用它核对 psum 的值）。
    """
    n = mesh.shape[axis]
    vs = sorted({round_size(v, n, jnp.dtype(dtype).itemsize) for v in sizes})
    rows, checks = [], {}
    with progress_bar(progress) as bar:
        task = bar.add_task("benchmark", total=len(colls) * len(vs))
        for coll in colls:
            fn = build_fn(coll, mesh, axis)
            for v in vs:
                bar.update(task, description=f"{DISPLAY[coll]:<13} {fmt_size(v):>8}")
                x = make_input(coll, v, mesh, axis, dtype)
                if check is not None:
                    checks[f"{coll}:{v}"] = check(coll, fn(x), mesh, axis)
                times = time_call(fn, x, repeats=repeats, warmup=warmup, budget_s=budget_s)
                del x
                rows.append(summarize(coll, v, n, times, dtype=dtype, chip=chip, slice_shape=slice_shape))
                bar.advance(task)
    return rows, checks


def run_sweep(
    collectives: Sequence[str] = COLLECTIVES,
    sizes: str | Sequence[int | str] | None = None,
    rt=None,
    mesh=None,
    axis: str = "X",
    repeats: int | None = None,
    warmup: int | None = None,
    progress: bool = True,
    *,
    dtype: str = "float32",
    budget_s: float | None = None,
) -> BenchResult:
    """对每种集合通信、每个大小计时，返回 `BenchResult`

    rt：`runtime.setup()` 的结果（省略时调用它，档位取 COURSE_PROFILE）；mesh 省略时为 rt 上的一维网格 (axis,)。
    sizes：字节数列表或 `parse_sizes` 的写法；省略时为 `default_sizes(rt)`。每个大小先用 `round_size` 取整。
    repeats / warmup / budget_s 省略时按档位取 DEFAULT_TIMING。
    """
    rt = rt if rt is not None else runtime.setup()
    mesh = mesh if mesh is not None else rt.mesh((rt.n_devices,), (axis,))
    if axis not in mesh.shape:
        raise BenchError(f"网格没有轴 {axis!r}：网格的轴是 {tuple(mesh.shape)}")
    colls = [canonical(c) for c in ([collectives] if isinstance(collectives, str) else collectives)]
    raw = default_sizes(rt) if sizes is None else parse_sizes(sizes)
    repeats, warmup, budget_s = timing_defaults(rt, repeats, warmup, budget_s)
    chip, slice_shape = target_chip(rt, mesh)
    rows, _ = measure_rows(
        mesh,
        axis,
        colls,
        raw,
        chip=chip,
        slice_shape=slice_shape,
        repeats=repeats,
        warmup=warmup,
        budget_s=budget_s,
        dtype=dtype,
        progress=progress,
    )
    meta = metadata(rt, mesh, axis, chip=chip.name, repeats=repeats, warmup=warmup, budget_s=budget_s, dtype=dtype)
    return BenchResult(rows, meta)


# ---- 单芯片 matmul roofline ----


@dataclass
class MatmulResult:
    m: int
    k: int
    n: int
    dtype: str
    device_kind: str
    median_s: float
    flops: int
    achieved_flops: float  # FLOP/s
    peak_flops: float  # FLOP/s：芯片的 bf16 峰值；CPU 为名义值
    fraction: float  # achieved / peak
    peak_is_nominal: bool

    def __str__(self) -> str:
        peak = "名义值（nominal），无意义" if self.peak_is_nominal else f"{self.fraction:.0%} of bf16 peak"
        return (
            f"matmul [{self.m}×{self.k}]·[{self.k}×{self.n}] {self.dtype} on {self.device_kind}："
            f"{units.fmt_time(self.median_s)}，{self.achieved_flops / 1e12:.3g} TFLOP/s（{peak}）"
        )


def demo_matmul_shape(profile: Any = "cpu") -> tuple[int, int, int]:
    """演示用的 matmul 大小随档位变化：cpu 1024³，加速器 8192³"""
    cpu = hasattr(profile, "compute_device") and profile.compute_device.platform == "cpu"
    return (1024,) * 3 if cpu or str(profile) == "cpu" else (8192,) * 3


def time_matmul(m: int, k: int, n: int, dtype: str | None = None, device=None, *, rt=None, repeats=10, warmup=2):
    """单芯片 matmul 的实测 FLOP/s（中位数，numpy.median），与芯片 bf16 峰值比较；device 默认 ``rt.compute_device``

    dtype 默认：加速器 bfloat16，CPU float32（CPU 的 bf16 matmul 很慢，没有代表性）。
    """
    if device is None:
        device = (rt if rt is not None else runtime.setup()).compute_device
    on_cpu = device.platform == "cpu"
    dtype = dtype or ("float32" if on_cpu else "bfloat16")
    a = jax.device_put(jnp.ones((m, k), dtype), device)
    b = jax.device_put(jnp.ones((k, n), dtype), device)
    med = float(np.median(time_call(jax.jit(jnp.matmul), a, b, repeats=repeats, warmup=warmup)))
    try:
        chip = hardware.from_device_kind(device.device_kind)
    except hardware.UnknownChipError:
        chip = hardware.CPU
    flops = cost.matmul_flops(m, k, n)
    return MatmulResult(
        m,
        k,
        n,
        str(dtype),
        device.device_kind,
        med,
        flops,
        flops / med,
        chip.flops_bf16,
        flops / med / chip.flops_bf16,
        chip.emulated,
    )
