"""第 5、6 章练习的题目参数（problem parameters）：每个参数的发布值、可选值，以及一组参数何时仍是同一道题

书里（和 ``exercises/``）印出的数字是**发布版**（published variant）；给学生的个人版（personal variant）
从每个参数的可选值（choices）里取，但必须满足本章的规则（``violations``）：同样的区间（受带宽 / 延迟限制、
受算力 / 通信限制）、同样的 wraparound 情形、整除关系，数字都是人能手算的整数或整的模型规模。

参数名就是笔记本里的变量名（``B``、``mesh``、``params5`` …）：解答与练习笔记本里带 ``parameters`` 标签的单元
给这些变量赋值，个人版把那些值换掉（``shardlab.variants``）；自检按笔记本里这些变量的当前值判定（``from_namespace``）。
题目文字里出现的参数值由 ``TEXT`` 列出（发布版的原文 → 由参数写出的文字），个人版据此改写题目。

这个模块只描述题目，不含答案（参考答案在 ``shardlab.answers``，它是参数的函数）。
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shardlab import cost, hardware
from shardlab.units import bytes_of

ASSIGNMENTS = ("ch05", "ch06")

# ---- 不随变体改变的设定 ----
MESH5 = {"X": 2, "Y": 2}  # ch06 P5：TPU v5e 2x2
MEM5 = 300e6  # ch06 P5：每个芯片的空闲内存（字节）
MESH8 = {"X": 4, "Y": 4}  # ch06 P8：TPU v5e 4x4，两条轴都没有 wraparound
SHAPE_P4 = (1024, 512, 64)  # ch05 P4 / ch06 P1 的示例形状（比值与形状无关）


@dataclass(frozen=True)
class Param:
    """一个题目参数：name 是笔记本里的变量名；choices 是个人版可取的值（不含发布值）"""

    name: str
    problem: int
    published: Any
    choices: tuple
    meaning: str


@dataclass(frozen=True)
class TextSub:
    """题目文字里的一处参数：发布版的原文 published 在个人版里换成 render(参数)；只在第 problem 题的范围内替换"""

    problem: int
    published: str
    render: Callable[[Mapping[str, Any]], str]


def _v4p_mesh(x: int) -> dict[str, int]:
    return {"X": x, "Y": 4, "Z": 4}


def _mesh3(x: int, y: int, z: int) -> dict[str, int]:
    return {"X": x, "Y": y, "Z": z}


_B_CHOICES = (1024, 1536, 2048, 3072, 4096)
_D_CHOICES = (4096, 6144, 8192, 12288, 16384)
_MESH_P4 = tuple(_mesh3(x, y, z) for x in (2, 4, 8) for y in (2, 4, 8) for z in (2, 4, 8))


def _mesh_text(m: Mapping[str, int]) -> str:
    return "`" + repr(dict(m)) + "`"


def _slice_text(m: Mapping[str, int]) -> str:
    return "x".join(str(n) for n in m.values())


def fmt_model(params: float) -> str:
    """模型参数量的写法：7e9 → '7B'，1.5e9 → '1.5B'"""
    return f"{params / 1e9:g}B"


PARAMS: dict[str, tuple[Param, ...]] = {
    "ch05": (
        Param("B", 1, 1024, _B_CHOICES, "P1：数组 A[B, D] 的 B"),
        Param("D", 1, 4096, _D_CHOICES, "P1：数组 A[B, D] 的 D"),
        Param("mesh", 1, _v4p_mesh(4), (_v4p_mesh(8), _v4p_mesh(16)), "P1、P2：TPU v4p 切片的网格（每维是 4 的倍数）"),
        Param("B2", 2, 128, (32, 64, 256, 512), "P2：很小的数组 A[B] 的 B"),
        Param("mesh4", 4, _mesh3(4, 8, 2), _MESH_P4, "P4：网格"),
        Param("params5", 5, 7e9, (2e9, 3e9, 8e9, 13e9, 34e9), "P5：模型参数量"),
        Param("params6", 6, 70e9, (65e9, 120e9, 175e9, 405e9), "P6：模型参数量"),
        Param("D7", 7, 8192, (4096, 5120, 6144, 12288), "P7：隐藏维 D"),
        Param("TP", 7, 8, (2, 4), "P7：张量并行的路数（在一个 8 卡节点内）"),
        Param("PROMPT", 7, 2048, (512, 1024, 4096, 8192), "P7：prefill 的提示长度（token 数）"),
    ),
    "ch06": (
        Param("mesh1", 1, _mesh3(4, 8, 2), _MESH_P4, "P1：网格"),
        Param("B", 2, 1024, _B_CHOICES, "P2：数组 A[B, D] 的 B"),
        Param("D", 2, 4096, _D_CHOICES, "P2：数组 A[B, D] 的 D"),
        Param("mesh", 2, _v4p_mesh(4), (_v4p_mesh(8), _v4p_mesh(16)), "P2、P3：TPU v4p 切片的网格（每维是 4 的倍数）"),
        Param("B3", 3, 128, (32, 64, 256, 512), "P3：很小的数组 A[B] 的 B"),
        Param("B5", 5, 128, (64, 96, 128, 192, 256), "P5：批量 B"),
        Param("D5", 5, 8192, (4096, 6144, 8192), "P5：D"),
        Param("F5", 5, 32768, (16384, 24576, 32768, 49152), "P5：F"),
        Param("I8", 8, 4096, (2048, 3072, 4096, 6144, 8192), "P8：I"),
        Param("J8", 8, 8192, (2048, 3072, 4096, 6144, 8192), "P8：J"),
        Param("K8", 8, 4096, (2048, 3072, 4096, 6144, 8192, 12288), "P8：K"),
    ),
}

TEXT: dict[str, tuple[TextSub, ...]] = {
    "ch05": (
        TextSub(1, "4x4x4", lambda p: _slice_text(p["mesh"])),
        TextSub(1, "`{'X': 4, 'Y': 4, 'Z': 4}`", lambda p: _mesh_text(p["mesh"])),
        TextSub(1, "B = 1024，D = 4096", lambda p: f"B = {p['B']}，D = {p['D']}"),
        TextSub(2, "4x4x4", lambda p: _slice_text(p["mesh"])),
        TextSub(2, "`{'X': 4, 'Y': 4, 'Z': 4}`", lambda p: _mesh_text(p["mesh"])),
        TextSub(2, "B 只有 128", lambda p: f"B 只有 {p['B2']}"),
        TextSub(2, "bf16[128]", lambda p: f"bf16[{p['B2']}]"),
        TextSub(4, "`{'X': 4, 'Y': 8, 'Z': 2}`", lambda p: _mesh_text(p["mesh4"])),
        TextSub(5, "一个 7B 参数的模型", lambda p: f"一个 {fmt_model(p['params5'])} 参数的模型"),
        TextSub(6, "一个 70B 参数的模型", lambda p: f"一个 {fmt_model(p['params6'])} 参数的模型"),
        TextSub(7, "LLaMA-70B 的隐藏维 D = 8192", lambda p: f"一个模型的隐藏维 D = {p['D7']}"),
        TextSub(7, "用 8 路张量并行（TP = 8）", lambda p: f"用 {p['TP']} 路张量并行（TP = {p['TP']}）"),
        TextSub(7, "2048 个 token 的提示", lambda p: f"{p['PROMPT']} 个 token 的提示"),
    ),
    "ch06": (
        TextSub(1, "`{'X': 4, 'Y': 8, 'Z': 2}`", lambda p: _mesh_text(p["mesh1"])),
        TextSub(2, "4x4x4", lambda p: _slice_text(p["mesh"])),
        TextSub(2, "`{'X': 4, 'Y': 4, 'Z': 4}`", lambda p: _mesh_text(p["mesh"])),
        TextSub(2, "B = 1024，D = 4096", lambda p: f"B = {p['B']}，D = {p['D']}"),
        TextSub(3, "4x4x4", lambda p: _slice_text(p["mesh"])),
        TextSub(3, "B 只有 128", lambda p: f"B 只有 {p['B3']}"),
        TextSub(3, "bf16[128]", lambda p: f"bf16[{p['B3']}]"),
        TextSub(5, "D = 8192，F = 32768，批量 B = 128", lambda p: f"D = {p['D5']}，F = {p['F5']}，批量 B = {p['B5']}"),
        TextSub(8, "I = 4096，J = 8192，K = 4096", lambda p: f"I = {p['I8']}，J = {p['J8']}，K = {p['K8']}"),
    ),
}


def params_of(assignment: str) -> tuple[Param, ...]:
    try:
        return PARAMS[assignment]
    except KeyError:
        raise KeyError(f"未知的作业（assignment）{assignment!r}，已知：{'、'.join(PARAMS)}") from None


def published(assignment: str) -> dict[str, Any]:
    """发布版（书里印出的）参数：{变量名: 值}"""
    return {p.name: _copy(p.published) for p in params_of(assignment)}


def _copy(value):
    return dict(value) if isinstance(value, Mapping) else value


# ---- 一组参数何时仍是同一道题 ----
def _v4p_rules(p: Mapping[str, Any], b_small: str, problems: tuple[int, int]) -> list[str]:
    bad = []
    m, b, d = p["mesh"], p["B"], p["D"]
    big, small = problems
    if not all(n % hardware.CUBE_EDGE == 0 for n in m.values()):
        bad.append((big, f"P{big}：v4p 切片每维都要是 4 的倍数（每条轴都有 wraparound）"))
        return bad
    if b % m["X"] or d % m["Y"]:
        bad.append((big, f"P{big}：B 要能被 |X| 整除、D 要能被 |Y| 整除"))
        return bad
    cases = (
        ("all_gather", bytes_of((b, d // m["Y"])), ["X"]),
        ("all_gather", bytes_of((b, d)), ["X", "Y"]),
        ("all_reduce", bytes_of((b // m["X"], d // m["Y"])), ["Z"]),
    )
    for coll, v, axes in cases:
        if cost.estimate(coll, v, axes, "v4p", mesh=m).regime != "bandwidth-bound":
            bad.append((big, f"P{big}：三问都应当受带宽限制（bandwidth-bound）"))
            break
    bs = p[b_small]
    if bs % m["X"] or cost.estimate("all_gather", bytes_of((bs,)), ["X"], "v4p", mesh=m).regime != "latency-bound":
        bad.append((small, f"P{small}：AllGather 应当受延迟限制（latency-bound），且 B 能被 |X| 整除"))
    return bad


def _replication_rules(m: Mapping[str, int], problem: int) -> list[str]:
    if any(n < 2 for n in m.values()) or SHAPE_P4[0] % m["X"]:
        return [(problem, f"P{problem}：每条轴至少 2，I 能被 |X| 整除")]
    return []


def _ch05(p: Mapping[str, Any]) -> list[str]:
    bad = _v4p_rules(p, "B2", (1, 2))
    bad += _replication_rules(p["mesh4"], 4)
    v5 = bytes_of((p["params5"],))
    if any(cost.estimate("all_reduce", v5, {"G": n}, "h100").regime != "bandwidth-bound" for n in (8, 64, 512)):
        bad.append((5, "P5：三次 AllReduce 都应当受带宽限制"))
    if bytes_of((p["params6"],)) <= hardware.H100.hbm_bytes:
        bad.append((6, "P6：一份 bf16 权重应当放不进一张 H100（题目的结论依赖它）"))
    d7, tp, prompt = p["D7"], p["TP"], p["PROMPT"]
    if d7 % tp or tp > hardware.H100.gpus_per_node:
        bad.append((7, "P7：D 要能被 TP 整除，TP 不超过一个节点的 GPU 数"))
    elif (
        cost.estimate("all_reduce", bytes_of((1, d7)), {"TP": tp}, "h100").regime != "latency-bound"
        or cost.estimate("all_reduce", bytes_of((prompt, d7)), {"TP": tp}, "h100").regime != "bandwidth-bound"
    ):
        bad.append((7, "P7：decode 应当受延迟限制，prefill 应当受带宽限制"))
    return bad


def _ch06(p: Mapping[str, Any]) -> list[str]:
    bad = _replication_rules(p["mesh1"], 1)
    bad += _v4p_rules(p, "B3", (2, 3))
    b5, d5, f5 = p["B5"], p["D5"], p["F5"]
    n5 = math.prod(MESH5.values())
    one = bytes_of((d5, f5))
    if not (one > MEM5 >= 2 * one / n5) or f5 <= d5:
        bad.append((5, "P5：单个权重矩阵要放不下、切到 4 个芯片后两个矩阵要放得下，且 F > D"))
    else:
        t_math = cost.t_math(2 * cost.matmul_flops(b5, d5, f5) / n5, hardware.TPU_V5E.flops_bf16)
        v = bytes_of((b5, d5))
        t_comms = sum(
            cost.estimate(c, v, ["X", "Y"], "v5e", mesh=MESH5).time_s for c in ("reduce_scatter", "all_gather")
        )
        if t_math <= t_comms:
            bad.append((5, "P5：推荐分片下应当受算力限制（T_math > T_comms）"))
    i8, j8, k8 = p["I8"], p["J8"], p["K8"]
    t_math8 = cost.t_math(cost.matmul_flops(i8, j8, k8) / math.prod(MESH8.values()), hardware.TPU_V5E.flops_bf16)
    ests = (
        cost.estimate("reduce_scatter", bytes_of((i8 // MESH8["X"], k8)), ["Y"], "v5e", mesh=MESH8),
        cost.estimate("all_gather", bytes_of((j8, k8 // MESH8["Y"])), ["X"], "v5e", mesh=MESH8),
    )
    if any(e.regime != "bandwidth-bound" or e.time_s <= t_math8 for e in ests):
        bad.append((8, "P8：(a)、(b) 都应当受带宽限制，并且通信比计算慢（受通信限制）"))
    return bad


RULES: dict[str, Callable[[Mapping[str, Any]], list[tuple[int, str]]]] = {"ch05": _ch05, "ch06": _ch06}


def violations(assignment: str, params: Mapping[str, Any]) -> list[tuple[int, str]]:
    """这组参数违反了哪些规则：[(题号, 中文说明)]；空列表表示它仍是同一道题"""
    names = {p.name for p in params_of(assignment)}
    missing = sorted(names - set(params))
    if missing:
        return [(0, f"缺少参数：{'、'.join(missing)}")]
    return RULES[assignment](params)


# ---- 笔记本里的参数 ----
def _coerce(template, value):
    """把笔记本里的值转成与发布值同类型的数；不合适时返回 None"""
    if isinstance(template, Mapping):
        if not isinstance(value, Mapping) or set(value) != set(template):
            return None
        out = {k: _coerce(template[k], value[k]) for k in template}
        return None if any(v is None for v in out.values()) else out
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(template, int):
        return int(value) if float(value).is_integer() and value > 0 else None
    return float(value) if math.isfinite(value) and value > 0 else None


def from_namespace(assignment: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """从笔记本的全局变量里读出本章的参数；没有定义或类型不对的参数取发布值"""
    out = published(assignment)
    for p in params_of(assignment):
        if p.name in namespace:
            value = _coerce(p.published, namespace[p.name])
            if value is not None:
                out[p.name] = value
    return out
