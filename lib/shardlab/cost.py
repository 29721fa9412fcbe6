"""代价模型：集合通信与分片矩阵乘法的时间估算，一个公式一个函数

约定（出处：How To Scale Your Model, sharding.md 与 gpus.md；推导用我们自己的话写在书里）：

- 时间单位秒，大小单位字节（bytes），带宽单位 bytes/s，算力单位 FLOP/s；
- V：AllGather 时是收集完成后整个数组的字节数；ReduceScatter / AllReduce 时是每个设备本地未规约缓冲区的字节数；
  AllToAll 时是整个数组的字节数（每个设备持有 V/N）；
- W_oneway 是一条链路一个方向的带宽，W_bidir = 2·W_oneway（书中的 W_ici）；
- 每跳时间 = max(t_hop, chunk / W)：每跳搬运的数据块（chunk）小于 W·t_hop 时这一跳受延迟限制
  （v5e 上约 45 kB，针对每跳的数据块，不是整个数组）。
  因为每跳的数据块一样大，h·max(t_hop, c/W) = max(h·t_hop, h·c/W)：总时间是延迟项与带宽项中较大的那个。

环形函数对有限的 N 精确（环形模拟器逐字节计数后与它们比对），文档里同时给出大 N 极限。
本模块只用 Python 与 math，不导入 JAX。
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from shardlab import hardware, names, units

# ---- 输入检查 ----


def _bytes(v: float, what: str = "字节数（bytes）") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{what}必须是非负的有限数，收到 {v!r}")
    return float(v)


def _size(n: int, what: str = "轴大小（axis size）N") -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise ValueError(f"{what}必须是整数，收到 {n!r}") from None
    if n < 1:
        raise ValueError(f"{what}必须 ≥ 1，收到 {n}")
    return n


def _rate(w: float, what: str = "带宽（bandwidth）") -> float:
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
        raise ValueError(f"{what}必须是正的有限数，收到 {w!r}")
    return float(w)


def _latency(t: float) -> float:
    return _bytes(t, "每跳延迟（hop_latency）")


def _hops(n_hops: int, chunk_bytes: float, bw: float, hop_latency: float) -> float:
    """n_hops 跳，每跳在一个方向上搬 chunk_bytes：n_hops · max(t_hop, chunk/W)"""
    return n_hops * max(hop_latency, chunk_bytes / bw)


# ---- TPU 单轴：AllGather / ReduceScatter / AllReduce ----


def allgather_oneway_ring(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """单向环（unidirectional ring）上的 AllGather：T = (N-1) · max(t_hop, (V/N)/W_oneway)

    N-1 跳，每跳把 V/N 字节沿一个方向送出；每条链路共承载 V(N-1)/N 字节。
    大 N 极限：V/W_oneway。N=1 时为 0。
    """
    v, n, w, lat = _bytes(v_bytes), _size(n), _rate(ici_oneway_bw), _latency(hop_latency)
    return _hops(n - 1, v / n, w, lat)


def allgather_bidir_ring(v_bytes: float, n: int, ici_bidir_bw: float, hop_latency: float = 0.0) -> float:
    """双向环（有 wraparound）上的 AllGather：T = ⌊N/2⌋ · max(t_hop, 2V/(N·W_bidir))

    ⌊N/2⌋ 跳，每跳在两个方向上各送 V/N 字节，每个方向的带宽是 W_oneway = W_bidir/2。
    偶数 N 恰为 V/W_bidir，奇数 N 为 (N-1)/N · V/W_bidir；大 N 极限 V/W_bidir，与 N 无关。
    （偶数 N 时若把正对面那一块拆成两半分走两个方向，时间可降为 (N-1)/N · V/W_bidir；我们按整块计，与书一致。）
    """
    v, n, w, lat = _bytes(v_bytes), _size(n), _rate(ici_bidir_bw), _latency(hop_latency)
    return _hops(n // 2, v / n, w / 2, lat)


def allgather_line(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """没有 wraparound 的轴（线形，line）上的 AllGather：T = (N-1) · max(t_hop, (V/N)/W_oneway)

    两端的设备要经同一条链路收下其余 N-1 块，每块 V/N 字节，只能用这条链路的一个方向。
    数值与单向环相同（原因不同）；大 N 极限 V/W_oneway = 2V/W_bidir，约为有 wraparound 时的 2 倍。
    """
    v, n, w, lat = _bytes(v_bytes), _size(n), _rate(ici_oneway_bw), _latency(hop_latency)
    return _hops(n - 1, v / n, w, lat)


def reducescatter_oneway_ring(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """单向环上的 ReduceScatter：与 AllGather 对偶（数据流反向），时间相同，V 为本地未规约缓冲区的字节数"""
    return allgather_oneway_ring(v_bytes, n, ici_oneway_bw, hop_latency)


def reducescatter_bidir_ring(v_bytes: float, n: int, ici_bidir_bw: float, hop_latency: float = 0.0) -> float:
    """双向环上的 ReduceScatter：与 AllGather 对偶，T = ⌊N/2⌋ · max(t_hop, 2V/(N·W_bidir))"""
    return allgather_bidir_ring(v_bytes, n, ici_bidir_bw, hop_latency)


def reducescatter_line(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """线形轴上的 ReduceScatter：与 AllGather 对偶，T = (N-1) · max(t_hop, (V/N)/W_oneway)"""
    return allgather_line(v_bytes, n, ici_oneway_bw, hop_latency)


def allreduce_oneway_ring(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """单向环上的 AllReduce = ReduceScatter + AllGather：2(N-1)·max(t_hop, (V/N)/W_oneway)，大 N 极限 2V/W_oneway"""
    return reducescatter_oneway_ring(v_bytes, n, ici_oneway_bw, hop_latency) + allgather_oneway_ring(
        v_bytes, n, ici_oneway_bw, hop_latency
    )


def allreduce_bidir_ring(v_bytes: float, n: int, ici_bidir_bw: float, hop_latency: float = 0.0) -> float:
    """双向环上的 AllReduce = ReduceScatter + AllGather：偶数 N 为 2V/W_bidir（书中公式）"""
    return reducescatter_bidir_ring(v_bytes, n, ici_bidir_bw, hop_latency) + allgather_bidir_ring(
        v_bytes, n, ici_bidir_bw, hop_latency
    )


def allreduce_line(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """线形轴上的 AllReduce = ReduceScatter + AllGather：2(N-1)·max(t_hop, (V/N)/W_oneway)

    这是全书（estimate）在线上用的算法，N = 4 时是有回绕的环 2V/W_bidir 的 1.5 倍。另一种算法没有这个损失：
    见 allreduce_line_pipelined。
    """
    return reducescatter_line(v_bytes, n, ici_oneway_bw, hop_latency) + allgather_line(
        v_bytes, n, ici_oneway_bw, hop_latency
    )


def allreduce_line_pipelined(v_bytes: float, n: int, ici_oneway_bw: float) -> float:
    """线形轴上流水线化的链式 AllReduce 的带宽项：V / W_oneway（= 2V/W_bidir，与有回绕的环相同）

    把缓冲区切成很多小块：部分和沿正向一路加到线的末端，末端的结果再沿反向一路广播回来；
    两个方向的链路各运 V 字节、同时在忙。线端的设备只有一条入链路，却必须收下完整的 V 字节结果，
    所以 V/W_oneway 也是线上 AllReduce 的下界：这个算法是最优的（不计流水线填充的 2(N-1) 跳延迟）。
    AllGather / ReduceScatter 在线上没有这样的算法：线端必须经一条链路收下（或送出）(N-1)/N·V。
    """
    n = _size(n)
    return 0.0 if n == 1 else _bytes(v_bytes) / _rate(ici_oneway_bw)


# ---- TPU 单轴：AllToAll ----
# 每个设备持有 V/N，切成 N 块、每块 V/N²；送往 d 跳外设备的那一块走 d 跳（双向环上走较短的方向）。
# 流水化后带宽项 = 任一有向链路承载的最大字节数 / W_oneway；延迟项 = 最远一块的跳数 × t_hop；T 取两者较大者。


def alltoall_oneway_ring(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """单向环上的 AllToAll：T = max((N-1)·t_hop, V(N-1)/(2N·W_oneway))

    每条链路承载 Σ_{d=1}^{N-1} d = N(N-1)/2 块，即 V(N-1)/(2N) 字节：恰为单向环 AllGather 带宽项的 1/2。
    大 N 极限 V/(2·W_oneway)。
    """
    v, n, w, lat = _bytes(v_bytes), _size(n), _rate(ici_oneway_bw), _latency(hop_latency)
    return max((n - 1) * lat, v * (n - 1) / (2 * n) / w)


def alltoall_bidir_ring(v_bytes: float, n: int, ici_bidir_bw: float, hop_latency: float = 0.0) -> float:
    """双向环上的 AllToAll：T = max(⌊N/2⌋·t_hop, ⌊N²/4⌋ · V/(N²·W_bidir))

    每块走较短的方向；偶数 N 时正对面（d = N/2）那一块拆成两半，两个方向各走一半。
    全部块的跳数之和为 N·Σ_d min(d, N-d) = N·⌊N²/4⌋，平均分给 2N 条有向链路，
    每条有向链路承载 ⌊N²/4⌋/2 块 = ⌊N²/4⌋·V/(2N²) 字节，以 W_oneway = W_bidir/2 送出。
    与 allgather_bidir_ring 的带宽项之比：偶数 N 恰为 1/4，奇数 N 为 (N+1)/(4N)。大 N 极限 V/(4·W_bidir)。
    """
    v, n, w, lat = _bytes(v_bytes), _size(n), _rate(ici_bidir_bw), _latency(hop_latency)
    return max((n // 2) * lat, (n * n // 4) * v / (n * n) / w)


def alltoall_line(v_bytes: float, n: int, ici_oneway_bw: float, hop_latency: float = 0.0) -> float:
    """线形轴上的 AllToAll：T = max((N-1)·t_hop, ⌊N²/4⌋ · V/(N²·W_oneway))

    最忙的是正中间那条链路：左边 ⌊N/2⌋ 个设备各有一块要送给右边 ⌈N/2⌉ 个设备（反方向对称），
    共 ⌊N/2⌋·⌈N/2⌉ = ⌊N²/4⌋ 块。带宽项恰为双向环的 2 倍。
    """
    v, n, w, lat = _bytes(v_bytes), _size(n), _rate(ici_oneway_bw), _latency(hop_latency)
    return max((n - 1) * lat, (n * n // 4) * v / (n * n) / w)


# ---- TPU 多轴 ----


Sizes = Sequence[int]  # 各轴大小
Wraps = Sequence[bool] | None  # 各轴有无 wraparound；None 表示全部有


def _axes(axis_sizes: Sizes, wraparound: Wraps) -> list[tuple[int, bool]]:
    sizes = [_size(x) for x in axis_sizes]
    if not sizes:
        raise ValueError("axis_sizes 不能为空")
    wraps = [True] * len(sizes) if wraparound is None else [bool(w) for w in wraparound]
    if len(wraps) != len(sizes):
        raise ValueError(f"wraparound 的长度 {len(wraps)} 与轴数 {len(sizes)} 不一致")
    return list(zip(sizes, wraps))


def _axis_steps(size: int, wrap: bool) -> int:
    """一维 AllGather 的步数：有 wraparound 的双向环 ⌊N/2⌋，线 N-1"""
    return size // 2 if wrap else size - 1


def allgather_multi_axis(
    v_bytes: float, axis_sizes: Sizes, ici_bidir_bw: float, hop_latency: float = 0.0, wraparound: Wraps = None
) -> float:
    """在 k 个轴上同时 AllGather 的精确时间：环形模拟器（`shardlab.ring`）给并发调度计时的结果

    调度：每个设备的 V/N 切成 k 片，第 p 片依次沿轴 p, p+1, …（循环）收集；第 j 阶段 k 片各占一个不同的轴，
    所以同一阶段里各片用的链路互不相交。第 j 阶段第 p 片每步转发的块是
    b_{p,j} = V/(N·k) · Π_{i<j} L_{(p+i) mod k}（已经沿前 j 个轴收齐的部分），沿轴 a = (p+j) mod k 走 h_a 步
    （有 wraparound 的双向环 h_a = ⌊L_a/2⌋，线 h_a = L_a - 1）。一个阶段里每一片只等它自己的上一步，
    不等别的片，所以第 p 片在第 j 阶段用时 h_a · max(t_hop, b_{p,j}/W_oneway)；
    阶段的时间是 k 片中最长的那个，阶段之间同步（下一阶段转发的是本阶段收齐的数据），总时间是各阶段之和：
    T = Σ_j max_p h_{(p+j) mod k} · max(t_hop, b_{p,j}/W_oneway)。
    例：v5e 的 2×4（两条线），c = V/16/W_oneway：第 0 阶段 max(1·c, 3·c) = 3c，第 1 阶段
    max(3·2c, 1·4c) = 6c，共 9c，正好是 Y 轴链路运完它们的 9·V/16 字节的时间（这个调度不可能更快），
    入口下界是 7c。

    各轴一样长（L，都有或都没有 wraparound，N = L^k）时化简为
    T_带宽 = h·V(N-1)/(N·k·(L-1)·W_oneway)：
    有 wraparound（偶数 L）= L(N-1)/((L-1)N) · V/(k·W_bidir)，即书中公式 V/(k·W_bidir)（大 N 极限，
    `allgather_multi_axis_limit`）的 1 到 L/(L-1) 倍：4×4 为 1.25 倍，16×16 为 1.0625 倍；
    线 = 2(N-1)/N · V/(k·W_bidir)，2×2 为 V·3/(8·W_oneway)。
    有 wraparound 时比书中公式多出来的部分全部来自“正对面的块整块走正向”的约定（与单轴一致）：
    4×4 上正向链路共运 10·V/32、反向只运 5·V/32。把正对面的块拆成两半（`ring.count(..., split_opposite=True)`）
    就到达入口下界 `allgather_ingress_bound` = (N-1)/N · V/(k·W_bidir)，比书中公式还短；(N-1)/N 因子让时间变短，不是变长。
    k = 1 时与 allgather_bidir_ring / allgather_line 相同；长度为 1 的轴不参与。
    """
    v, w, lat = _bytes(v_bytes), _rate(ici_bidir_bw), _latency(hop_latency)
    active = [(x, wrap) for x, wrap in _axes(axis_sizes, wraparound) if x > 1]
    if not active:
        return 0.0
    k, n = len(active), math.prod(x for x, _ in active)
    w1 = w / 2
    total = 0.0
    for j in range(k):
        pieces = []  # (这一片在本阶段的用时, 步数, 每步的时间)：k 片各走各的
        for p in range(k):
            size, wrap = active[(p + j) % k]
            done = math.prod(active[(p + i) % k][0] for i in range(j))
            h, step = _axis_steps(size, wrap), max(lat, v / (n * k) * done / w1)
            pieces.append((h * step, h, step))
        _, h, step = max(pieces)  # 本阶段最慢的那一片；逐步加（与模拟器的求和顺序相同）
        for _ in range(h):
            total += step
    return total


def allgather_multi_axis_limit(
    v_bytes: float, axis_sizes: Sizes, ici_bidir_bw: float, hop_latency: float = 0.0, wraparound: Wraps = None
) -> float:
    """书中的多轴 AllGather 公式（大 N 极限）：T = max(t_hop · Σ|X_i|/2, V/(k·W_bidir))

    全部轴有 wraparound 时就是书中的式子；推广（我们的近似，书中没有）：没有 wraparound 的轴只贡献 W_oneway
    （线端的设备在这个轴上只有一个邻居），延迟按 |X_i|-1 跳计，即 T = max(t_hop · Σ h_i, V / Σ W_i)。
    它比全书调度的 allgather_multi_axis 小（那里多出的是正对面整块走正向的代价），但比入口下界
    allgather_ingress_bound 大 N/(N-1) 倍。书中习题的答案（如 4×4×4 上 AllGather_XY 约 46 µs）用的是它。
    """
    v, w, lat = _bytes(v_bytes), _rate(ici_bidir_bw), _latency(hop_latency)
    active = [(x, wrap) for x, wrap in _axes(axis_sizes, wraparound) if x > 1]
    if not active:
        return 0.0
    total_bw = sum(w if wrap else w / 2 for _, wrap in active)
    hops = sum(x / 2 if wrap else x - 1 for x, wrap in active)
    return max(hops * lat, v / total_bw)


def allgather_ingress_bound(v_bytes: float, axis_sizes: Sizes, ici_bidir_bw: float, wraparound: Wraps = None) -> float:
    """多轴 AllGather 带宽项的入口下界（ingress lower bound）：(N-1)/N · V / Σ W_i

    每个设备要收下别人的 (N-1)/N 个数组，最多只能从它的入链路同时收：有 wraparound 的轴两条入链路
    （W_i = W_bidir），没有 wraparound 的轴在线端只有一条（W_i = W_oneway）。任何调度都不会比它快。
    各轴等长、都有 wraparound 的环面上，把正对面的块拆成两半的调度（`ring.count(..., split_opposite=True)`）恰好达到它；
    没有 wraparound 的 2×2 上全书的调度也达到它。
    """
    v, w = _bytes(v_bytes), _rate(ici_bidir_bw)
    active = [(x, wrap) for x, wrap in _axes(axis_sizes, wraparound) if x > 1]
    if not active:
        return 0.0
    n = math.prod(x for x, _ in active)
    return (n - 1) / n * v / sum(w if wrap else w / 2 for _, wrap in active)


def reducescatter_multi_axis(
    v_bytes: float, axis_sizes: Sizes, ici_bidir_bw: float, hop_latency: float = 0.0, wraparound: Wraps = None
) -> float:
    """多轴 ReduceScatter：多轴 AllGather 的转置（模拟器把调度倒放），时间与 allgather_multi_axis 相同"""
    return allgather_multi_axis(v_bytes, axis_sizes, ici_bidir_bw, hop_latency, wraparound)


def allreduce_multi_axis(
    v_bytes: float, axis_sizes: Sizes, ici_bidir_bw: float, hop_latency: float = 0.0, wraparound: Wraps = None
) -> float:
    """多轴 AllReduce = 多轴 ReduceScatter + 多轴 AllGather，各取 allgather_multi_axis 的精确值（大 N 极限 2V/(k·W_bidir)）"""
    args = (v_bytes, axis_sizes, ici_bidir_bw, hop_latency, wraparound)
    return reducescatter_multi_axis(*args) + allgather_multi_axis(*args)


def alltoall_nd(
    v_bytes: float, axis_sizes: Sizes, ici_bidir_bw: float, hop_latency: float = 0.0, wraparound: Wraps = None
) -> float:
    """N 维网格 A×B×… 上的 AllToAll：T = max(t_hop·Σh_i, max_i ⌊X_i²/4⌋·V/(N·X_i·W_i))，N = A·B·…

    偶数轴长时带宽项就是书中的 V · max(A, B, …) / (4·N·W_bidir)：瓶颈是最长轴的对分截面（bisection）。
    推导（按维度顺序、最短方向路由，每块 V/N²）：沿轴 a 的一条线上，要越过线中间的块有 ⌊X_a²/4⌋·N/X_a 个，
    即 ⌊X_a²/4⌋·V/(N·X_a) 字节；有 wraparound 的轴两个方向、两个截面平分它（W_a = W_bidir），
    没有 wraparound 的轴只有一个截面、每个方向 W_oneway（我们的推广）。单轴时与 alltoall_bidir_ring /
    alltoall_line 相同，奇数轴长也精确。
    延迟项 = t_hop · Σ h_i（有 wraparound 的轴 h_i = ⌊X_i/2⌋，否则 X_i-1），T 取两者较大者。
    带宽项等于模拟器数出来的最忙有向链路字节数 / W_oneway（流水化的下界）；模拟器逐步存储转发的时间不小于它。
    """
    v, w, lat = _bytes(v_bytes), _rate(ici_bidir_bw), _latency(hop_latency)
    axes = _axes(axis_sizes, wraparound)
    n_total = math.prod(x for x, _ in axes)
    t_bw = max((x * x // 4) * v / (n_total * x * (w if wrap else w / 2)) for x, wrap in axes)
    hops = sum(x // 2 if wrap else x - 1 for x, wrap in axes)
    return max(hops * lat, t_bw)


# ---- GPU：节点内（NVSwitch）与跨节点（fat tree） ----


def gpu_allgather_in_node(v_bytes: float, n: int, nvlink_bw_per_direction: float) -> float:
    """节点内 AllGather：T = V(N-1)/(N·W_gpu)，W_gpu 是每 GPU 每方向的 NVLink 出口带宽；大 N 极限 V/W_gpu

    8×H100、V = 512 MiB 时约 1.04 ms（gpus.md 节点习题 3）。不含延迟项。
    """
    v, n, w = _bytes(v_bytes), _size(n), _rate(nvlink_bw_per_direction)
    return v * (n - 1) / (n * w)


def gpu_reducescatter_in_node(v_bytes: float, n: int, nvlink_bw_per_direction: float) -> float:
    """节点内 ReduceScatter：与 AllGather 相同，V(N-1)/(N·W_gpu)"""
    return gpu_allgather_in_node(v_bytes, n, nvlink_bw_per_direction)


def gpu_allreduce_in_node(v_bytes: float, n: int, nvlink_bw_per_direction: float, sharp: bool = False) -> float:
    """节点内 AllReduce：默认 = ReduceScatter + AllGather = 2V(N-1)/(N·W_gpu)

    sharp=True（交换机内规约，in-network reduction）：理论值 V/W_gpu，书中说明恰为 V/W、没有 (N-1)/N 因子
    （每个 GPU 先送出 V(N-1)/N，再送出 V/N）。实测 SHARP 只快约 30%，远不到 2 倍。
    """
    if sharp:
        v, n, w = _bytes(v_bytes), _size(n), _rate(nvlink_bw_per_direction)
        return v / w if n > 1 else 0.0
    return gpu_reducescatter_in_node(v_bytes, n, nvlink_bw_per_direction) + gpu_allgather_in_node(
        v_bytes, n, nvlink_bw_per_direction
    )


def gpu_alltoall_in_node(v_bytes: float, n: int, nvlink_bw_per_direction: float) -> float:
    """节点内 AllToAll：T = V(N-1)/(N²·W_gpu) ≈ V/(N·W_gpu)（每个 GPU 直接把 V/N² 送给其余 N-1 个）"""
    v, n, w = _bytes(v_bytes), _size(n), _rate(nvlink_bw_per_direction)
    return v * (n - 1) / (n * n * w)


def gpu_allgather_cross_node(
    v_bytes: float, gpus_per_node: int, n_nodes: int, nvlink_bw_per_direction: float, node_bw: float
) -> float:
    """跨节点 AllGather：每层一个环，各层重叠，T = V · max((G-1)/(G·W_gpu), (M-1)/(M·W_node))

    G = 每节点 GPU 数，M = 节点数，W_node = 每节点进入 scale-out 网络的出口带宽（H100：400 GB/s）。
    这是 gpus.md「Cross-node collectives」里按层取最大的精确式；大 G、M 极限 max(V/W_gpu, V/W_node)。
    M = 1 时退化为节点内公式。
    """
    v, g, m = _bytes(v_bytes), _size(gpus_per_node, "每节点 GPU 数"), _size(n_nodes, "节点数")
    w_gpu, w_node = _rate(nvlink_bw_per_direction), _rate(node_bw, "节点带宽（node_bw）")
    return v * max((g - 1) / (g * w_gpu), (m - 1) / (m * w_node))


def gpu_reducescatter_cross_node(
    v_bytes: float, gpus_per_node: int, n_nodes: int, nvlink_bw_per_direction: float, node_bw: float
) -> float:
    """跨节点 ReduceScatter：与跨节点 AllGather 相同"""
    return gpu_allgather_cross_node(v_bytes, gpus_per_node, n_nodes, nvlink_bw_per_direction, node_bw)


def gpu_allreduce_cross_node(
    v_bytes: float, gpus_per_node: int, n_nodes: int, nvlink_bw_per_direction: float, node_bw: float
) -> float:
    """跨节点 AllReduce = ReduceScatter + AllGather（各层重叠）：2V · max((G-1)/(G·W_gpu), (M-1)/(M·W_node))"""
    args = (v_bytes, gpus_per_node, n_nodes, nvlink_bw_per_direction, node_bw)
    return gpu_reducescatter_cross_node(*args) + gpu_allgather_cross_node(*args)


def gpu_allreduce_hierarchical(
    v_bytes: float, gpus_per_node: int, n_nodes: int, nvlink_bw_per_direction: float, node_bw: float
) -> float:
    """分层 AllReduce，三步依次进行（不重叠）：

    1. 节点内 ReduceScatter（NVLink）：V(G-1)/(G·W_gpu)，之后每个 GPU 持有 V/G；
    2. 跨节点 AllReduce 这 V/G：每个 GPU 与其余节点的同号 GPU 组成 M 个参与者，各用 W_node/G 的网卡带宽，
       2(V/G)(M-1)/(M·W_node/G) = 2V(M-1)/(M·W_node)；
    3. 节点内 AllGather（NVLink）：V(G-1)/(G·W_gpu)。

    合计 2V(G-1)/(G·W_gpu) + 2V(M-1)/(M·W_node)；各层完全重叠时降为 gpu_allreduce_cross_node。
    """
    g, m = _size(gpus_per_node, "每节点 GPU 数"), _size(n_nodes, "节点数")
    w_node = _rate(node_bw, "节点带宽（node_bw）")
    shard = _bytes(v_bytes) / g
    return (
        gpu_reducescatter_in_node(v_bytes, g, nvlink_bw_per_direction)
        + gpu_allreduce_in_node(shard, m, w_node / g)
        + gpu_allgather_in_node(v_bytes, g, nvlink_bw_per_direction)
    )


def gpu_alltoall_cross_node(v_bytes: float, n_nodes: int, node_bw: float) -> float:
    """跨 M 个节点的 AllToAll：T = V(M-1)/(M²·W_node) ≈ V/(M·W_node)；AllToAll 不分层，用不上节点内带宽"""
    v, m, w = _bytes(v_bytes), _size(n_nodes, "节点数"), _rate(node_bw, "节点带宽（node_bw）")
    return v * (m - 1) / (m * m * w)


# ---- Roofline 与分片矩阵乘法 ----


def t_math(flops: float, flops_per_s: float) -> float:
    """计算时间 T_math = FLOPs / C（秒）"""
    return _bytes(flops, "FLOPs") / _rate(flops_per_s, "算力（FLOP/s）")


def t_comms(nbytes: float, bw: float) -> float:
    """通信时间 T_comms = bytes / W（秒）；W 的方向由调用者决定"""
    return _bytes(nbytes) / _rate(bw)


def matmul_flops(b: int, d: int, f: int) -> int:
    """X[B, D] · W[D, F] 的 FLOPs = 2·B·D·F（一次乘加算 2 FLOPs）"""
    return 2 * _size(b, "B") * _size(d, "D") * _size(f, "F")


def axis_bandwidth(chip: str | hardware.Chip) -> float:
    """单轴集合通信的带宽 W（bytes/s），即 V/W 公式里的 W

    TPU 与模拟设备：一条有 wraparound 的轴的 W_bidir（ici_bidir_bw）；GPU：每 GPU 单方向的 NVLink 带宽。
    """
    chip = hardware.get_chip(chip)
    return chip.nvlink_bw_per_direction if isinstance(chip, hardware.GpuChip) else chip.ici_bidir_bw


def critical_intensity(chip: str | hardware.Chip) -> float:
    """单轴通信的临界强度 C / W（FLOPs/byte），W = axis_bandwidth(chip)

    v5p 2550，v4p 约 3056，v5e 约 2189，v6e 约 5111；H100：9.89e14 / 4.5e11 ≈ 2198。
    """
    chip = hardware.get_chip(chip)
    return chip.flops_bf16 / axis_bandwidth(chip)


class MatmulTimes(NamedTuple):
    t_math: float  # 秒
    t_comms: float  # 秒


def sharded_matmul_allreduce_times(
    b: int, d: int, f: int, n: int, chip_flops: float, bidir_bw: float, bytes_per_elem: int = 2
) -> MatmulTimes:
    """X[B, D_X] · W[D_X, F] 在 N 个设备上、之后 AllReduce 输出 [B, F]：

    T_math = 2BDF/(N·C)；T_comms = 2 · B·F·bytes / W_bidir（AllReduce = 2V/W_bidir，大 N / 偶数 N），
    bf16 时即书中的 4BF/W。
    """
    out_bytes = _size(b, "B") * _size(f, "F") * _size(bytes_per_elem, "bytes_per_elem")
    return MatmulTimes(t_math(matmul_flops(b, d, f) / _size(n), chip_flops), t_comms(2 * out_bytes, bidir_bw))


def compute_bound_d_threshold(n: int, flops_per_s: float, bw: float, bytes_per_elem: int = 2) -> float:
    """T_math > T_comms 的条件 D > N·C·bytes/W；bf16 时为 2NC/W（v5e、N=4：≈ 17,511.1；N=2：≈ 8,755.6）"""
    return _size(n) * _rate(flops_per_s, "算力（FLOP/s）") * _size(bytes_per_elem, "bytes_per_elem") / _rate(bw)


def is_compute_bound(d: int, n: int, flops_per_s: float, bw: float, bytes_per_elem: int = 2) -> bool:
    """收缩维 D 是否大到让分片 matmul 受算力限制（compute-bound）：D > N·C·bytes/W"""
    return _size(d, "D") > compute_bound_d_threshold(n, flops_per_s, bw, bytes_per_elem)


def latency_threshold_bytes(ici_oneway_bw: float, hop_latency: float) -> float:
    """每跳数据块小于 W_oneway × t_hop 时这一跳受延迟限制（v5e：4.5e10 × 1 µs = 45 kB，针对每跳的块）"""
    return _rate(ici_oneway_bw) * _latency(hop_latency)


# ---- 延迟受限还是带宽受限：全书唯一的判据 ----


def regime_terms(time_at: Callable[[float], float], v_bytes: float) -> tuple[float, float]:
    """把 V 处的时间分成（延迟项, 带宽项）：曲线在 V 处那一段直线 t = a + s·V 的截距 a 与 s·V

    每个模型的时间都是 V 的分段线性函数（各跳 max(t_hop, 块/W) 之和、或者延迟项 + 带宽项）。
    截距 a 是这一段里与 V 无关的部分：受延迟限制的那些跳的 t_hop 之和（GPU 是 NCCL 模型的延迟项）；
    s·V 是受带宽限制的那些跳搬运字节的时间。两者之和就是 t(V)。
    """
    v = _bytes(v_bytes)
    t = time_at(v)
    if v == 0 or t == 0:
        return t, 0.0
    dv = v * 1e-9
    bw = min(max((time_at(v + dv) - t) / dv * v, 0.0), t)
    return t - bw, bw


def regime(time_at: Callable[[float], float], v_bytes: float) -> str:
    """延迟项大于带宽项（regime_terms）时是 'latency-bound'，否则 'bandwidth-bound'

    V 越大，受带宽限制的跳越多：延迟项只减不增、带宽项只增不减，所以只有一个交点 crossover_bytes，
    V 小于它是延迟受限，大于它是带宽受限。
    """
    lat, bw = regime_terms(time_at, v_bytes)
    return "latency-bound" if lat > bw else "bandwidth-bound"


def crossover_bytes(time_at: Callable[[float], float], lo: float = 1e-3, hi: float = 1e18) -> float | None:
    """regime_terms 的延迟项等于带宽项的 V（交点，crossover）：V 小于它延迟受限，大于它带宽受限

    不通信（时间恒为 0）时返回 None；没有延迟项时返回 0。在对数尺度上二分，再在找到的那一段直线
    （或两段的交界处）上精确求出交点。
    """
    if time_at(hi) == 0:
        return None
    if regime(time_at, lo) == "bandwidth-bound":
        return 0.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if regime(time_at, mid) == "latency-bound" else (lo, mid)

    # 找到的 lo、hi 紧挨着交点：用 hi 往上、lo 往下 1%–2% 的割线得到两边那一段直线（截距 a、斜率 s）
    def line(x: float, y: float) -> tuple[float, float]:
        t_x, t_y = time_at(x), time_at(y)
        slope = (t_y - t_x) / (y - x)
        return t_x - slope * x, slope

    (a_hi, s_hi), (a_lo, s_lo) = line(hi * 1.01, hi * 1.02), line(lo / 1.02, lo / 1.01)
    if s_hi > 0 and abs(a_hi / s_hi / hi - 1) < 1e-6:  # 交点在上面那一段直线内：a = s·V
        return a_hi / s_hi
    if s_hi > s_lo and abs((a_lo - a_hi) / (s_hi - s_lo) / hi - 1) < 1e-6:  # 交点恰在两段的交界处
        return (a_lo - a_hi) / (s_hi - s_lo)
    return hi


# ---- 唯一入口：estimate ----

COLLECTIVES = names.COLLECTIVES
_HALF = "⌊N/2⌋·max(t_hop, 2V/(N·W_bidir))"
_LINE1 = "(N-1)·max(t_hop, (V/N)/W_oneway)"
# 单轴：(有无 wraparound) → 集合通信 → (函数, 公式)；有 wraparound 时传 W_bidir，线形传 W_oneway
_SINGLE_AXIS = {
    True: {
        "all_gather": (allgather_bidir_ring, _HALF),
        "reduce_scatter": (reducescatter_bidir_ring, _HALF),
        "all_reduce": (allreduce_bidir_ring, "2·" + _HALF),
        "all_to_all": (alltoall_bidir_ring, "max(⌊N/2⌋·t_hop, ⌊N²/4⌋·V/(N²·W_bidir))"),
    },
    False: {
        "all_gather": (allgather_line, _LINE1),
        "reduce_scatter": (reducescatter_line, _LINE1),
        "all_reduce": (allreduce_line, "2·" + _LINE1),
        "all_to_all": (alltoall_line, "max((N-1)·t_hop, ⌊N²/4⌋·V/(N²·W_oneway))"),
    },
}
_MULTI = (
    "Σ_阶段 max_片 h·max(t_hop, b/W_oneway)，k 片各占一轴（大 N 极限 V/(k·W_bidir)）；"
    "有 wraparound 的轴走 ⌊|X_i|/2⌋ 步，否则 |X_i|-1 步"
)
_MULTI_AXIS = {
    "all_gather": (allgather_multi_axis, _MULTI),
    "reduce_scatter": (reducescatter_multi_axis, _MULTI),
    "all_reduce": (allreduce_multi_axis, "2·" + _MULTI),
    "all_to_all": (alltoall_nd, "max(t_hop·Σh_i, max_i ⌊X_i²/4⌋·V/(N·X_i·W_i))"),
}
_GPU_IN_NODE = {
    "all_gather": (gpu_allgather_in_node, "V(N-1)/(N·W_nvlink)"),
    "reduce_scatter": (gpu_reducescatter_in_node, "V(N-1)/(N·W_nvlink)"),
    "all_reduce": (gpu_allreduce_in_node, "2V(N-1)/(N·W_nvlink)"),
    "all_to_all": (gpu_alltoall_in_node, "V(N-1)/(N²·W_nvlink)"),
}
_GPU_CROSS = "V·max((G-1)/(G·W_nvlink), (M-1)/(M·W_node))"
_GPU_CROSS_NODE = {
    "all_gather": (gpu_allgather_cross_node, _GPU_CROSS),
    "reduce_scatter": (gpu_reducescatter_cross_node, _GPU_CROSS),
    "all_reduce": (gpu_allreduce_cross_node, "2" + _GPU_CROSS),
}


@dataclass(frozen=True)
class Estimate:
    """estimate() 的结果；time_s 为秒，regime 为 'bandwidth-bound' 或 'latency-bound'（按 cost.regime：延迟项大于带宽项时是后者）"""

    collective: str
    chip: str
    nbytes: float
    axes: tuple[tuple[str, int], ...]
    time_s: float
    regime: str
    formula: str
    bandwidth_term_s: float
    wraparound: tuple[bool, ...] | None = None
    hop_latency_s: float = 0.0

    @property
    def time_us(self) -> float:
        return self.time_s * 1e6

    def __str__(self) -> str:
        axes = "，".join(f"{name}: {size}" for name, size in self.axes)
        regime = "带宽受限" if self.regime == "bandwidth-bound" else "延迟受限"
        return (
            f"{names.display(self.collective)} 沿 {{{axes}}}，{self.chip}：约 {units.fmt_time(self.time_s)}，"
            f"{regime}（{self.regime}）\n公式（formula）：{self.formula}"
        )


def _resolve_axes(axes, mesh: Mapping[str, int] | None) -> list[tuple[str, int]]:
    """把 axes（{轴名: 大小}，或轴名序列配合 mesh）整理成 [(轴名, 大小)]"""
    if isinstance(axes, Mapping):
        pairs = [(str(name), _size(size, f"轴 {name!r} 的大小")) for name, size in axes.items()]
    elif mesh is None:
        raise ValueError("axes 只给了轴名时，需要 mesh（轴名 → 大小）")
    else:
        names = (axes,) if isinstance(axes, str) else tuple(axes)
        pairs = [(str(name), mesh.get(name, 0)) for name in names]
    if not pairs:
        raise ValueError("axes 不能为空：请给出集合通信经过的网格轴（mesh axes）")
    bad = [name for name, size in pairs if mesh is not None and mesh.get(name) != size]
    if bad:
        raise ValueError(f"未知的网格轴（mesh axis）{bad}，或其大小与 mesh {dict(mesh)} 不符")
    if len({name for name, _ in pairs}) != len(pairs):
        raise ValueError(f"网格轴重复：{[name for name, _ in pairs]}")
    return pairs


NCCL_NET_OVERHEAD = 1e-6  # s，跨节点时每步至少这么久（tuning.cc getNetOverhead，x86 Intel 的默认值；LL、LL128 协议）
NCCL_NET_OVERHEAD_SIMPLE = 3 * NCCL_NET_OVERHEAD  # s，Simple 协议的同一个下限（tuning.cc 里 netOverhead *= 3）


def _nccl_steps(collective: str, n: int, gpus_per_node: int) -> tuple[int, int]:
    """NCCL 环的步数与其中跨节点的步数：AllReduce 2(N-1)、2(M-1)；AllGather / ReduceScatter N-1、M-1；AllToAll 1"""
    m = max(1, n // gpus_per_node)
    name = names.canonical(collective)
    if name == "all_to_all":  # 点对点直接交换，不是环：一步
        return 1, int(m > 1)
    factor = 2 if name == "all_reduce" else 1
    return factor * (n - 1), factor * (m - 1)


def gpu_ring_latency(collective: str, n: int, gpus_per_node: int, chip: hardware.GpuChip, step_latency=None) -> float:
    """NCCL 环形算法的延迟项（秒）：base + (步数 - 跨节点步数)·t_NVLink + 跨节点步数·t_net

    步数：AllGather / ReduceScatter 为 N-1，AllReduce 为 2(N-1)；跨节点步数同理按节点数 M 计。
    AllToAll 不是环（NCCL 把它做成一组点对点的发送 / 接收，tuning.cc 的模型不覆盖它）：我们的约定是
    固定开销加一步（节点内一步 NVLink，跨节点一步网络），每个 GPU 直接把块送到目的 GPU。
    常数取自 NCCL 自己选算法时用的模型（hardware.NCCL_RELEASE 的 src/graph/tuning.cc，ring + LL 协议，
    三种协议里延迟最小的），不是测量值；跨节点时每步 NVLink 开销至少 NCCL_NET_OVERHEAD。
    estimate 把它加在按 NVLink 额定带宽算的带宽项上：T = 延迟项 + 带宽项。这个和比 NCCL 模型里
    任何一种协议的环形时间都小（LL 的延迟最小，额定带宽最大），所以是环形算法（SHARP / NVLS 关闭）的下包络
    （lower envelope）。交换机内规约（NVLS）不受它约束：书中开着 SHARP 测到约 480 GB/s 的“有效集合通信带宽”（按总线带宽计），高于环形算法的总线带宽上限 450 GB/s。
    step_latency 可替换每步 NVLink 的开销。
    """
    n = _size(n)
    if n == 1:
        return 0.0
    steps, inter = _nccl_steps(collective, n, gpus_per_node)
    intra = chip.nvlink_step_latency if step_latency is None else _latency(step_latency)
    if inter:
        intra = max(intra, NCCL_NET_OVERHEAD)
    return chip.nccl_base_latency + (steps - inter) * intra + inter * chip.net_step_latency


def nccl_bus_bw(chip: hardware.GpuChip, protocol: str) -> float:
    """NCCL 模型里节点内环形算法在某个协议下的总线带宽（bus bandwidth，busbw，bytes/s）

    busbw 是 nccl-tests 的记法：把一次集合通信的时间换算成“每个 GPU 每方向实际用到的链路带宽”，
    AllReduce 为 busbw = 2(N-1)/N · V / T，AllGather / ReduceScatter 为 (N-1)/N · V / T，与 N 无关地可比。
    H100：Simple 至多 370.8 GB/s（18 × 20.6 GB/s，链路的上限；NCCL 的拓扑搜索取通道数 × 每通道带宽，不超过它），
    LL128 341 GB/s，LL 141 GB/s（上限 llMaxBws）。
    """
    if protocol not in hardware.NCCL_RING_PROTOCOLS:
        raise ValueError(f"未知的 NCCL 协议（protocol）{protocol!r}：可选 {', '.join(hardware.NCCL_RING_PROTOCOLS)}")
    if chip.nccl_bus_bw is None:
        raise ValueError(f"{chip.name} 没有录入 NCCL 的 NVLink 带宽（nccl_nvlink_bw_per_link）")
    bw = hardware.NCCL_RING_PROTOCOLS[protocol][2] * chip.nccl_bus_bw
    if protocol == "LL" and chip.nccl_ll_bus_bw is not None:
        bw = min(bw, chip.nccl_ll_bus_bw)
    return bw


def nccl_ring_time(collective: str, v_bytes: float, n: int, chip: str | hardware.Chip, protocol: str) -> float:
    """NCCL 自己的模型对节点内环形算法给出的时间（秒）：baseLat + 步数·hwLat + (总线字节)/busbw

    总线字节 = 2(N-1)/N · V（AllReduce）或 (N-1)/N · V（AllGather、ReduceScatter）。NCCL 按这个模型在
    协议与算法之间挑最快的一个；它仍是模型，不是测量：书中 8×H100 的 58 MB AllReduce 实测约 150 GB/s，
    这里的 Simple 协议给出约 307 GB/s。只做节点内（N ≤ 每节点 GPU 数）。
    """
    chip = hardware.get_chip(chip)
    if not isinstance(chip, hardware.GpuChip):
        raise ValueError(f"nccl_ring_time 只用于 GPU，收到 {chip.name}")
    coll, v, n = names.canonical(collective), _bytes(v_bytes), _size(n)
    if coll == "all_to_all":
        raise ValueError("NCCL 的 AllToAll 不走环形算法（是逐对的 send/recv），没有这个模型")
    if n > chip.gpus_per_node:
        raise ValueError(f"nccl_ring_time 只做节点内：N = {n} 超过每节点 {chip.gpus_per_node} 个 GPU")
    bw = nccl_bus_bw(chip, protocol)  # 也检查协议名
    if n == 1:
        return 0.0
    base, step, _ = hardware.NCCL_RING_PROTOCOLS[protocol]
    steps, _ = _nccl_steps(coll, n, chip.gpus_per_node)
    return base + steps * step + steps / n * v / bw


def _estimate_gpu(coll: str, v: float, n: int, chip: hardware.GpuChip) -> tuple[float, str]:
    w, g = chip.nvlink_bw_per_direction, chip.gpus_per_node
    if n <= g:
        fn, text = _GPU_IN_NODE[coll]
        return fn(v, n, w), f"{text}，节点内（NVSwitch），N={n}，W_nvlink={w:.4g} B/s"
    if n % g:
        raise ValueError(f"{n} 个 GPU 不能整分成每节点 {g} 个的节点")
    m, w_node = n // g, chip.node_scaleout_bw
    if w_node is None:
        raise ValueError(f"{chip.name} 的节点出口带宽（node_scaleout_bw）书中未给出，无法估算跨节点通信")
    where = f"跨 M={m} 个节点，G={g}，W_nvlink={w:.4g} B/s，W_node={w_node:.4g} B/s"
    if coll == "all_to_all":
        return gpu_alltoall_cross_node(v, m, w_node), f"V(M-1)/(M²·W_node)，{where}"
    fn, text = _GPU_CROSS_NODE[coll]
    return fn(v, g, m, w, w_node), f"{text}，{where}"


def estimate(
    collective: str,
    nbytes: float,
    axes: Mapping[str, int] | Sequence[str] | str,
    chip: str | hardware.Chip,
    *,
    mesh: Mapping[str, int] | None = None,
    slice_shape: Sequence[int] | None = None,
    hop_latency: float | None = None,
) -> Estimate:
    """估算一次集合通信的时间（秒）：nbytes 即上面约定的 V

    axes：集合通信经过的轴 {轴名: 大小}，或轴名序列配合 mesh（轴名 → 大小）。
    TPU：按 hardware.has_wraparound 逐轴判断 wraparound（slice_shape 默认取 mesh 的形状），
    单轴用双向环或线形公式，多轴用多轴公式；hop_latency 默认取芯片的每跳延迟。
    GPU：轴的总大小不超过节点时用节点内公式，否则用跨节点公式；再加上 NCCL 模型的延迟项（gpu_ring_latency），
    hop_latency 给出时替换每步 NVLink 的开销。
    模拟 CPU：名义值，每个轴都按有 wraparound 的环计算。
    """
    coll, v, chip = names.canonical(collective), _bytes(nbytes), hardware.get_chip(chip)
    pairs = _resolve_axes(axes, mesh)
    sizes = [size for _, size in pairs]
    common = dict(collective=coll, chip=chip.name, nbytes=v, axes=tuple(pairs))
    if isinstance(chip, hardware.GpuChip):
        n = math.prod(sizes)
        t_bw, formula = _estimate_gpu(coll, v, n, chip)
        lat = gpu_ring_latency(coll, n, chip.gpus_per_node, chip, hop_latency)
        kind = regime(lambda x: lat + _estimate_gpu(coll, x, n, chip)[0], v)
        formula = f"延迟项（NCCL 模型）+ {formula}"
        return Estimate(
            **common, time_s=lat + t_bw, regime=kind, formula=formula, bandwidth_term_s=t_bw, hop_latency_s=lat
        )

    lat = chip.hop_latency if hop_latency is None else _latency(hop_latency)
    shape = slice_shape if slice_shape is not None else (tuple(mesh.values()) if mesh is not None else None)
    if shape is None and isinstance(chip, hardware.EmulatedChip):
        shape = tuple(sizes)
    if shape is None:
        raise ValueError(f"{chip.name} 需要 mesh 或 slice_shape 才能判断各轴有没有 wraparound")
    wraps = tuple(hardware.has_wraparound(chip, size, shape) for size in sizes)
    if len(pairs) == 1:
        n, wrap = sizes[0], wraps[0]
        fn, text = _SINGLE_AXIS[wrap][coll]
        bw = chip.ici_bidir_bw if wrap else chip.ici_oneway_bw
        kind = "双向环（有 wraparound）" if wrap else "线形（line，无 wraparound）"
        text = f"{text}，{kind}，N={n}"

        def run(latency: float, x: float = v) -> float:
            return fn(x, n, bw, latency)
    else:
        fn, text = _MULTI_AXIS[coll]
        text = f"{text}，轴 {sizes}，wraparound {list(wraps)}"

        def run(latency: float, x: float = v) -> float:
            return fn(x, sizes, chip.ici_bidir_bw, latency, wraps)

    t, t_bw = run(lat), run(0.0)
    kind = regime(lambda x: run(lat, x), v)
    formula = f"{text}，V={v:.4g} B，W_oneway={chip.ici_oneway_bw:.4g} B/s，t_hop={lat:.3g} s"
    return Estimate(
        **common, time_s=t, regime=kind, formula=formula, bandwidth_term_s=t_bw, wraparound=wraps, hop_latency_s=lat
    )
