"""shardlab.animate：动画的每一帧来自环形模拟器，每一步的传输与前后两帧对得上，播放器自带全部资源"""

import io
import re
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shardlab import (  # noqa: E402
    animate,
    ring,  # noqa: E402
    torus,
)


def _names(frame_dev):
    return sorted(c.text for c in frame_dev)


@pytest.mark.parametrize("n", [4, 8])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_allgather_moves_explain_every_frame(n, bidirectional):
    """每一步：设备新得到的块恰好是这一步发给它的块，发送者在上一帧确实持有它（与模拟器的快照独立核对）"""
    rec = animate.record("all_gather", n, bidirectional=bidirectional)
    assert rec.n_steps == (n // 2 if bidirectional else n - 1)
    assert all(_names(dev) == sorted(chr(65 + i) for i in range(n)) for dev in rec.frames[-1])
    for s, moves in enumerate(rec.moves):
        before, after = rec.frames[s], rec.frames[s + 1]
        arrived = {d: [] for d in range(n)}
        for src, dst, direction, chips in moves:
            assert (dst - src) % n == (1 if direction > 0 else n - 1), "只在环上相邻的设备之间传"
            assert {c.text for c in chips} <= {c.text for c in before[src]}, "发出去的块发送者必须有"
            arrived[dst] += [c.text for c in chips]
        for d in range(n):
            assert sorted(arrived[d]) == sorted(set(_names(after[d])) - set(_names(before[d])))
    per_step = [len(m) for m in rec.moves]
    if bidirectional:
        assert per_step[0] == 2 * n and per_step[-1] == (n if n % 2 == 0 else 2 * n)
    else:
        assert per_step == [n] * (n - 1)


def test_reduce_scatter_partial_sums_grow_to_the_full_sum():
    rec = animate.record("reduce_scatter", 4, bidirectional=False)
    assert [c.fill for c in rec.frames[0][0]] == [0.25] * 4
    assert [[c.text for c in dev] for dev in rec.frames[-1]] == [["ΣA"], ["ΣB"], ["ΣC"], ["ΣD"]]
    assert all(dev[0].fill == 1.0 for dev in rec.frames[-1])


def test_alltoall_ends_with_each_device_holding_only_its_colour():
    rec = animate.record("all_to_all", 4, bidirectional=True)
    assert rec.n_steps == 2
    for d, dev in enumerate(rec.frames[-1]):
        assert {c.color for c in dev} == {d}
    # 正对面的块拆成两半，一半正向一半反向
    texts = {c.text for m in rec.moves for _, _, _, chips in m for c in chips}
    assert {"A2a", "A2b"} <= texts


def test_line_takes_more_steps_than_the_ring():
    line, loop = animate.record("all_gather", 8, wraparound=False), animate.record("all_gather", 8)
    assert (line.layout, line.n_steps) == ("line", 7)
    assert (loop.layout, loop.n_steps) == ("ring", 4)
    assert not any(abs(a - b) == 7 for a, b in line.links), "线的两端之间没有链路"


def test_recording_refuses_a_schedule_that_disagrees_with_the_simulator(monkeypatch):
    """动画用的调度若与模拟器数出的链路字节不同就报错（这里换上一个走反方向的调度）"""
    real = torus.allgather_schedule

    def wrong(topo, piece_bytes, *, detail=False):
        sched = real(topo, piece_bytes, detail=detail)
        sched.port = sched.port ^ 1
        sched.step = sched.step[::-1].copy()
        return sched

    monkeypatch.setattr(torus, "allgather_schedule", wrong)
    monkeypatch.setattr(ring, "allgather_schedule", real)  # 模拟器本身照旧
    with pytest.raises(RuntimeError, match="不一致"):
        animate.record("all_gather", 4, bidirectional=True)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", ["allgather", "reducescatter"])
def test_matmul_every_device_uses_every_block_once(bidirectional, kind):
    n = 4
    rec = animate.record_matmul(n, bidirectional=bidirectional, kind=kind)
    assert rec.n_steps == n - 1 and len(rec.moves) == n - 1
    for d in range(n):
        used = [c.color for frame in rec.frames for c in frame[d]]
        assert sorted(used) == sorted(list(range(n)) * (2 if bidirectional else 1))
    for s, moves in enumerate(rec.moves):
        assert len(moves) == n * (2 if bidirectional else 1)
        for src, dst, direction, chips in moves:
            assert (dst - src) % n == (1 if direction > 0 else n - 1)
            if kind == "allgather":  # 发出的块下一步在邻居手里
                assert chips[0].text in {c.text for c in rec.frames[s + 1][dst]}


def test_player_is_self_contained_and_carries_a_print_strip():
    p = animate.line_vs_ring_player(4)
    html = p._repr_html_()
    assert 'class="shardlab-player"' in html and 'class="shardlab-strip"' in html
    assert "data:image/png;base64," in html
    urls = set(re.findall(r"(?:src|href)=[\"']([^\"']+)", html))
    assert all(u.startswith("data:") for u in urls), urls
    assert "@media print" in html
    assert p.n_steps == 3
    # 浏览器检查按页面上写的步长等它走一步（tools/site_check.py 的 _check_players）
    assert f'data-interval="{animate.INTERVAL_MS}"' in html
    ids = re.findall(r'id="(shardlab-player-[^"]+)"', html + animate.ring_player("all_gather", 4).html())
    assert len(ids) == len(set(ids)) == 2, "同一页上的两个播放器 id 不能相同"
    with pytest.raises(ValueError):
        animate.player()


def test_step_strip_renders_without_missing_glyphs():
    fig = animate.step_strip(animate.record("all_reduce", 4), animate.record_matmul(4, bidirectional=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    assert len(fig.axes) == 2
    plt.close(fig)
    with pytest.raises(ValueError):
        animate.step_strip()


def test_recorded_frames_are_the_simulator_steps():
    rec = animate.record("all_gather", 4, bidirectional=False)
    steps = ring.all_gather(torus.Ring(4, bidirectional=False)).steps
    assert [[[c.full for c in dev] for dev in f] for f in rec.frames] == steps
    assert np.all([len(f) == 4 for f in rec.frames])
