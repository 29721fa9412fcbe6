"""网页上两个交互探索器（第 5 章的集合通信、第 6 章的分片矩阵乘法）显示的数字

浏览器里（Pyodide）与笔记本里调用的是同一份代码：探索器把控件的值原样传给这里的函数，
把返回的字典（可以直接 ``json.dumps``）写进元素的 ``data-state``，再画出来。
笔记本里一次调用就得到同样的结果::

    from shardlab import explorer
    explorer.collective_state("v5e", "all_gather", 2**20, axes=["X"], mesh={"X": 16, "Y": 16})
    explorer.sharding_state(65536, 8192, 32768, "v5p", {"Y": 4})

出错时（芯片与网格不符等）不抛异常，返回 ``{"args": ..., "error": 中文说明}``，探索器把说明显示出来。
本模块只用标准库。
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shardlab import cost, hardware, names, planner
from shardlab.units import fmt_bytes, fmt_time

__all__ = ["CURVE_DECADES", "CURVE_POINTS_PER_DECADE", "collective_state", "curve_sizes", "sharding_state"]

CURVE_DECADES = (3, 9)  # 曲线的横轴：10^3 到 10^9 字节
CURVE_POINTS_PER_DECADE = 20  # 共 121 个点；探索器的对数滑块取同样的格点


def curve_sizes() -> list[float]:
    """曲线横轴的字节数：10^(3 + k/20)，k = 0 … 120"""
    lo, hi = CURVE_DECADES
    n = (hi - lo) * CURVE_POINTS_PER_DECADE
    return [10 ** (lo + k / CURVE_POINTS_PER_DECADE) for k in range(n + 1)]


def _mesh_dict(mesh) -> dict[str, int]:
    if isinstance(mesh, str):  # 'X=4,Y=4'
        pairs = [part.split("=") for part in mesh.replace(" ", "").split(",") if part]
        return {name: int(size) for name, size in pairs}
    return {str(name): int(size) for name, size in dict(mesh).items()}


def _axes_list(axes) -> list[str]:
    if isinstance(axes, str):
        return [a for a in axes.replace(" ", "").split(",") if a]
    return [str(a) for a in axes]


def default_slice_shape(chip: str | hardware.Chip, mesh: Mapping[str, int]) -> tuple[int, ...] | None:
    """TPU 的网格轴比 torus 维数少时补齐切片形状：3D torus 补 4（完整的 4×4×4 立方体才有 wraparound），2D 补 1"""
    chip = hardware.get_chip(chip)
    if not isinstance(chip, hardware.TpuChip):
        return None
    shape = tuple(mesh.values())
    pad = 4 if chip.torus_dims == 3 else 1
    return shape + (pad,) * max(0, chip.torus_dims - len(shape))


def _default_mesh(chip: hardware.Chip) -> dict[str, int]:
    if isinstance(chip, hardware.TpuChip):
        return dict(zip("XYZ", (4,) * chip.torus_dims))
    return {"X": 8}


def _crossover(coll: str, axes, chip, mesh, slice_shape) -> float | None:
    """延迟项等于带宽项时的字节数：带宽项与 V 成正比，延迟项是 V = 0 时的时间"""
    latency = cost.estimate(coll, 0.0, axes, chip, mesh=mesh, slice_shape=slice_shape).time_s
    slope = cost.estimate(coll, 1.0, axes, chip, mesh=mesh, slice_shape=slice_shape).bandwidth_term_s
    return latency / slope if slope > 0 else None


def collective_state(chip, collective, nbytes, axes=None, mesh=None) -> dict:
    """第 5 章探索器：一次集合通信的 cost.estimate，加上四种集合通信的时间曲线与延迟 / 带宽的交点

    axes：经过的网格轴（轴名列表或 'X,Y'；默认网格的全部轴）；mesh：{轴名: 大小} 或 'X=4,Y=4'
    （默认 TPU 每维 4、GPU 与 CPU 8 个设备）。TPU 的切片形状取网格形状，维数不够时按 default_slice_shape 补齐。
    """
    args = {"chip": chip, "collective": collective, "nbytes": nbytes, "axes": axes, "mesh": mesh}
    try:
        spec = hardware.get_chip(chip)
        mesh_d = _default_mesh(spec) if mesh is None else _mesh_dict(mesh)
        axes_l = list(mesh_d) if axes is None else _axes_list(axes)
        slice_shape = default_slice_shape(spec, mesh_d)
        est = cost.estimate(collective, nbytes, axes_l, spec, mesh=mesh_d, slice_shape=slice_shape)
        sizes = curve_sizes()
        curves, crossovers = {}, {}
        for coll in names.COLLECTIVES:
            try:
                curves[coll] = [
                    cost.estimate(coll, v, axes_l, spec, mesh=mesh_d, slice_shape=slice_shape).time_s for v in sizes
                ]
                crossovers[coll] = _crossover(coll, axes_l, spec, mesh_d, slice_shape)
            except ValueError:  # 例如跨节点的 AllToAll 在某些 GPU 上没有公式
                curves[coll], crossovers[coll] = None, None
    except (ValueError, KeyError) as err:
        return {"args": args, "error": str(err)}
    regime = "延迟受限" if est.regime == "latency-bound" else "带宽受限"
    return {
        "args": args,
        "chip": est.chip,
        "collective": est.collective,
        "collective_display": names.display(est.collective),
        "nbytes": est.nbytes,
        "axes": [[name, size] for name, size in est.axes],
        "mesh": mesh_d,
        "slice_shape": None if slice_shape is None else list(slice_shape),
        "time_s": est.time_s,
        "bandwidth_term_s": est.bandwidth_term_s,
        "hop_latency_s": est.hop_latency_s,
        "regime": est.regime,
        "wraparound": None if est.wraparound is None else list(est.wraparound),
        "formula": est.formula,
        "summary": f"{names.display(est.collective)}，V = {fmt_bytes(est.nbytes)}：约 {fmt_time(est.time_s)}，{regime}",
        "curve": {"nbytes": sizes, "time_s": curves},
        "crossover_bytes": crossovers,
    }


def _option(o: planner.MatmulOption) -> dict:
    return {
        "label": o.label,
        "kinds": list(o.kinds),
        "steps": [
            {
                "name": s.name,
                "kind": s.kind,
                "axes": list(s.axes),
                "operand": s.operand,
                "nbytes": s.nbytes,
                "time_s": s.time_s,
                "regime": s.regime,
            }
            for s in o.steps
        ],  # fmt: skip
        "out": str(o.out),
        "flops_per_device": o.flops_per_device,
        "t_math": o.t_math,
        "t_comms": o.t_comms,
        "t_total": o.t_total,
        "bound": o.bound,
        "describe": o.describe(),
    }


def sharding_state(
    B: int,
    D: int,
    F: int,
    chip,
    mesh,
    *,
    a: str = "In[B, D]",
    b: str = "W[D_Y, F]",
    out: str | None = None,
    slice_shape: Sequence[int] | None = None,
    dtype: str = "bf16",
) -> dict:
    """第 6 章探索器：In[B, D] ·_D W[D, F] 在网格上的各种做法，按规划器的顺序（总时间 T_math + T_comms 从小到大）

    a、b 是两个乘数的分片记号（默认权重沿 Y 切 D，如书中的表）；mesh 必须含 b 用到的轴。
    每个选项带 T_math、T_comms、总时间与规划器自己的说明（MatmulOption.describe）；explain 是 MatmulPlan.explain。
    """
    args = {"B": B, "D": D, "F": F, "chip": chip, "mesh": mesh, "a": a, "b": b, "out": out,
            "slice_shape": slice_shape, "dtype": dtype}  # fmt: skip
    try:
        mesh_d = _mesh_dict(mesh)
        shape = tuple(slice_shape) if slice_shape is not None else default_slice_shape(chip, mesh_d)
        plan = planner.plan_matmul(
            a, b, "D", mesh_d, chip, shapes={"B": B, "D": D, "F": F}, out=out, dtype=dtype, slice_shape=shape
        )
    except (ValueError, KeyError) as err:
        return {"args": args, "error": str(err)}
    options = [_option(o) for o in plan.alternatives]
    return {
        "args": args,
        "chip": plan.chip,
        "mesh": mesh_d,
        "slice_shape": None if shape is None else list(shape),
        "case": plan.case,
        "notes": list(plan.notes),
        "chosen": plan.alternatives.index(plan.chosen),
        "options": options,
        "explain": plan.explain(n_alternatives=len(options)),
        "flops": cost.matmul_flops(B, D, F),
    }
