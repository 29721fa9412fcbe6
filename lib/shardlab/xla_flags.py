"""XLA_FLAGS 里模拟的 host（CPU）设备数：runtime、多进程基准与评分器的沙箱共用这一个写法（不导入 JAX）"""

from __future__ import annotations

import re

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def with_device_count(flags: str, n_devices: int, *, replace: bool = True) -> str:
    """在一串 XLA_FLAGS 里设定 host 设备数

    replace=True：去掉已有的设定，换成 n_devices；replace=False：已有设定时原样返回（用户的选择优先）。
    """
    flags = flags or ""
    if DEVICE_COUNT_FLAG in flags and not replace:
        return flags
    rest = re.sub(rf"{DEVICE_COUNT_FLAG}=\S*", "", flags).split()
    return " ".join([*rest, f"{DEVICE_COUNT_FLAG}={int(n_devices)}"])
