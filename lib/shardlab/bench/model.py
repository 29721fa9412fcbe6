"""基准的纯计算部分（不导入 JAX）：集合通信的名字、大小的解析与取整、nccl-tests 的 algbw/busbw、代价模型的预测

名字只在边界解析一次：`canonical`（即 `shardlab.names.canonical`）把用户的写法（'AllGather'、'psum'、'all-to-all'…）
变成 ``COLLECTIVES`` 里的名字，`run_sweep`、命令行、跨进程的配置都在入口调用它；
本模块其余函数只接受这些名字，写错时抛 `BenchError`，不再重新解析。

V 与 nccl-tests 的 S 的约定、busbw 因子见 `shardlab.bench.measure` 的模块说明。
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from shardlab import cost, hardware, names, units

# 四种集合通信加上 ppermute（环上移一位，对应 nccl-tests 的 SendRecv）；名字与显示名来自 `shardlab.names`
COLLECTIVES = (*names.COLLECTIVES, "ppermute")
DISPLAY = {c: names.display(c) for c in COLLECTIVES}

# 默认扫描（k/M/G 按 1024：KiB/MiB/GiB）：cpu 1 KiB 到 16 MiB（在 2 核机器上整个扫描 < 60 s），加速器到 1 GiB；步长都是 4 倍
DEFAULT_SIZES = {"cpu": "1k:16M:4", "accelerator": "1k:1G:4"}
# (repeats, warmup, 每个点的时间预算 s)：到了预算且已有 MIN_REPEATS 次就停
DEFAULT_TIMING = {"cpu": (10, 2, 0.5), "accelerator": (20, 5, 2.0)}
MIN_REPEATS = 3
EMULATED_NOTE = (
    "模拟设备（emulated CPU devices）上的集合通信只反映 memcpy 与 XLA CPU 调度，不反映 ICI / NVLink；"
    "measured/predicted 只演示方法。"
)


class BenchError(ValueError):
    """基准参数不合法（写错的大小、没有解析过的集合通信名字等）；未知的名字是 `names.UnknownCollectiveError`"""


def canonical(collective: str) -> str:
    """'AllGather'、'all-gather'、'psum' 等写法 → COLLECTIVES 里的名字（`shardlab.names` 的唯一解析）

    不认识的名字抛 `names.UnknownCollectiveError`（ValueError 的子类），消息里列出可选的名字。
    """
    return names.canonical(collective, COLLECTIVES)


def known(coll: str) -> str:
    """已解析的名字：不在 COLLECTIVES 里就报错（不做别名解析，那是 `canonical` 在入口做的事）"""
    if coll not in DISPLAY:
        raise BenchError(f"{coll!r} 不是解析过的集合通信名字：先用 canonical() 得到 {', '.join(COLLECTIVES)} 之一")
    return coll


# ---- 大小 ----

_UNIT = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'64k' → 65536：后缀 k/M/G 按 1024 的幂（与 nccl-tests 的 -b/-e 相同），可写成 KiB、MB 等"""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise BenchError(f"看不懂的大小（size）{text!r}：请写成 4096、64k、16M、1G 这样的形式")
        value = float(m.group(1)) * _UNIT[m.group(2).lower()]
    if value < 1 or value != int(value):
        raise BenchError(f"大小必须是正整数个字节，收到 {text!r}")
    return int(value)


def parse_sizes(spec: str | Iterable[str | int]) -> list[int]:
    """大小列表：'1k:16M'（从 1 KiB 到 16 MiB，每次 ×2）、'1k:16M:4'（每次 ×4）或 '1k,64k,1M'"""
    if not isinstance(spec, str):
        sizes = [parse_size(s) for s in spec]
    elif ":" in spec:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise BenchError(f"范围应写成 起点:终点[:倍数]，如 1k:16M:4，收到 {spec!r}")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        try:
            factor = float(parts[2]) if len(parts) == 3 else 2.0
        except ValueError:
            raise BenchError(f"倍数（factor）必须是大于 1 的数，收到 {parts[2]!r}") from None
        if factor <= 1 or lo > hi:
            raise BenchError(f"范围 {spec!r} 不合法：要求 起点 ≤ 终点 且 倍数 > 1")
        sizes, v = [], float(lo)
        while v <= hi * (1 + 1e-9):
            sizes.append(int(round(v)))
            v *= factor
    else:
        sizes = [parse_size(s) for s in spec.split(",") if s.strip()]
    if not sizes:
        raise BenchError(f"没有给出任何大小：{spec!r}")
    return sizes


def round_size(v_bytes: int, n: int, itemsize: int) -> int:
    """把 V 取整到 n²·itemsize 的倍数（至少一个），使五种集合通信在 n 个设备上都能整分"""
    q = n * n * itemsize
    return max(q, int(round(v_bytes / q)) * q)


def default_sizes(profile: Any = "cpu") -> list[int]:
    """默认扫描的大小：profile 为 'cpu' 或网格是模拟设备时到 16 MiB，加速器到 1 GiB

    profile 可以是档位名，也可以是 `runtime.Runtime`（只有一颗芯片时集合通信用 CPU 网格，按 cpu 取）。
    """
    return parse_sizes(DEFAULT_SIZES[profile_kind(profile)])


def profile_kind(profile: Any) -> str:
    """'cpu' 或 'accelerator'：DEFAULT_SIZES 与 DEFAULT_TIMING 的键"""
    if hasattr(profile, "emulated_mesh"):
        return "cpu" if profile.emulated_mesh else "accelerator"
    return "cpu" if str(profile) == "cpu" else "accelerator"


def fmt_size(n: float) -> str:
    """1024 的整数倍写成 KiB/MiB/GiB（扫描用的是 2 的幂），否则用 SI 写法"""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{int(n // scale)} {unit}"
    return units.fmt_bytes(n)


# ---- nccl-tests 的 algbw / busbw ----


def nccl_size(collective: str, v_bytes: float, n: int) -> float:
    """nccl-tests 的 S（字节）：AllToAll 为 V/n（每个 rank 的发送缓冲区），其余为 V"""
    return v_bytes / n if known(collective) == "all_to_all" else float(v_bytes)


def bus_factor(collective: str, n: int) -> float:
    """busbw = algbw × 因子：AllReduce 2(n-1)/n；AllGather、ReduceScatter、AllToAll (n-1)/n；ppermute 1"""
    coll = known(collective)
    if coll == "ppermute":
        return 1.0
    return (2.0 if coll == "all_reduce" else 1.0) * (n - 1) / n


def bandwidths(collective: str, v_bytes: float, n: int, seconds: float) -> tuple[float, float]:
    """(algbw, busbw)，bytes/s"""
    algbw = nccl_size(collective, v_bytes, n) / seconds
    return algbw, algbw * bus_factor(collective, n)


# ---- 预测 ----


def collective_chip(rt) -> hardware.Chip:
    """集合通信网格所在的芯片：网格是模拟设备时为 hardware.CPU（名义值）"""
    if rt.emulated_mesh:
        return hardware.CPU
    return hardware.from_device_kind(rt.mesh_devices[0].device_kind)


def tpu_slice_shape(devices: Sequence[Any], torus_dims: int) -> tuple[int, ...] | None:
    """由 TPU 设备的 ``coords`` 推出物理切片形状（每维坐标的个数）；没有 coords 时为 None"""
    coords = [tuple(getattr(d, "coords", ()) or ()) for d in devices]
    if not coords or not all(coords):
        return None
    shape = tuple(len({c[i] for c in coords}) for i in range(len(coords[0])))
    return (shape + (1,) * torus_dims)[:torus_dims]


def predict(
    collective: str,
    v_bytes: float,
    n: int,
    chip: hardware.Chip,
    *,
    slice_shape: Sequence[int] | None = None,
) -> tuple[float, str, float]:
    """(预测秒数, regime, 带宽项秒数)；集合通信沿一个 n 设备的轴

    四种集合通信用 `cost.estimate`。TPU 上 slice_shape 是物理切片：轴覆盖整个切片时按多轴计，
    轴长等于某一物理维时按那一维（含 wraparound 判断）。ppermute（环上移一位）是一跳：
    max(t_hop, V/W_oneway)；GPU 为 V/W_nvlink（节点内）或 V/W_ib（跨节点）。
    """
    coll = known(collective)
    if coll == "ppermute":
        if isinstance(chip, hardware.GpuChip):
            w = chip.nvlink_bw_per_direction if n <= chip.gpus_per_node else chip.ib_bw_per_gpu
            t = v_bytes / w if w else math.nan
            return t, "bandwidth-bound", t
        t_bw = v_bytes / chip.ici_oneway_bw
        t = max(chip.hop_latency, t_bw)
        return t, ("latency-bound" if t > t_bw else "bandwidth-bound"), t_bw
    axes: dict[str, int] = {"X": n}
    if isinstance(chip, hardware.TpuChip):
        if slice_shape is None:
            raise BenchError(f"{chip.name} 需要物理切片形状（slice_shape）才能预测")
        active = [s for s in slice_shape if s > 1]
        if math.prod(active) == n and n not in slice_shape:
            axes = {f"ici{i}": s for i, s in enumerate(active)}
    est = cost.estimate(coll, v_bytes, axes, chip, slice_shape=slice_shape)
    return est.time_s, est.regime, est.bandwidth_term_s


def crossover_bytes(collective: str, n: int, chip: hardware.Chip, **kw) -> float | None:
    """预测的延迟项 = 带宽项时的 V（字节）；模型没有延迟项时为 None"""
    t_lat = predict(collective, 0.0, n, chip, **kw)[0]
    slope = predict(collective, 2.0**30, n, chip, **kw)[2] / 2.0**30
    return t_lat / slope if t_lat > 0 and slope > 0 else None
