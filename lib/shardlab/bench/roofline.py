"""单芯片 roofline 的参考数据：``benchmarks/gpu_reference.py`` 写的文件格式、读取与“实测 / 预测”表

文件（``book/data/gpu_reference_<设备>.json``）记着一次在真实 GPU 上的测量：不同形状的 bf16 matmul
（达到的 FLOP/s 与算术强度），以及大数组的拷贝与求和（达到的 HBM 带宽），连同设备、驱动、jax/jaxlib/CUDA 版本与日期。
格式只在这里定义一次（`validate`）：脚本写之前、这里读之后都用它检查。

预测用 roofline：matmul 的时间 = max(FLOPs / 峰值 FLOP/s, 字节 / HBM 带宽)，芯片常数来自 `shardlab.hardware`
（由文件里的 device_kind 在读取时查一次）；HBM 的预测就是芯片的 HBM 带宽。
CPU 上的 ``--dry-run`` 文件只用来检查脚本与格式：CPU 的常数是名义值，表格会这样标注。
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shardlab import cost, hardware, units
from shardlab.bench.model import BenchError

SCHEMA = "shardlab.gpu_reference/1"
FILE_PATTERN = "gpu_reference_*.json"
HBM_OPS = {"copy": "y = 2·x（读 V、写 V）", "sum": "sum(x)（读 V）"}

# 字段 → 允许的类型；None 表示可以为 null
_TOP = {
    "schema": (str,),
    "dry_run": (bool,),
    "date": (str,),
    "device_kind": (str,),
    "platform": (str,),
    "gpu_name": (str, None),
    "driver_version": (str, None),
    "cuda_version": (str, None),
    "jax_version": (str,),
    "jaxlib_version": (str,),
    "python": (str,),
    "repeats": (int,),
    "warmup": (int,),
    "matmul": (list,),
    "hbm": (list,),
}
_NUM = (int, float)
_MATMUL = {"m": (int,), "k": (int,), "n": (int,), "dtype": (str,), "flops": _NUM, "bytes": _NUM}
_MATMUL |= {"median_s": _NUM, "p10_s": _NUM, "p90_s": _NUM}
_HBM = {
    "op": (str,),
    "dtype": (str,),
    "array_bytes": _NUM,
    "bytes": _NUM,
    "median_s": _NUM,
    "p10_s": _NUM,
    "p90_s": _NUM,
}


def _check(obj: Any, spec: Mapping[str, tuple], where: str) -> None:
    if not isinstance(obj, dict):
        raise BenchError(f"{where} 应该是 JSON 对象，收到 {type(obj).__name__}")
    missing, extra = set(spec) - set(obj), set(obj) - set(spec)
    if missing or extra:
        raise BenchError(f"{where}：缺少字段 {sorted(missing)}，多出字段 {sorted(extra)}")
    for key, types in spec.items():
        value, allowed = obj[key], tuple(t for t in types if t is not None)
        ok = (value is None and None in types) or (
            isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed)
        )
        if not ok:
            raise BenchError(f"{where}：字段 {key!r} 的类型应为 {types}，收到 {value!r}")
        if allowed == _NUM and not value > 0:
            raise BenchError(f"{where}：字段 {key!r} 必须是正数，收到 {value!r}")


def validate(data: Any) -> dict:
    """检查一份 GPU 参考数据（脚本写之前、读取之后都调用）；不合格时抛 BenchError，说明哪个字段不对"""
    _check(data, _TOP, "GPU 参考数据")
    if data["schema"] != SCHEMA:
        raise BenchError(f"不认识的格式 {data['schema']!r}：这个版本读 {SCHEMA!r}")
    if not data["matmul"] and not data["hbm"]:
        raise BenchError("GPU 参考数据里没有任何测量（matmul 与 hbm 都是空的）")
    for i, row in enumerate(data["matmul"]):
        _check(row, _MATMUL, f"matmul[{i}]")
        if row["flops"] != cost.matmul_flops(row["m"], row["k"], row["n"]):
            raise BenchError(f"matmul[{i}]：flops 应为 2·m·k·n = {cost.matmul_flops(row['m'], row['k'], row['n'])}")
    for i, row in enumerate(data["hbm"]):
        _check(row, _HBM, f"hbm[{i}]")
        if row["op"] not in HBM_OPS:
            raise BenchError(f"hbm[{i}]：op 应为 {sorted(HBM_OPS)} 之一，收到 {row['op']!r}")
    return data


@dataclass(frozen=True)
class GpuReference:
    """读入并检查过的一份参考数据；chip 由 device_kind 在读取时查一次（未知芯片时读取就报错）"""

    path: Path
    data: dict
    chip: hardware.Chip

    @property
    def nominal(self) -> bool:
        """芯片常数是不是名义值（CPU 的 dry-run 文件）"""
        return self.chip.emulated


def load_gpu_reference(path) -> GpuReference:
    """读一份 ``benchmarks/gpu_reference.py`` 写的文件并检查格式"""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchError(f"读不了 GPU 参考数据 {path}：{e}") from None
    validate(data)
    try:
        chip = hardware.from_device_kind(data["device_kind"])
    except hardware.UnknownChipError as e:
        raise BenchError(f"{path}：{e}（需要芯片常数才能给出 roofline 预测）") from None
    return GpuReference(path, data, chip)


def gpu_references(directory) -> list[GpuReference]:
    """目录里全部 ``gpu_reference_*.json``（按文件名排序）；没有时返回空表"""
    return [load_gpu_reference(p) for p in sorted(Path(directory).glob(FILE_PATTERN))]


def matmul_predicted_s(row: Mapping[str, Any], chip: hardware.Chip) -> float:
    """roofline：max(FLOPs / 峰值 bf16 FLOP/s, 字节 / HBM 带宽)"""
    return max(cost.t_math(row["flops"], chip.flops_bf16), cost.t_comms(row["bytes"], chip.hbm_bw))


def _tflops(x: float) -> str:
    return f"{x / 1e12:.3g} TFLOP/s"


GPU_TABLE_HEADERS = ("测量", "大小", "算术强度（FLOP/字节）", "实测", "roofline 预测", "实测 / 预测")


def gpu_reference_table(ref: GpuReference | str | Path) -> list[list[str]]:
    """每个测量一行，列见 GPU_TABLE_HEADERS；配 ``notebook.md_table(GPU_TABLE_HEADERS, rows)``

    ref 是 `load_gpu_reference` 的结果或文件路径。matmul 比较达到的 FLOP/s，HBM 比较达到的带宽；
    “实测 / 预测”小于 1 表示没有达到 roofline。
    """
    ref = ref if isinstance(ref, GpuReference) else load_gpu_reference(ref)
    rows = []
    for r in ref.data["matmul"]:
        t_pred = matmul_predicted_s(r, ref.chip)
        achieved, predicted = r["flops"] / r["median_s"], r["flops"] / t_pred
        shape = f"[{r['m']}×{r['k']}]·[{r['k']}×{r['n']}] {r['dtype']}"
        rows.append(
            [
                "matmul",
                shape,
                f"{r['flops'] / r['bytes']:.0f}",
                _tflops(achieved),
                _tflops(predicted),
                f"{achieved / predicted:.2f}",
            ]
        )
    for r in ref.data["hbm"]:
        achieved = r["bytes"] / r["median_s"]
        rows.append(
            [
                f"HBM：{HBM_OPS[r['op']]}",
                units.fmt_bytes(r["array_bytes"]),
                "—",
                units.fmt_bw(achieved),
                units.fmt_bw(ref.chip.hbm_bw),
                f"{achieved / ref.chip.hbm_bw:.2f}",
            ]
        )
    return rows


def describe_gpu_reference(ref: GpuReference) -> str:
    """一句话：设备、驱动与库的版本、日期；CPU dry-run 时说明常数是名义值"""
    d = ref.data
    parts = [f"{d['device_kind']}（{ref.chip.name}）", f"jax {d['jax_version']}", f"jaxlib {d['jaxlib_version']}"]
    parts += [f"CUDA {d['cuda_version']}"] if d["cuda_version"] else []
    parts += [f"驱动 {d['driver_version']}"] if d["driver_version"] else []
    text = "，".join(parts) + f"，测于 {d['date']}"
    if ref.nominal or d["dry_run"]:
        text += "。这是 CPU 上的演练（dry run）：芯片常数是名义值，预测与比值没有意义"
    return text
