"""第 5、6 章练习的题目参数（problem parameters）：每个参数的发布值、可选值，以及一组参数何时仍是同一道题

书里（和 ``exercises/``）印出的数字是**发布版**（published variant）；给学生的个人版（personal variant）
从每个参数的可选值（choices）里取，但必须满足本章的规则（``violations``）：同样的区间（受带宽 / 延迟限制、
受算力 / 通信限制）、同样的 wraparound 情形、整除关系，数字都是人能手算的整数或整的模型规模。

参数名就是笔记本里的变量名（``B``、``mesh``、``params5`` …）：解答与练习笔记本里的**参数单元**（带 ``parameters`` 标签，
第一行是注释 ``# 题目参数``）给这些变量赋值，个人版把那些值换掉（``shardlab.exercise.variants``）。
自检与评分器都从参数单元的源码读参数（``cell_values`` / ``from_cells``），不看变量的当前值。
题目文字里出现的参数值由 ``TEXT`` 列出（发布版的原文 → 由参数写出的文字），个人版据此改写题目。

这个模块只描述题目，不含答案（参考答案在 ``shardlab.exercise.answers``，它是参数的函数）。
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import permutations
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


def _mesh3(x: int, y: int, z: int) -> dict[str, int]:
    return {"X": x, "Y": y, "Z": z}


# 可选值尽量宽：全班的答案要彼此不同（``variants`` 检查撞车），所以每个参数都有十几个人能手算的值
_B_CHOICES = (512, 768, 1024, 1280, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 8192)
_D_CHOICES = (2048, 3072, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 20480, 24576)
# v4p 切片：每维是 4 的倍数（由 4x4x4 立方体拼成，每条轴都有 wraparound）
_V4P_MESHES = tuple(_mesh3(x, y, z) for x in (4, 8, 12, 16) for y in (4, 8) for z in (4, 8) if (x, y, z) != (4, 4, 4))
_B_SMALL = (16, 24, 32, 48, 64, 96, 160, 192, 256, 320, 384, 512)
# 复制份数题：任意网格（不是某种芯片的切片）；I = 1024 要能被 |X| 整除
_MESH_REPLICATION = tuple(
    _mesh3(x, y, z) for x in (2, 4, 8, 16) for y in (2, 3, 4, 5, 6, 8, 12, 16) for z in (2, 3, 4, 5, 6, 8, 12, 16)
)  # 发布版 {X: 4, Y: 8, Z: 2} 也在其中：答案（|Y|·|Z|）与发布版相同的组合由 variants 的规则剔除
_MODELS5 = tuple(
    x * 1e9
    for x in (1.1, 1.3, 1.5, 1.8, 2, 2.4, 2.7, 3, 3.5, 4, 4.5, 5, 6, 6.7, 7.5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18,
              20, 22, 24, 26, 27, 30, 32, 34, 36, 40, 44, 46, 52, 56, 60, 65, 70)
)  # fmt: skip
_MODELS6 = tuple(
    x * 1e9
    for x in (42, 45, 50, 52, 56, 60, 65, 72, 80, 90, 100, 104, 110, 120, 130, 141, 150, 175, 200, 236, 250, 300,
              314, 340, 400, 405, 480, 540, 671)
)  # fmt: skip

_D7_CHOICES = (1536, 2048, 2560, 3072, 3584, 4096, 4608, 5120, 5632, 6144, 7168, 9216, 10240, 12288, 14336, 16384)
_PROMPTS = (256, 384, 512, 640, 768, 1024, 1280, 1536, 3072, 4096, 5120, 6144, 8192)
_DIMS8 = (1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192, 10240, 12288, 16384)

# ch06 P8 的三种分片：键是答案里的字母在发布版里对应的方案；个人版把三种方案按另一种顺序排给 (a)(b)(c)
P8_SCHEMES = {
    "rs": ("A[I_X, J_Y]", "B[J_Y, K]", "与原书不同：原书要求输出 $C[I_X, K]$，沿 Y 复制"),
    "ag": ("A[I_X, J]", "B[J_X, K_Y]", "训练中数据并行 + 张量并行 + ZeRO 的典型设置"),
    "none": ("A[I_X, J]", "B[J, K_Y]", "推理中张量并行 + 数据并行的典型设置"),
}
P8_LETTERS = ("a", "b", "c")


def _cases8(order: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    return {letter: P8_SCHEMES[kind][:2] for letter, kind in zip(P8_LETTERS, order)}


def p8_scheme(cases: Mapping[str, Any], letter: str) -> str:
    """参数 cases8 里字母 letter 对应的方案（'rs' | 'ag' | 'none'）"""
    pair = tuple(cases[letter])
    for kind, (a, b, _) in P8_SCHEMES.items():
        if pair == (a, b):
            return kind
    raise ValueError(f"cases8[{letter!r}] = {pair!r} 不是问题 8 的三种分片之一")


_CASES8 = tuple(_cases8(order) for order in permutations(P8_SCHEMES))  # 第一个是发布版的顺序


def _mesh_text(m: Mapping[str, int]) -> str:
    return "`" + repr(dict(m)) + "`"


def _slice_text(m: Mapping[str, int]) -> str:
    return "×".join(str(n) for n in m.values())


def fmt_model(params: float) -> str:
    """模型参数量的写法：7e9 → '7B'，1.5e9 → '1.5B'"""
    return f"{params / 1e9:g}B"


def _p8_lines(cases: Mapping[str, Any]) -> str:
    """问题 8 列出三种分片的三行（按 cases8 的顺序）"""
    lines = []
    for k, letter in enumerate(P8_LETTERS):
        a, b, note = P8_SCHEMES[p8_scheme(cases, letter)]
        end = "。" if k == len(P8_LETTERS) - 1 else "；"
        lines.append(
            f"- ({letter}) ${a} \\cdot_J {b} \\to C[I_X, K_Y]$（{note}）：存进 `p8{letter}_bytes`、`p8{letter}_time`{end}"
        )
    return "\n".join(lines)


PARAMS: dict[str, tuple[Param, ...]] = {
    "ch05": (
        Param("B", 1, 1024, _B_CHOICES, "P1：数组 A[B, D] 的 B"),
        Param("D", 1, 4096, _D_CHOICES, "P1：数组 A[B, D] 的 D"),
        Param("mesh", 1, _mesh3(4, 4, 4), _V4P_MESHES, "P1、P2：TPU v4p 切片的网格（每维是 4 的倍数）"),
        Param("B2", 2, 128, _B_SMALL, "P2：很小的数组 A[B] 的 B"),
        Param("mesh4", 4, _mesh3(4, 8, 2), _MESH_REPLICATION, "P4：网格"),
        Param("params5", 5, 7e9, _MODELS5, "P5：模型参数量"),
        Param("params6", 6, 70e9, _MODELS6, "P6：模型参数量"),
        Param("D7", 7, 8192, _D7_CHOICES, "P7：隐藏维 D"),
        Param("TP", 7, 8, (2, 3, 4, 6), "P7：张量并行的路数（在一个 8 卡节点内）"),
        Param("PROMPT", 7, 2048, _PROMPTS, "P7：prefill 的提示长度（token 数）"),
    ),
    "ch06": (
        Param("mesh1", 1, _mesh3(4, 8, 2), _MESH_REPLICATION, "P1：网格"),
        Param("B", 2, 1024, _B_CHOICES, "P2：数组 A[B, D] 的 B"),
        Param("D", 2, 4096, _D_CHOICES, "P2：数组 A[B, D] 的 D"),
        Param("mesh", 2, _mesh3(4, 4, 4), _V4P_MESHES, "P2、P3：TPU v4p 切片的网格（每维是 4 的倍数）"),
        Param("B3", 3, 128, _B_SMALL, "P3：很小的数组 A[B] 的 B"),
        Param("B5", 5, 128, (32, 48, 64, 80, 96, 112, 160, 192, 224, 256, 320, 384, 448, 512), "P5：批量 B"),
        Param("D5", 5, 8192, tuple(range(4096, 12289, 1024)), "P5：D"),
        Param("F5", 5, 32768, tuple(range(12288, 65537, 4096)), "P5：F"),
        Param("I8", 8, 4096, _DIMS8, "P8：I"),
        Param("J8", 8, 8192, _DIMS8, "P8：J"),
        Param("K8", 8, 4096, _DIMS8, "P8：K"),
        Param("cases8", 8, _CASES8[0], _CASES8[1:], "P8：(a)(b)(c) 依次是哪种分片"),
    ),
}

TEXT: dict[str, tuple[TextSub, ...]] = {
    "ch05": (
        TextSub(1, "4×4×4", lambda p: _slice_text(p["mesh"])),
        TextSub(1, "`{'X': 4, 'Y': 4, 'Z': 4}`", lambda p: _mesh_text(p["mesh"])),
        TextSub(1, "B = 1024，D = 4096", lambda p: f"B = {p['B']}，D = {p['D']}"),
        TextSub(2, "4×4×4", lambda p: _slice_text(p["mesh"])),
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
        TextSub(2, "4×4×4", lambda p: _slice_text(p["mesh"])),
        TextSub(2, "`{'X': 4, 'Y': 4, 'Z': 4}`", lambda p: _mesh_text(p["mesh"])),
        TextSub(2, "B = 1024，D = 4096", lambda p: f"B = {p['B']}，D = {p['D']}"),
        TextSub(3, "4×4×4", lambda p: _slice_text(p["mesh"])),
        TextSub(3, "B 只有 128", lambda p: f"B 只有 {p['B3']}"),
        TextSub(3, "bf16[128]", lambda p: f"bf16[{p['B3']}]"),
        TextSub(5, "D = 8192，F = 32768，批量 B = 128", lambda p: f"D = {p['D5']}，F = {p['F5']}，批量 B = {p['B5']}"),
        TextSub(8, "I = 4096，J = 8192，K = 4096", lambda p: f"I = {p['I8']}，J = {p['J8']}，K = {p['K8']}"),
        TextSub(8, _p8_lines(_CASES8[0]), lambda p: _p8_lines(p["cases8"])),
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


def is_published(assignment: str, namespace: Mapping[str, Any]) -> bool:
    """namespace（笔记本的全局变量）里这一章的题目参数都是发布版的：解答里只对书上的数成立的断言用它把关，
    个人版的解答笔记本照样能运行"""
    return all(namespace[p.name] == p.published for p in params_of(assignment) if p.name in namespace)


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


# ---- 笔记本里的参数单元 ----
PARAM_TAG = "parameters"  # 参数单元的标签（评分器、个人版按它找单元）
PARAM_MARK = "# 题目参数"  # 参数单元的第一行（内核里看不到标签，自检按它认出参数单元）


def is_param_cell(source: str) -> bool:
    """这段源码是不是参数单元：第一个非空行以 ``# 题目参数`` 开头"""
    for line in source.splitlines():
        if line.strip():
            return line.strip().startswith(PARAM_MARK)
    return False


def _assignments(tree: ast.Module):
    """顶层赋值里的（变量名, 值的语法树节点）：``x = 1`` 与 ``a, b = 1, 2``"""
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Name):
            yield target.id, value
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                if isinstance(t, ast.Name):
                    yield t.id, v


def assignment_nodes(source: str):
    """参数单元里顶层赋值的（变量名, 语法树节点）；源码有语法错误时什么也没有"""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return list(_assignments(tree))


def cell_values(source: str) -> dict[str, Any]:
    """参数单元里顶层赋值的字面值：{变量名: 值}（不是字面值的跳过；后面的赋值覆盖前面的）"""
    out = {}
    for name, node in assignment_nodes(source):
        try:
            out[name] = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


def _same_shape(value) -> Any:
    """列表与元组一视同仁（JSON 读回来的 tuple 是 list）"""
    if isinstance(value, list | tuple):
        return tuple(_same_shape(v) for v in value)
    if isinstance(value, Mapping):
        return {k: _same_shape(v) for k, v in value.items()}
    return value


def coerce(param: Param, value) -> Any:
    """把笔记本里（或 JSON 里）的值转成与发布值同类型；不是这个参数能取的值时返回 None"""
    template = param.published
    if isinstance(template, Mapping) and not all(isinstance(v, int | float) for v in template.values()):
        value = _same_shape(value)  # 非数值的参数（问题 8 的分片顺序）：只能是发布值或可选值之一
        return _copy(value) if any(_same_shape(c) == value for c in (template, *param.choices)) else None
    return _coerce_number(template, value)


def _coerce_number(template, value):
    if isinstance(template, Mapping):
        if not isinstance(value, Mapping) or set(value) != set(template):
            return None
        out = {k: _coerce_number(template[k], value[k]) for k in template}
        return None if any(v is None for v in out.values()) else out
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:  # 笔记本里可能写着几百位的整数：float() 溢出就不是这个参数能取的值
        number = float(value)
    except OverflowError:
        return None
    if not math.isfinite(number) or number <= 0:
        return None
    if isinstance(template, int):
        return int(value) if number.is_integer() else None
    return number


def from_values(assignment: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """{变量名: 值} 里本章的参数（类型不对或没有的取发布值）"""
    out = published(assignment)
    for p in params_of(assignment):
        if p.name in values:
            value = coerce(p, values[p.name])
            if value is not None:
                out[p.name] = value
    return out


def from_cells(assignment: str, sources) -> dict[str, Any]:
    """参数单元（按运行或出现的顺序）里写下的本章参数；自检与评分器都用它"""
    found: dict[str, Any] = {}
    for src in sources:
        found.update(cell_values(src))
    return from_values(assignment, found)


def from_namespace(assignment: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """从变量的当前值读参数：只在没有参数单元的运行记录时（不在 IPython 里）用"""
    return from_values(assignment, namespace)


def written(assignment: str, sources) -> dict[str, Any]:
    """参数单元里**写了**的本章参数（没写的不补发布值）：评分器用它与花名册推出的参数比较"""
    found: dict[str, Any] = {}
    for src in sources:
        found.update(cell_values(src))
    out = {}
    for p in params_of(assignment):
        if p.name in found:
            value = coerce(p, found[p.name])
            out[p.name] = value if value is not None else describe(found[p.name])  # 不是这个参数能取的值：只留个说法
    return out


def describe(value, limit: int = 40) -> str:
    """笔记本里写的值的简短说法（不可信：几千位的整数连 repr 都会抛出 ValueError）"""
    try:
        return f"{value!r:.{limit}}"
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}，太大，写不出来>"
