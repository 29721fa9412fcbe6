"""分片矩阵乘法的规划器（planner）：A[I, J] ·_J B[J, K] → C[I, K] 需要哪些集合通信、各要多久

四种情形（出处：How To Scale Your Model, sharding.md「Case 1–4」；用我们自己的话写在第 6 章）：

- Case 1：两个乘数的收缩维（contracting dim）J 都没有切分：直接本地 matmul，不需要通信；
- Case 2：恰有一个乘数的 J 被切分：先 AllGather 它，或者把另一个乘数按同样的轴本地切片（免费），
  本地 matmul 得到部分和 C{U_X}，再 AllReduce（或 ReduceScatter / 直接 AllToAll 到想要的输出）；
- Case 3：两个乘数的 J 沿同样的轴切分：本地 matmul 得到 C{U_X}，再 AllReduce 或 ReduceScatter；
- Case 4：A 与 B 的非收缩维沿同一个网格轴切分：原样不合法（每台设备只能算出对角块），
  先 AllGather 其中一个乘数。

规划方法：把“本地 matmul 之前”与“之后”各看成一张状态图——状态是当时的分片记号，
边是一次集合通信（AllGather 去掉切分轴，AllToAll 把一个轴移到另一维，AllReduce / ReduceScatter 处理未规约轴）
或一次免费的本地切片（dynamic-slice，给一个维度加上没用过的轴）。
对每个能合法做本地 matmul 的状态，用 Dijkstra 找通信最省的前后两段路径，得到一个选项（MatmulOption）。
选项按模型的总时间排序，最快的就是 chosen：默认通信与计算不重叠，总时间 T_math + T_comms；
``overlap=True`` 时假设通信完全藏在计算下面（collective matmul），总时间 max(T_math, T_comms)。
两种组合都随 T_comms 单调，所以“每个本地状态取通信最省的路径”再比总时间，得到的就是枚举范围里总时间最短的做法。
总时间相同时再比 T_comms、每设备 FLOPs。

块的次序：记号里下标的顺序就是块在网格上的顺序（K_YX 是 Y 为主、X 为次，设备 (x, y) 持有第 y·|X| + x 块）。
本地切片、ReduceScatter 与 AllToAll 把自己手里的那些块再分成几份，新轴排在最后（次要）；AllGather 或 AllToAll
拿走的若不是最后几个轴（例如从 K_YX 收集 Y），留下的不是连续的 K_X，而是每个 Y 块里的第 x 段：K 的块交错
（interleaved）了。状态里按“位”记下每个维度真实的块次序（每一位是一个网格轴，或者一段收集过、谁都持有的块），
所以之后再切一刀时知道它真正落在哪一位上。非收缩维交错无妨（数据只是换了次序，之后收集输出时按同样的次序放回，
代价不变），打印时标成“（K 交错）”；两个乘数的收缩维块次序不同就对不上，不能本地相乘；输出必须是记号所说的
连续分片。
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from shardlab import cost, hardware, names
from shardlab.sharding import (
    ShardedSpec,
    ShardingError,
    bytes_per_device,
    local_shape,
    mesh_sizes,
    parse,
    validate,
)
from shardlab.units import fmt_bytes, fmt_num, fmt_time

__all__ = ["HLO_NAMES", "CollectiveStep", "MatmulOption", "MatmulPlan", "plan_matmul"]

COLLECTIVE_KINDS = names.COLLECTIVES
DISPLAY = {kind: names.display(kind) for kind in COLLECTIVE_KINDS}
# 编译后 HLO 里的指令名（`shardlab.collectives.hlo_collectives` 的输出）
HLO_NAMES = {kind: names.hlo(kind) for kind in COLLECTIVE_KINDS}


@dataclass(frozen=True)
class CollectiveStep:
    """一次集合通信：kind 沿 axes，作用在 operand（'A'、'B' 或输出 'C'）上

    nbytes 是 V（前言“约定”一节的定义），time_s 来自 cost.estimate；before / after 是前后的分片记号。
    """

    kind: str
    axes: tuple[str, ...]
    operand: str
    nbytes: float
    time_s: float
    before: str
    after: str
    regime: str = "bandwidth-bound"

    @property
    def bytes(self) -> float:
        return self.nbytes

    @property
    def name(self) -> str:
        """AllGather_X、ReduceScatter_XY 这样的名字"""
        return (
            f"{DISPLAY[self.kind]}_{''.join(self.axes) if all(len(a) == 1 for a in self.axes) else ','.join(self.axes)}"
        )

    @property
    def hlo_name(self) -> str:
        return HLO_NAMES[self.kind]

    @property
    def notation(self) -> str:
        """``AllGather_X: A[I_X, J] → A[I, J]``"""
        return f"{self.name}: {self.before} → {self.after}"

    def __str__(self) -> str:
        regime = "，延迟受限" if self.regime == "latency-bound" else ""
        return f"{self.notation}（V = {fmt_bytes(self.nbytes)}，约 {fmt_time(self.time_s)}{regime}）"


@dataclass(frozen=True)
class MatmulOption:
    """一种做法：本地 matmul 之前的通信、本地 matmul、之后的通信

    a_local / b_local / c_local 是本地 matmul 时的分片（c_local 可能带未规约轴）；
    trace 按顺序列出每一步（集合通信、免费的本地切片 dynamic-slice、本地 matmul），供打印。
    """

    steps: tuple[CollectiveStep, ...]
    trace: tuple[str, ...]
    a_local: ShardedSpec
    b_local: ShardedSpec
    c_local: ShardedSpec
    out: ShardedSpec
    flops_per_device: int
    t_math: float
    overlap: bool = False

    @property
    def t_comms(self) -> float:
        """各次通信的时间之和（一次接一次，不互相重叠）"""
        return sum(s.time_s for s in self.steps)

    @property
    def t_serial(self) -> float:
        """不重叠时的总时间 T_math + T_comms"""
        return self.t_math + self.t_comms

    @property
    def t_overlapped(self) -> float:
        """通信与计算完全重叠（collective matmul）时的下界 max(T_math, T_comms)"""
        return max(self.t_math, self.t_comms)

    @property
    def t_total(self) -> float:
        """规划器排序用的总时间：overlap 时 max(T_math, T_comms)，否则 T_math + T_comms"""
        return self.t_overlapped if self.overlap else self.t_serial

    @property
    def bound(self) -> str:
        return "compute-bound" if self.t_math > self.t_comms else "communication-bound"

    @property
    def kinds(self) -> tuple[str, ...]:
        """按顺序的集合通信种类，如 ('all_gather', 'all_reduce')"""
        return tuple(s.kind for s in self.steps)

    @property
    def hlo_kinds(self) -> frozenset[str]:
        """XLA 编译后应出现的集合通信指令名集合，如 {'all-gather'}"""
        return frozenset(s.hlo_name for s in self.steps)

    @property
    def slices(self) -> tuple[str, ...]:
        """免费的本地切片（dynamic-slice，不通信）"""
        return tuple(t for t in self.trace if t.startswith("本地切片"))

    @property
    def label(self) -> str:
        """一行概括：``AllGather_X(A) → 本地 matmul 得 C[I, K]{U_Y} → AllReduce_Y(C)``

        写出本地 matmul 得到的分片：通信步骤相同的两种做法（比如部分和先按 I 还是按 K 切开）由它区分。
        """
        before = [f"{s.name}({s.operand})" for s in self.steps if s.operand != "C"]
        after = [f"{s.name}(C)" for s in self.steps if s.operand == "C"]
        return " → ".join([*before, f"本地 matmul 得 {self.c_local}", *after])

    def describe(self) -> str:
        combine = "max(T_math, T_comms)" if self.overlap else "T_math + T_comms"
        head = (
            f"{self.label}：T_math ≈ {fmt_time(self.t_math)}，T_comms ≈ {fmt_time(self.t_comms)}，"
            f"总 ≈ {fmt_time(self.t_total)}（{combine}），每设备 {fmt_num(self.flops_per_device)} FLOPs"
        )
        return "\n".join([head, *(f"    {t}" for t in self.trace)])


_CASE_TEXT = {
    1: "Case 1：收缩维没有切分，本地 matmul 不需要通信",
    2: "Case 2：恰有一个乘数的收缩维被切分",
    3: "Case 3：两个乘数的收缩维都被切分",
    4: "Case 4：两个乘数的非收缩维沿同一个网格轴切分，原样不合法，必须先 AllGather 其中一个",
}


@dataclass(frozen=True)
class MatmulPlan:
    """`plan_matmul` 的结果：情形、选中的做法与其他选项、FLOPs、T_math、T_comms 与瓶颈"""

    a: ShardedSpec
    b: ShardedSpec
    contract: str
    mesh: Mapping[str, int]
    chip: str
    shapes: Mapping[str, int]
    dtype: str
    case: int
    notes: tuple[str, ...]
    chosen: MatmulOption
    alternatives: tuple[MatmulOption, ...] = field(repr=False)
    overlap: bool = False

    # -- 选中做法的数字 --

    @property
    def steps(self) -> tuple[CollectiveStep, ...]:
        return self.chosen.steps

    @property
    def out(self) -> ShardedSpec:
        return self.chosen.out

    @property
    def flops_per_device(self) -> int:
        return self.chosen.flops_per_device

    @property
    def t_math(self) -> float:
        return self.chosen.t_math

    @property
    def t_comms(self) -> float:
        return self.chosen.t_comms

    @property
    def t_total(self) -> float:
        """选中做法的总时间（组合方式见 overlap）"""
        return self.chosen.t_total

    @property
    def bound(self) -> str:
        return self.chosen.bound

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.chosen.kinds

    def find(self, hlo_kinds: Sequence[str] | frozenset[str]) -> MatmulOption | None:
        """第一个（总时间最短的）集合通信指令集合等于 hlo_kinds 的选项；用来核对 XLA 选的做法"""
        wanted = frozenset(hlo_kinds)
        return next((o for o in self.alternatives if o.hlo_kinds == wanted), None)

    def with_kinds(self, *kinds: str) -> MatmulOption | None:
        """第一个（总时间最短的）按顺序恰好做这几次集合通信的选项，如 ``with_kinds("all_gather")``"""
        return next((o for o in self.alternatives if o.kinds == kinds), None)

    def explain(self, n_alternatives: int = 3) -> str:
        """一段可以直接印在书里的中文说明"""
        total = math.prod(self.mesh.values())
        head = (
            f"{self.a} ·_{self.contract} {self.b} → {self.out}，网格 {dict(self.mesh)}（{total} 台设备），{self.chip}"
        )
        rule = "max(T_math, T_comms)，通信与计算重叠" if self.overlap else "T_math + T_comms，通信与计算不重叠"
        lines = [
            head,
            _CASE_TEXT[self.case],
            *self.notes,
            f"选中的做法（总时间最短，按 {rule}）：",
            "  " + self.chosen.describe(),
        ]
        bound = "受算力限制（compute-bound）" if self.bound == "compute-bound" else "受通信限制（communication-bound）"
        lines.append(
            f"  每设备 FLOPs = {fmt_num(self.flops_per_device)}，T_math ≈ {fmt_time(self.t_math)}，"
            f"T_comms ≈ {fmt_time(self.t_comms)}：{bound}"
        )
        others = [o for o in self.alternatives if o is not self.chosen][:n_alternatives]
        if others:
            lines.append("其他做法：")
            lines += ["  " + o.describe().replace("\n", "\n  ") for o in others]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


# ---- 状态图上的一步 ----


@dataclass(frozen=True)
class _Ctx:
    sizes: tuple[tuple[str, int], ...]
    shapes: tuple[tuple[str, int], ...]
    dtype: str
    chip: object
    slice_shape: tuple[int, ...] | None
    hop_latency: float | None

    @functools.cached_property
    def mesh(self) -> dict[str, int]:
        return dict(self.sizes)

    def nbytes(self, spec: ShardedSpec) -> int:
        return bytes_per_device(spec, dict(self.shapes), self.mesh, self.dtype)

    @functools.lru_cache(maxsize=65536)  # noqa: B019 -- _Ctx 不可变，缓存随它的生命周期
    def fits(self, spec: ShardedSpec) -> bool:
        try:
            validate(spec, self.mesh, dict(self.shapes))
        except ShardingError:
            return False
        return True

    def step(self, kind: str, axes: tuple[str, ...], operand: str, before: ShardedSpec, after: ShardedSpec):
        if kind == "all_gather":
            v = self.nbytes(after)  # 收集之后的大小
        elif kind == "all_to_all":
            v = self.nbytes(before) * math.prod(self.mesh[a] for a in axes)  # 参与设备上的整个数组
        else:
            v = self.nbytes(before)  # 未规约缓冲区
        est = _estimate(kind, v, axes, self)
        return CollectiveStep(kind, axes, operand, v, est.time_s, str(before), str(after), est.regime)


@functools.lru_cache(maxsize=4096)
def _estimate(kind: str, v: float, axes: tuple[str, ...], ctx: _Ctx) -> cost.Estimate:
    return cost.estimate(
        kind, v, axes, ctx.chip, mesh=ctx.mesh, slice_shape=ctx.slice_shape, hop_latency=ctx.hop_latency
    )


def _subsets(axes: tuple[str, ...]):
    for r in range(1, len(axes) + 1):
        yield from itertools.combinations(axes, r)


def _moves(spec: ShardedSpec, ctx: _Ctx, slice_dims: Sequence[str], reduce: str | None):
    """从 spec 出发的一步：(新记号, 种类, 轴)；种类 'slice' 表示免费的本地切片

    reduce：'all_reduce' 或 'reduce_scatter' 表示怎样处理未规约轴，None 表示不处理。
    """
    free = [a for a in ctx.mesh if a not in spec.axes]
    for dim, axes in spec.dims:
        for gone in _subsets(axes):
            yield spec.with_axes(dim, tuple(a for a in axes if a not in gone)), "all_gather", gone
        for a in axes:
            for other, other_axes in spec.dims:
                if other != dim:
                    moved = spec.with_axes(dim, tuple(x for x in axes if x != a)).with_axes(other, (*other_axes, a))
                    yield moved, "all_to_all", (a,)
        if dim in slice_dims:
            for a in free:
                yield spec.with_axes(dim, (*axes, a)), "slice", (a,)
    if spec.unreduced and reduce == "all_reduce":
        for gone in _subsets(spec.unreduced):
            yield spec.with_unreduced(tuple(a for a in spec.unreduced if a not in gone)), "all_reduce", gone
    if spec.unreduced and reduce == "reduce_scatter":
        for gone in _subsets(spec.unreduced):
            rest = spec.with_unreduced(tuple(a for a in spec.unreduced if a not in gone))
            for dim, axes in spec.dims:
                yield rest.with_axes(dim, (*axes, *gone)), "reduce_scatter", gone


@functools.lru_cache(maxsize=65536)
def _edges(spec: ShardedSpec, ctx: _Ctx, slice_dims: tuple[str, ...], reduce: str | None):
    """从 spec 出发的合法一步及其时间：[(新记号, 种类, 轴, 秒)]（维度不能整除的记号跳过）"""
    out = []
    for new, kind, axes in _moves(spec, ctx, slice_dims, reduce):
        if ctx.fits(new):
            out.append((new, kind, axes, 0.0 if kind == "slice" else ctx.step(kind, axes, "", spec, new).time_s))
    return tuple(out)


Layout = tuple[tuple[str, tuple[str | int, ...]], ...]  # 交错维度真实的块次序：((维度, 位…), …)


def _canon(digits: list[str | int]) -> tuple[str | int, ...]:
    """合并相邻的“谁都持有”的位（整数，记块数），去掉末尾的：末尾收集过的位与不切一样"""
    out: list[str | int] = []
    for d in digits:
        if isinstance(d, int) and out and isinstance(out[-1], int):
            out[-1] *= d
        else:
            out.append(d)
    while out and isinstance(out[-1], int):
        out.pop()
    return tuple(out)


def _relayout(spec: ShardedSpec, new: ShardedSpec, layout: Layout, sizes: Mapping[str, int]):
    """一步之后真实的分片与交错维度的块次序：(真实的记号, 交错维度的块次序)；表示不了时返回 None

    拿走一个轴：它那一位变成“谁都持有”；加一个轴：它切的是手里那些块里最靠前的“谁都持有”的位，没有时才排到最后。
    """
    old_layout = dict(layout)
    real, out = new, []
    for dim in spec.dim_names:
        before, after = spec.axes_of(dim), new.axes_of(dim)
        digits: list[str | int] = list(old_layout.get(dim, before))
        for a in before:
            if a not in after:
                digits[digits.index(a)] = sizes[a]
        for a in after:
            if a in before:
                continue
            digits = list(_canon(digits))
            free = next((n for n, d in enumerate(digits) if isinstance(d, int)), None)
            if free is None:
                digits.append(a)
            elif digits[free] % sizes[a] == 0:
                rest = digits[free] // sizes[a]
                digits[free : free + 1] = [a] if rest == 1 else [a, rest]
            else:
                return None
        digits = list(_canon(digits))
        bound = tuple(d for d in digits if isinstance(d, str))
        if bound != after:
            real = real.with_axes(dim, bound)
        if tuple(digits) != bound:
            out.append((dim, tuple(digits)))
    return real, tuple(out)


def _shown(spec: ShardedSpec, layout: Layout) -> str:
    """``B[J, K_X]（K 交错）``：块交错的维度写在记号后面"""
    dims = [d for d, _ in layout]
    return f"{spec}（{'、'.join(dims)} 交错）" if dims else str(spec)


def _dijkstra(
    starts: Sequence[ShardedSpec],
    ctx: _Ctx,
    slice_dims,
    reduce,
    roles: Sequence[str],
    limit: int = 2,
    layouts: Sequence[Layout] | None = None,
):
    """多个数组联合状态 (spec, ...) 上的最短路；代价 (T_comms, 通信次数, 切片次数)，至多 limit 次通信

    免费切片过的轴不能再被同一个数组 AllGather（否则“切片后多轴 AllGather”会冒充更快的单轴 AllGather）。
    状态里记着每个数组交错维度的块次序（见模块说明），layouts 给出起点的。
    返回 {((spec, ...), (块次序, ...)): (代价, 路径)}，路径是 (角色, 种类, 轴, 之前, 之后, 之前的块次序, 之后的块次序)。
    """
    start = (tuple(starts), frozenset(), tuple(layouts) if layouts is not None else tuple(() for _ in starts))
    best = {start: ((0.0, 0, 0), ())}
    heap = [((0.0, 0, 0), 0, start)]
    counter = itertools.count(1)
    while heap:
        key, _, state = heapq.heappop(heap)
        if best[state][0] < key:
            continue
        (specs, sliced, lays), path = state, best[state][1]
        for n, spec in enumerate(specs):
            for new, kind, axes, t in _edges(spec, ctx, slice_dims[n], reduce):
                if kind == "slice":
                    new_key, new_sliced = (key[0], key[1], key[2] + 1), sliced | {(n, axes[0])}
                elif key[1] < limit and not (kind == "all_gather" and any((n, x) in sliced for x in axes)):
                    new_key, new_sliced = (key[0] + t, key[1] + 1, key[2]), sliced
                else:
                    continue
                moved = _relayout(spec, new, lays[n], ctx.mesh)
                if moved is None:
                    continue
                real, lay = moved
                nxt = (specs[:n] + (real,) + specs[n + 1 :], new_sliced, lays[:n] + (lay,) + lays[n + 1 :])
                if nxt not in best or new_key < best[nxt][0]:
                    best[nxt] = (new_key, (*path, (roles[n], kind, axes, spec, real, lays[n], lay)))
                    heapq.heappush(heap, (new_key, next(counter), nxt))
    result = {}
    for (specs, _, lays), (key, path) in best.items():
        if (specs, lays) not in result or key < result[(specs, lays)][0]:
            result[(specs, lays)] = (key, path)
    return result


# ---- 入口 ----


def _classify(a: ShardedSpec, b: ShardedSpec, i: str, j: str, k: str) -> tuple[int, tuple[str, ...]]:
    a_i, a_j, b_j, b_k = a.axes_of(i), a.axes_of(j), b.axes_of(j), b.axes_of(k)
    notes = []
    clash = [x for x in a_i if x in b_k]
    if a_j and b_j and a_j != b_j:
        notes.append(f"两个乘数的收缩维切分轴不同（{j}_{''.join(a_j)} 与 {j}_{''.join(b_j)}），要先对齐")
    cross = [x for x in a_j if x in b_k] + [x for x in b_j if x in a_i]
    if cross:
        notes.append(f"轴 {', '.join(cross)} 在一个乘数里切收缩维、在另一个里切非收缩维：原样不能本地 matmul")
    if clash:
        if a_j or b_j:
            notes.append("收缩维也被切分：修好冲突之后还要处理部分和（同 Case 2 / 3）")
        return 4, tuple(notes)
    if a_j and b_j:
        return 3, tuple(notes)
    return (2 if a_j or b_j else 1), tuple(notes)


def plan_matmul(
    a: ShardedSpec | str,
    b: ShardedSpec | str,
    contract: str,
    mesh,
    chip: str | hardware.Chip = "cpu",
    *,
    shapes: Mapping[str, int],
    dtype: str = "bf16",
    out: ShardedSpec | str | None = None,
    slice_shape: Sequence[int] | None = None,
    hop_latency: float | None = None,
    overlap: bool = False,
) -> MatmulPlan:
    """规划 a ·_contract b：``plan_matmul("A[I_X, J]", "B[J, K_Y]", "J", {'X': 2, 'Y': 4}, "v5e", shapes=...)``

    a、b 是二维的分片记号（字符串或 ShardedSpec），contract 是收缩维的名字；
    shapes 给出每个维度名的大小（{'I': ..., 'J': ..., 'K': ...}）；mesh 是 {'X': 2, 'Y': 4} 或 jax Mesh；
    out 是想要的输出分片（如 "C[I_X, K]" 或 "C[I, K]{U_X}"），省略时输出不带未规约轴、
    只用 AllReduce 求和、不另加切分（Case 4 里两种修法的输出不同，取总时间最短的）。
    slice_shape、hop_latency 原样交给 cost.estimate（TPU 需要 slice_shape 或与 torus 维数相同的 mesh）。
    选项按总时间排序：overlap=False（默认）时 T_math + T_comms，overlap=True 时 max(T_math, T_comms)。
    dtype 决定通信的字节数；T_math 在 int8 时用 ops_int8，其余（包括 fp32）都用 bf16 峰值，对 fp32 偏乐观。
    """
    a, b = parse(a), parse(b)
    sizes = mesh_sizes(mesh)
    shapes = {str(d): int(n) for d, n in shapes.items()}
    for spec in (a, b):
        if spec.ndim != 2 or spec.unreduced:
            raise ShardingError(f"{spec}：规划器只处理二维、不带未规约轴的乘数")
        validate(spec, sizes, shapes)
    if contract not in a.dim_names or contract not in b.dim_names:
        raise ShardingError(f"收缩维 {contract!r} 必须同时出现在 {a} 与 {b} 里")
    i = next(d for d in a.dim_names if d != contract) if len(set(a.dim_names)) == 2 else None
    k = next(d for d in b.dim_names if d != contract) if len(set(b.dim_names)) == 2 else None
    if i is None or k is None or i == k:
        raise ShardingError(f"{a} ·_{contract} {b}：两个非收缩维必须各不相同，也不同于收缩维")
    targets = None
    if out is not None:
        wanted = parse(out)
        if wanted.dim_names != (i, k):
            raise ShardingError(f"想要的输出 {wanted} 的维度应是 [{i}, {k}]（A 的非收缩维在前）")
        targets = (validate(wanted, sizes, shapes),)
    ctx = _Ctx(
        tuple(sizes.items()),
        tuple(shapes.items()),
        dtype,
        hardware.get_chip(chip),
        None if slice_shape is None else tuple(slice_shape),
        hop_latency,
    )
    case, notes = _classify(a, b, i, k=k, j=contract)
    if targets is None:
        # 不另加切分、不留未规约轴；Case 4 的冲突轴从 I 或从 K 上去掉，两种输出都算
        a_i, b_k = a.axes_of(i), b.axes_of(k)
        targets = tuple(
            dict.fromkeys(
                ShardedSpec(
                    "C", ((i, tuple(x for x in a_i if x not in drop_i)), (k, tuple(x for x in b_k if x not in drop_k)))
                )
                for drop_i, drop_k in ((set(a_i) & set(b_k), ()), ((), set(a_i) & set(b_k)))
            )
        )
    flops_rate = ctx.chip.ops_int8 if dtype == "int8" else ctx.chip.flops_bf16
    before = _dijkstra((a, b), ctx, ((i, contract), (contract, k)), None, ("A", "B"))
    options = []
    for ((a_loc, b_loc), (a_lay, b_lay)), (_, path_in) in before.items():
        if a_loc.axes_of(contract) != b_loc.axes_of(contract) or set(a_loc.axes_of(i)) & set(b_loc.axes_of(k)):
            continue  # 这个状态不能合法地本地 matmul
        if dict(a_lay).get(contract) != dict(b_lay).get(contract):
            continue  # 两个乘数收缩维的块次序不同：每个设备上的两段对不上
        c_lay = tuple((d, dict(lay)[d]) for d, lay in ((i, a_lay), (k, b_lay)) if d in dict(lay))
        local = dict(zip(a_loc.dim_names, local_shape(a_loc, shapes, sizes)))
        local.update(zip(b_loc.dim_names, local_shape(b_loc, shapes, sizes)))
        flops = 2 * local[i] * local[contract] * local[k]
        for target in targets:
            c_loc = ShardedSpec(target.name, ((i, a_loc.axes_of(i)), (k, b_loc.axes_of(k))), a_loc.axes_of(contract))
            # 部分和的两种处理：只用 AllReduce，或只用 ReduceScatter（之后可再 AllGather / AllToAll）
            for mode in ("all_reduce", "reduce_scatter") if c_loc.unreduced else (None,):
                after = _dijkstra((c_loc,), ctx, ((i, k),), mode, ("C",), layouts=(c_lay,))
                goal = ((target,), ((),))  # 输出要的是记号所说的连续分片，不能交错
                if goal in after:
                    option = _option(
                        path_in + after[goal][1], (a_loc, b_loc, c_loc), flops, flops_rate, ctx, overlap, c_lay
                    )
                    if option is not None:
                        options.append(option)
    options = _prune(options)
    if not options:
        raise ShardingError(f"{a} ·_{contract} {b}：在网格 {sizes} 上得不到输出 {targets[0]}")
    return MatmulPlan(
        a, b, contract, sizes, ctx.chip.name, shapes, dtype, case, notes, options[0], tuple(options), overlap
    )  # fmt: skip


def _option(
    path, local: tuple[ShardedSpec, ...], flops, flops_rate, ctx: _Ctx, overlap: bool, c_layout: Layout = ()
) -> MatmulOption | None:
    """把路径变成 MatmulOption；先免费切片一个乘数、后又把它的同一个轴 AllGather 回来的绕路做法返回 None

    记号按块的实际次序打印：交错的维度标成“（K 交错）”（见模块说明）。
    """
    a_loc, b_loc, c_loc = local
    steps, trace, sliced = [], [], set()
    last = {"A": (), "B": ()}
    for role, *_, lay in path:  # 本地 matmul 时两个乘数的块次序
        if role != "C":
            last[role] = lay
    matmul = f"本地 matmul：{_shown(a_loc, last['A'])} · {_shown(b_loc, last['B'])} → {_shown(c_loc, c_layout)}"
    for role, kind, axes, before, after, lay_before, lay_after in path:
        if role == "C" and matmul not in trace:
            trace.append(matmul)
        shown_before, shown_after = _shown(before, lay_before), _shown(after, lay_after)
        if kind == "slice":
            trace.append(f"本地切片（dynamic-slice，无通信）：{shown_before} → {shown_after}")
            # 切片后再 AllGather 同一个乘数的同一个轴是纯绕路；输出 C 则不同：切开非收缩维把计算分摊到各设备，
            # 之后 AllGather 输出是一种正当的做法（计入 T_math 后它可能最快），所以不排除
            sliced.add((role, axes[0]))
        else:
            if kind == "all_gather" and any((role, x) in sliced for x in axes):
                return None
            step = ctx.step(kind, axes, role, before, after)
            steps.append(replace(step, before=shown_before, after=shown_after))
            trace.append(str(steps[-1]))
    if matmul not in trace:
        trace.append(matmul)
    return MatmulOption(
        tuple(steps),
        tuple(trace),
        a_loc,
        b_loc,
        c_loc,
        _path_out(path, c_loc),
        flops,
        cost.t_math(flops, flops_rate),
        overlap,
    )


def _path_out(path, c_loc: ShardedSpec) -> ShardedSpec:
    """路径最后一步之后 C 的分片（没有输出端的步骤时就是本地 matmul 的结果）"""
    outs = [step[4] for step in path if step[0] == "C"]
    return outs[-1] if outs else c_loc


def _prune(options: list[MatmulOption]) -> list[MatmulOption]:
    """按 (总时间, T_comms, 每设备 FLOPs, 通信次数, 切片次数) 排序并去掉重复

    标签相同的做法（同样的通信、同样的本地乘积，只是免费切片的次序不同）只留最快的一种，列出的选项标签各不相同。
    """
    seen, kept = set(), []
    for o in sorted(options, key=lambda o: (o.t_total, o.t_comms, o.flops_per_device, len(o.steps), len(o.slices))):
        if o.label not in seen:
            seen.add(o.label)
            kept.append(o)
    return kept
