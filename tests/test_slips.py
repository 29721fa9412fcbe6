"""每个答案的常见失误（Slip）：犯错的学生算出的数触发自己的提示，别的值不触发不相干的提示

两部分：

- **独立推导**（``STUDENT``）：每种失误的错误值按犯错的学生的算法，从题目参数和硬件常数直接算出（不经过登记表，
  也不拿参考答案乘一个因子；多轴的精确值由环形模拟器给出）。它必须判为错、给出这个失误的提示；
  登记表里的每条失误都要有一个独立推导与它的值吻合（没有无人推导过的失误）。
- **登记表自洽**：每条失误自己的错误值判为错并触发自己的提示；同一个错误值的几种原因全部列出，按登记表的顺序；
  正确答案的倒数只触发“倒过来”的那一条。

发布版和两组抽出的个人版参数都要满足；函数答案在自检的每一组公开输入上检查（失误拿到的“参数”是这一组输入）。
错误值离正确答案不到 ``answers.DEAD_ZONE`` 时，这组参数下没有这种失误（例如 128 个设备的 (N-1)/N）。
"""

import math
import random

import pytest

from shardlab import hardware, ring
from shardlab.exercise import answers, judge, problems, variants
from shardlab.torus import Ring, Torus

TOL = judge.SLIP_RTOL

# 每章：发布版 + 两组抽出的个人版（第 6 章问题 8 的方案顺序不同，失误也随之不同）
PARAM_SETS = {
    a: [("pub", problems.published(a))]
    + [(f"v{k}", variants.draw(a, random.Random(f"slips-{a}-{k}"))) for k in range(2)]
    for a in problems.ASSIGNMENTS
}

# ---- 硬件常数（题目的输入，不是答案） ----
V4P = hardware.TPU_V4P
W1, WB, T_HOP = V4P.ici_oneway_bw, 2 * V4P.ici_oneway_bw, V4P.hop_latency
V5E = hardware.TPU_V5E
W1E, C5E = V5E.ici_oneway_bw, V5E.flops_bf16
H = hardware.H100
NV = H.nvlink_links * H.nvlink_link_bw_per_direction  # 每 GPU 每方向（450 GB/s）
NV_BOTH = 2 * NV  # 宣传的“900 GB/s”：两个方向之和
NIC, NODE = H.ib_bw_per_gpu, H.ib_bw_per_gpu * H.gpus_per_node
NET_OVERHEAD = 1e-6  # NCCL tuning.cc：跨节点时每步 NVLink 开销至少 1 µs


def nccl_latency(steps: int, n: int) -> float:
    """NCCL 环形算法的延迟项：base + 节点内步数 × NVLink 每步开销 + 跨节点步数 × 网络每步开销"""
    m = max(1, n // H.gpus_per_node)
    inter = steps // (n - 1) * (m - 1)
    intra = H.nvlink_step_latency if inter == 0 else max(H.nvlink_step_latency, NET_OVERHEAD)
    return H.nccl_base_latency + (steps - inter) * intra + inter * H.net_step_latency


# ---- 犯错的学生怎么算：{答案 id: [(提示里的关键词, 学生的算法)]} ----
def _q2(p):
    b, d, m = p["B"], p["D"], p["mesh"]
    x, y, z = m["X"], m["Y"], m["Z"]
    va = 2 * b * d / y  # AllGather_X 之后的 [B, D_Y]
    vb = 2 * b * d  # AllGather_XY 之后的 [B, D]
    vc = 2 * (b / x) * (d / y)  # 未规约的 [B_X, D_Y]
    return b, d, x, y, z, va, vb, vc


def _exact_xy(p):
    b, d, x, y, z, va, vb, vc = _q2(p)
    return ring.count("all_gather", Torus((x, y)), vb).time(W1, T_HOP)


Q2 = {
    "a": [
        ("单向带宽", lambda p: _q2(p)[5] / W1),
        ("4 字节", lambda p: 2 * _q2(p)[5] / WB),
        ("少了 bf16", lambda p: _q2(p)[5] / 2 / WB),
        ("V 用了整个数组：AllGather_X", lambda p: 2 * p["B"] * p["D"] / WB),
        ("没有 wraparound 的线", lambda p: (p["mesh"]["X"] - 1) / p["mesh"]["X"] * _q2(p)[5] / W1),
        ("乘了 (N-1)/N（", lambda p: (p["mesh"]["X"] - 1) / p["mesh"]["X"] * _q2(p)[5] / WB),
    ],
    "b": [
        ("一条轴的带宽", lambda p: _q2(p)[6] / WB),
        ("单向带宽", lambda p: _q2(p)[6] / (2 * W1)),
        ("4 字节", lambda p: 2 * _q2(p)[6] / (2 * WB)),
        ("少了 bf16", lambda p: _q2(p)[6] / 2 / (2 * WB)),
        ("模拟器", _exact_xy),
        ("乘了 (N-1)/N：", lambda p: (1 - 1 / (p["mesh"]["X"] * p["mesh"]["Y"])) * _q2(p)[6] / (2 * WB)),
    ],
    "c": [
        ("漏了 AllReduce 的因子 2", lambda p: _q2(p)[7] / WB),
        ("少了 bf16", lambda p: 2 * (_q2(p)[7] / 2) / WB),
        ("单向带宽", lambda p: 2 * _q2(p)[7] / W1),
        ("4 字节", lambda p: 2 * (2 * _q2(p)[7]) / WB),
        ("原书早期版本", lambda p: 2 * (2 * p["B"] * p["D"]) / WB),
        ("没有 wraparound 的线", lambda p: 2 * (p["mesh"]["Z"] - 1) / p["mesh"]["Z"] * _q2(p)[7] / W1),
        ("乘了 (N-1)/N（", lambda p: 2 * (p["mesh"]["Z"] - 1) / p["mesh"]["Z"] * _q2(p)[7] / WB),
    ],
}


def _small(name):
    return [
        ("只算了带宽项", lambda p: 2 * p[name] / WB),
        ("N-1 跳", lambda p: (p["mesh"]["X"] - 1) * T_HOP),
        ("只算了一跳", lambda p: T_HOP),
    ]


def _closed(n, bidir):
    return (n * n // 4) / (n * (n - 1)) if bidir else 0.5


def _chapter_convention(a):
    n, bidir = a
    if not bidir or n % 2:
        return None
    topo = Ring(n, bidirectional=True)
    return ring.count("all_to_all", topo, 1.0).max_link_bytes / ring.count("all_gather", topo, 1.0).max_link_bytes


RATIO_UNI = [("双向环上的比值", lambda p: 0.25), ("倒过来", lambda p: 2.0)]
RATIO_BI = [("单向环上的比值", lambda p: 0.5), ("倒过来", lambda p: 4.0)]
P3_FN = [
    ("正文的约定", _chapter_convention),
    ("大环的极限（与 n 无关", lambda a: 0.25 if a[1] and a[0] % 2 else None),
    ("弄反了", lambda a: _closed(a[0], not a[1])),
    ("倒过来", lambda a: 1 / _closed(*a)),
]


def _replication(name):
    return [
        ("X 轴的大小", lambda p: p[name]["X"]),
        ("芯片总数", lambda p: p[name]["X"] * p[name]["Y"] * p[name]["Z"]),
        ("每个芯片上那一块", lambda p: 1 / p[name]["X"]),
        ("倒过来", lambda p: 1 / (p[name]["Y"] * p[name]["Z"])),
    ]


def _dp(n):
    """第 5 章问题 5：n 张 H100 上 AllReduce bf16 梯度（V = 2·参数量）"""
    m = n // H.gpus_per_node
    g = min(n, H.gpus_per_node)
    lat_ar, lat_ag = nccl_latency(2 * (n - 1), n), nccl_latency(n - 1, n)

    def per_byte(p):  # 环上每个字节的最慢一层：节点内 (G-1)/(G·W_nvlink)，跨节点 (M-1)/(M·W_node)
        return max((g - 1) / (g * NV), (m - 1) / (m * NODE) if m > 1 else 0.0)

    def v(p):
        return 2 * p["params5"]

    out = [
        ("一次 AllGather", lambda p: lat_ag + v(p) * per_byte(p)),
        ("少了 bf16", lambda p: lat_ar + 2 * (v(p) / 2) * per_byte(p)),
    ]
    if m == 1:
        out += [
            ("两个方向之和", lambda p: lat_ar + 2 * v(p) * (n - 1) / (n * NV_BOTH)),
            ("大 N 极限 2V/W", lambda p: lat_ar + 2 * v(p) / NV),
        ]
    else:
        out += [
            ("不重叠", lambda p: 2 * v(p) * (g - 1) / (g * NV) + 2 * v(p) * (m - 1) / (m * NODE)),
            ("一块", lambda p: 2 * v(p) * (n - 1) / n / NIC),
        ]
        if n <= 64:
            out.append(("8 轨环", lambda p: 2 * v(p) * (n - 1) / n / NODE))
    return out


def _tp(phase):
    def v(p):
        return 2 * (1 if phase == "decode" else p["PROMPT"]) * p["D7"]

    def lat(p):
        return nccl_latency(2 * (p["TP"] - 1), p["TP"])

    def bw(p, w=NV, nbytes=None):
        n = p["TP"]
        return 2 * (v(p) if nbytes is None else nbytes) * (n - 1) / (n * w)

    return (
        [
            ("少了 bf16", lambda p: v(p) / 2),
            ("80 层各一次", lambda p: 80 * v(p)),
            ("80 层 × 2 次", lambda p: 160 * v(p)),
            ("每层两次", lambda p: 2 * v(p)),
            ("4 字节", lambda p: 2 * v(p)),
        ],
        [
            ("只算了带宽项", bw),
            ("两个方向之和", lambda p: lat(p) + bw(p, NV_BOTH)),
            ("少了 bf16", lambda p: lat(p) + bw(p, nbytes=v(p) / 2)),
            ("4 字节", lambda p: lat(p) + bw(p, nbytes=2 * v(p))),
            ("每层两次", lambda p: 2 * (lat(p) + bw(p))),
            ("80 层各一次", lambda p: 80 * (lat(p) + bw(p))),
            ("80 层 × 2 次", lambda p: 160 * (lat(p) + bw(p))),
        ],
    )


def _mlp(p):
    return p["B5"], p["D5"], p["F5"]


P5_WEIGHT = [
    ("只算了一个矩阵：", lambda p: 2 * _mlp(p)[1] * _mlp(p)[2] / 4),
    ("少了 bf16", lambda p: 2 * (_mlp(p)[1] * _mlp(p)[2]) / 4),
    ("F 只分到了 2 个芯片上", lambda p: 2 * 2 * _mlp(p)[1] * _mlp(p)[2] / 2),
    ("4 字节", lambda p: 2 * 4 * _mlp(p)[1] * _mlp(p)[2] / 4),
    ("只算了一个矩阵，而且没有切分", lambda p: 2 * _mlp(p)[1] * _mlp(p)[2]),
    ("没有切分权重", lambda p: 2 * 2 * _mlp(p)[1] * _mlp(p)[2]),
]
P5_MATH = [
    ("FLOPs 的因子 2：", lambda p: 2 * math.prod(_mlp(p)) / 4 / C5E),
    ("只算了一个矩阵乘法：", lambda p: 2 * math.prod(_mlp(p)) / 4 / C5E),
    ("又只算了一个矩阵乘法", lambda p: math.prod(_mlp(p)) / 4 / C5E),
    ("只分到了 2 个芯片上", lambda p: 2 * 2 * math.prod(_mlp(p)) / 2 / C5E),
    ("没有除以芯片数", lambda p: 2 * 2 * math.prod(_mlp(p)) / C5E),
    ("反向传播", lambda p: 3 * 2 * 2 * math.prod(_mlp(p)) / 4 / C5E),
]


def _act(p):
    return 2 * p["B5"] * p["D5"]  # [B, D] 的字节数


P5_COMMS = [  # RS_XY + AG_XY；每个芯片收 3/4 的 V，两条入口链路各一半，每条一个方向
    ("大 N 极限", lambda p: 2 * _act(p) / (2 * 2 * W1E)),
    ("忽略了 (N-1)/N", lambda p: 2 * _act(p) / (2 * W1E)),
    ("只算了 ReduceScatter", lambda p: 0.75 * _act(p) / (2 * W1E)),
    ("少了 bf16", lambda p: 2 * 0.75 * (_act(p) / 2) / (2 * W1E)),
    ("一条入口链路", lambda p: 2 * 0.75 * _act(p) / W1E),
    ("4 字节", lambda p: 2 * 0.75 * (2 * _act(p)) / (2 * W1E)),
]


def _p8(letter):
    def scheme(p):
        return problems.p8_scheme(p["cases8"], letter)

    def v(p):  # 方案的 V：ReduceScatter 的未规约缓冲区 [I_X, K]，或 AllGather 之后的 [J, K_Y]
        i, j, k = p["I8"], p["J8"], p["K8"]
        return {"rs": 2 * (i / 4) * k, "ag": 2 * j * (k / 4)}.get(scheme(p))

    def when(kind, fn):
        return lambda p: fn(p) if scheme(p) == kind else None

    def line(nbytes, w=W1E):  # 长度 4 的线：3 跳，每跳 V/4，单向带宽
        return 3 / 4 * nbytes / w

    wrong_v = [
        ("整个 C[I, K]", when("rs", lambda p: 2 * p["I8"] * p["K8"])),
        ("ReduceScatter 之后", when("rs", lambda p: 2 * (p["I8"] / 4) * (p["K8"] / 4))),
        ("整个 B[J, K]", when("ag", lambda p: 2 * p["J8"] * p["K8"])),
        ("收集之前", when("ag", lambda p: 2 * (p["J8"] / 4) * (p["K8"] / 4))),
    ]
    nbytes = [("少了 bf16", lambda p: v(p) and v(p) / 2), ("4 字节", lambda p: v(p) and 2 * v(p)), *wrong_v]
    time = [
        ("用了 W_双向", lambda p: v(p) and line(v(p), 2 * W1E)),
        ("少了 bf16", lambda p: v(p) and line(v(p) / 2)),
        ("有 wraparound 的双向环", lambda p: v(p) and v(p) / (2 * W1E)),
        ("用了 AllReduce", when("rs", lambda p: 2 * line(v(p)))),
        ("流水线化的链式 AllReduce", when("rs", lambda p: v(p) / W1E)),  # 线上的链式 AllReduce：V/W_单向
        ("4 字节", lambda p: v(p) and line(2 * v(p))),
        ("忽略了 (N-1)/N", lambda p: v(p) and v(p) / W1E),
        *[(kw, lambda p, f=f: None if f(p) is None else line(f(p))) for kw, f in wrong_v],
    ]

    def book_order(p):  # 按书上 (a)(b)(c) 的顺序：这个字母在书上的那种分片，用自己的维度
        kind = problems.p8_scheme(problems.published("ch06")["cases8"], letter)
        i, j, k = p["I8"], p["J8"], p["K8"]
        return None if kind == scheme(p) else {"rs": 2 * (i / 4) * k, "ag": 2 * j * (k / 4)}.get(kind)

    nbytes.append(("按书上的顺序", book_order))
    time.append(("按书上的顺序", lambda p: None if book_order(p) is None else line(book_order(p))))
    return nbytes, time


STUDENT = {
    **{f"{c}{q}": Q2[q] for c in ("ch05-p1", "ch06-p2") for q in "abc"},
    "ch05-p2": _small("B2"),
    "ch06-p3": _small("B3"),
    "ch05-p3-uni": RATIO_UNI,
    "ch06-p6-uni": RATIO_UNI,
    "ch05-p3-bi": RATIO_BI,
    "ch06-p6-bi": RATIO_BI,
    "ch05-p3-fn": P3_FN,
    "ch05-p4": _replication("mesh4"),
    "ch06-p1": _replication("mesh1"),
    **{f"ch05-p5-{n}": _dp(n) for n in (8, 64, 512)},
    "ch05-p6-dp": [
        ("漏了 AllReduce 的因子 2", lambda p: 2 * p["params6"]),
        ("少了 bf16", lambda p: 2 * p["params6"]),
        ("ZeRO-3", lambda p: 3 * 2 * p["params6"]),
        ("fp32", lambda p: 2 * 4 * p["params6"]),
    ],
    "ch05-p6-fsdp": [
        ("少了 bf16", lambda p: 3 * p["params6"]),
        ("反向传播", lambda p: 2 * 2 * p["params6"]),
        ("fp32", lambda p: 3 * 4 * p["params6"]),
    ],
    **{f"ch05-p7-{ph}-bytes": _tp(ph)[0] for ph in ("decode", "prefill")},
    **{f"ch05-p7-{ph}-time": _tp(ph)[1] for ph in ("decode", "prefill")},
    "ch06-p4-fn": [
        ("一样的代价", lambda a: (2 * a[0] * a[2]) / (2 * a[1] * a[2])),
        ("倒过来", lambda a: (2 * a[1] * a[2]) / (2 * 2 * a[0] * a[2])),
        ("不是输入", lambda a: 2 * (2 * a[0] * a[1]) / (2 * a[1] * a[2])),
    ],
    "ch06-p5-weight-bytes-per-chip": P5_WEIGHT,
    "ch06-p5-t-math": P5_MATH,
    "ch06-p5-t-comms": P5_COMMS,
    **{f"ch06-p8{x}-bytes": _p8(x)[0] for x in "abc"},
    **{f"ch06-p8{x}-time": _p8(x)[1] for x in "abc"},
    "ch06-p9-fn": [
        ("一样的代价", lambda a: (2 * a[0] * a[2]) / (2 * a[0] * a[1])),
        ("倒过来", lambda a: (2 * a[0] * a[1]) / (2 * 2 * a[0] * a[2])),
    ],
}


def _cases():
    """(答案, 标签, 参数, 正确答案)：值类答案用三组参数，函数答案用自检的每一组公开输入"""
    for spec in answers.ANSWERS.values():
        if spec.kind == "value":
            for name, params in PARAM_SETS[spec.assignment]:
                yield spec, name, params, spec.value(params)
        else:
            for args in spec.examples:
                yield spec, repr(args), tuple(args), spec.reference(*args)


CASES = list(_cases())


def _close(a, b, tol=TOL):
    return a is not None and b is not None and b != 0 and math.isclose(a, b, rel_tol=tol)


def _hints(spec, value, right, params):
    verdict = judge.judge_value(spec, value, right, params)
    return verdict, [s.hint for s in spec.slips if s.hint in verdict.message]


def test_every_answer_has_slips_and_independent_derivations():
    assert set(STUDENT) == set(answers.ANSWERS)
    for spec in answers.ANSWERS.values():
        assert spec.slips, f"{spec.id} 没有常见失误"


def _student_params():
    for spec, label, params, right in CASES:
        for kw, fn in STUDENT[spec.id]:
            yield pytest.param(spec, params, right, kw, fn, id=f"{spec.id}[{label}]-{kw}")


@pytest.mark.parametrize("spec,params,right,kw,fn", list(_student_params()))
def test_student_slip_gets_its_hint(spec, params, right, kw, fn):
    """按学生的算法独立算出的错误值：判为错，提示里有这个失误"""
    params = spec.params(params)
    wrong = fn(params)
    if wrong is None or right == 0 or math.isclose(wrong, right, rel_tol=answers.DEAD_ZONE):
        return  # 这组参数下没有这种失误（方案不同，或错误值与答案分不开）
    verdict = judge.judge_value(spec, wrong, right, params)
    assert verdict.status == judge.WRONG and verdict.slip, f"{kw}：{wrong!r} → {verdict.message}"
    assert kw in verdict.message, f"{kw}：{wrong!r} → {verdict.message}"


def _slip_params():
    for spec, label, params, right in CASES:
        for i, slip in enumerate(spec.slips):
            if right == 0 or slip.wrong_value(right, spec.params(params)) is None:
                continue  # 这组参数下没有这种失误（答案是 0，或失误只属于另一种方案）
            yield pytest.param(spec, params, right, i, id=f"{spec.id}[{label}]-slip{i}")


@pytest.mark.parametrize("spec,params,right,i", list(_slip_params()))
def test_registered_slip_is_derived_independently(spec, params, right, i):
    """登记表里的每条失误都有一个独立推导的学生算法与它吻合（提示说的正是学生做的事）"""
    params = spec.params(params)
    slip = spec.slips[i]
    wrong = slip.wrong_value(right, params)
    derived = [(kw, fn(params)) for kw, fn in STUDENT[spec.id] if kw in slip.hint]
    assert derived, f"失误 {slip.hint!r} 没有独立推导"
    assert any(_close(w, wrong, 1e-3) for _, w in derived), (slip.hint, wrong, derived)


@pytest.mark.parametrize("spec,params,right,i", list(_slip_params()))
def test_slip_value_triggers_its_own_hint_and_every_twin_in_order(spec, params, right, i):
    params = spec.params(params)
    slip = spec.slips[i]
    wrong = slip.wrong_value(right, params)
    verdict, hints = _hints(spec, wrong, right, params)
    assert verdict.status == judge.WRONG, f"失误 {slip.hint!r} 的错误值 {wrong!r} 落在正确答案的容差之内"
    assert slip.hint in hints, f"错误值 {wrong!r} 没有触发自己的提示 {slip.hint!r}：{verdict.message}"
    stray = [s.hint for s in spec.slips if s.hint in hints and not _close(wrong, s.wrong_value(right, params))]
    assert not stray, f"错误值 {wrong!r} 触发了不相干的提示：{stray}"
    twins = [s.hint for s in spec.slips if _close(wrong, s.wrong_value(right, params))]
    assert all(t in verdict.message for t in twins), f"同一个错误值的原因没有全部列出：{twins}"
    positions = [verdict.message.index(t) for t in twins]
    assert positions == sorted(positions), "同一个错误值的几种原因要按登记表的顺序（可能性从大到小）列出"


@pytest.mark.parametrize("spec,params,right", [pytest.param(c[0], c[2], c[3], id=f"{c[0].id}[{c[1]}]") for c in CASES])
def test_right_answer_and_its_inverse(spec, params, right):
    params = spec.params(params)
    assert judge.judge_value(spec, right, right, params).status == judge.CORRECT
    if right == 0:
        return
    inverse = 1 / right
    verdict, hints = _hints(spec, inverse, right, params)
    if _close(inverse, right):
        return  # 比值为 1 附近时倒数就是答案本身
    stray = [s.hint for s in spec.slips if s.hint in hints and not _close(inverse, s.wrong_value(right, params))]
    assert not stray, f"正确答案的倒数 {inverse!r} 触发了不相干的提示：{stray}"


@pytest.mark.parametrize("aid", [a.id for a in answers.ANSWERS.values() if a.kind == "function"])
def test_function_slips_reach_the_student_through_check(aid):
    """函数答案：学生的函数犯了某个失误，自检（在第一组不对的输入上）给出这个失误的提示"""
    spec = answers.get(aid)
    for kw, fn in STUDENT[aid]:

        def student(*args, fn=fn):
            wrong = fn(tuple(args))
            return spec.reference(*args) if wrong is None else wrong

        verdict = judge.evaluate(aid, student)
        if verdict.ok:
            continue  # 在所有公开输入上都与答案分不开
        assert verdict.slip and kw in verdict.message, (kw, verdict.message)
