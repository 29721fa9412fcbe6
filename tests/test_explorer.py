"""探索器的数字（shardlab.explorer）与直接调用 cost / planner 的结果一致"""

from __future__ import annotations

import json
import math
import re

import pytest

from shardlab import cost, explorer, hardware, planner, units

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
    ("B", "D", "F", "chip", "mesh", "scenario"),
    [
        (65536, 8192, 32768, "v5p", {"Y": 4}, "replicated"),
        (16, 8192, 32768, "v5p", {"Y": 4}, "fsdp"),
        (1024, 4096, 16384, "v5e", {"X": 2, "Y": 4}, "replicated"),
        (4096, 8192, 8192, "h100", {"Y": 8}, "tp_row"),
        (4096, 8192, 8192, "h100", {"X": 2, "Y": 4}, "fsdp_tp"),
        (2048, 4096, 16384, "v5p", {"X": 4, "Y": 4}, "dp"),
        (2048, 4096, 16384, "v6e", {"Y": 8}, "tp_col"),
    ],
)
def test_sharding_state_matches_planner(B, D, F, chip, mesh, scenario):
    state = explorer.sharding_state(B, D, F, chip, mesh, scenario=scenario)
    sc = explorer.SCENARIOS[scenario]
    shape = explorer.default_slice_shape(chip, mesh)
    plan = planner.plan_matmul(
        sc.a, sc.b, "D", mesh, chip, shapes={"B": B, "D": D, "F": F}, out=sc.out, slice_shape=shape
    )
    assert (state["a"], state["b"], state["out_wanted"]) == (sc.a, sc.b, sc.out)
    assert [o["planner_label"] for o in state["options"]] == [o.label for o in plan.alternatives]
    for got, o in zip(state["options"], plan.alternatives, strict=True):
        assert (got["t_math"], got["t_comms"], got["t_total"]) == (o.t_math, o.t_comms, o.t_total)
        assert got["t_total"] == got["t_math"] + got["t_comms"]
        assert got["t_total_text"] == units.fmt_time(o.t_total)
        # 读者看到的标签：乘数写成 In、W、Out，不用规划器的 A、B、C（B 是批量维）
        shown = o.label.replace("(A)", "(In)").replace("(B)", "(W)").replace("(C)", "(Out)")
        assert got["label"] == shown
        assert not re.search(r"\((A|B|C)\)", got["label"] + got["describe"])
    assert state["options"][state["chosen"]]["planner_label"] == plan.chosen.label
    totals = [o["t_total"] for o in state["options"]]
    assert totals == sorted(totals)
    # 分组：每组是同一种通信组合，默认显示每组最快的一种
    members = sorted(i for g in state["groups"] for i in g["members"])
    assert members == list(range(len(state["options"])))
    assert state["shown"] == [g["members"][0] for g in state["groups"]][: explorer.SHOWN_GROUPS]
    assert state["chart"]["rows"] == state["shown"][: explorer.CHART_BARS]
    assert state["chart"]["ticks"][-1][0] >= max(state["options"][i]["t_total"] for i in state["chart"]["rows"])
    assert json.loads(json.dumps(state, allow_nan=False)) == state


def test_reader_text_is_chinese_with_units():
    """给读者看的文字：没有 Case n、裸的 communication-bound / wraparound，也没有 1e+06 这样的写法"""
    texts = []
    for scenario in explorer.SCENARIOS:
        state = explorer.sharding_state(65536, 8192, 32768, "v5p", {"X": 4, "Y": 4}, scenario=scenario)
        texts += [state["explain"], state["summary"], state["layout"], state["case_text"], *state["notes"]]
        texts += [o["describe"] + o["bound_text"] for o in state["options"]]
    for chip, mesh, axes in [
        ("v5e", V5E_MESH, ["X", "Y"]),
        ("v5e", {"X": 8, "Y": 16}, ["X"]),
        ("h100", V5E_MESH, ["X"]),
    ]:
        state = explorer.collective_state(chip, "all_reduce", 1e6, axes=axes, mesh=mesh)
        texts += [state["formula_text"], state["summary"], state["where"], state["crossover_text"]]
        texts += [label for _, label in state["x_ticks"] + state["y_ticks"]]
    text = "\n".join(texts)
    assert not re.search(r"\d[eE][+-]?\d", text), re.search(r".{20}\d[eE][+-]?\d.{20}", text)
    assert not re.search(r"(?<!（)Case \d", text)
    for term in ("communication-bound", "compute-bound", "latency-bound", "bandwidth-bound", "wraparound"):
        assert all(m.start() > 0 and text[m.start() - 1] == "（" for m in re.finditer(term, text)), term


def test_collective_state_says_when_the_axes_leave_a_node():
    """H100 的 16×16 网格：X 有 16 个 GPU，超出每节点 8 个的 NVLink 域，时间跳变；说明里要讲出来"""
    inside = explorer.collective_state("h100", "all_gather", 1e6, axes=["X"], mesh={"X": 8})
    across = explorer.collective_state("h100", "all_gather", 1e6, axes=["X"], mesh=V5E_MESH)
    assert not inside["crosses_nodes"] and "一个节点" in inside["where"]
    assert across["crosses_nodes"] and "跨 2 个节点" in across["where"] and "NVLink" in across["where"]
    assert across["crossover_bytes"]["all_gather"] > 2 * inside["crossover_bytes"]["all_gather"]


def test_collective_state_names_coinciding_curves_and_ticks():
    state = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X"], mesh=V5E_MESH)
    assert state["coincide"] == [["all_gather", "reduce_scatter"]]
    assert "AllGather、ReduceScatter" in state["coincide_text"][0] and "重合" in state["coincide_text"][0]
    assert (
        "交点" in state["crossover_text"]
        and units.fmt_bytes(state["crossover_bytes"]["all_gather"]) in state["crossover_text"]
    )
    times = [t for c in state["curve"]["time_s"].values() if c for t in c]
    ys = [v for v, _ in state["y_ticks"]]
    assert ys[0] <= min(times) and ys[-1] >= max(times)
    assert [label for _, label in state["x_ticks"]] == ["1 kB", "10 kB", "100 kB", "1 MB", "10 MB", "100 MB", "1 GB"]


def test_range_labels_are_the_library_formatting():
    labels = explorer.range_labels("nbytes")
    assert len(labels) == len(explorer.curve_sizes()) and labels[60] == "1 MB"
    assert explorer.range_labels("B")[-1] == "131,072" and explorer.range_labels("D")[0] == "1,024"


def test_sharding_state_matches_the_book_table():
    """第 6 章的表：B = 65536 时激活值复制、输出也复制，规划器选 AllToAll 权重再收集输出"""
    state = explorer.sharding_state(65536, 8192, 32768, "v5p", {"Y": 4}, out="Out[B, F]")
    assert state["slice_shape"] == [4, 4, 4]
    assert state["options"][0]["kinds"] == ["all_to_all", "all_gather"]


def test_sharding_state_errors():
    assert "error" in explorer.sharding_state(1000, 8192, 32768, "v5e", {"Y": 3})
    assert "error" in explorer.sharding_state(1024, 8192, 32768, "v5e", {"X": 4})
    missing = explorer.sharding_state(1024, 8192, 32768, "v5e", {"Y": 4}, scenario="fsdp_tp")
    assert "没有 X" in missing["error"]
    assert "未知的场景" in explorer.sharding_state(1024, 8192, 32768, "v5e", {"Y": 4}, scenario="zero")["error"]


def test_fsdp_scenario_reproduces_the_strategies_figure():
    """第 6 章的图（分片策略随批量）：B = 65536、D = 8192、F = 32768，v5p 4×4×4 切片里长度 4 的轴，FSDP 最快

    按书中的公式独立地算 FSDP：T_math = 2BDF / (N·C)，T_comms = ⌊N/2⌋·max(t_hop, 2V/(N·W_bidir))，V = 2DF 字节
    （收集后的整个权重，bf16），T = T_math + T_comms（不重叠）。探索器选 FSDP 场景时，最快的做法就是它。
    """
    b, d, f, n = 65536, 8192, 32768, 4
    v5p = hardware.get_chip("v5p")
    t_math = 2 * b * d * f / (n * v5p.flops_bf16)
    v = 2 * d * f
    t_comms = (n // 2) * max(v5p.hop_latency, 2 * v / (n * v5p.ici_bidir_bw))
    fsdp = t_math + t_comms
    assert 0.02 < fsdp < 0.025  # 图中绿线在 B = 65536 处约 22 ms
    state = explorer.sharding_state(b, d, f, "v5p", {"Y": n}, scenario="fsdp")
    best = state["options"][state["chosen"]]
    assert best["kinds"] == ["all_gather"] and best["label"] == "AllGather_Y(W) → 本地 matmul 得 Out[B_Y, F]"
    assert math.isclose(best["t_total"], fsdp, rel_tol=1e-12)
    assert math.isclose(best["t_math"], t_math, rel_tol=1e-12)
    # 激活值与输出都复制的场景（图中蓝线与灰线的起点）里，规划器最快的做法也慢于 FSDP
    replicated = explorer.sharding_state(b, d, f, "v5p", {"Y": n}, scenario="replicated")
    assert replicated["options"][replicated["chosen"]]["t_total"] > 1.5 * fsdp
    assert "复制" in replicated["layout"] and "按批量" in state["layout"]
