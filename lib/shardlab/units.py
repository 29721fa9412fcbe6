"""单位与数字的书写：全书统一用 SI 前缀（kB = 1e3 B，µs = 1e-6 s），需要 2 的幂时显式写 KiB

正文里的数字都经过这些函数格式化，所以同一个量在全书的写法一致。
"""

from __future__ import annotations

import math

# 字节与时间的常用倍数
kB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB = 2.0**10, 2.0**20, 2.0**30
us, ms = 1e-6, 1e-3

# 每个元素的字节数
BYTES_PER_ELEMENT = {"bf16": 2, "fp16": 2, "fp32": 4, "f32": 4, "int8": 1, "fp8": 1}


def bytes_of(shape, dtype: str = "bf16") -> int:
    """一个数组的字节数：``bytes_of((1024, 4096), 'bf16')`` = 1024·4096·2"""
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"未知的数据类型（dtype）{dtype!r}：可选 {', '.join(BYTES_PER_ELEMENT)}")
    n = math.prod(int(s) for s in shape)
    if n < 0 or any(int(s) < 0 for s in shape):
        raise ValueError(f"形状（shape）不能有负数：{tuple(shape)}")
    return n * BYTES_PER_ELEMENT[dtype]


def _sig(x: float, digits: int) -> str:
    """保留 digits 位有效数字、不用科学计数法、去掉末尾多余的 0：376.9 → '377'，0.01234 → '0.0123'"""
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{round(x, decimals):.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_time(seconds: float, digits: int = 3) -> str:
    """把秒数写成最合适的单位：377e-6 → '377 µs'，0.062 → '62 ms'"""
    if seconds < 0 or math.isnan(seconds):
        raise ValueError(f"时间不能为负或 NaN：{seconds}")
    for unit, scale in (("s", 1.0), ("ms", ms), ("µs", us), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{_sig(seconds / scale, digits)} {unit}"
    return f"{_sig(seconds / 1e-9, digits)} ns" if seconds else "0 s"


def fmt_bytes(n: float, digits: int = 3) -> str:
    """把字节数写成 SI 单位：33554432 → '33.6 MB'"""
    if n < 0 or math.isnan(n):
        raise ValueError(f"字节数不能为负或 NaN：{n}")
    for unit, scale in (("TB", TB), ("GB", GB), ("MB", MB), ("kB", kB)):
        if n >= scale:
            return f"{_sig(n / scale, digits)} {unit}"
    return f"{_sig(n, digits)} B"


def fmt_bw(bytes_per_s: float, digits: int = 3) -> str:
    """带宽：4.5e10 → '45 GB/s'（方向由调用者在文字里说明）"""
    return f"{fmt_bytes(bytes_per_s, digits)}/s"


def fmt_num(x: float, digits: int = 3) -> str:
    """普通数：整数加千位分隔符（17,511），小数保留 digits 位有效数字"""
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return _sig(x, digits)


_FLOP_PREFIXES = (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3), ("FLOP", 1.0))


def _flop_count(n: float) -> float:
    if n < 0 or math.isnan(n):
        raise ValueError(f"浮点运算次数（FLOP）不能为负或 NaN：{n}")
    return n


def flop_unit(n: float) -> str:
    """写 n 次浮点运算最合适的单位（SI 前缀）：2.1e10 → 'GFLOP'；同一处的几个数用同一个单位时传给 fmt_flops"""
    return next((u for u, s in _FLOP_PREFIXES if _flop_count(n) >= s), "FLOP")


def fmt_flops(n: float, unit: str | None = None, digits: int = 3) -> str:
    """浮点运算次数：8.8e12 → '8.8 TFLOP'；unit 给出时用这个单位（'TFLOP' 等），表里的几个数就可以单位一致"""
    unit = unit or flop_unit(n)
    scale = dict(_FLOP_PREFIXES).get(unit)
    if scale is None:
        raise ValueError(f"未知的浮点运算单位 {unit!r}：可选 {', '.join(u for u, _ in _FLOP_PREFIXES)}")
    return f"{_sig(_flop_count(n) / scale, digits)} {unit}"
