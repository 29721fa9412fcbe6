"""基准的结果：每个（集合通信, 大小）一行 `BenchRow`，整次扫描 `BenchResult`；读写 CSV / JSON，画表

表格只有一种画法（`BenchResult.rich_table`，用 rich）：命令行直接打印它，``BenchResult.table()`` 把同一张表
渲染成纯文字（笔记本里 print 用）。rich 按东亚字宽对齐中文，手写的 ``ljust`` 做不到。

本模块故意不写 ``from __future__ import annotations``：`dataclasses.fields` 的 ``type`` 因而是真正的类型
（int、float、str、bool），``from_csv`` 按它转换，而不是比较注解字符串。
"""

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from shardlab import hardware, units
from shardlab.bench import plot
from shardlab.bench.model import (
    DISPLAY,
    EMULATED_NOTE,
    BenchError,
    bandwidths,
    crossover_bytes,
    fmt_size,
    nccl_size,
    predict,
)

# ---- 表格（本包唯一的表格画法） ----

REGIME_ZH = {"latency-bound": "延迟受限", "bandwidth-bound": "带宽受限"}  # 表里的区间（JSON/CSV 里仍是英文键）

TABLE_WIDTH = 160  # 纯文字与管道输出的宽度：够放下全部列，不折行


def make_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, left: int = 1, title: str = "") -> Table:
    """rich 表格：前 left 列左对齐，其余右对齐（数字）"""
    table = Table(title=title or None, box=box.SIMPLE_HEAD, title_justify="left")
    for i, head in enumerate(headers):
        table.add_column(head, justify="left" if i < left else "right")
    for row in rows:
        table.add_row(*map(str, row))
    return table


def render_text(table: Table, notes: Sequence[str] = ()) -> str:
    """把 rich 表格渲染成纯文字（没有颜色与控制字符），notes 每条一行加在表后"""
    buf = io.StringIO()
    console = Console(file=buf, width=TABLE_WIDTH, color_system=None, force_terminal=False, force_jupyter=False)
    console.print(table)
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]  # rich 把每行补满到表宽
    return "\n".join([*lines, *notes]).strip("\n")


def _time_or_dash(seconds: float) -> str:
    return units.fmt_time(seconds) if math.isfinite(seconds) and seconds > 0 else "—"


# ---- 结果 ----


@dataclass
class BenchRow:
    """一次（集合通信, 大小）测量；时间单位秒，带宽 bytes/s，bytes 即 V

    chip 是芯片的名字，只供人读（预测在测量时已算好，不再按名字查芯片）；
    crossover_bytes 是预测的延迟项 = 带宽项处的 V（没有延迟项或无法预测时为 NaN）；
    无法预测时 predicted_s 为 NaN、regime 为空，note 写明原因。
    """

    collective: str
    bytes: int
    n: int
    s_bytes: float
    dtype: str
    repeats: int
    median_s: float
    p10_s: float
    p90_s: float
    min_s: float
    max_s: float
    algbw: float
    busbw: float
    predicted_s: float
    ratio: float
    regime: str
    model_valid: bool
    chip: str
    crossover_bytes: float = math.nan
    note: str = ""


def summarize(
    collective: str,
    v_bytes: int,
    n: int,
    times: Sequence[float],
    *,
    dtype: str,
    chip: hardware.Chip,
    slice_shape: Sequence[int] | None = None,
) -> BenchRow:
    """由一组计时得到一行：中位数（numpy.median）、p10/p90、algbw/busbw、预测与 measured/predicted

    collective 是解析过的名字。预测失败（如书中没有给出 A100 的跨节点带宽）时不猜：
    predicted_s 为 NaN，note 写明原因，表格把原因列在表后。
    """
    t = np.asarray(times, dtype=float)
    med = float(np.median(t))
    algbw, busbw = bandwidths(collective, v_bytes, n, med)
    pred, regime, note, xover = math.nan, "", "", math.nan
    try:
        pred, regime, _ = predict(collective, v_bytes, n, chip, slice_shape=slice_shape)
        xover = crossover_bytes(collective, n, chip, slice_shape=slice_shape) or math.nan
    except ValueError as e:  # BenchError 与 cost/hardware 的参数错误都是 ValueError
        note = f"无法预测（no prediction）：{e}"
    return BenchRow(
        collective=collective,
        bytes=int(v_bytes),
        n=n,
        s_bytes=nccl_size(collective, v_bytes, n),
        dtype=str(dtype),
        repeats=len(t),
        median_s=med,
        p10_s=float(np.percentile(t, 10)),
        p90_s=float(np.percentile(t, 90)),
        min_s=float(t.min()),
        max_s=float(t.max()),
        algbw=algbw,
        busbw=busbw,
        predicted_s=pred,
        ratio=med / pred if math.isfinite(pred) and pred > 0 else math.nan,
        regime=regime,
        model_valid=not chip.emulated,
        chip=chip.name,
        crossover_bytes=xover,
        note=note,
    )


def _parse_bool(text: str) -> bool:
    if text not in ("True", "False"):
        raise BenchError(f"CSV 里的布尔值应为 True 或 False，收到 {text!r}")
    return text == "True"


# 列的真实类型 → 由 CSV 文字转换的函数
_FROM_TEXT = {int: int, float: float, str: str, bool: _parse_bool}
_COLUMNS = {f.name: _FROM_TEXT[f.type] for f in fields(BenchRow)}


def _row_from_text(record: dict[str, str]) -> BenchRow:
    unknown = set(record) - set(_COLUMNS)
    if unknown:
        raise BenchError(f"CSV 有未知的列 {sorted(unknown)}：已知的列是 {list(_COLUMNS)}")
    return BenchRow(**{k: _COLUMNS[k](v) for k, v in record.items()})


@dataclass
class BenchResult:
    rows: list[BenchRow]
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_csv(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(_COLUMNS))
            writer.writeheader()
            writer.writerows(asdict(r) for r in self.rows)
        return path

    def to_json(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"metadata": self.metadata, "rows": [asdict(r) for r in self.rows]}
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1, allow_nan=True))
        return path

    @classmethod
    def from_json(cls, path) -> "BenchResult":
        data = json.loads(Path(path).read_text())
        return cls([BenchRow(**r) for r in data["rows"]], data.get("metadata", {}))

    @classmethod
    def from_csv(cls, path) -> "BenchResult":
        with Path(path).open(newline="") as f:
            return cls([_row_from_text(r) for r in csv.DictReader(f)])

    def notes(self) -> list[str]:
        """表后的说明：模拟设备的提示、每种无法预测的原因（各一次）"""
        out = ["* " + EMULATED_NOTE] if any(not r.model_valid for r in self.rows) else []
        return out + list(dict.fromkeys(r.note for r in self.rows if r.note))

    def rich_table(self) -> Table:
        """结果表（rich）；命令行直接打印，`table` 渲染成纯文字"""
        head = ("原语", "V", "中位数", "p10–p90", "algbw", "busbw", "预测", "实测/预测", "区间")
        body = [
            (
                DISPLAY[r.collective],
                fmt_size(r.bytes),
                units.fmt_time(r.median_s),
                f"{units.fmt_time(r.p10_s)}–{units.fmt_time(r.p90_s)}",
                units.fmt_bw(r.algbw),
                units.fmt_bw(r.busbw),
                _time_or_dash(r.predicted_s),
                (f"{r.ratio:.3g}" if math.isfinite(r.ratio) else "—") + ("" if r.model_valid else "*"),
                REGIME_ZH.get(r.regime, r.regime) if r.regime else "—",
            )
            for r in self.rows
        ]
        meta = self.metadata
        title = f"{meta['chip']} · n = {meta['n_devices']}" if {"chip", "n_devices"} <= set(meta) else ""
        return make_table(head, body, title=title)

    def table(self) -> str:
        """纯文字表格（print 用），表后是 `notes`"""
        return render_text(self.rich_table(), self.notes())

    def plot(self, target=None, **kw):
        """时间与 busbw 随大小变化的双对数图；target 为路径（保存并返回路径）、一个或两个 ax，或 None（返回 fig）"""
        return plot.plot_result(self, target, **kw)
