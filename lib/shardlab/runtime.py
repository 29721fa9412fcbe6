"""运行环境：每个笔记本第一个代码单元调用的 `setup()`，以及 JAX API 差异的唯一适配层

Profiles（运行档位）：

- ``cpu``：默认。用 8 个模拟的 CPU 设备（emulated CPU devices）跑全部集合通信；
- ``tpu`` / ``gpu``：使用真实加速器。加速器数量够组成网格时，集合通信在加速器上运行；
  只有一颗芯片时（如 Colab 的 TPU v5e-1），集合通信仍用 CPU 网格，单芯片计算用加速器；
- ``auto``：有足够的加速器就用，否则退回 CPU 模拟。

档位来自参数或环境变量 ``COURSE_PROFILE``。设备数量必须在 JAX 后端初始化之前设定，
所以 `setup()` 要在任何 JAX 运算之前调用；晚了只能重启内核（restart the kernel）。

本模块是全库唯一直接处理 JAX 版本差异的地方（shard_map 的导入位置、网格轴类型），
在 jax 0.7.2（Colab）到 0.10.2 上验证过。
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from shardlab import sharding, xla_flags

PROFILES = ("cpu", "tpu", "gpu", "auto")
DEFAULT_PROFILE = "cpu"
DEFAULT_N_DEVICES = 8


class RuntimeSetupError(RuntimeError):
    """运行环境无法按要求建立（设备太少、档位与硬件不符等）"""


@dataclass(frozen=True)
class Runtime:
    """`setup()` 的结果：本次运行用哪些设备做什么

    profile: 解析后的档位（'cpu'、'tpu' 或 'gpu'；'auto' 已被解析）
    mesh_devices: 组成集合通信网格的设备（长度 n_devices）
    compute_device: 单芯片计算（如 matmul roofline）所用的设备
    device_kind: compute_device 的 JAX ``device_kind``（如 'TPU v5 lite'、'NVIDIA H100 80GB HBM3'、'cpu'）
    emulated_mesh: 网格是否由模拟的 CPU 设备组成
    """

    profile: str
    mesh_devices: tuple[Any, ...]
    compute_device: Any
    device_kind: str
    emulated_mesh: bool
    jax_version: str
    notes: tuple[str, ...] = field(default=())

    @property
    def n_devices(self) -> int:
        return len(self.mesh_devices)

    def mesh(self, shape: Sequence[int], names: Sequence[str], *, explicit: bool = False):
        """在 mesh_devices 上建一个网格（Mesh），例如 ``rt.mesh((2, 4), ('X', 'Y'))``

        默认轴类型为 Auto（0.7.2 与 0.10.2 行为一致，shard_map 的 in_specs 不要求输入预先分片）；
        ``explicit=True`` 得到 Explicit 轴（jax 0.10 中 make_mesh 的默认值）。
        """
        return make_mesh(shape, names, devices=self.mesh_devices, explicit=explicit)

    def describe(self) -> str:
        """一段人能读的环境说明（中文）"""
        where = "模拟的 CPU 设备" if self.emulated_mesh else f"{self.device_kind}"
        lines = [
            f"jax {self.jax_version}，档位（profile）= {self.profile}",
            f"集合通信网格：{self.n_devices} 个设备（{where}）",
            f"单芯片计算设备：{self.compute_device}（device_kind = {self.device_kind!r}）",
        ]
        lines.extend(self.notes)
        return "\n".join(lines)


def _requested_profile(profile: str | None) -> str:
    chosen = profile or os.environ.get("COURSE_PROFILE") or DEFAULT_PROFILE
    chosen = chosen.strip().lower()
    if chosen not in PROFILES:
        raise ValueError(
            f"未知的运行档位（profile）{chosen!r}：可选 {', '.join(PROFILES)}。"
            "可用参数 setup(profile=...) 或环境变量 COURSE_PROFILE 指定。"
        )
    return chosen


def _ensure_xla_flag(n_devices: int) -> None:
    """在 XLA_FLAGS 里请求 n 个 host（CPU）设备；已有该标志时不覆盖"""
    os.environ["XLA_FLAGS"] = xla_flags.with_device_count(os.environ.get("XLA_FLAGS", ""), n_devices, replace=False)


def _too_few_devices_error(found: int, wanted: int) -> RuntimeSetupError:
    return RuntimeSetupError(
        f"JAX 在 setup() 之前已经初始化（JAX was initialised before setup()），"
        f"只有 {found} 个 CPU 设备，而课程需要 {wanted} 个。"
        "请重启内核（Restart the kernel / Colab: Runtime → Restart session），"
        "然后先运行笔记本的第一个代码单元（from shardlab import runtime; runtime.setup()），再运行其他单元。"
    )


def setup(profile: str | None = None, n_devices: int = DEFAULT_N_DEVICES) -> Runtime:
    """建立运行环境；必须在任何 JAX 运算之前调用（import jax 本身无妨）

    profile: 'cpu' | 'tpu' | 'gpu' | 'auto'；省略时读环境变量 COURSE_PROFILE，再省略为 'cpu'
    n_devices: 集合通信网格的设备数，默认 8

    重复调用是安全的：后端已按要求初始化时直接返回同样的结果。
    """
    if not isinstance(n_devices, int) or n_devices < 1:
        raise ValueError(f"n_devices 必须是正整数，收到 {n_devices!r}")
    wanted = _requested_profile(profile)
    _ensure_xla_flag(n_devices)

    try:
        jax.config.update("jax_num_cpu_devices", n_devices)
        if wanted == "cpu":
            # 只启动 CPU 后端：有加速器的机器上，cpu 档位的数组也留在 CPU 上
            jax.config.update("jax_platforms", "cpu")
    except RuntimeError:
        pass  # 后端已初始化：下面按实际设备数判断能否继续

    cpu = jax.local_devices(backend="cpu")
    if len(cpu) < n_devices:
        raise _too_few_devices_error(len(cpu), n_devices)
    multi = jax.process_count() > 1  # 多进程（multi-controller）：网格由所有进程的设备组成

    backend = jax.default_backend()
    accel = jax.local_devices() if backend != "cpu" else []
    notes: list[str] = []

    if wanted in ("tpu", "gpu") and backend != wanted:
        raise RuntimeSetupError(
            f"档位（profile）为 {wanted!r}，但 JAX 的默认后端是 {backend!r}：没有找到 {wanted.upper()}。"
            "请在有该加速器的机器上运行，或改用 COURSE_PROFILE=cpu / auto。"
        )
    if wanted == "auto":
        resolved = backend if accel else "cpu"
    else:
        resolved = wanted

    if resolved == "cpu":
        mesh_devices, compute = (jax.devices("cpu") if multi else cpu[:n_devices]), cpu[0]
    elif len(accel) >= n_devices:
        mesh_devices, compute = (jax.devices() if multi else accel[:n_devices]), accel[0]
    else:
        mesh_devices, compute = cpu[:n_devices], accel[0]
        notes.append(
            f"只有 {len(accel)} 个 {backend.upper()} 设备，不够组成 {n_devices} 设备的网格："
            f"集合通信使用 {n_devices} 个模拟 CPU 设备，单芯片计算使用 {accel[0].device_kind}。"
        )
    if multi:
        notes.append(f"进程 {jax.process_index()} / {jax.process_count()}：网格共 {len(mesh_devices)} 个设备")
    return Runtime(
        profile=resolved,
        mesh_devices=tuple(mesh_devices),
        compute_device=compute,
        device_kind=compute.device_kind,
        emulated_mesh=mesh_devices[0].platform == "cpu",
        jax_version=jax.__version__,
        notes=tuple(notes),
    )


def init_distributed(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_devices: int = 4,
    profile: str | None = None,
    timeout_s: int = 300,
) -> Runtime:
    """多进程运行（JAX 的 multi-controller 运行时）：先 ``jax.distributed.initialize``，再 ``setup``

    coordinator 如 ``'127.0.0.1:12355'``；三个参数都省略时由 JAX 从集群环境（TPU pod、SLURM 等）自己发现。
    local_devices 是本进程的设备数（CPU 档位下即每个进程模拟的 CPU 设备数）；返回的网格包含所有进程的设备。
    必须在任何 JAX 运算之前调用；结束时调用 ``shutdown_distributed()``。
    """
    _ensure_xla_flag(local_devices)

    jax.config.update("jax_num_cpu_devices", local_devices)
    kwargs: dict[str, Any] = {"initialization_timeout": int(timeout_s)}
    if coordinator is not None:
        kwargs.update(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)
    jax.distributed.initialize(**kwargs)
    return setup(profile, n_devices=local_devices)


def shutdown_distributed() -> None:
    """结束多进程运行（与 init_distributed 配对）"""

    jax.distributed.shutdown()


# ---- JAX API 适配（其他模块只从这里取 shard_map 与网格） ----


def make_mesh(shape: Sequence[int], names: Sequence[str], *, devices=None, explicit: bool = False):
    """`jax.make_mesh` 的稳定包装：形状与轴名按位置传入，轴类型显式给出

    devices 省略时用 JAX 默认设备（cpu 档位下即 CPU 设备）。
    """

    shape, names = tuple(int(s) for s in shape), tuple(names)
    if len(shape) != len(names):
        raise ValueError(f"网格形状 {shape} 与轴名 {names} 的个数不一致")
    if len(set(names)) != len(names):
        raise ValueError(f"网格轴名重复：{names}")
    size = int(np.prod(shape))
    pool = list(devices) if devices is not None else jax.devices()
    if size > len(pool):
        raise RuntimeSetupError(f"网格 {dict(zip(names, shape))} 需要 {size} 个设备，只有 {len(pool)} 个")
    axis_type = AxisType.Explicit if explicit else AxisType.Auto
    return jax.make_mesh(shape, names, axis_types=(axis_type,) * len(shape), devices=pool[:size])


def shard_map(f, *, mesh, in_specs, out_specs, check_vma: bool = True):
    """`jax.shard_map`（jax ≥ 0.7）；更老的 jax 退回 jax.experimental.shard_map"""

    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma)
    from jax.experimental.shard_map import shard_map as legacy  # pragma: no cover

    return legacy(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=check_vma)  # pragma: no cover


def jit_shard_map(block_fn, mesh, in_specs, out_specs):
    """``jit(shard_map(block_fn))``，输入输出的分片与 in_specs / out_specs 一致：全局数组进、全局数组出

    in_specs 可以是一个 PartitionSpec（单个输入）或它们的元组；collectives、collective_matmul、megatron 共用。
    """

    mapped = shard_map(block_fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    # 老版本 jax 的 PartitionSpec 是 tuple 的子类，所以先判断它
    single = isinstance(in_specs, PartitionSpec)
    in_shardings = NamedSharding(mesh, in_specs) if single else tuple(NamedSharding(mesh, s) for s in in_specs)
    return jax.jit(mapped, in_shardings=in_shardings, out_shardings=NamedSharding(mesh, out_specs))


def to_partition_spec(spec):
    """分片记号 → jax 的 PartitionSpec：``to_partition_spec('A[I_X, J]')`` → ``P('X', None)``

    记号的解析在 `shardlab.sharding`（纯 Python）；带 {U_...} 的记号抛出 ShardingError。
    """

    return PartitionSpec(*sharding.partition_entries(spec))


def put(x, mesh, spec):
    """把数组按 PartitionSpec 放到网格上：``put(x, mesh, P('X', None))``"""

    return jax.device_put(x, NamedSharding(mesh, spec))
