"""书中发表的集合通信实测（How To Scale Your Model）：数据、出处与代价模型的预测

数据在包里（``shardlab/bench/data/published_collectives.json``），装好的 shardlab（包括 Colab 上 pip 装的）
也能读到；每个点记着书中的章节、测的是什么、是正文写明的数（stated）还是从图上读的（figure），
以及书自己的理论估计（有的话）。这里只收正文写明的数。

``reference_data()`` 返回全部数据集；``ReferenceSet.predicted(v)`` 用 `shardlab.cost.estimate`
给出同一设置下模型的预测（时间，或 busbw），画法见 `shardlab.bench.plot.plot_reference`。
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from shardlab import cost, hardware, units
from shardlab.bench.model import BenchError, bus_factor, canonical

QUANTITIES = ("busbw", "time_s", "fraction_of_peak")
KINDS = ("stated", "figure")
DATA_FILE = "published_collectives.json"


@dataclass(frozen=True)
class ReferencePoint:
    """一个发表的数：bytes 即 V；value 的单位由数据集的 quantity 决定（bytes/s、秒或峰值的比例）"""

    bytes: float
    value: float
    theory: float | None
    kind: str
    what: str


@dataclass(frozen=True)
class ReferenceSet:
    """同一设置下的一组发表的数（一种集合通信、一种芯片、一个轴）"""

    id: str
    collective: str
    chip: hardware.Chip
    n: int
    axes: Mapping[str, int]
    slice_shape: tuple[int, ...] | None
    setting: str
    label: str  # 图例里的简称
    quantity: str
    source: str
    points: tuple[ReferencePoint, ...]

    def estimate(self, v_bytes: float) -> cost.Estimate:
        return cost.estimate(self.collective, v_bytes, dict(self.axes), self.chip, slice_shape=self.slice_shape)

    def predicted(self, v_bytes: float) -> float:
        """模型对 quantity 的预测：busbw（bytes/s）或时间（秒）；fraction_of_peak 的预测按定义是 1"""
        est = self.estimate(v_bytes)
        if self.quantity == "busbw":
            return bus_factor(self.collective, self.n) * v_bytes / est.time_s
        if self.quantity == "time_s":
            return est.time_s
        return 1.0

    def measured_time_s(self, point: ReferencePoint) -> float:
        """把发表的数换成时间（秒），以便与模型的时间曲线画在一起

        busbw → V·因子/busbw；fraction_of_peak → 模型的带宽项 / 比例（“达到峰值带宽的 95%”即用时是带宽项的 1/0.95）。
        """
        if self.quantity == "time_s":
            return point.value
        if self.quantity == "busbw":
            return bus_factor(self.collective, self.n) * point.bytes / point.value
        return self.estimate(point.bytes).bandwidth_term_s / point.value


def _point(raw: Mapping, where: str) -> ReferencePoint:
    p = ReferencePoint(
        float(raw["bytes"]),
        float(raw["value"]),
        None if raw.get("theory") is None else float(raw["theory"]),
        str(raw["kind"]),
        str(raw["what"]),
    )
    if p.kind not in KINDS or not (p.bytes > 0 and p.value > 0 and math.isfinite(p.value)) or not p.what:
        raise BenchError(f"{where}：发表的点不合法（kind 须为 {KINDS}，bytes 与 value 须为正数，what 不能为空）：{raw}")
    return p


def parse(data: Mapping) -> tuple[ReferenceSet, ...]:
    """由 JSON 对象得到数据集；每个字段在这里检查一次"""
    sets = []
    for raw in data["datasets"]:
        where = f"数据集 {raw.get('id')!r}"
        if raw["quantity"] not in QUANTITIES:
            raise BenchError(f"{where}：quantity 须为 {QUANTITIES} 之一，收到 {raw['quantity']!r}")
        if not raw.get("source") or not raw["points"]:
            raise BenchError(f"{where}：必须写明出处（source）并至少有一个点")
        axes = {str(k): int(v) for k, v in raw["axes"].items()}
        if math.prod(axes.values()) != int(raw["n"]):
            raise BenchError(f"{where}：axes {axes} 的设备数与 n = {raw['n']} 不符")
        shape = raw.get("slice_shape")
        sets.append(
            ReferenceSet(
                id=str(raw["id"]),
                collective=canonical(raw["collective"]),
                chip=hardware.get_chip(raw["chip"]),
                n=int(raw["n"]),
                axes=axes,
                slice_shape=None if shape is None else tuple(int(s) for s in shape),
                setting=str(raw["setting"]),
                label=str(raw["label"]),
                quantity=raw["quantity"],
                source=str(raw["source"]),
                points=tuple(_point(p, where) for p in raw["points"]),
            )
        )
    return tuple(sets)


def reference_data() -> tuple[ReferenceSet, ...]:
    """书中发表的集合通信实测（8×H100 AllReduce 的 busbw；TPU v5e 的 AllGather），每组带出处"""
    text = resources.files("shardlab.bench").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return parse(json.loads(text))


def by_id(sets: Sequence[ReferenceSet], ident: str) -> ReferenceSet:
    for s in sets:
        if s.id == ident:
            return s
    raise BenchError(f"没有 id 为 {ident!r} 的数据集：有 {[s.id for s in sets]}")


def _fmt(quantity: str, value: float) -> str:
    if quantity == "busbw":
        return units.fmt_bw(value)
    if quantity == "time_s":
        return units.fmt_time(value)
    return f"峰值的 {value:.0%}"


REFERENCE_TABLE_HEADERS = ("设置", "V", "书中实测", "书中估计", "本课程模型", "实测 / 模型")


def reference_table(sets: Sequence[ReferenceSet] | None = None) -> list[list[str]]:
    """每个发表的点一行，列见 REFERENCE_TABLE_HEADERS；配 ``notebook.md_table(REFERENCE_TABLE_HEADERS, rows)``

    “实测 / 模型”：busbw 是实测带宽 / 模型带宽（< 1 表示比模型慢），时间是实测时间 / 模型时间（> 1 表示比模型慢）；
    “峰值的 95%”这类点本身就是比例，模型一栏给出它对应的带宽项时间。
    """
    rows = []
    for s in sets if sets is not None else reference_data():
        for p in s.points:
            if s.quantity == "fraction_of_peak":
                model, ratio = f"带宽项 {units.fmt_time(s.estimate(p.bytes).bandwidth_term_s)}", f"{p.value:.2f}"
            else:
                pred = s.predicted(p.bytes)
                model, ratio = _fmt(s.quantity, pred), f"{p.value / pred:.2f}"
            theory = "—" if p.theory is None else _fmt(s.quantity, p.theory)
            rows.append([s.setting, units.fmt_bytes(p.bytes), _fmt(s.quantity, p.value), theory, model, ratio])
    return rows
