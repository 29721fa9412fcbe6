"""集合通信的名字：全库唯一的一张表（纯 Python，不导入 JAX）

每种集合通信有一个规范名（canonical，如 ``'all_gather'``），代价模型、模拟器、规划器、基准与 HLO 检查都用它；
显示名（``'AllGather'``）用于正文与表格，HLO 名（``'all-gather'``）是 XLA 编译后的指令名，
NCCL 名是 NCCL 的 API（``ncclAllGather``）与 nccl-tests 的程序名（``all_gather_perf``）。
`canonical` 是唯一解析用户写法的地方：``'AllGather'``、``'all-gather'``、``'psum'`` 都得到 ``'all_gather'`` 一类的规范名。
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ALL",
    "COLLECTIVES",
    "HLO_COLLECTIVES",
    "Collective",
    "UnknownCollectiveError",
    "canonical",
    "display",
    "from_hlo",
    "hlo",
    "info",
]


@dataclass(frozen=True)
class Collective:
    """一种集合通信的各种名字；jax 是 ``jax.lax`` 里对应的原语，nccl 为 None 表示 NCCL 没有这个原语"""

    key: str
    display: str
    hlo: str
    jax: str
    nccl: str | None
    nccl_test: str
    aliases: tuple[str, ...] = ()


_TABLE = (
    Collective("all_gather", "AllGather", "all-gather", "all_gather", "ncclAllGather", "all_gather_perf"),
    Collective(
        "reduce_scatter",
        "ReduceScatter",
        "reduce-scatter",
        "psum_scatter",
        "ncclReduceScatter",
        "reduce_scatter_perf",
        aliases=("psum_scatter",),
    ),
    Collective("all_reduce", "AllReduce", "all-reduce", "psum", "ncclAllReduce", "all_reduce_perf", aliases=("psum",)),
    # NCCL 没有 AllToAll 原语：nccl-tests 的 alltoall_perf 用成对的 ncclSend / ncclRecv 拼出来
    Collective("all_to_all", "AllToAll", "all-to-all", "all_to_all", None, "alltoall_perf"),
    Collective(
        "ppermute",
        "ppermute",
        "collective-permute",
        "ppermute",
        None,
        "sendrecv_perf",
        aliases=("collective_permute", "send_recv", "sendrecv"),
    ),
)

ALL: dict[str, Collective] = {c.key: c for c in _TABLE}
# 四种核心原语（第 5 章 5.3）；ppermute 是搭建它们的点对点通信，只出现在基准与 HLO 检查里
COLLECTIVES: tuple[str, ...] = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")
HLO_COLLECTIVES: tuple[str, ...] = tuple(c.hlo for c in _TABLE)


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", str(text)).lower()


_LOOKUP: dict[str, str] = {}
for _c in _TABLE:
    for _name in (_c.key, _c.display, _c.hlo, _c.jax, *_c.aliases):
        _LOOKUP[_squash(_name)] = _c.key


class UnknownCollectiveError(ValueError):
    """不认识的集合通信名字"""


def canonical(name: str, allowed: Iterable[str] = COLLECTIVES) -> str:
    """用户的写法 → 规范名；不在 allowed 里时报中文错误（列出可选的名字）"""
    allowed = tuple(allowed)
    key = _LOOKUP.get(_squash(name))
    if key is None or key not in allowed:
        choices = "、".join(ALL[k].display for k in allowed)
        raise UnknownCollectiveError(
            f"未知的集合通信（collective）{name!r}：可选 {choices}（也接受 all_gather、all-gather、psum 等写法）"
        )
    return key


def info(name: str) -> Collective:
    """规范名或任何写法 → `Collective`"""
    return ALL[canonical(name, ALL)]


def display(name: str) -> str:
    """``'all_gather'`` → ``'AllGather'``"""
    return info(name).display


def hlo(name: str) -> str:
    """``'all_gather'`` → ``'all-gather'``（XLA 编译后的指令名）"""
    return info(name).hlo


def from_hlo(op: str) -> str:
    """``'all-gather'`` 或异步形式 ``'all-gather-start'`` → ``'all_gather'``"""
    return canonical(re.sub(r"-start$", "", op), ALL)
