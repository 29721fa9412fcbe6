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
    assert "二维环面（2D torus）" in state["error"] and "time_s" not in state
    pod = explorer.collective_state("v5e", "all_gather", 1e6, mesh={"X": 64})["error"]
    assert "（pod，16×16）" in pod and "(" not in pod
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
    heads = [g["members"][0] for g in state["groups"]][: explorer.SHOWN_GROUPS]
    assert state["shown"] == sorted(set(heads) | {ln["index"] for ln in state["figure_lines"]})
    assert state["chart"]["rows"] == heads[: explorer.CHART_BARS]
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
    """H100 的 16×16 网格：Y（最后一个轴）的 16 个 GPU 连续，分在 2 个节点里，时间跳变；说明里要讲出来"""
    inside = explorer.collective_state("h100", "all_gather", 1e6, axes=["X"], mesh={"X": 8})
    across = explorer.collective_state("h100", "all_gather", 1e6, axes=["Y"], mesh=V5E_MESH)
    assert not inside["crosses_nodes"] and "每组都在同一个节点" in inside["where"]
    assert across["crosses_nodes"] and "分在 2 个节点里" in across["where"] and "NVLink" in across["where"]
    assert "注意" not in across["where"]  # 与代价模型的假设一致
    assert across["crossover_bytes"]["all_gather"] > 2 * inside["crossover_bytes"]["all_gather"]


def _nodes_by_enumeration(mesh: dict, axes: list[str], g: int) -> set[int]:
    """独立地数：np.arange(N).reshape(网格) 是行优先的设备编号；沿 axes 取一组（其余轴的下标取遍），数 id // g"""
    import numpy as np

    ids = np.arange(math.prod(mesh.values())).reshape(tuple(mesh.values()))
    keep = [list(mesh).index(a) for a in axes]
    other = [i for i in range(ids.ndim) if i not in keep]
    groups = np.transpose(ids, other + keep).reshape(-1, math.prod(mesh[a] for a in axes))
    return {len(set((row // g).tolist())) for row in groups}


@pytest.mark.parametrize(
    ("mesh", "axes", "g"),
    [
        ({"X": 8, "Y": 16}, ["X"], 8),
        ({"X": 8, "Y": 16}, ["Y"], 8),
        ({"X": 8, "Y": 16}, ["X", "Y"], 8),
        ({"X": 16, "Y": 16}, ["X"], 8),
        ({"X": 16, "Y": 16}, ["Y"], 72),
        ({"X": 4, "Y": 4, "Z": 4}, ["Y"], 8),
        ({"X": 4, "Y": 4, "Z": 4}, ["Y", "Z"], 8),
        ({"X": 64}, ["X"], 72),
    ],
)
def test_axis_placement_counts_nodes_in_row_major_order(mesh, axes, g):
    got = explorer.axis_placement(mesh, axes, g)
    counts = _nodes_by_enumeration(mesh, axes, g)
    assert (got["fewest_nodes"], got["nodes"]) == (min(counts), max(counts))
    assert got["group_size"] == math.prod(mesh[a] for a in axes)


def test_h100_axis_with_stride_is_not_inside_one_node():
    """H100，网格 X=8、Y=16：X 的一组设备相隔 16 个编号，分在 8 个节点里（每节点 1 个），不是“都在一个节点里”"""
    mesh = {"X": 8, "Y": 16}
    x = explorer.collective_state("h100", "all_gather", 1e6, axes=["X"], mesh=mesh)
    y = explorer.collective_state("h100", "all_gather", 1e6, axes=["Y"], mesh=mesh)
    assert _nodes_by_enumeration(mesh, ["X"], 8) == {8} and _nodes_by_enumeration(mesh, ["Y"], 8) == {2}
    assert x["crosses_nodes"] and "分在 8 个节点里" in x["where"] and "每组都在同一个节点" not in x["where"]
    assert "代价模型" in x["where"]  # cost.estimate 只看 GPU 个数：说明它的假设
    assert "分在 2 个节点里" in y["where"]


def test_gb200_is_an_nvlink_domain_not_a_node():
    state = explorer.collective_state("gb200", "all_gather", 1e6, axes=["X"], mesh={"X": 64})
    assert "NVLink 域" in state["where"] and "节点" not in state["where"] + state["formula_text"]


def test_formula_uses_the_chapter_notation_and_gives_the_gpu_latency():
    tpu = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X", "Y"], mesh=V5E_MESH)
    single = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X"], mesh=V5E_MESH)
    for text in (tpu["formula_text"], single["formula_text"]):
        assert "W_oneway" not in text and "W_bidir" not in text and "W_双向" in text
    assert "W_单向" in tpu["formula_text"]
    assert "b 是" in tpu["formula_text"] and "各片时间的最大值" in tpu["formula_text"]
    gpu = explorer.collective_state("h100", "all_reduce", 1e6, axes=["Y"], mesh={"X": 8, "Y": 16})
    assert f"延迟项（NCCL 模型，这里 = {units.fmt_time(gpu['hop_latency_s'])}）" in gpu["formula_text"]
    assert "W_NVLink = 450 GB/s（每 GPU 每方向" in gpu["formula_text"]
    assert "W_node = 400 GB/s（每节点" in gpu["formula_text"]
    # H100：每 GPU 一块 400 Gb/s（50 GB/s）的网卡，每节点 8 块
    h100 = hardware.get_chip("h100")
    assert h100.node_scaleout_bw == 8 * 50e9 and h100.nvlink_bw_per_direction == 450e9


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


def test_control_choices_disable_what_cannot_be_computed():
    """构建时写进网页的可选组合：v5e 没有 3D 网格、64 的轴超出 pod；GB200 的 256 个 GPU 不能整分成 72 个一域"""
    meshes = ("X=16,Y=16", "X=4,Y=4,Z=4", "X=64")
    table = explorer.control_choices(["v5e", "v5p", "h100", "gb200"], meshes)
    assert table["X=4,Y=4,Z=4"]["v5e"] == [] and table["X=64"]["v5e"] == []
    assert table["X=4,Y=4,Z=4"]["v5p"] == ["X", "Y", "Z", "X,Y,Z"]
    assert table["X=16,Y=16"]["gb200"] == ["X", "Y"]
    for mesh, row in table.items():  # 与 collective_state 一致：列出的都算得了，没列出的都报错
        for chip, ok in row.items():
            names_ = list(explorer._mesh_dict(mesh))
            for axes in [[a] for a in names_] + [names_]:
                state = explorer.collective_state(chip, "all_gather", 1e6, axes=axes, mesh=mesh)
                assert ("error" not in state) == (",".join(axes) in ok), (chip, mesh, axes)
    assert explorer.scenario_axes("fsdp_tp") == ["X", "Y"] and explorer.scenario_axes("fsdp") == ["Y"]


def _fsdp_plans_by_hand(b, d, f, n, chip):
    """FSDP 的起点 In[B_Y, D]、W[D_Y, F]、Out[B_Y, F]，按第 5 章的双向环公式独立地算两种做法（bf16，2 字节）：

    收集权重（图中绿线）：AllGather_Y(W)，V = 2DF，再本地算 1/N 的乘法；
    先 AllToAll_Y(In) 把输入改成 In[B, D_Y]（V = 2BD，⌊N²/4⌋·V/(N²·W_双向)），本地乘得部分和 Out[B, F]{U_Y}，
    再 ReduceScatter_Y 成 Out[B_Y, F]（V = 2BF）。两种做法每设备都只算 1/N。
    """
    half = n // 2
    t_math = 2 * b * d * f / (n * chip.flops_bf16)
    ring = lambda v: half * max(chip.hop_latency, 2 * v / (n * chip.ici_bidir_bw))  # noqa: E731
    a2a = max(half * chip.hop_latency, (n * n // 4) * (2 * b * d) / (n * n * chip.ici_bidir_bw))
    return t_math + ring(2 * d * f), t_math + a2a + ring(2 * b * f)


@pytest.mark.parametrize("b", [16, 1024, 4096, 65536])
def test_fsdp_figure_line_is_one_plan_among_several(b):
    """第 6 章的图：绿线是“收集权重”这一种做法；B 小时规划器找到更快的 AllToAll(In) → ReduceScatter(Out)"""
    d, f, n = 8192, 32768, 4
    v5p = hardware.get_chip("v5p")
    gather, a2a_rs = _fsdp_plans_by_hand(b, d, f, n, v5p)
    state = explorer.sharding_state(b, d, f, "v5p", {"Y": n}, scenario="fsdp")
    [line] = state["figure_lines"]
    green = state["options"][line["index"]]
    assert green["label"] == "AllGather_Y(W) → 本地 matmul 得 Out[B_Y, F]" and "绿线" in line["line"]
    assert math.isclose(green["t_total"], gather, rel_tol=1e-12)
    rs = next(o for o in state["options"] if o["kinds"] == ["all_to_all", "reduce_scatter"])
    assert rs["label"] == "AllToAll_Y(In) → 本地 matmul 得 Out[B, F]{U_Y} → ReduceScatter_Y(Out)"
    assert math.isclose(rs["t_total"], a2a_rs, rel_tol=1e-12)
    assert line["index"] in state["shown"]
    rank = f"排第 {line['index'] + 1}"
    assert rank in state["figure_text"] and green["t_total_text"] in state["figure_text"]
    if b == 1024:  # 读者看到的例子：696 µs 对 3.28 ms
        assert state["chosen"] == state["options"].index(rs) and line["index"] == 3
        assert "只比三种固定的做法" in state["figure_text"] and rs["t_total_text"] in state["figure_text"]
    if b == 65536:
        assert line["index"] == state["chosen"] == 0 and "只比" not in state["figure_text"]


def test_chapter_does_not_claim_the_fsdp_scenario_always_gives_the_green_line():
    """第 6 章探索器前的说明：不能说 FSDP 场景“给出的正是图中绿线的数”（B < 16384 时规划器有更快的做法）"""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "book" / "ch06_sharded_matmul.md").read_text(encoding="utf-8")
    assert "FSDP 场景给出的正是图中绿线的数" not in text
    assert "只比三种固定的做法" in text


def _split_by_enumeration(mesh: dict, axes: list[str], g: int) -> list[list[int]]:
    """独立地数每组在各节点里有几个设备（行优先编号，np.arange）"""
    import numpy as np

    ids = np.arange(math.prod(mesh.values())).reshape(tuple(mesh.values()))
    keep = [list(mesh).index(a) for a in axes]
    other = [i for i in range(ids.ndim) if i not in keep]
    groups = np.transpose(ids, other + keep).reshape(-1, math.prod(mesh[a] for a in axes))
    return [np.unique(row // g, return_counts=True)[1].tolist() for row in groups]


@pytest.mark.parametrize(
    ("mesh", "axes", "g"),
    [
        ({"X": 16, "Y": 16}, ["X"], 72),
        ({"X": 16, "Y": 16}, ["Y"], 72),
        ({"X": 16, "Y": 16}, ["X"], 8),
        ({"X": 8, "Y": 16}, ["X"], 72),
        ({"X": 4, "Y": 4}, ["X"], 8),
        ({"X": 4, "Y": 4, "Z": 4}, ["Y"], 72),
        ({"X": 64}, ["X"], 72),
    ],
)
def test_axis_placement_reports_the_real_split(mesh, axes, g):
    """每个节点里的组内设备数是一个范围（GB200 的 72 不能整除 16 时不一样多），与逐个数出的相同"""
    splits = _split_by_enumeration(mesh, axes, g)
    spread = [s for s in splits if len(s) > 1] or splits
    got = explorer.axis_placement(mesh, axes, g)
    assert (got["per_node"], got["per_node_max"]) == (min(map(min, spread)), max(map(max, spread)))


def test_gb200_strided_axis_states_the_uneven_split():
    """GB200，16×16，轴 X：第一组在四个 NVLink 域里是 5、4、5、2 个，不能写成“每个 NVLink 域里 2 个”"""
    assert _split_by_enumeration({"X": 16, "Y": 16}, ["X"], 72)[0] == [5, 4, 5, 2]
    state = explorer.collective_state("gb200", "all_gather", 1e9, axes=["X"], mesh={"X": 16, "Y": 16})
    assert "每个 NVLink 域里 2–5 个，不一样多" in state["where"]
    assert "每个 NVLink 域里 2 个" not in state["where"]


def test_strided_gpu_axis_says_how_much_slower_across_nodes():
    """H100，16×16，轴 X：每组 16 个 GPU 各在一个节点，经 50 GB/s 的网卡交换：约 18.8 ms，约为按连续放置的 10 倍"""
    h100 = hardware.get_chip("h100")
    v = 1e9
    x = explorer.collective_state("h100", "all_gather", v, axes=["X"], mesh={"X": 16, "Y": 16})
    y = explorer.collective_state("h100", "all_gather", v, axes=["Y"], mesh={"X": 16, "Y": 16})
    assert x["time_s"] == y["time_s"]  # cost.estimate 只看 GPU 个数
    # 跨节点模型：G = 1（每节点一个组内 GPU），M = 16，W_node = 1 块网卡
    by_hand = cost.gpu_allgather_cross_node(v, 1, 16, h100.nvlink_bw_per_direction, h100.ib_bw_per_gpu)
    by_hand += cost.gpu_ring_latency("all_gather", 16, 1, h100)
    assert math.isclose(x["cross_node_time_s"], by_hand, rel_tol=1e-12)
    assert 18e-3 < x["cross_node_time_s"] < 19.5e-3 and x["cross_node_time_s"] > 9 * x["time_s"]
    assert x["optimistic"] and "⚠" in x["summary"] and units.fmt_time(by_hand) in x["summary"]
    assert units.fmt_time(by_hand) in x["where"] and "倍" in x["where"]
    assert not y["optimistic"] and y["cross_node_time_s"] is None and "⚠" not in y["summary"]


def test_cross_node_time_equals_the_library_formula_when_the_split_is_even():
    h100 = hardware.get_chip("h100")
    w, nic = h100.nvlink_bw_per_direction, h100.ib_bw_per_gpu
    for n, k in [(4, 2), (16, 1), (16, 4), (64, 8)]:
        m = n // k
        lib = {
            "all_gather": cost.gpu_allgather_cross_node(1e8, k, m, w, k * nic),
            "reduce_scatter": cost.gpu_reducescatter_cross_node(1e8, k, m, w, k * nic),
            "all_reduce": cost.gpu_allreduce_cross_node(1e8, k, m, w, k * nic),
            "all_to_all": cost.gpu_alltoall_cross_node(1e8, m, k * nic),
        }
        for coll, t_bw in lib.items():
            got = explorer.cross_node_time(coll, 1e8, n, k, "h100")
            assert math.isclose(got, t_bw + cost.gpu_ring_latency(coll, n, k, h100), rel_tol=1e-12), (n, k, coll)


def test_sharding_state_marks_steps_whose_axis_leaves_a_node():
    """第 6 章，H100，X=4、Y=4，FSDP + 张量并行：X 的一组 {0, 4, 8, 12} 分在 2 个节点里，AllGather_X(W) 偏乐观"""
    h100 = hardware.get_chip("h100")
    state = explorer.sharding_state(65536, 8192, 32768, "h100", {"X": 4, "Y": 4}, scenario="fsdp_tp")
    assert "X：4 个 GPU，每组分在 2 个节点里（每个节点里 2 个）⚠" in state["topology_text"]
    assert "Y：4 个 GPU，每组都在同一个节点里" in state["topology_text"] and state["topology_warning"]
    best = state["options"][state["chosen"]]
    [step] = best["steps"]
    assert best["label"].startswith("AllGather_X(W)") and step["axes"] == ["X"]
    by_hand = cost.gpu_allgather_cross_node(step["nbytes"], 2, 2, h100.nvlink_bw_per_direction, 2 * h100.ib_bw_per_gpu)
    by_hand += cost.gpu_ring_latency("all_gather", 4, 2, h100)
    assert math.isclose(step["cross_node_time_s"], by_hand, rel_tol=1e-12) and by_hand > 2 * step["time_s"]
    assert "⚠" in best["warn_text"] and units.fmt_time(by_hand) in best["warn_text"] and "⚠" in state["summary"]
    # Y 在节点内：只经过 Y 的步骤不标
    for o in state["options"]:
        if all(s["axes"] == ["Y"] for s in o["steps"]):
            assert not o["warn_text"]
    inside = explorer.sharding_state(65536, 8192, 32768, "h100", {"X": 2, "Y": 4}, scenario="fsdp_tp")
    assert not inside["topology_warning"] and not any(o["warn_text"] for o in inside["options"])


def test_sharding_state_states_the_tpu_wraparound_per_axis():
    v5p = explorer.sharding_state(1024, 8192, 32768, "v5p", {"Y": 4}, scenario="fsdp")
    v5e = explorer.sharding_state(1024, 8192, 32768, "v5e", {"Y": 4}, scenario="fsdp")
    assert "Y：4 个设备，有回绕" in v5p["topology_text"] and "切片 4×4×4" in v5p["topology_text"]
    assert "Y：4 个设备，无回绕" in v5e["topology_text"]


def test_figure_text_says_the_approach_and_only_quotes_the_figure_on_its_settings():
    on = explorer.sharding_state(65536, 8192, 32768, "v5p", {"Y": 4}, scenario="fsdp")
    off = explorer.sharding_state(65536, 8192, 32768, "h100", {"Y": 4}, scenario="fsdp")
    for state in (on, off):
        assert state["figure_text"].startswith("图中绿线所代表的做法（FSDP：收集权重）是")
    assert "就是图中这条线在 B = 65,536 处的数" in on["figure_text"]
    assert "图中这条线" not in off["figure_text"] and "与图不同" in off["figure_text"]
    other_d = explorer.sharding_state(65536, 4096, 32768, "v5p", {"Y": 4}, scenario="fsdp")
    assert "与图不同" in other_d["figure_text"]


def test_alltoall_formula_defines_w_i_with_its_values():
    """多轴 AllToAll 的公式里的 W_i：有回绕的轴取 W_双向，写出值（v5e 16×16：90 GB/s）"""
    state = explorer.collective_state("v5e", "all_to_all", 2**30, axes=["X", "Y"], mesh=V5E_MESH)
    text = state["formula_text"]
    assert "W_i 是第 i 条轴" in text and "X：W_双向 = 90 GB/s（有回绕）" in text
    line = explorer.collective_state("v5e", "all_to_all", 2**30, axes=["X", "Y"], mesh={"X": 8, "Y": 16})
    assert "X：W_单向 = 45 GB/s（无回绕）" in line["formula_text"] and "Y：W_双向" in line["formula_text"]


def test_tpu_where_mentions_lines_only_when_there_is_one():
    ring = explorer.collective_state("v5p", "all_gather", 1e6, axes=["X", "Y", "Z"], mesh={"X": 4, "Y": 4, "Z": 4})
    assert "线形" not in ring["where"]
    line = explorer.collective_state("v5e", "all_gather", 1e9, axes=["X"], mesh={"X": 4, "Y": 4})
    v5e = hardware.get_chip("v5e")
    factor = cost.allgather_line(1e9, 4, v5e.ici_oneway_bw, v5e.hop_latency) / cost.allgather_bidir_ring(
        1e9, 4, v5e.ici_bidir_bw, v5e.hop_latency
    )
    assert math.isclose(factor, 1.5, rel_tol=1e-3) and f"慢约 {units.fmt_num(factor)} 倍" in line["where"]


def test_the_headline_names_the_fastest_plan_once_cross_node_steps_are_costed():
    """以前：H100 4×4、B = 1024 时标题写着规划器排第一的（221 µs），它自己的 ⚠ 行却说按跨节点模型约 448 µs，
    而排第三的 225 µs 没有跨节点的步：标题要说改过之后最快的那一种"""
    st = explorer.sharding_state(1024, 8192, 32768, "h100", {"X": 4, "Y": 4})
    opts = st["options"]
    real = min(range(len(opts)), key=lambda i: opts[i]["t_total_cross"])
    assert st["chosen"] == real == 0 and not opts[0]["warn_text"]
    assert st["summary"].startswith(f"按跨节点模型最快：{opts[real]['label']}，约 {opts[real]['t_total_text']}")
    # 以前排第一的 221 µs（连续放置）现在按跨节点模型的 448 µs 排名：表、条形图与名次用同一个时间
    old = min(range(len(opts)), key=lambda i: opts[i]["t_total_contiguous"])
    assert opts[old]["warn_text"] and opts[old]["t_total"] == opts[old]["t_total_cross"] > 1.9 * opts[0]["t_total"]
    assert opts[old]["t_total_text"] in opts[old]["warn_text"] and "跨节点模型" in st["rank_note"]
    totals = [o["t_total"] for o in opts]
    assert totals == sorted(totals) and all(math.isclose(o["t_math"] + o["t_comms"], o["t_total"]) for o in opts)
    assert st["chart"]["rows"] == sorted(st["chart"]["rows"])
    assert all(o["t_total"] == o["t_total_cross"] for o in opts if not math.isnan(o["t_total_cross"]))
    # 没有跨节点的步时，改过的总时间就是表中的总时间，标题照旧
    tpu = explorer.sharding_state(65536, 8192, 32768, "v5p", {"Y": 4})
    assert all(o["t_total_cross"] == o["t_total"] for o in tpu["options"])
    assert tpu["summary"].startswith("最快：")


def test_plot_uses_the_headline_time_on_a_strided_gpu_axis():
    """H100 16×16 轴 X（每组跨 16 个节点）：曲线的每一点、圆点与交点都用标题里 ⚠ 后的跨节点时间，不是连续放置的"""
    mesh = {"X": 16, "Y": 16}
    sizes = explorer.curve_sizes()
    v = sizes[60]
    x = explorer.collective_state("h100", "all_gather", v, axes=["X"], mesh=mesh)
    assert x["optimistic"] and x["curve_model"] == "cross_node"
    assert x["curve"]["time_s"]["all_gather"][60] == x["plot_time_s"] == x["cross_node_time_s"]
    assert units.fmt_time(x["plot_time_s"]) in x["summary"]
    for coll, times in x["curve"]["time_s"].items():
        for size, t in zip(sizes, times):
            assert t == explorer.cross_node_time(coll, size, 16, 1, "h100"), (coll, size)
    assert min(x["y_ticks"])[0] <= min(min(t) for t in x["curve"]["time_s"].values())
    # 交点按同一个模型：延迟项等于带宽项
    cross = x["crossover_bytes"]["all_gather"]
    lat = explorer.cross_node_time("all_gather", 0.0, 16, 1, "h100")
    assert math.isclose(explorer.cross_node_time("all_gather", cross, 16, 1, "h100"), 2 * lat, rel_tol=1e-9)
    # 连续的轴：曲线就是 cost.estimate
    y = explorer.collective_state("h100", "all_gather", v, axes=["Y"], mesh=mesh)
    assert y["curve_model"] == "cost.estimate" and y["plot_time_s"] == y["time_s"]
    assert y["curve"]["time_s"]["all_gather"][60] == y["time_s"]


@pytest.mark.parametrize("v", [1e3, 1e6, 1e9])
def test_cross_node_note_follows_the_numbers(v):
    """H100 16×16 轴 Y：以前不论数字如何都写“所以比……慢”；V = 1 GB 时跨节点其实更快"""
    h100 = hardware.get_chip("h100")
    state = explorer.collective_state("h100", "all_gather", v, axes=["Y"], mesh={"X": 16, "Y": 16})
    one = cost.gpu_ring_latency("all_gather", 16, 16, h100) + cost.gpu_allgather_in_node(
        v, 16, h100.nvlink_bw_per_direction
    )
    here = state["time_s"]
    where = state["where"]
    assert f"约 {units.fmt_time(one)}，这里约 {units.fmt_time(here)}" in where
    assert "所以比" not in where
    if here > one:
        assert f"慢约 {units.fmt_num(here / one)} 倍" in where and "反而快" not in where
    else:
        assert f"反而快约 {units.fmt_num(one / here)} 倍" in where and "慢约" not in where
    if v == 1e9:
        assert here < one


def test_formula_lists_the_bandwidth_it_uses_with_its_direction():
    """有回绕的环的公式用 W_双向：参数里写 W_双向 的值并说明是两个方向之和，不只列 W_单向"""
    v5e = hardware.get_chip("v5e")
    ring = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X"], mesh=V5E_MESH)["formula_text"]
    assert "2V/(N·W_双向)" in ring
    assert f"W_双向 = {units.fmt_bw(v5e.ici_bidir_bw)}（双向带宽：每条链路两个方向之和）" in ring
    assert "W_单向" not in ring
    line = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X"], mesh={"X": 8, "Y": 16})["formula_text"]
    assert f"W_单向 = {units.fmt_bw(v5e.ici_oneway_bw)}（单向带宽：每条链路一个方向）" in line
    assert "W_双向" not in line
    multi = explorer.collective_state("v5e", "all_gather", 1e6, axes=["X", "Y"], mesh=V5E_MESH)["formula_text"]
    assert "W_双向 = 90 GB/s（双向带宽" in multi and "W_单向 = 45 GB/s（单向带宽" in multi


def test_flops_use_one_unit_per_table():
    """每设备的 FLOP：全表一个单位，由 shardlab.units 写（以前 TFLOP 与逐位写出的 FLOP 混在一起）"""
    for b in (16, 1024, 65536):
        state = explorer.sharding_state(b, 1024, 1024, "v5p", {"Y": 4}, scenario="fsdp")
        found = set(re.findall(r"\d ([kMGTP]?FLOP\w*)", state["explain"]))
        unit = units.flop_unit(max(o["flops_per_device"] for o in state["options"]))
        assert found == {unit}, (b, found)
        for o in state["options"]:
            assert o["flops_per_device_text"] == units.fmt_flops(o["flops_per_device"], unit)
            assert o["flops_per_device_text"] in o["describe"]


def _split_by_hand(v: float, sizes: list[int], chip: hardware.TpuChip) -> tuple[float, float]:
    """多轴 AllGather（各轴有回绕、偶数长）的延迟项与带宽项，在这里逐阶段、逐片重新数一遍：

    第 j 阶段第 p 片沿轴 (p+j) mod k 走 L/2 步，每步的块是 V/(N·k) 乘上已经收齐的轴长之积；
    阶段的时间取最慢的一片。受延迟限制的步（块/W_单向 < t_hop）记进延迟项，其余记进带宽项。"""
    k, n, w, lat = len(sizes), math.prod(sizes), chip.ici_oneway_bw, chip.hop_latency
    latency = bandwidth = 0.0
    for j in range(k):
        pieces = []
        for p in range(k):
            done = math.prod(sizes[(p + i) % k] for i in range(j))
            hops, hop = sizes[(p + j) % k] // 2, v / (n * k) * done / w
            pieces.append((hops * max(lat, hop), hops, hop))
        _, hops, hop = max(pieces)
        if hop < lat:
            latency += hops * lat
        else:
            bandwidth += hops * hop
    return latency, bandwidth


@pytest.mark.parametrize(
    ("chip", "mesh"),
    [
        ("v5e", {"X": 16, "Y": 16}),
        ("v5p", {"X": 4, "Y": 4, "Z": 4}),
        ("v5p", {"X": 16, "Y": 16}),
        ("v6e", {"X": 16, "Y": 16}),
    ],
)
def test_regime_on_several_axes_means_the_latency_term_dominates(chip, mesh):
    """以前：v5e 16×16 沿 X、Y，V = 10 MB 时标题写“约 63.6 µs，延迟受限”（只要有一步受延迟限制就算），
    而图中的交点 V* 在约 2.7 MB，延迟项 16 µs 远小于带宽项。现在判断、交点与这里重新数的两项一致"""
    spec = hardware.get_chip(chip)
    axes = list(mesh)
    for v in explorer.curve_sizes()[::4]:
        state = explorer.collective_state(chip, "all_gather", v, axes=axes, mesh=mesh)
        lat, bw = _split_by_hand(v, list(mesh.values()), spec)
        assert math.isclose(lat + bw, state["time_s"], rel_tol=1e-9)
        assert state["regime"] == ("latency-bound" if lat > bw else "bandwidth-bound"), (v, lat, bw)
        cross = state["crossover_bytes"]["all_gather"]
        if abs(math.log(v / cross)) > 1e-6:
            assert (state["regime"] == "latency-bound") == (v < cross), (v, cross)
            assert (state["regime"] == "latency-bound") == ("延迟受限" in state["summary"])


def test_crossover_on_several_axes_is_where_the_plotted_terms_meet():
    """v5p 4×4×4 沿 X、Y、Z：三个阶段的块之比 1 : 4 : 16，每阶段 2 步。交点是前两个阶段（延迟受限）的 4·t_hop
    等于第三个阶段（带宽受限）的 2·16·V/(64·3·W_单向)：V* = 24·W_单向·t_hop = 2.16 MB（以前按渐近线取 2.47 MB）"""
    v5p = hardware.get_chip("v5p")
    mesh = {"X": 4, "Y": 4, "Z": 4}
    state = explorer.collective_state("v5p", "all_gather", 1e6, axes=list(mesh), mesh=mesh)
    expected = 24 * v5p.ici_oneway_bw * v5p.hop_latency
    assert math.isclose(expected, 2.16e6) and math.isclose(
        state["crossover_bytes"]["all_gather"], expected, rel_tol=1e-6
    )
    lat, bw = _split_by_hand(expected, [4, 4, 4], v5p)
    assert math.isclose(lat, bw)


def test_cost_regime_matches_a_brute_force_split_for_every_tpu_model():
    """cost.estimate 的 regime：对单轴、线形与 AllToAll，在这里用“全部跳数 × t_hop”与“t_hop = 0 时的时间”重算；
    这些模型每一跳一样大，两者的比较就是延迟项与带宽项的比较"""
    for chip, mesh, axes in [
        ("v5e", {"X": 16, "Y": 16}, ["X"]),
        ("v5e", {"X": 4, "Y": 4}, ["X"]),
        ("v4p", {"X": 4, "Y": 4, "Z": 4}, ["Y"]),
    ]:
        for coll in ("all_gather", "all_reduce", "all_to_all"):
            for v in explorer.curve_sizes()[::6]:
                est = cost.estimate(coll, v, axes, chip, mesh=mesh)
                floor = cost.estimate(coll, 0.0, axes, chip, mesh=mesh).time_s
                kind = "latency-bound" if floor > est.bandwidth_term_s else "bandwidth-bound"
                if not math.isclose(floor, est.bandwidth_term_s, rel_tol=1e-6):
                    assert est.regime == kind, (chip, coll, v)


def test_headline_leads_with_the_cross_node_time_and_its_regime():
    """H100 16×16 轴 X（每组跨 16 个节点），V = 10 MB：以前标题先说连续放置的 42.7 µs、延迟受限，再说“⚠ 约 235 µs”。
    现在先说跨节点模型的时间与它自己的判断（这里延迟项与带宽项在这里重算），连续放置的时间是旁注"""
    h100 = hardware.get_chip("h100")
    x = explorer.collective_state("h100", "all_gather", 1e7, axes=["X"], mesh={"X": 16, "Y": 16})
    lat = cost.gpu_ring_latency("all_gather", 16, 1, h100)
    bw = cost.gpu_allgather_cross_node(1e7, 1, 16, h100.nvlink_bw_per_direction, h100.ib_bw_per_gpu)
    word = "延迟受限" if lat > bw else "带宽受限"
    assert x["summary"].startswith(f"AllGather，V = 10 MB：按跨节点模型约 {units.fmt_time(lat + bw)}，{word}")
    aside = x["summary"].index(units.fmt_time(x["time_s"]))
    assert aside > x["summary"].index(units.fmt_time(lat + bw)) and "⚠" in x["summary"][:aside]
    # 两个时间写出来一样（比值约 1）时不报 ⚠，也不说“是它的约 1 倍”
    a2a = explorer.collective_state("h100", "all_to_all", 1e4, axes=["X"], mesh={"X": 16, "Y": 16})
    assert units.fmt_time(a2a["time_s"]) == units.fmt_time(a2a["cross_node_time_s"])
    assert "⚠" not in a2a["summary"] and "约 1 倍" not in a2a["where"] and "偏乐观" not in a2a["summary"]


@pytest.mark.parametrize("axis", ["X", "Y"])
def test_gb200_text_spaces_latin_words_like_the_book(axis):
    """以前 GB200 的说明写“一个NVLink 域里”“跨NVLink 域慢约”：中文与英文单词之间要留空格，与全书一致"""
    state = explorer.collective_state("gb200", "all_gather", 1e7, axes=[axis], mesh={"X": 16, "Y": 16})
    text = " ".join(state[k] for k in ("summary", "where", "crossover_text", "formula_text"))
    assert "跨 NVLink 域" in text and "一个 NVLink 域里" in text
    assert not re.findall(r"[\u4e00-\u9fff][A-Za-z]|[A-Za-z][\u4e00-\u9fff]", text)


def test_crossover_text_says_where_the_curve_starts_to_bend():
    """v5p 4×4×4 沿 X、Y、Z：曲线在第三阶段的块变成带宽受限时（2·16·V/(64·3·W_单向) = 2·t_hop，即 V = 12·W_单向·t_hop
    = 1.08 MB）就开始弯，在 V* = 2.16 MB 之前；说明里写出这个点。单轴时两者重合，不写"""
    v5p = hardware.get_chip("v5p")
    mesh = {"X": 4, "Y": 4, "Z": 4}
    state = explorer.collective_state("v5p", "all_gather", 1e6, axes=list(mesh), mesh=mesh)
    bend = 12 * v5p.ici_oneway_bw * v5p.hop_latency
    assert f"曲线在约 {units.fmt_bytes(bend)} 就开始弯" in state["crossover_text"]
    one = explorer.collective_state("v5p", "all_gather", 1e6, axes=["X"], mesh=mesh)
    assert "开始弯" not in one["crossover_text"]


def test_two_nodes_faster_than_one_says_why():
    """H100 16×16 轴 Y，V = 100 MB：两个节点（每个 8 个）约 218 µs，假想都在一个节点里约 224 µs。
    以前只说“跨节点反而快”；两个时间的系数不同（每个 GPU 经 NVLink 收 7/8 与 15/16），要说清楚"""
    y = explorer.collective_state("h100", "all_gather", 1e8, axes=["Y"], mesh={"X": 16, "Y": 16})
    assert "反而快" in y["where"] and "7/8" in y["where"] and "15/16" in y["where"]
    assert "跨节点不会更快" in y["where"]


def test_control_reasons_say_why_an_option_is_greyed_out():
    why = explorer.control_reasons(["v5e", "gb200"], ["X=16,Y=16", "X=4,Y=4,Z=4", "X=64"])
    choices = explorer.control_choices(["v5e", "gb200"], ["X=16,Y=16", "X=4,Y=4,Z=4", "X=64"])
    for mesh, chips in choices.items():
        for chip, ok in chips.items():
            assert not set(ok) & set(why[mesh][chip])  # 算得了的没有原因，算不了的都有
    assert "二维环面" in why["X=4,Y=4,Z=4"]["v5e"]["X"]
    assert "72" in why["X=16,Y=16"]["gb200"]["X,Y"] and "pod" in why["X=64"]["v5e"]["X"]
