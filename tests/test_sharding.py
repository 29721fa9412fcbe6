"""shardlab.sharding：分片记号的解析、打印、PartitionSpec 互转与网格上的大小"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import PartitionSpec as P

from shardlab import runtime, sharding
from shardlab.sharding import ShardedSpec, ShardingError, parse

runtime.setup("cpu")

# ---- 解析与打印 ----


@pytest.mark.parametrize(
    ("text", "canonical", "latex"),
    [
        ("A[I_X, J_Y]", "A[I_X, J_Y]", "A[I_{X}, J_{Y}]"),
        ("A[I_XY, J]", "A[I_XY, J]", "A[I_{XY}, J]"),
        ("A[I_{XY},J]", "A[I_XY, J]", "A[I_{XY}, J]"),
        ("A[ I_{X, Y} , J ]", "A[I_XY, J]", "A[I_{XY}, J]"),
        ("C[I, K]{U_X}", "C[I, K]{U_X}", r"C[I, K]\{U_{X}\}"),
        ("C[I,K] {U_XY}", "C[I, K]{U_XY}", r"C[I, K]\{U_{XY}\}"),
        ("C[I,K]{U_{X,Y}}", "C[I, K]{U_XY}", r"C[I, K]\{U_{XY}\}"),
        ("W_in[D, F_{data,model}]", "W_in[D, F_{data,model}]", r"W_in[D, F_{\text{data},\text{model}}]"),
        ("x[Seq_{data}]", "x[Seq_{data}]", r"x[Seq_{\text{data}}]"),
        ("s[]", "s[]", "s[]"),
    ],
)
def test_parse_print_latex(text, canonical, latex):
    spec = parse(text)
    assert str(spec) == canonical
    assert spec.latex() == latex
    assert parse(canonical) == spec


def test_parsed_structure_and_queries():
    spec = parse("A[I_XY, J]")
    assert spec == ShardedSpec("A", (("I", ("X", "Y")), ("J", ())))
    assert spec.dim_names == ("I", "J") and spec.ndim == 2
    assert spec.axes_of("I") == ("X", "Y") and spec.sharded_axes == ("X", "Y")
    c = parse("C[I, K]{U_X}")
    assert c.unreduced == ("X",) and c.axes == frozenset("X")
    assert str(spec.with_axes("J", ("Z",)).with_unreduced(()).renamed("B")) == "B[I_XY, J_Z]"
    # 维度可以只写名字
    assert ShardedSpec("A", ("I", ("J", "X"))) == parse("A[I, J_X]")
    with pytest.raises(ShardingError, match="没有维度"):
        spec.axes_of("K")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("A[I_X, J_X]", "用了两次"),
        ("C[I_X, K]{U_X}", "用了两次"),
        ("A[I_XX]", "用了两次"),
        ("A[I_x]", "紧凑写法只接受大写字母"),
        ("A[I_X", "无法解析分片记号"),
        ("1A[I]", "无法解析分片记号"),
        ("A[I__X]", "无法解析"),
        ("A[I_{X,}]", "空的轴名"),
        ("A[I, ]", "无法解析"),
    ],
)
def test_parse_errors(text, match):
    with pytest.raises(ShardingError, match=match):
        parse(text)


def test_constructor_errors():
    assert issubclass(ShardingError, ValueError)
    with pytest.raises(ShardingError, match="数组名"):
        ShardedSpec("", ())
    with pytest.raises(ShardingError, match="维度名"):
        ShardedSpec("A", (("I_1", ()),))
    with pytest.raises(ShardingError, match="轴名"):
        ShardedSpec("A", (("I", ("1x",)),))
    with pytest.raises(ShardingError, match="混淆"):
        ShardedSpec("A", (("I", ("XY",)),))
    with pytest.raises(ShardingError, match="字符串"):
        parse(42)
    assert parse(parse("A[I]")) == parse("A[I]")
    assert sharding.as_spec("A[I_X]") == parse("A[I_X]")


# ---- hypothesis：记号的往返 ----

AXES = ["X", "Y", "Z", "W", "data", "model", "ax1"]


@st.composite
def specs(draw):
    name = draw(st.sampled_from(["A", "B", "C", "W_in", "x", "Out'"]))
    ndim = draw(st.integers(0, 4))
    dim_names = draw(st.lists(st.sampled_from(["I", "J", "K", "D", "F", "Seq", "B2"]), min_size=ndim, max_size=ndim))
    pool = draw(st.permutations(AXES))
    cuts = sorted(draw(st.lists(st.integers(0, len(pool)), min_size=ndim + 2, max_size=ndim + 2)))
    groups = [tuple(pool[a:b]) for a, b in zip(cuts, cuts[1:])]
    dims = tuple(zip(dim_names, groups[:ndim]))
    return ShardedSpec(name, dims, groups[ndim])


def spelled(spec: ShardedSpec, braces: bool, commas: bool, space: str) -> str:
    """同一个记号的另一种写法：花括号、逗号、空格"""

    def sub(axes):
        compact = all(len(a) == 1 for a in axes)
        if compact and not braces and not commas:
            return "".join(axes)
        if compact and not commas:
            return "{" + "".join(axes) + "}"
        return "{" + f",{space}".join(axes) + "}"

    body = f",{space}".join(d + (f"_{sub(a)}" if a else "") for d, a in spec.dims)
    tail = f"{space}{{U_{sub(spec.unreduced)}}}" if spec.unreduced else ""
    return f"{spec.name}[{space}{body}{space}]{tail}"


@settings(max_examples=300, deadline=None)
@given(specs(), st.booleans(), st.booleans(), st.sampled_from(["", " ", "  "]))
def test_notation_round_trip(spec, braces, commas, space):
    text = str(spec)
    assert parse(text) == spec
    assert str(parse(text)) == text
    assert parse(spelled(spec, braces, commas, space)) == spec


@settings(max_examples=200, deadline=None)
@given(specs())
def test_partition_spec_round_trip(spec):
    spec = spec.with_unreduced(())
    pspec = runtime.to_partition_spec(spec)
    assert len(pspec) == spec.ndim
    assert sharding.from_partition_spec(pspec, spec.dim_names, spec.name) == spec


# ---- PartitionSpec ----


def test_partition_spec_examples():
    assert runtime.to_partition_spec("A[I_X, J]") == P("X", None)
    assert runtime.to_partition_spec("A[I, J_Y]") == P(None, "Y")
    assert runtime.to_partition_spec("A[I_XY, J]") == P(("X", "Y"), None)
    assert runtime.to_partition_spec("A[I, J]") == P(None, None)
    assert str(sharding.from_partition_spec(P("X", None))) == "A[I_X, J]"
    assert str(sharding.from_partition_spec(P(("X", "Y"), "Z"), name="W")) == "W[I_XY, J_Z]"
    assert str(sharding.from_partition_spec(P(["X"]), ("B", "D"), "X")) == "X[B_X, D]"
    # P 比维度短：多出的维度不切分
    assert str(sharding.from_partition_spec(P("X"), ("I", "J", "K"))) == "A[I_X, J, K]"
    with pytest.raises(ShardingError, match="unreduced"):
        runtime.to_partition_spec("C[I, K]{U_X}")
    with pytest.raises(ShardingError, match="多于维度名"):
        sharding.from_partition_spec(P("X", None), ("I",))
    with pytest.raises(ShardingError, match="12 维"):
        sharding.from_partition_spec(P(*([None] * 13)))
    with pytest.raises(ShardingError, match="不是 None"):
        sharding.from_partition_spec([3])


# ---- 网格上的检查与大小 ----


def test_pop_quiz_int8_on_32_devices():
    """第 6 章 pop quiz：int8[128, 2048] 按 A[I_XY, J] 放在 {X:2, Y:8, Z:2} 上"""
    mesh = {"X": 2, "Y": 8, "Z": 2}
    assert sharding.local_shape("A[I_XY, J]", (128, 2048), mesh) == (8, 2048)
    assert sharding.bytes_per_device("A[I_XY, J]", (128, 2048), mesh, "int8") == 16_384
    assert sharding.total_bytes("A[I_XY, J]", (128, 2048), mesh, "int8") == 512 * 1024
    assert sharding.replication_factor("A[I_XY, J]", mesh) == 2
    assert sharding.num_shards("A[I_XY, J]", mesh) == 16


def test_chapter5_problem4_replication_ratio():
    """第 5 章习题 4：A[I_X, J, K] 在 {X:4, Y:8, Z:2} 上，所有设备的总字节数 / 单份 = 16"""
    mesh = {"X": 4, "Y": 8, "Z": 2}
    shape = {"I": 64, "J": 32, "K": 16}
    one_copy = 64 * 32 * 16 * 2
    assert sharding.total_bytes("A[I_X, J, K]", shape, mesh) / one_copy == 16
    assert sharding.replication_factor("A[I_X, J, K]", mesh) == 16


def test_sizes_on_jax_mesh_and_dtypes():
    mesh = runtime.make_mesh((2, 4), ("X", "Y"))
    assert sharding.mesh_sizes(mesh) == {"X": 2, "Y": 4}
    assert sharding.local_shape("A[I_X, J_Y]", (8, 8), mesh) == (4, 2)
    assert sharding.bytes_per_device("A[I_X, J_Y]", (8, 8), mesh, "fp32") == 32
    assert sharding.bytes_per_device("A[I_X, J_Y]", (8, 8), mesh, "float32") == 32
    assert sharding.bytes_per_device("A[I_X, J_Y]", (8, 8), mesh, "float16") == 16
    assert sharding.bytes_per_device("A[I_X, J_Y]", (8, 8), mesh, "int8") == 8
    # 未规约轴不切分：复制因子里算上它
    assert sharding.replication_factor("C[I_X, K]{U_Y}", mesh) == 4
    assert sharding.shape_of("A[I, J]", {"I": 3, "J": 5, "K": 7}) == (3, 5)
    with pytest.raises(ShardingError, match="数据类型"):
        sharding.bytes_per_device("A[I]", (8,), mesh, "nonsense")
    with pytest.raises(ShardingError, match="8 字节"):
        sharding.bytes_per_device("A[I]", (8,), mesh, "float64")


@pytest.mark.parametrize(
    ("spec", "shape", "match"),
    [
        ("A[I_Z, J]", (8, 8), "未知的网格轴"),
        ("C[I, J]{U_Q}", (8, 8), "未知的网格轴"),
        ("A[I_XY, J]", (12, 8), "不能被 X·Y 的 8 份整除"),
        ("A[I, J_Y]", (8, 6), "not divisible"),
        ("A[I, J]", (8,), "有 2 个维度"),
        ("A[I, J]", {"I": 8}, "没有维度 J"),
        ("A[I, J]", (8, -1), "非负整数"),
    ],
)
def test_validate_errors(spec, shape, match):
    with pytest.raises(ShardingError, match=match):
        sharding.validate(spec, {"X": 2, "Y": 4}, shape)


def test_mesh_errors():
    with pytest.raises(ShardingError, match="映射"):
        sharding.mesh_sizes([2, 4])
    with pytest.raises(ShardingError, match="正整数"):
        sharding.mesh_sizes({"X": 0})


@pytest.mark.parametrize(
    "dtype",
    [
        *("float32", "float16", "bfloat16", "int8", "uint8", "float8_e4m3fn", "float64", "f4", "<f4", "i1", "f2"),
        *("u2", "c8", "bool", "half", "single", "double", "int", "float", "complex", "q", "e", "?", "S3", "U2"),
        *(np.float32, np.float16, np.int8, np.float64, np.bool_, float, int, bool, complex, None),
        *(np.dtype("float32"), jnp.bfloat16, jnp.float32, jnp.int8, jnp.float8_e5m2, jnp.dtype("bfloat16")),
    ],
    ids=repr,
)
def test_dtype_sizes_match_numpy(dtype):
    """核心不导入 numpy，但每元素字节数与 np.dtype(x).itemsize 一致"""
    assert sharding._itemsize(dtype) == np.dtype(dtype).itemsize
