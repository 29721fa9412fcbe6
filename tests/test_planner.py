"""shardlab.planner：四种情形的规划，与 XLA 在 8 个模拟 CPU 设备上实际插入的集合通信对照"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding

from shardlab import collectives, hardware, runtime
from shardlab.planner import plan_matmul
from shardlab.sharding import ShardingError, parse

runtime.setup("cpu")

SHAPES = {"I": 128, "J": 128, "K": 128}  # float32，每个操作数 64 kB


@functools.cache
def mesh_of(shape, names):
    return runtime.make_mesh(shape, names)


M8, M24 = ((8,), ("X",)), ((2, 4), ("X", "Y"))


def xla_collectives(mesh, a, b, out, shapes=SHAPES):
    """jit(jnp.matmul) 编译后的集合通信（Auto 网格：输入分片来自数组，输出分片来自 out_shardings）"""
    x = runtime.put(np.ones((shapes["I"], shapes["J"]), np.float32), mesh, runtime.to_partition_spec(a))
    y = runtime.put(np.ones((shapes["J"], shapes["K"]), np.float32), mesh, runtime.to_partition_spec(b))
    f = jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, runtime.to_partition_spec(out)))
    text = collectives.compiled_hlo_text(f, x, y)
    return frozenset(collectives.find_collectives(text)), "dynamic-slice" in text


# XLA 的 SPMD 切分器按通信的字节数挑做法（启发式，不看计算）。为了拿规划器的通信部分与它对照，
# 这里给名义 CPU 芯片近乎无穷的算力：T_math ≈ 0，按总时间排序就退化成按 T_comms 排序。
COMMS_ONLY_CPU = dataclasses.replace(hardware.CPU, name="cpu（只看通信）", flops_bf16=1e30, ops_int8=1e30)


def plan(mesh, a, b, out, shapes=SHAPES):
    # hop_latency=0：小数组在名义 CPU 芯片上会受延迟限制，这里比较的是带宽项（XLA 按字节数选做法）
    return plan_matmul(a, b, "J", dict(mesh.shape), COMMS_ONLY_CPU, shapes=shapes, dtype="fp32", out=out, hop_latency=0)


def cpu_kinds(option) -> frozenset[str]:
    """CPU 上 XLA 把 reduce-scatter 编译成 all-reduce + dynamic-slice（tooling.md §4）"""
    return frozenset("all-reduce" if k == "reduce-scatter" else k for k in option.hlo_kinds)


# (网格, A, B, 想要的输出, 情形, 规划器选的集合通信)：XLA 与规划器一致的格子
AGREE = [
    (M8, "A[I_X, J]", "B[J, K]", "C[I_X, K]", 1, ()),
    (M8, "A[I, J]", "B[J, K_X]", "C[I, K_X]", 1, ()),
    (M24, "A[I_X, J]", "B[J, K_Y]", "C[I_X, K_Y]", 1, ()),
    (M8, "A[I, J_X]", "B[J, K]", "C[I, K]", 2, ("all_gather",)),
    (M8, "A[I, J]", "B[J_X, K]", "C[I, K]", 2, ("all_gather",)),
    (M8, "A[I, J_X]", "B[J, K]", "C[I_X, K]", 2, ("all_to_all",)),  # A[I, J_X] → A[I_X, J]
    (M24, "A[I_X, J_Y]", "B[J, K]", "C[I_X, K]", 2, ("all_gather",)),
    (M8, "A[I, J_X]", "B[J_X, K]", "C[I, K]", 3, ("all_reduce",)),
    (M8, "A[I, J_X]", "B[J_X, K]", "C[I_X, K]", 3, ("reduce_scatter",)),
    (M8, "A[I, J_X]", "B[J_X, K]", "C[I, K_X]", 3, ("reduce_scatter",)),
    (M24, "A[I_X, J_Y]", "B[J_Y, K]", "C[I_X, K]", 3, ("all_reduce",)),
    (M8, "A[I_X, J]", "B[J, K_X]", "C[I_X, K]", 4, ("all_gather",)),  # AllGather B
    (M8, "A[I_X, J]", "B[J, K_X]", "C[I, K_X]", 4, ("all_gather",)),  # AllGather A
    (M8, "A[I_X, J]", "B[J, K_X]", "C[I, K]", 4, ("all_gather", "all_gather")),  # 一个乘数，再 C
]


def _id(value) -> str:
    """集合的顺序随哈希种子变化：排序后再做测试 id，xdist 的各个进程才会收集到同样的测试"""
    return str(sorted(value)) if isinstance(value, (set, frozenset)) else str(value)


@pytest.mark.parametrize(("mesh", "a", "b", "out", "case", "kinds"), AGREE, ids=_id)
def test_planner_matches_xla(mesh, a, b, out, case, kinds):
    mesh = mesh_of(*mesh)
    p = plan(mesh, a, b, out)
    assert p.case == case
    assert p.kinds == kinds
    assert str(p.out) == out
    got, sliced = xla_collectives(mesh, a, b, out)
    if "reduce_scatter" in kinds:
        assert got == cpu_kinds(p.chosen) == {"all-reduce"} and sliced
    else:
        assert got == p.chosen.hlo_kinds


# XLA 选了另一种合法做法：它一定在规划器的备选里，且按代价模型不比选中的便宜
DIFFER = [
    # Case 2 → K 上切分：规划器 AllToAll A、再 AllToAll C（V/4W 两次）；XLA AllGather A 后本地切片
    (M8, "A[I, J_X]", "B[J, K]", "C[I, K_X]", 2, {"all-gather"}),
    # Case 3 + 4：规划器把 X 从非收缩维挪到收缩维（两次 AllToAll）再 AllReduce_YX；
    # XLA AllGather_X B → 本地 matmul → AllReduce_Y → AllGather_X C
    (M24, "A[I_X, J_Y]", "B[J_Y, K_X]", "C[I, K]", 4, {"all-gather", "all-reduce"}),
    # Case 4 → C[I_Y, K_X]：XLA 沿 Y 收集整个 B 再本地切 K。先切成 K_YX 只收集一半更省，可收集主轴 Y 之后
    # K 的块是交错的（每个 Y 块里的第 x 段），不是 K_X；规划器再用两次 AllToAll_X 把输出排回 C[I_Y, K_X]
    (M24, "A[I_Y, J]", "B[J, K_Y]", "C[I_Y, K_X]", 4, {"all-gather"}),
]


@pytest.mark.parametrize(("mesh", "a", "b", "out", "case", "xla"), DIFFER, ids=_id)
def test_xla_choice_is_an_alternative(mesh, a, b, out, case, xla):
    mesh = mesh_of(*mesh)
    p = plan(mesh, a, b, out)
    assert p.case == case
    got, _ = xla_collectives(mesh, a, b, out)
    assert got == xla
    assert p.chosen.hlo_kinds != xla
    theirs = p.find(xla)
    assert theirs is not None and theirs.out == p.out
    assert theirs.t_comms >= p.t_comms


@pytest.mark.parametrize(("out", "kind"), [("C[I, K]", "all_reduce"), ("C[I_XY, K]", "reduce_scatter")])
def test_multi_axis_reduction_rows(out, kind):
    """A[I, J_XY]·B[J_XY, K]：XLA 沿 XY 规约（CPU 上 ReduceScatter 也是 all-reduce + dynamic-slice）。
    规划器选哪种取决于多轴规约的模型：按原书的大 N 极限它也沿 XY 规约；按模拟器的精确时间
    （长度 2 的轴上是极限的 2 倍）AllToAll + AllGather 更快。两种情况下 XLA 的做法都必须在备选里，且不比选中的便宜"""
    mesh = mesh_of(*M24)
    p = plan(mesh, "A[I, J_XY]", "B[J_XY, K]", out)
    assert p.case == 3 and str(p.out) == out
    got, sliced = xla_collectives(mesh, "A[I, J_XY]", "B[J_XY, K]", out)
    assert got == {"all-reduce"} and sliced == (kind == "reduce_scatter")
    theirs = p.with_kinds(kind)
    assert theirs is not None and theirs.steps[0].axes == ("X", "Y") and theirs.t_comms >= p.t_comms


def test_known_gap_collective_permute():
    """A[I_X, J]·B[J, K_X] → C[I_X, K_Y]：XLA 用 collective-permute 把 B 的 K_X 块直接送到需要它的设备，
    规划器的词汇里没有点对点置换，只能先 AllGather 一个乘数，再用 AllToAll 把块排成想要的次序（只收集 B 的一半，
    K 的块是交错的，不是 K_Y）。XLA 改变做法时这个测试会失败，提醒更新书里的说明"""
    mesh = mesh_of(*M24)
    p = plan(mesh, "A[I_X, J]", "B[J, K_X]", "C[I_X, K_Y]")
    assert p.case == 4 and p.kinds[0] == "all_gather" and set(p.kinds[1:]) == {"all_to_all"}
    got, _ = xla_collectives(mesh, "A[I_X, J]", "B[J, K_X]", "C[I_X, K_Y]")
    assert got == {"collective-permute"}
    assert p.find(got) is None


def test_case2_choice_flips_with_shape():
    """Case 2：AllGather A（V = I·J）对本地 matmul + AllReduce（2V，V = I·K）：J > 2K 时改用 AllReduce"""
    mesh = mesh_of(*M8)
    shapes = {"I": 64, "J": 512, "K": 128}
    p = plan(mesh, "A[I, J_X]", "B[J, K]", "C[I, K]", shapes)
    assert p.kinds == ("all_reduce",)
    assert any("B[J, K] → B[J_X, K]" in t for t in p.chosen.slices)  # B 免费切片
    got, sliced = xla_collectives(mesh, "A[I, J_X]", "B[J, K]", "C[I, K]", shapes)
    assert got == {"all-reduce"} and sliced
    gather = p.find({"all-gather"})
    assert gather is not None and gather.t_comms == pytest.approx(p.t_comms * 2)  # I·J·4 对 2·I·K·4


# ---- 数字：How To Scale Your Model（sharding.md）里分片 matmul 的阈值 ----

# 书中的理想化：每个轴都是有 wraparound 的双向环（EmulatedChip 按此计算），算力与链路用 v5e 的
V5E = hardware.get_chip("v5e")
IDEAL_V5E = dataclasses.replace(
    hardware.CPU, name="v5e（理想环）", flops_bf16=V5E.flops_bf16, ici_oneway_bw=V5E.ici_oneway_bw
)


def test_reference_threshold_v5e_n4():
    """X[B, D]·W[D_X, F] → C[B, F]（bf16，N = 4）：T_math = 2BDF/(NC)，T_comms = 4BF/W，D > 17,511 时受算力限制"""
    b, f = 1024, 8192
    for d, bound in ((17_508, "communication-bound"), (17_512, "compute-bound")):
        p = plan_matmul(
            "X[B, D]",
            "W[D_X, F]",
            "D",
            {"X": 4},
            IDEAL_V5E,
            shapes={"B": b, "D": d, "F": f},
            out="C[B, F]",
            hop_latency=0,
        )
        assert p.case == 2 and p.kinds == ("all_reduce",)
        assert p.flops_per_device == 2 * b * d * f // 4
        assert p.t_math == pytest.approx(2 * b * d * f / (4 * V5E.flops_bf16))
        assert p.t_comms == pytest.approx(4 * b * f / V5E.ici_bidir_bw)
        assert p.bound == bound
        assert p.steps[0].nbytes == 2 * b * f and p.steps[0].notation == "AllReduce_X: C[B, F]{U_X} → C[B, F]"


def test_v5e_4x4_slice_has_no_wraparound():
    """真实的 v5e 4x4 切片：长度 4 的轴没有 wraparound，AllReduce 按线形计 2(N-1)/N·V/W_oneway = 1.5 倍"""
    b, f = 1024, 8192
    kw = {"out": "C[B, F]", "slice_shape": (4, 4), "hop_latency": 0}
    for d, bound in ((26_264, "communication-bound"), (26_268, "compute-bound")):
        p = plan_matmul("X[B, D]", "W[D_X, F]", "D", {"X": 4}, "v5e", shapes={"B": b, "D": d, "F": f}, **kw)
        assert p.t_comms == pytest.approx(1.5 * 4 * b * f / V5E.ici_bidir_bw)
        assert p.bound == bound


# ---- 默认输出、说明文字与错误 ----


def test_default_output_and_explain():
    p = plan_matmul("A[I_X, J]", "B[J, K_X]", "J", {"X": 8}, "v5p", shapes=SHAPES, slice_shape=(4, 4, 8))
    assert p.case == 4 and p.kinds == ("all_gather",)
    assert str(p.out) in {"C[I_X, K]", "C[I, K_X]"}  # 两种修法都可以
    assert len({str(o.out) for o in p.alternatives}) == 2
    text = p.explain()
    assert "Case 4" in text and "AllGather_X" in text and "其他做法" in text and str(p) == text
    step = p.steps[0]
    assert step.bytes == step.nbytes == 128 * 128 * 2 and step.hlo_name == "all-gather"
    assert "AllGather_X: " in str(step) and "V = " in str(step)
    o = p.chosen
    assert o.t_total == o.t_math + o.t_comms and o.t_overlapped == max(o.t_math, o.t_comms)
    assert "本地 matmul" in o.label and o.describe().startswith(o.label)


def test_case3_default_is_all_reduce_and_notes():
    p = plan_matmul("A[I, J_XY]", "B[J_X, K]", "J", {"X": 2, "Y": 4}, "cpu", shapes=SHAPES, dtype="int8")
    assert p.case == 3 and str(p.out) == "C[I, K]" and p.t_math > 0
    assert any("切分轴不同" in n for n in p.notes)
    q = plan_matmul("A[I, J_X]", "B[J, K_X]", "J", {"X": 8}, "cpu", shapes=SHAPES)
    assert q.case == 2 and any("原样不能本地 matmul" in n for n in q.notes)
    r = plan_matmul("A[I_X, J_Y]", "B[J_Y, K_X]", "J", {"X": 2, "Y": 4}, "cpu", shapes=SHAPES)
    assert r.case == 4 and any("收缩维也被切分" in n for n in r.notes)
    assert "延迟受限" in "".join(str(s) for o in r.alternatives for s in o.steps)  # 默认 1 µs 每跳
    assert plan_matmul("A[I, J]", "B[J, K]", "J", {"X": 8}, "cpu", shapes=SHAPES).bound == "compute-bound"


@pytest.mark.parametrize(
    ("a", "b", "kw", "match"),
    [
        ("A[I, J, K]", "B[J, K]", {}, "二维"),
        ("C[I, J]{U_X}", "B[J, K]", {}, "二维"),
        ("A[I, L]", "B[J, K]", {}, "同时出现"),
        ("A[I, J]", "B[J, I]", {}, "各不相同"),
        ("A[I, J]", "B[J, K]", {"out": "C[K, I]"}, "维度应是"),
        ("A[I_Q, J]", "B[J, K]", {}, "未知的网格轴"),
    ],
)
def test_plan_errors(a, b, kw, match):
    with pytest.raises(ShardingError, match=match):
        plan_matmul(a, b, "J", {"X": 8}, "cpu", shapes={**SHAPES, "L": 128}, **kw)


def test_unreduced_output_on_request():
    """想要的输出可以带未规约轴：两个乘数都免费切片收缩维，不需要通信"""
    p = plan_matmul("A[I, J]", "B[J, K]", "J", {"X": 8}, "cpu", shapes=SHAPES, out="C[I, K]{U_X}")
    assert p.kinds == () and str(p.out) == "C[I, K]{U_X}" and len(p.chosen.slices) == 2


def test_with_kinds_finds_the_exact_sequence():
    p = plan_matmul("A[I, J_X]", "B[J, K]", "J", {"X": 4}, "v5p", shapes=SHAPES, slice_shape=(4, 4, 4))
    gather = p.with_kinds("all_gather")
    assert gather.kinds == ("all_gather",) and gather.steps[0].operand == "A"
    assert p.with_kinds("all_reduce").kinds == ("all_reduce",)
    assert p.with_kinds("all_to_all", "all_to_all", "all_to_all") is None


def test_alternatives_have_distinct_labels():
    """列出的做法标签各不相同：同样的通信步骤、不同的本地乘积（部分和按 I 还是按 K 切）要能从标签上分开"""
    mesh = {"X": 2, "Y": 4}
    for sa, sb in [("A[I, J_Y]", "B[J, K]"), ("A[I_X, J]", "B[J_X, K_Y]"), ("A[I, J_X]", "B[J_Y, K]")]:
        p = plan_matmul(sa, sb, "J", mesh, "v5e", shapes={"I": 4096, "J": 8192, "K": 16384})
        labels = [o.label for o in p.alternatives]
        assert len(labels) == len(set(labels)), [x for x in labels if labels.count(x) > 1]
        assert all(f"本地 matmul 得 {o.c_local}" in o.label for o in p.alternatives)


# ---- 每一步在每个设备上真的成立：按下标集合重放做法 ----
# 这里不用规划器的记号推理，直接按定义算每个设备持有哪些块（单位：把每个维度切成 64 小段）：
# 连续的分片由下标的顺序决定（第一个轴为主）；收集拿走的轴 = 沿它的设备手里的块合起来；
# 加一个轴（本地切片、AllToAll 的目标维、ReduceScatter）= 把自己手里的块按次序分成几份，取第几份。

_UNITS = 64


def _coords(mesh):
    names = list(mesh)
    for values in itertools.product(*(range(mesh[n]) for n in names)):
        yield dict(zip(names, values))


def _key(c):
    return tuple(sorted(c.items()))


def _blocks(spec, dim, c, mesh):
    axes = spec.axes_of(dim)
    index = 0
    for a in axes:
        index = index * mesh[a] + c[a]
    width = _UNITS // math.prod(mesh[a] for a in axes)
    return tuple(range(index * width, (index + 1) * width))


def _layout(spec, mesh):
    return {_key(c): {d: _blocks(spec, d, c, mesh) for d in spec.dim_names} for c in _coords(mesh)}


def _move(before, after, held, mesh):
    new = {}
    for c in _coords(mesh):
        cur = held[_key(c)]
        res = dict(cur)
        for d in before.dim_names:
            old, now = before.axes_of(d), after.axes_of(d)
            added, gone = [a for a in now if a not in old], [a for a in old if a not in now]
            if gone:  # 收集：沿拿走的轴的设备手里的块合起来
                union = set()
                for values in itertools.product(*(range(mesh[a]) for a in gone)):
                    other = {**c, **dict(zip(gone, values))}
                    union |= set(held[_key(other)][d])
                res[d] = tuple(sorted(union))
            if added:  # 按次序分成几份，取自己那一份
                index = 0
                for a in added:
                    index = index * mesh[a] + c[a]
                parts = math.prod(mesh[a] for a in added)
                width = len(res[d]) // parts
                res[d] = res[d][index * width : (index + 1) * width]
        new[_key(c)] = res
    return new


def _spec_of(text: str):
    return parse(re.sub(r"（[^（）]*交错）$", "", text.strip()))


def _replay(option, a, b, contract, mesh) -> str | None:
    """按下标集合重放一种做法；成立时返回 None，否则返回出错的地方"""
    i = next(d for d in a.dim_names if d != contract)
    k = next(d for d in b.dim_names if d != contract)
    held = {"A": _layout(a, mesh), "B": _layout(b, mesh)}
    role_of = {a.name: "A", b.name: "B"}
    steps = iter(option.steps)
    for line in option.trace:
        if line.startswith("本地 matmul"):
            for c in _coords(mesh):
                if held["A"][_key(c)][contract] != held["B"][_key(c)][contract]:
                    return f"设备 {c} 上两个乘数的收缩段对不上"
            for c in _coords(mesh):  # 部分和：沿未规约轴的设备输出块相同，收缩段合起来正好是整个收缩维
                segments = []
                for values in itertools.product(*(range(mesh[u]) for u in option.c_local.unreduced)):
                    other = _key({**c, **dict(zip(option.c_local.unreduced, values))})
                    if (held["A"][other][i], held["B"][other][k]) != (held["A"][_key(c)][i], held["B"][_key(c)][k]):
                        return "部分和的输出块不一致"
                    segments += held["A"][other][contract]
                if sorted(segments) != list(range(_UNITS)):
                    return "部分和没有覆盖整个收缩维"
            held["C"] = {key: {i: h[i], k: held["B"][key][k]} for key, h in held["A"].items()}
            continue
        if line.startswith("本地切片"):
            before, after = (_spec_of(x) for x in line.split("：", 1)[1].split(" → "))
            role = "C" if "C" in held else role_of[before.name]
        else:
            step = next(steps)
            before, after, role = _spec_of(step.before), _spec_of(step.after), step.operand
            if step.kind == "all_reduce":
                continue
        held[role] = _move(before, after, held[role], mesh)
    want = _layout(option.out, mesh)
    for c in _coords(mesh):
        for d in option.out.dim_names:
            if held["C"][_key(c)][d] != want[_key(c)][d]:
                return f"输出不是 {option.out}：设备 {c} 的 {d} 段不对"
    return None


def test_replay_catches_a_misordered_gather():
    """重放本身会抓错：从 K_YX 收集主轴 Y 留下的不是 K_X"""
    b, mesh = parse("B[J, K_YX]"), {"X": 2, "Y": 4}
    held = _move(b, parse("B[J, K_X]"), _layout(b, mesh), mesh)
    assert held != _layout(parse("B[J, K_X]"), mesh)
    assert _move(b, parse("B[J, K_Y]"), _layout(b, mesh), mesh) == _layout(parse("B[J, K_Y]"), mesh)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("A[I_Y, J]", "B[J, K_Y]"),  # Case 4：先切成 K_YX 再收集 Y，K 的块交错
        ("A[I_X, J]", "B[J_X, K_Y]"),  # 交叉
        ("A[I, J_X]", "B[J_Y, K]"),  # 收缩轴不一致
        ("A[I, J_X]", "B[J, K_X]"),
        ("A[I_X, J_Y]", "B[J_X, K]"),
        ("A[I, J_XY]", "B[J_Y, K_X]"),
        ("A[I, J_Y]", "B[J, K]"),
    ],
)
@pytest.mark.parametrize("out", [None, "C[I_X, K_Y]", "C[I_Y, K_X]", "C[I, K]"])
def test_every_option_is_sound_device_by_device(a, b, out):
    """规划器列出的每一种做法按下标集合重放都成立：收缩段在每个设备上对得上，输出正是要的连续分片"""
    mesh = {"X": 2, "Y": 4}
    p = plan_matmul(a, b, "J", mesh, "v5e", shapes={"I": 4096, "J": 8192, "K": 4096}, out=out)
    for option in p.alternatives:
        assert _replay(option, p.a, p.b, "J", mesh) is None, option.describe()
        if any("交错" in s.after for s in option.steps):
            assert "交错）" in option.describe()
