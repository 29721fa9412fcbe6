"""shardlab.reference：NumPy 参考语义的单元测试与性质测试"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardlab import reference


def _blocks(n, shape=(4, 3), seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.integers(-9, 9, size=shape).astype(dtype) for _ in range(n)]


def test_broadcast_and_copies():
    blocks = _blocks(3)
    out = reference.broadcast(blocks, root=2)
    assert all(np.array_equal(o, blocks[2]) for o in out)
    out[0][0, 0] = 1234
    assert blocks[2][0, 0] != 1234 and out[1][0, 0] != 1234


def test_reduce_root_gets_sum_others_unchanged():
    blocks = _blocks(4)
    out = reference.reduce(blocks, root=1)
    np.testing.assert_array_equal(out[1], blocks[0] + blocks[1] + blocks[2] + blocks[3])
    for i in (0, 2, 3):
        np.testing.assert_array_equal(out[i], blocks[i])
        assert out[i] is not blocks[i]
    out_max = reference.reduce(blocks, root=0, op=np.maximum)
    np.testing.assert_array_equal(out_max[0], np.max(np.stack(blocks), axis=0))


def test_scatter_gather_roundtrip():
    x = np.arange(24).reshape(4, 6)
    parts = reference.scatter(x, 3, axis=1)
    assert [p.shape for p in parts] == [(4, 2)] * 3
    np.testing.assert_array_equal(reference.gather(parts, root=2, axis=1), x)
    parts[0][0, 0] = -1
    assert x[0, 0] == 0


def test_all_gather_tiled_and_stacked():
    blocks = _blocks(2, shape=(2, 3))
    tiled = reference.all_gather(blocks, axis=1)
    assert tiled[0].shape == (2, 6)
    np.testing.assert_array_equal(tiled[1][:, 3:], blocks[1])
    stacked = reference.all_gather(blocks, axis=-1, tiled=False)
    assert stacked[0].shape == (2, 3, 2)
    np.testing.assert_array_equal(stacked[0][..., 1], blocks[1])
    tiled[0][0, 0] = 99
    assert tiled[1][0, 0] != 99


def test_reduce_scatter_all_reduce_example():
    blocks = [np.arange(4.0), np.ones(4), 2 * np.ones(4), np.arange(4.0) * 10]
    total = blocks[0] + blocks[1] + blocks[2] + blocks[3]
    out = reference.reduce_scatter(blocks)
    assert [o.tolist() for o in out] == [[t] for t in total.tolist()]
    assert all(np.array_equal(o, total) for o in reference.all_reduce(blocks))


def test_all_reduce_keeps_dtype():
    blocks = [np.array([100, 100], dtype=np.int8)] * 2
    assert reference.all_reduce(blocks)[0].dtype == np.int8


def test_all_to_all_example():
    # 设备 i 的块是 [10i, 10i+1]，切成两份；设备 j 收到每个设备的第 j 份
    blocks = [np.array([0, 1]), np.array([10, 11])]
    out = reference.all_to_all(blocks, split_axis=0, concat_axis=0)
    assert [o.tolist() for o in out] == [[0, 10], [1, 11]]


def test_ppermute_shift_and_zeros():
    blocks = [np.full(2, i + 1.0) for i in range(4)]
    out = reference.ppermute(blocks, [(0, 1), (1, 2), (2, 0)])
    assert [o[0] for o in out] == [3.0, 1.0, 2.0, 0.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda: reference.all_reduce([]),
        lambda: reference.all_reduce([np.zeros(2), np.zeros(3)]),
        lambda: reference.all_reduce([np.zeros(2), np.zeros(2, dtype=np.int32)]),
        lambda: reference.broadcast(_blocks(2), root=2),
        lambda: reference.reduce(_blocks(2), root=True),
        lambda: reference.scatter(np.zeros(5), 2),
        lambda: reference.scatter(np.zeros(4), 0),
        lambda: reference.scatter(np.float64(1.0), 1),
        lambda: reference.gather(_blocks(2), axis=2),
        lambda: reference.all_gather(_blocks(2), axis=3, tiled=False),
        lambda: reference.reduce_scatter(_blocks(3)),
        lambda: reference.reduce_scatter([np.float64(1.0)] * 2),
        lambda: reference.all_to_all(_blocks(3), split_axis=0, concat_axis=0),
        lambda: reference.all_to_all(_blocks(2), split_axis=0, concat_axis=5),
        lambda: reference.all_to_all([np.float64(1.0)] * 2, 0, 0),
        lambda: reference.ppermute(_blocks(2), [(0, 1), (0, 0)]),
        lambda: reference.ppermute(_blocks(2), [(0, 1), (1, 1)]),
        lambda: reference.ppermute(_blocks(2), [(0, 2)]),
        lambda: reference.ppermute(_blocks(2), [(0,)]),
    ],
)
def test_invalid_inputs_raise_valueerror(call):
    with pytest.raises(ValueError):
        call()


def test_error_messages_are_chinese_with_details():
    with pytest.raises(ValueError, match="形状.*设备 1"):
        reference.all_gather([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError, match="不能被设备数 3 整除"):
        reference.reduce_scatter(_blocks(3))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), rows=st.integers(1, 3), cols=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_properties(n, rows, cols, seed):
    blocks = _blocks(n, shape=(rows * n, cols), seed=seed, dtype=np.float64)
    total = np.sum(np.stack(blocks), axis=0)
    # ReduceScatter 之后 AllGather = AllReduce
    rs = reference.reduce_scatter(blocks)
    np.testing.assert_array_equal(reference.all_gather(rs)[0], reference.all_reduce(blocks)[0])
    np.testing.assert_array_equal(reference.all_reduce(blocks)[n - 1], total)
    # AllGather 的每个设备都等于 gather 到 root 的结果
    assert all(np.array_equal(g, reference.gather(blocks)) for g in reference.all_gather(blocks))
    # scatter 是 gather 的逆
    assert all(np.array_equal(a, b) for a, b in zip(reference.scatter(reference.gather(blocks), n), blocks))
    # AllToAll 做两次（split 与 concat 同轴）回到原样
    once = reference.all_to_all(blocks, 0, 0)
    assert all(np.array_equal(a, b) for a, b in zip(reference.all_to_all(once, 0, 0), blocks))
    # 元素 (j 块内) 的去向：设备 j 收到设备 i 的第 j 份
    j, i = seed % n, (seed // 7) % n
    np.testing.assert_array_equal(np.split(once[j], n)[i], np.split(blocks[i], n)[j])
    # 循环移位的 ppermute
    shift = reference.ppermute(blocks, [(k, (k + 1) % n) for k in range(n)])
    assert all(np.array_equal(shift[(k + 1) % n], blocks[k]) for k in range(n))
