"""分片记号（sharding notation）：解析、打印、与 PartitionSpec 互转，以及在网格上的大小计算

记号（出处：How To Scale Your Model, sharding.md；全书统一）：

- ``A[I_X, J_Y]``：维度 I 沿网格轴（mesh axis）X 切分，J 沿 Y 切分；
- ``A[I_XY, J]``：I 先沿 X 再沿 Y 切分（顺序有意义，对应 ``P(('X', 'Y'), None)``）；
  紧凑写法要求每个网格轴是一个大写字母，也可写 ``I_{XY}`` 或显式的 ``I_{X,Y}``，
  多字母的轴名只能用逗号形式 ``I_{data,model}``；
- ``C[I, K]{U_X}``：C 沿 X 未规约（unreduced）——每台设备持有部分和（partial sum），还要沿 X 求和。

合法性规则：一个网格轴在同一个数组里至多出现一次——不能切分两个维度，也不能既切分某个维度又是未规约轴
（未规约轴上各设备持有的是同一块的不同部分和，同一轴再用来切分就无从对应）。

与网格有关的函数接受 ``{'X': 2, 'Y': 4}`` 这样的映射，也接受 jax 的 Mesh（读 ``mesh.shape``）；
形状（shape）可以是按维度顺序的元组，也可以是 ``{'I': 128, 'J': 2048}`` 这样按维度名的映射。
解析与打印不需要 JAX；只有 PartitionSpec 互转在调用时导入 jax。
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from shardlab.units import BYTES_PER_ELEMENT, bytes_of

__all__ = [
    "ShardedSpec",
    "ShardingError",
    "as_spec",
    "bytes_per_device",
    "from_partition_spec",
    "local_shape",
    "mesh_sizes",
    "num_shards",
    "parse",
    "replication_factor",
    "shape_of",
    "partition_entries",
    "total_bytes",
    "validate",
]


class ShardingError(ValueError):
    """非法的分片记号或分片（轴重复、未知轴、不能整除等）"""


# ---- 数据结构 ----

_NAME = r"[^\W\d][\w']*"  # 数组名：字母开头，可含下划线与撇号（W_in、A'）
_DIM = r"[^\W\d_][^\W_]*"  # 维度名：字母开头，不含下划线（下划线用来接分片轴）
_AXIS = re.compile(r"[^\W\d]\w*")  # 网格轴名
_LETTERS = re.compile(r"[A-Z]+")


def _check_axes(axes, what: str) -> tuple[str, ...]:
    if isinstance(axes, str):
        axes = (axes,)
    axes = tuple(axes)
    for a in axes:
        if not isinstance(a, str) or not _AXIS.fullmatch(a):
            raise ShardingError(f"{what}的网格轴名（mesh axis）{a!r} 不合法：应是字母开头的标识符，如 'X'、'data'")
        if len(a) > 1 and _LETTERS.fullmatch(a):
            # 'XY' 会被读成 X、Y 两个轴
            raise ShardingError(
                f"{what}的网格轴名 {a!r} 是多个大写字母，会与紧凑写法 XY（= X 再 Y）混淆：请换个名字，如 'data'"
            )
    return axes


@dataclass(frozen=True)
class ShardedSpec:
    """一个分片数组的记号，例如 ``A[I_XY, J]`` 或 ``C[I, K]{U_X}``

    name: 数组名（'A'）；dims: ((维度名, (网格轴, ...)), ...)，按维度顺序；
    unreduced: 未规约轴（按书写顺序）。构造时检查同一网格轴至多出现一次。
    """

    name: str
    dims: tuple[tuple[str, tuple[str, ...]], ...]
    unreduced: tuple[str, ...] = field(default=())

    def __post_init__(self):
        if not isinstance(self.name, str) or not re.fullmatch(_NAME, self.name):
            raise ShardingError(f"数组名 {self.name!r} 不合法：应是字母开头的标识符，如 'A'、'W_in'")
        dims = []
        for item in self.dims:
            dim, axes = (item, ()) if isinstance(item, str) else item
            if not isinstance(dim, str) or not re.fullmatch(_DIM, dim):
                raise ShardingError(f"维度名 {dim!r} 不合法：应是字母开头、不含下划线的名字，如 'I'、'D'、'Seq'")
            dims.append((dim, _check_axes(axes, f"维度 {dim} ")))
        object.__setattr__(self, "dims", tuple(dims))
        object.__setattr__(self, "unreduced", _check_axes(self.unreduced, "未规约（unreduced）"))
        seen: dict[str, str] = {}
        for where, axes in [*((f"维度 {d}", axes) for d, axes in self.dims), ("未规约轴 U", self.unreduced)]:
            for a in axes:
                if a in seen:
                    raise ShardingError(
                        f"{self.name}：网格轴（mesh axis）{a!r} 用了两次（{seen[a]} 与 {where}）。"
                        "一个网格轴在同一个数组里至多出现一次：它既不能切分两个维度，也不能既切分维度又是未规约轴"
                    )
                seen[a] = where

    # -- 查询 --

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.dims)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def sharded_axes(self) -> tuple[str, ...]:
        """切分维度用到的网格轴，按维度顺序"""
        return tuple(a for _, axes in self.dims for a in axes)

    @property
    def axes(self) -> frozenset[str]:
        """用到的全部网格轴（含未规约轴）"""
        return frozenset(self.sharded_axes) | frozenset(self.unreduced)

    def axes_of(self, dim: str) -> tuple[str, ...]:
        """维度 dim 的切分轴"""
        for d, axes in self.dims:
            if d == dim:
                return axes
        raise ShardingError(f"{self.name} 没有维度 {dim!r}：它的维度是 {', '.join(self.dim_names) or '（无）'}")

    def with_axes(self, dim: str, axes: Sequence[str]) -> ShardedSpec:
        """把维度 dim 的切分轴换成 axes，其余不变"""
        self.axes_of(dim)
        return ShardedSpec(self.name, tuple((d, tuple(axes) if d == dim else a) for d, a in self.dims), self.unreduced)

    def with_unreduced(self, axes: Sequence[str]) -> ShardedSpec:
        return ShardedSpec(self.name, self.dims, tuple(axes))

    def renamed(self, name: str) -> ShardedSpec:
        return ShardedSpec(name, self.dims, self.unreduced)

    # -- 打印 --

    def __str__(self) -> str:
        body = ", ".join(d + (f"_{_sub(axes)}" if axes else "") for d, axes in self.dims)
        tail = f"{{U_{_sub(self.unreduced)}}}" if self.unreduced else ""
        return f"{self.name}[{body}]{tail}"

    def latex(self) -> str:
        r"""书中公式用的 LaTeX：``A[I_{X}, J_{Y}]``、``C[I, K]\{U_{X}\}``（多字母轴名用 \text）"""
        body = ", ".join(d + (f"_{{{_latex_sub(axes)}}}" if axes else "") for d, axes in self.dims)
        tail = f"\\{{U_{{{_latex_sub(self.unreduced)}}}\\}}" if self.unreduced else ""
        return f"{self.name}[{body}]{tail}"


def _compact(axes: Sequence[str]) -> bool:
    return all(len(a) == 1 and "A" <= a <= "Z" for a in axes)


def _sub(axes: Sequence[str]) -> str:
    """下标：单个大写字母的轴写成紧凑形式 XY，否则 {data,model}"""
    return "".join(axes) if _compact(axes) else "{" + ",".join(axes) + "}"


def _latex_sub(axes: Sequence[str]) -> str:
    if _compact(axes):
        return "".join(axes)
    return ",".join(a if len(a) == 1 else f"\\text{{{a}}}" for a in axes)


# ---- 解析 ----

_SUB = r"(?:\{[^{}]*\}|[A-Za-z0-9]+)"
_SPEC = re.compile(rf"\s*({_NAME})\s*\[(.*)\]\s*(?:\{{\s*U\s*_\s*({_SUB})\s*\}})?\s*", re.S)
_DIM_ITEM = re.compile(rf"\s*({_DIM})\s*(?:_\s*({_SUB}))?\s*")


def _parse_sub(text: str, where: str, src: str) -> tuple[str, ...]:
    """下标文本 → 轴名元组：XY → (X, Y)；{XY} → (X, Y)；{X,Y} 或 {data,model} → 逐个"""
    braced = text.startswith("{")
    body = text[1:-1].strip() if braced else text
    if braced and "," in body:
        axes = tuple(a.strip() for a in body.split(","))
    elif _LETTERS.fullmatch(body):
        axes = tuple(body)
    elif braced and _AXIS.fullmatch(body):
        axes = (body,)
    else:
        hint = "紧凑写法只接受大写字母（每个字母一个网格轴），多字母轴名请写成 {data,model}"
        raise ShardingError(f"无法解析 {src!r} 中{where}的下标 {text!r}：{hint}")
    if not all(axes):
        raise ShardingError(f"无法解析 {src!r} 中{where}的下标 {text!r}：有空的轴名")
    return axes


def parse(text: str) -> ShardedSpec:
    """解析记号：``parse("A[I_X, J_Y]")``、``parse("A[I_{X,Y}, J]")``、``parse("C[I, K]{U_X}")``

    非法的记号（语法错、网格轴重复）抛出 ShardingError。
    """
    if isinstance(text, ShardedSpec):
        return text
    if not isinstance(text, str):
        raise ShardingError(f"分片记号应是字符串，收到 {type(text).__name__}")
    m = _SPEC.fullmatch(text)
    if not m:
        raise ShardingError(
            f"无法解析分片记号（sharding notation）{text!r}：应形如 A[I_X, J_Y]、A[I_XY, J] 或 C[I, K]{{U_X}}"
        )
    name, body, unreduced = m.groups()
    dims = []
    if body.strip():
        for item in _split_top_level(body):
            dm = _DIM_ITEM.fullmatch(item)
            if not dm:
                raise ShardingError(f"无法解析 {text!r} 中的维度 {item.strip()!r}：应形如 I、I_X、I_XY 或 I_{{X,Y}}")
            dim, sub = dm.groups()
            dims.append((dim, _parse_sub(sub, f"维度 {dim} ", text) if sub else ()))
    axes = _parse_sub(unreduced, "未规约（unreduced）", text) if unreduced else ()
    return ShardedSpec(name, tuple(dims), axes)


def _split_top_level(body: str) -> list[str]:
    """按不在花括号里的逗号切分：维度之间的逗号与 {X,Y} 里的逗号要区分开"""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def as_spec(spec: ShardedSpec | str) -> ShardedSpec:
    """记号字符串或 ShardedSpec → ShardedSpec"""
    return parse(spec)


# ---- 与 PartitionSpec 互转 ----


def partition_entries(spec: ShardedSpec | str) -> tuple:
    """``A[I_X, J]`` → ``('X', None)``；``A[I_XY, J]`` → ``(('X', 'Y'), None)``：PartitionSpec 的各项

    `shardlab.runtime.to_partition_spec` 用它构造 jax 的 PartitionSpec（本模块不导入 JAX）。
    PartitionSpec 没有未规约（unreduced）的写法：带 {U_...} 的记号抛出 ShardingError。
    """
    spec = parse(spec)
    if spec.unreduced:
        raise ShardingError(
            f"{spec}：PartitionSpec 不能表示未规约（unreduced）的部分和；先 AllReduce 或 ReduceScatter 再转换"
        )
    return tuple(None if not axes else axes[0] if len(axes) == 1 else axes for _, axes in spec.dims)


def from_partition_spec(pspec, dim_names: Sequence[str] | None = None, name: str = "A") -> ShardedSpec:
    """``P('X', None)`` → ``A[I_X, J]``；dim_names 省略时依次取 I, J, K, L, …

    dim_names 比 pspec 长时，多出的维度不切分（与 jax 的约定一致：P('X') 用于二维数组即 P('X', None)）。
    """
    entries = list(pspec)
    if dim_names is None:
        dim_names = tuple("IJKLMNOPQRST"[: len(entries)]) if len(entries) <= 12 else None
        if dim_names is None:
            raise ShardingError("PartitionSpec 超过 12 维：请给出 dim_names")
    dim_names = tuple(dim_names)
    if len(entries) > len(dim_names):
        raise ShardingError(f"{pspec} 有 {len(entries)} 项，多于维度名 {dim_names}")
    entries += [None] * (len(dim_names) - len(entries))
    dims = []
    for dim, entry in zip(dim_names, entries):
        if entry is None:
            axes: tuple[str, ...] = ()
        elif isinstance(entry, str):
            axes = (entry,)
        elif isinstance(entry, (tuple, list)):
            axes = tuple(entry)
        else:
            raise ShardingError(f"{pspec} 的第 {dim} 项 {entry!r} 不是 None、轴名或轴名元组")
        dims.append((dim, axes))
    return ShardedSpec(name, tuple(dims))


# ---- 与网格有关的检查与大小 ----


def mesh_sizes(mesh) -> dict[str, int]:
    """{'X': 2, 'Y': 4} 或 jax Mesh → 轴名到大小的 dict（保持网格的轴顺序）"""
    raw = mesh.shape if hasattr(mesh, "axis_names") else mesh
    if not isinstance(raw, Mapping):
        raise ShardingError(f"网格（mesh）应是 {{'X': 2, 'Y': 4}} 这样的映射或 jax Mesh，收到 {mesh!r}")
    sizes = {}
    for axis, n in raw.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ShardingError(f"网格轴 {axis!r} 的大小必须是正整数，收到 {n!r}")
        sizes[str(axis)] = int(n)
    return sizes


def shape_of(spec: ShardedSpec | str, shape: Sequence[int] | Mapping[str, int]) -> tuple[int, ...]:
    """形状按维度顺序排成元组；shape 是映射时按维度名取"""
    spec = parse(spec)
    if isinstance(shape, Mapping):
        missing = [d for d in spec.dim_names if d not in shape]
        if missing:
            raise ShardingError(f"{spec}：形状映射里没有维度 {', '.join(missing)} 的大小")
        dims = tuple(shape[d] for d in spec.dim_names)
    else:
        dims = tuple(shape)
        if len(dims) != spec.ndim:
            raise ShardingError(f"{spec} 有 {spec.ndim} 个维度，形状 {dims} 有 {len(dims)} 个")
    for d, n in zip(spec.dim_names, dims):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ShardingError(f"{spec}：维度 {d} 的大小必须是非负整数，收到 {n!r}")
    return dims


def validate(spec: ShardedSpec | str, mesh, shape: Sequence[int] | Mapping[str, int] | None = None) -> ShardedSpec:
    """检查 spec 在网格上是否合法，返回解析后的 ShardedSpec

    未知的网格轴（unknown mesh axis）、维度大小不能被切分份数整除（not divisible）都抛出 ShardingError；
    轴重复在解析时已经检查。
    """
    spec = parse(spec)
    sizes = mesh_sizes(mesh)
    unknown = [a for a in (*spec.sharded_axes, *spec.unreduced) if a not in sizes]
    if unknown:
        raise ShardingError(
            f"{spec}：未知的网格轴（unknown mesh axis）{', '.join(map(repr, unknown))}；网格的轴是 {sizes}"
        )
    if shape is not None:
        for (dim, axes), n in zip(spec.dims, shape_of(spec, shape)):
            parts = math.prod(sizes[a] for a in axes)
            if n % parts:
                raise ShardingError(
                    f"{spec}：维度 {dim} = {n} 不能被 {'·'.join(axes)} 的 {parts} 份整除（not divisible），"
                    "每台设备必须分到同样大小的块"
                )
    return spec


def num_shards(spec: ShardedSpec | str, mesh) -> int:
    """数组被切成几块：切分维度所用网格轴大小之积"""
    spec = validate(spec, mesh)
    sizes = mesh_sizes(mesh)
    return math.prod(sizes[a] for a in spec.sharded_axes)


def local_shape(spec: ShardedSpec | str, shape: Sequence[int] | Mapping[str, int], mesh) -> tuple[int, ...]:
    """每台设备持有的块的形状：A[I_XY, J]、int8[128, 2048]、{X:2, Y:8, Z:2} → (8, 2048)"""
    spec = validate(spec, mesh, shape)
    sizes = mesh_sizes(mesh)
    return tuple(n // math.prod(sizes[a] for a in axes) for (_, axes), n in zip(spec.dims, shape_of(spec, shape)))


def bytes_per_device(spec: ShardedSpec | str, shape: Sequence[int] | Mapping[str, int], mesh, dtype="bf16") -> int:
    """每台设备上这个数组占的字节数（bytes）"""
    return bytes_of(local_shape(spec, shape, mesh), _dtype_name(dtype))


def total_bytes(spec: ShardedSpec | str, shape: Sequence[int] | Mapping[str, int], mesh, dtype="bf16") -> int:
    """全部设备加起来占的字节数 = 每设备字节数 × 设备数 = 单份大小 × 复制因子"""
    return bytes_per_device(spec, shape, mesh, dtype) * math.prod(mesh_sizes(mesh).values())


def replication_factor(spec: ShardedSpec | str, mesh) -> int:
    """复制因子（replication factor）：没有用来切分维度的网格轴的大小之积

    未规约轴也算在内：那些设备持有同样形状的块（部分和），总字节数同样按它翻倍。
    """
    spec = validate(spec, mesh)
    return math.prod(n for a, n in mesh_sizes(mesh).items() if a not in spec.sharded_axes)


# numpy / jax / ml_dtypes 的类型名 → 每元素字节数（与 np.dtype(x).itemsize 相同；核心不导入 numpy）
_ITEMSIZE = {
    **dict.fromkeys(("bool", "bool_", "int8", "uint8", "byte", "ubyte", "b", "B", "?"), 1),
    **dict.fromkeys(
        ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3"),
        1,
    ),
    **dict.fromkeys(("float8_e3m4", "float8_e8m0fnu", "int4", "uint4", "int2", "uint2", "float4_e2m1fn"), 1),
    **dict.fromkeys(("float16", "half", "bfloat16", "int16", "uint16", "short", "ushort", "e", "h", "H"), 2),
    **dict.fromkeys(("float32", "single", "int32", "uint32", "intc", "uintc", "f", "i", "I"), 4),
    **dict.fromkeys(("float64", "double", "float", "int64", "uint64", "int", "longlong", "ulonglong", "d"), 8),
    **dict.fromkeys(("q", "Q", "l", "L", "complex64", "csingle", "F"), 8),
    **dict.fromkeys(("complex128", "cdouble", "complex", "D"), 16),
}
_TYPESTR = re.compile(r"[<>=|]?([?bBiufcVSU])(\d+)")


def _itemsize(dtype) -> int | None:
    """每元素字节数：np.dtype 对象（itemsize）、jax / numpy 的标量类型、类型名或 'f4' 这样的类型串"""
    size = getattr(dtype, "itemsize", None)
    if isinstance(size, int):
        return size
    inner = getattr(dtype, "dtype", None)  # jnp.bfloat16 这类标量类型带着自己的 dtype
    if isinstance(getattr(inner, "itemsize", None), int):
        return inner.itemsize
    if dtype is None:
        return 8  # np.dtype(None) 是 float64
    if isinstance(dtype, type):
        dtype = dtype.__name__
    if not isinstance(dtype, str):
        return None
    if dtype in _ITEMSIZE:
        return _ITEMSIZE[dtype]
    m = _TYPESTR.fullmatch(dtype)
    return int(m.group(2)) * (4 if m.group(1) == "U" else 1) if m else None


def _dtype_name(dtype) -> str:
    """'bf16' 等名字，或 numpy / jax 的 dtype（按每元素字节数映射）"""
    if isinstance(dtype, str) and dtype in BYTES_PER_ELEMENT:
        return dtype
    size = _itemsize(dtype)
    if size is None:
        raise ShardingError(f"未知的数据类型（dtype）{dtype!r}：可选 {', '.join(BYTES_PER_ELEMENT)}")
    for name, n in (("int8", 1), ("bf16", 2), ("fp32", 4)):
        if n == size:
            return name
    raise ShardingError(f"不支持每元素 {size} 字节的数据类型 {dtype!r}")
