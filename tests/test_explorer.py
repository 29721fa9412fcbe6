"""探索器的数字（shardlab.explorer）与直接调用 cost / planner 的结果一致"""

from __future__ import annotations

import json
import math

import pytest

from shardlab import cost, explorer, hardware, planner

V5E_MESH = {"X": 16, "Y": 16}


def test_curve_grid():
    sizes = explorer.curve_sizes()
    assert len(sizes) == 121 and sizes[0] == 1e3 and math.isclose(sizes[-1], 1e9)
    assert all(b > a for a, b in zip(sizes, sizes[1:]))


@pytest.mark.parametrize(
    ("chip", "collective", "nbytes", "axes", "mesh"),
    [
        ("v5e", "all_gather", 2**20, ["X"], V5E_MESH),
        ("v5e", "all_reduce", 1e4, ["X", "Y"], V5E_MESH),
        ("v5e", "all_to_all", 3e7, "Y", {"X": 4, "Y": 4}),
        ("v5p", "reduce_scatter", 5e5, ["X"], {"X": 4, "Y": 4, "Z": 4}),
        ("h100", "all_reduce", 58e6, None, {"X": 8}),
        ("h100", "all_gather", 1e6, ["X", "Y"], {"X": 4, "Y": 4}),
        ("cpu", "all_to_all", 1e3, None, None),
    ],
)
def test_collective_state_matches_cost(chip, collective, nbytes, axes, mesh):
    state = explorer.collective_state(chip, collective, nbytes, axes=axes, mesh=mesh)
    assert state["args"] == {"chip": chip, "collective": collective, "nbytes": nbytes, "axes": axes, "mesh": mesh}
    m = state["mesh"]
    ax = list(m) if axes is None else ([axes] if isinstance(axes, str) else axes)
    shape = explorer.default_slice_shape(chip, m)
    est = cost.estimate(collective, nbytes, ax, chip, mesh=m, slice_shape=shape)
    assert state["time_s"] == est.time_s and state["regime"] == est.regime and state["formula"] == est.formula
    assert state["axes"] == [list(p) for p in est.axes]
    sizes = state["curve"]["nbytes"]
    assert len(sizes) == 121
    for coll, times in state["curve"]["time_s"].items():
        assert times == [cost.estimate(coll, v, ax, chip, mesh=m, slice_shape=shape).time_s for v in sizes]
    assert json.loads(json.dumps(state, allow_nan=False)) == state  # 可以原样写进 data-state


def test_crossover_from_the_formula():
    """单轴双向环：⌊N/2⌋·t_hop = ⌊N/2⌋·2V/(N·W_bidir)，交点 V* = N·W_oneway·t_hop（与代码无关地重算）"""
    v5e = hardware.get_chip("v5e")
    state = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X"], mesh=V5E_MESH)
    n = V5E_MESH["X"]
    expected = n * v5e.ici_bidir_bw / 2 * v5e.hop_latency
    assert math.isclose(state["crossover_bytes"]["all_gather"], expected, rel_tol=1e-12)
    assert math.isclose(expected, 720e3)  # 16 × 45 GB/s × 1 µs
    # 交点两侧的 regime 不同
    below = explorer.collective_state("v5e", "all_gather", expected / 2, axes=["X"], mesh=V5E_MESH)
    above = explorer.collective_state("v5e", "all_gather", expected * 2, axes=["X"], mesh=V5E_MESH)
    assert (below["regime"], above["regime"]) == ("latency-bound", "bandwidth-bound")


def test_gpu_crossover_is_where_the_terms_are_equal():
    state = explorer.collective_state("h100", "all_reduce", 1e6, mesh={"X": 8})
    v = state["crossover_bytes"]["all_reduce"]
    est = cost.estimate("all_reduce", v, ["X"], "h100", mesh={"X": 8})
    assert math.isclose(est.hop_latency_s, est.bandwidth_term_s, rel_tol=1e-12)


def test_collective_state_errors_in_chinese():
    state = explorer.collective_state("v5e", "all_gather", 1e6, mesh={"X": 4, "Y": 4, "Z": 4})
    assert "2D torus" in state["error"] and "time_s" not in state
    assert "未知" in explorer.collective_state("v9", "all_gather", 1e6)["error"]
    assert explorer.collective_state("v5e", "all_gather", 1e6, axes="X", mesh="X=4,Y=4")["mesh"] == {"X": 4, "Y": 4}


@pytest.mark.parametrize(
    ("B", "D", "F", "chip", "mesh"),
    [
        (65536, 8192, 32768, "v5p", {"Y": 4}),
        (16, 8192, 32768, "v5p", {"Y": 4}),
        (1024, 4096, 16384, "v5e", {"X": 2, "Y": 4}),
        (4096, 8192, 8192, "h100", {"Y": 8}),
    ],
)
def test_sharding_state_matches_planner(B, D, F, chip, mesh):
    state = explorer.sharding_state(B, D, F, chip, mesh)
    shape = explorer.default_slice_shape(chip, mesh)
    plan = planner.plan_matmul(
        "In[B, D]", "W[D_Y, F]", "D", mesh, chip, shapes={"B": B, "D": D, "F": F}, slice_shape=shape
    )
    assert [o["label"] for o in state["options"]] == [o.label for o in plan.alternatives]
    for got, o in zip(state["options"], plan.alternatives, strict=True):
        assert (got["t_math"], got["t_comms"], got["t_total"]) == (o.t_math, o.t_comms, o.t_total)
        assert got["t_total"] == got["t_math"] + got["t_comms"]
        assert got["describe"] == o.describe()
    assert state["options"][state["chosen"]]["label"] == plan.chosen.label
    totals = [o["t_total"] for o in state["options"]]
    assert totals == sorted(totals)
    assert state["explain"] == plan.explain(n_alternatives=len(plan.alternatives))
    assert json.loads(json.dumps(state, allow_nan=False)) == state


def test_sharding_state_matches_the_book_table():
    """第 6 章的表：B = 65536 时激活值复制、输出也复制，规划器选 AllToAll 权重再收集输出"""
    state = explorer.sharding_state(65536, 8192, 32768, "v5p", {"Y": 4}, out="Out[B, F]")
    assert state["slice_shape"] == [4, 4, 4]
    assert state["options"][0]["kinds"] == ["all_to_all", "all_gather"]


def test_sharding_state_errors():
    assert "error" in explorer.sharding_state(1000, 8192, 32768, "v5e", {"Y": 3})
    assert "error" in explorer.sharding_state(1024, 8192, 32768, "v5e", {"X": 4})
