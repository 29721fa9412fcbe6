"""芯片常数：TPU、GPU、GB200 NVL72 节点与模拟 CPU 设备（emulated CPU devices）

数字来自 *How To Scale Your Model*（github.com/jax-ml/scaling-book，MIT）：
tpus.md「TPU Specs」、gpus.md「Summary of GPU specs」与「Networking」、sharding.md 的例题。
每个数值字段的出处写在字段元数据里，用 ``chip.sources[字段名]`` 读取；
由别的字段推出的量（``ici_bidir_bw``、``nvlink_bw_per_direction``、``node_scaleout_bw``）是属性，不另外录入。

单位：字节（bytes）、字节/秒（bytes/s）、FLOP/s、秒。带宽名称里都写明方向：
``ici_oneway_bw`` 是一条 ICI 链路一个方向的带宽，``ici_bidir_bw = 2 × ici_oneway_bw`` 是两个方向之和（书中的 W_ici）。
容量沿用书中表格的 GB（1e9 字节）。
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

_TPU_SPECS = "How To Scale Your Model, tpus.md「TPU Specs」芯片表"
_TPU_ICI = "tpus.md「TPU Specs」ICI 表（ICI BW/link, one-way）"
_TPU_HOST = "tpus.md「TPU Specs」表后一段（PCIe 与 DCN 每芯片带宽）"
_TPU_NET = "tpus.md「TPU Networking」（2D / 3D torus，4x4x4 立方体与 wraparound）"
_TPU_CORES = "tpus.md「What Is a TPU?」（megacore；v5e/v6e 每芯片一个 TensorCore）"
_HOP = "sharding.md Case 2 例题与习题 2-3（每跳延迟约 1 µs）"
_GPU_SPECS = "gpus.md「Summary of GPU specs」"
_GPU_HBM_BW = "gpus.md「Memory」（H100 3.35 TB/s；表中取整为 3.4e12）与「Summary of GPU specs」"
_GPU_NVLINK = "gpus.md「At the node level」NVLink 表（每链路每方向带宽、链路数、NVSwitch 数）"
_GPU_NODE = "gpus.md「Beyond the node level」（400 Gbps NIC 每 GPU；GB200 NVL72 的 72 GPU 节点）"
NCCL_RELEASE = "NCCL 2.30.3"  # 2026-04；下面各常数在哪个版本之后没有再变，写在各自的出处里
_NCCL_LAT = (
    f"NVIDIA/nccl src/graph/tuning.cc（{NCCL_RELEASE}；自 2.18.1 起未变）的代价模型：ring + LL 协议 baseLat 6.6 µs，"
    "每步 hwLat NVLink 0.6 µs、网络 2.7 µs（2.17 及更早的版本是 3.6 µs、0.47 µs、2.7 µs）"
)
_NCCL_LL = (
    f"NVIDIA/nccl src/graph/tuning.cc（{NCCL_RELEASE}）llMaxBws：单节点 LL 协议的总线带宽上限"
    "（Ampere 87.7、Hopper 141（自 2.21.5；2.18.1–2.20.5 为 87.7）、Blackwell 282 GB/s（自 2.25.1））"
)
_NCCL_NVL = (
    f"NVIDIA/nccl src/graph/topo.h（{NCCL_RELEASE}）SMxx_NVLINK_BW：拓扑搜索里每条 NVLink 每方向的带宽"
    "（SM80 20.0、SM90 20.6（自 2.20.3；2.18–2.19 为 20.0）、SM100 40.1 GB/s）"
)
_NOMINAL = "名义值（nominal）：只为让代价模型能在模拟设备上运行，不对应任何真实互连或芯片"

# NCCL 节点内环形算法三种协议的模型参数（tuning.cc，NCCL 2.30.3；延迟常数自 2.18.1 起未变）：
# 协议 → (baseLat 秒, 每步 NVLink hwLat 秒, 总线带宽相对 nccl_bus_bw 的系数)；LL 另受 nccl_ll_bus_bw 限制，
# LL128 另有每通道上限（通道数足够多时不起作用，这里不计）。
# 节点内的另外两种 AllReduce 算法在同一个模型里的延迟（tuning.cc，NCCL 2.30.3）：
# 树 + LL：baseLat 6.8 µs，每步 hwLat NVLink 0.6 µs，节点内是 G-1 步的链、上下各一遍；
# NVLS（NVLink SHARP，只有 Simple 协议）：延迟就是 hwLat NVLink NVLS = 25 µs（2.21.5 起；2.20 为 23 µs）。
NCCL_TREE_LL_LATENCY = (6.8e-6, 0.6e-6)
NCCL_NVLS_LATENCY = 25e-6

NCCL_RING_PROTOCOLS: Mapping[str, tuple[float, float, float]] = MappingProxyType(
    {"LL": (6.6e-6, 0.6e-6, 0.5), "LL128": (14.0e-6, 1.9e-6, 0.92), "Simple": (8.4e-6, 3.4e-6, 1.0)}
)

CUBE_EDGE = 4  # v4 / v5p 切片由 4x4x4 立方体拼成（tpus.md「TPU Networking」）


def _num(source: str, default: Any = ...) -> Any:
    """带出处的数值字段"""
    if default is ...:
        return field(metadata={"source": source})
    return field(default=default, metadata={"source": source})


class _Chip:
    """三类芯片共有的方法"""

    @property
    def sources(self) -> Mapping[str, str]:
        """字段名 → 出处"""
        return MappingProxyType({f.name: f.metadata["source"] for f in fields(self) if "source" in f.metadata})

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TpuChip(_Chip):
    """一种 TPU 芯片；ICI 带宽按「每条链路、每个方向」录入

    wrap_rule：'full-axis' 表示只有跨满整个 pod 边长的轴才有 wraparound（v5e/v6e 为 16；v3 按同一规则取 32，
    这是我们的推断，书中没有写 v3）；'cube' 表示切片由 4x4x4 立方体拼成时每个轴都有 wraparound（v4、v5p）。
    """

    key: str
    name: str
    hbm_bytes: float = _num(_TPU_SPECS)  # bytes
    hbm_bw: float = _num(_TPU_SPECS)  # bytes/s
    flops_bf16: float = _num(_TPU_SPECS)  # FLOP/s，每芯片
    ops_int8: float = _num(_TPU_SPECS)  # OP/s，每芯片
    ici_oneway_bw: float = _num(_TPU_ICI)  # bytes/s，一条链路一个方向
    pcie_bw: float = _num(_TPU_HOST)  # bytes/s，芯片与主机之间
    dcn_bw_per_chip: float = _num(_TPU_HOST)  # bytes/s
    torus_dims: int = _num(_TPU_NET)  # 2D 或 3D torus
    pod_shape: tuple[int, ...] = _num(_TPU_SPECS)  # 最大 pod 的形状
    host_shape: tuple[int, ...] = _num(_TPU_SPECS)  # 一台主机连接的芯片
    tensorcores_per_chip: int = _num(_TPU_CORES)
    devices_per_chip: int = _num(_TPU_CORES)  # 每芯片的 JAX 设备数（v3 为 2）
    wrap_rule: str = "full-axis"
    hop_latency: float = _num(_HOP, 1e-6)  # s，每跳
    aliases: tuple[str, ...] = ()
    note: str = ""
    emulated: bool = False
    kind = "tpu"

    @property
    def ici_bidir_bw(self) -> float:
        """一条链路两个方向之和（bytes/s），书中的 W_ici"""
        return 2 * self.ici_oneway_bw

    @property
    def neighbours(self) -> int:
        return 2 * self.torus_dims

    @property
    def topology(self) -> str:
        return f"{self.torus_dims}D torus，{self.neighbours} 个邻居"


@dataclass(frozen=True)
class GpuChip(_Chip):
    """一种 GPU 及其所在节点（NVLink 域）；NVLink 带宽按「每 GPU、每个方向（egress）」计

    NVIDIA 宣传的 900 GB/s（H100）是两个方向之和；这里的 ``nvlink_bw_per_direction`` 是单方向 450 GB/s。
    """

    key: str
    name: str
    hbm_bytes: float = _num(_GPU_SPECS)  # bytes
    hbm_bw: float = _num(_GPU_HBM_BW)  # bytes/s
    flops_bf16: float = _num(_GPU_SPECS)  # FLOP/s（稠密）
    ops_int8: float = _num(_GPU_SPECS)  # OP/s（书中 fp8/int8 一列）
    nvlink_links: int = _num(_GPU_NVLINK)  # 每 GPU 的 NVLink 链路数
    nvlink_link_bw_per_direction: float = _num(_GPU_NVLINK)  # bytes/s，每条链路每方向
    gpus_per_node: int = _num(_GPU_NVLINK)  # NVLink 域大小
    nvswitches_per_node: int = _num(_GPU_NVLINK)
    ib_bw_per_gpu: float | None = _num(_GPU_NODE)  # bytes/s，每 GPU 一块 NIC；书中未给出时为 None
    nccl_base_latency: float = _num(_NCCL_LAT, 6.6e-6)  # s，一次集合通信的固定开销（NCCL 模型，ring + LL）
    nvlink_step_latency: float = _num(_NCCL_LAT, 0.6e-6)  # s，环上每一步经 NVLink 的开销
    net_step_latency: float = _num(_NCCL_LAT, 2.7e-6)  # s，环上每一步跨节点（InfiniBand）的开销
    nccl_nvlink_bw_per_link: float | None = _num(_NCCL_NVL, None)  # bytes/s，NCCL 拓扑里每条 NVLink 每方向
    nccl_ll_bus_bw: float | None = _num(_NCCL_LL, None)  # bytes/s，单节点 LL 协议的总线带宽上限
    aliases: tuple[str, ...] = ()
    note: str = ""
    emulated: bool = False
    kind = "gpu"

    @property
    def nvlink_bw_per_direction(self) -> float:
        """每 GPU 每方向的 NVLink 带宽（bytes/s）= 链路数 × 每链路带宽"""
        return self.nvlink_links * self.nvlink_link_bw_per_direction

    @property
    def nccl_bus_bw(self) -> float | None:
        """NCCL 自己的模型里节点内环的总线带宽上限（bytes/s）= 链路数 × NCCL 记的每链路带宽

        H100：18 × 20.6 GB/s = 370.8 GB/s，与书中 8×H100 AllReduce 实测的约 370 GB/s 相符；NVLink 的额定值是 450 GB/s。
        这是链路的上限：NCCL 的拓扑搜索实际取通道数 × 每通道带宽（每通道带宽从离散的档位里选），乘积不超过它。
        """
        return None if self.nccl_nvlink_bw_per_link is None else self.nvlink_links * self.nccl_nvlink_bw_per_link

    @property
    def node_scaleout_bw(self) -> float | None:
        """每节点进入 scale-out 网络（InfiniBand）的出口带宽（bytes/s）"""
        return None if self.ib_bw_per_gpu is None else self.ib_bw_per_gpu * self.gpus_per_node

    @property
    def topology(self) -> str:
        return f"NVSwitch 全互连（all-to-all），{self.gpus_per_node} GPU/节点"


@dataclass(frozen=True)
class EmulatedChip(_Chip):
    """模拟的 CPU 设备：全部是名义值（nominal values），不模拟任何真实互连

    模拟设备上的集合通信计时与 ICI 毫无关系；这些数字只让代价模型有东西可算。
    代价模型把它当作每个轴都有 wraparound 的环。
    """

    key: str
    name: str
    hbm_bytes: float = _num(_NOMINAL, 16e9)  # bytes
    hbm_bw: float = _num(_NOMINAL, 1e11)  # bytes/s
    flops_bf16: float = _num(_NOMINAL, 1e12)  # FLOP/s
    ops_int8: float = _num(_NOMINAL, 1e12)  # OP/s
    ici_oneway_bw: float = _num(_NOMINAL, 1e10)  # bytes/s，名义的单方向链路带宽
    hop_latency: float = _num(_NOMINAL, 1e-6)  # s
    aliases: tuple[str, ...] = ()
    note: str = "名义值，不对应任何真实互连"
    emulated: bool = True
    kind = "cpu"
    topology = "名义环（nominal ring），每轴都有 wraparound"

    @property
    def ici_bidir_bw(self) -> float:
        return 2 * self.ici_oneway_bw


Chip = TpuChip | GpuChip | EmulatedChip

# ---- 芯片表（只录入书中的原始数字；派生量由属性计算） ----
# TpuChip 位置参数：key, name, hbm_bytes, hbm_bw, flops_bf16, ops_int8, ici_oneway_bw, pcie_bw, dcn_bw_per_chip,
#                  torus_dims, pod_shape, host_shape, tensorcores_per_chip, devices_per_chip

TPU_V3 = TpuChip("v3", "TPU v3", 32e9, 9.0e11, 1.4e14, 1.4e14, 1e11, 1.6e10, 6.25e9, 2, (32, 32), (4, 2), 2, 2)
TPU_V4P = TpuChip(
    "v4p", "TPU v4p", 32e9, 1.2e12, 2.75e14, 2.75e14, 4.5e10, 1.6e10, 6.25e9, 3, (16, 16, 16), (2, 2, 1), 2, 1,
    wrap_rule="cube", aliases=("v4",),
    note="书中的标签 TPU v4p 指 Google 的 TPU v4（JAX device_kind 'TPU v4'），不是 v5p：v5p 的 ICI 带宽是它的 2 倍",
)  # fmt: skip
TPU_V5P = TpuChip(
    "v5p", "TPU v5p", 96e9, 2.8e12, 4.59e14, 9.18e14, 9e10, 1.6e10, 6.25e9, 3, (16, 20, 28), (2, 2, 1), 2, 1,
    wrap_rule="cube",
)  # fmt: skip
TPU_V5E = TpuChip(
    "v5e", "TPU v5e", 16e9, 8.2e11, 1.97e14, 3.94e14, 4.5e10, 1.6e10, 3.125e9, 2, (16, 16), (4, 2), 1, 1,
    aliases=("v5lite", "v5litepod"),
    note="HBM 带宽 8.2e11 B/s（Google 规格 819 GB/s；书中表格有的版本写作 8.1e11）",
)  # fmt: skip
TPU_V6E = TpuChip(
    "v6e", "TPU v6e", 32e9, 1.6e12, 9.2e14, 1.84e15, 9e10, 3.2e10, 12.5e9, 2, (16, 16), (4, 2), 1, 1,
    aliases=("v6lite", "trillium"), note="Trillium",
)  # fmt: skip

# GpuChip 位置参数：key, name, hbm_bytes, hbm_bw, flops_bf16, ops_int8, nvlink_links, nvlink_link_bw_per_direction,
#                  gpus_per_node, nvswitches_per_node, ib_bw_per_gpu
_IB_NIC = 400e9 / 8  # 400 Gb/s NIC → bytes/s
A100 = GpuChip(
    "a100", "A100", 80e9, 2.0e12, 3.1e14, 6.2e14, 12, 25e9, 8, 6, None, nccl_nvlink_bw_per_link=20e9,
    nccl_ll_bus_bw=87.7e9, note="书中未给出 A100 的 scale-out 带宽",
)  # fmt: skip
H100 = GpuChip(
    "h100", "H100", 80e9, 3.35e12, 9.89e14, 2.0e15, 18, 25e9, 8, 4, _IB_NIC, nccl_nvlink_bw_per_link=20.6e9,
    nccl_ll_bus_bw=141e9, note="SXM 规格；PCIe/NVL 变体也映射到这里",
)  # fmt: skip
H200 = GpuChip(
    "h200", "H200", 141e9, 4.8e12, 9.89e14, 2.0e15, 18, 25e9, 8, 4, _IB_NIC, nccl_nvlink_bw_per_link=20.6e9,
    nccl_ll_bus_bw=141e9,
)  # fmt: skip
B200 = GpuChip(
    "b200", "B200", 192e9, 8.0e12, 2.25e15, 4.5e15, 18, 50e9, 8, 2, _IB_NIC, nccl_nvlink_bw_per_link=40.1e9,
    nccl_ll_bus_bw=282e9,
)  # fmt: skip
GB200_NVL72 = GpuChip(
    "gb200-nvl72", "GB200 NVL72", 192e9, 8.0e12, 2.25e15, 4.5e15, 18, 50e9, 72, 18, _IB_NIC,
    nccl_nvlink_bw_per_link=40.1e9, nccl_ll_bus_bw=282e9, aliases=("gb200", "nvl72"),
    note="72 GPU 的 NVLink 域；书中没有单列 GB200 的芯片级规格，HBM 与算力沿用 B200 一行",
)  # fmt: skip
CPU = EmulatedChip("cpu", "CPU（模拟设备）", aliases=("emulated", "host"))

ALL_CHIPS: tuple[Chip, ...] = (TPU_V3, TPU_V4P, TPU_V5P, TPU_V5E, TPU_V6E, A100, H100, H200, B200, GB200_NVL72, CPU)


class UnknownChipError(KeyError, ValueError):
    """未知的芯片名或 device_kind；既是 KeyError 也是 ValueError"""

    def __str__(self) -> str:
        return str(self.args[0])


class TopologyError(ValueError):
    """切片形状与芯片拓扑不符，或对非 torus 的芯片问 wraparound"""


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]+|^nvidia|^tpu", "", name.strip().lower())


_BY_ALIAS: dict[str, Chip] = {}
for _chip in ALL_CHIPS:
    for _alias in (_chip.key, _chip.name, *_chip.aliases):
        _BY_ALIAS[_norm(_alias)] = _chip

# JAX 的 device_kind（小写、合并空格后精确匹配）
_DEVICE_KINDS = {
    "tpu v3": TPU_V3,
    "tpu v4": TPU_V4P,
    "tpu v5 lite": TPU_V5E,
    "tpu v5e": TPU_V5E,
    "tpu v5": TPU_V5P,
    "tpu v5p": TPU_V5P,
    "tpu v6 lite": TPU_V6E,
    "tpu v6e": TPU_V6E,
    "cpu": CPU,
}
_NVIDIA_MODEL = re.compile(r"\b(a100|h100|h200|gb200|b200)\b")


def _unknown(what: str, name: object) -> UnknownChipError:
    known = "、".join(c.name for c in ALL_CHIPS)
    return UnknownChipError(
        f"未知的{what} {name!r}。已知芯片（known chips）：{known}；"
        "名字不区分大小写，可写别名，如 'v5e'、'TPU v5e'、'v4'、'h100'、'gb200'。"
    )


def from_device_kind(device_kind: str) -> Chip:
    """把 JAX 的 ``device.device_kind`` 映射到芯片，如 'TPU v5 lite' → TPU v5e，'NVIDIA H100 80GB HBM3' → H100"""
    kind = " ".join(str(device_kind).lower().split())
    if kind in _DEVICE_KINDS:
        return _DEVICE_KINDS[kind]
    match = _NVIDIA_MODEL.search(kind) if kind.startswith("nvidia") else None
    if match:
        return _BY_ALIAS[match.group(1)]
    raise _unknown("设备类型（device_kind）", device_kind)


def get_chip(name: str | Chip) -> Chip:
    """按名字或别名（不区分大小写）取芯片；也接受 JAX device_kind 与芯片对象本身"""
    if isinstance(name, (TpuChip, GpuChip, EmulatedChip)):
        return name
    if not isinstance(name, str):
        raise _unknown("芯片（chip）", name)
    chip = _BY_ALIAS.get(_norm(name))
    if chip is not None:
        return chip
    try:
        return from_device_kind(name)
    except UnknownChipError:
        raise _unknown("芯片（chip）", name) from None


def check_slice_shape(chip: str | Chip, slice_shape: Sequence[int]) -> tuple[int, ...]:
    """检查切片形状（slice shape）：维数等于 torus 维数，每维是正整数且不超过 pod 边长"""
    chip = get_chip(chip)
    shape = tuple(slice_shape)
    if not shape or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in shape):
        raise TopologyError(f"切片形状（slice shape）必须是正整数的元组，收到 {slice_shape!r}")
    if isinstance(chip, TpuChip):
        if len(shape) != chip.torus_dims:
            raise TopologyError(
                f"{chip.name} 是 {chip.torus_dims}D torus，切片形状应有 {chip.torus_dims} 维，收到 {shape}"
            )
        if max(shape) > max(chip.pod_shape) or math.prod(shape) > math.prod(chip.pod_shape):
            raise TopologyError(f"切片 {shape} 超出 {chip.name} 的 pod {chip.pod_shape}")
    return shape


def has_wraparound(chip: str | Chip, axis_size: int, slice_shape: Sequence[int]) -> bool:
    """切片 slice_shape 中长度为 axis_size 的轴是否有 wraparound（能否组成双向环）

    - v5e / v6e（以及按同一规则的 v3）：只有长度等于 pod 边长（16）的轴有，例如 8x16 在 16 那一轴上有，4x4、8x4 没有；
    - v4p / v5p：每维都是 4 的倍数（由完整的 4x4x4 立方体拼成，如 4x4x4、4x4x8）时每个轴都有，2x2x4、2x2x2 没有；
    - 模拟 CPU：名义上每个轴都有；
    - GPU：节点内是 NVSwitch 全互连，不是 torus，没有 wraparound 可言，抛出 TopologyError。
    """
    chip = get_chip(chip)
    if isinstance(chip, GpuChip):
        raise TopologyError(
            f"{chip.name} 不是 torus：节点内由 NVSwitch 全互连（all-to-all），没有 wraparound 的概念；"
            "请直接用 cost 模块的 gpu_* 公式"
        )
    shape = check_slice_shape(chip, slice_shape)
    if axis_size not in shape:
        raise TopologyError(f"切片 {shape} 中没有长度为 {axis_size} 的轴")
    if isinstance(chip, EmulatedChip):
        return True
    if chip.wrap_rule == "cube":
        return all(d % CUBE_EDGE == 0 for d in shape)
    return axis_size in chip.pod_shape
