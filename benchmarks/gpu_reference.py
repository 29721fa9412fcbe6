"""第 6 章单芯片测量的 GPU 版本：bf16 matmul 的 roofline（各种算术强度）与 HBM 带宽，写成参考数据

运行（在有 GPU 的机器上，一条命令，约一两分钟；环境里要装带 CUDA 的 jaxlib，如 ``pip install "jax[cuda12]"``）::

    .venv/bin/python benchmarks/gpu_reference.py                 # 写 book/data/gpu_reference_<设备>.json
    .venv/bin/python benchmarks/gpu_reference.py --dry-run       # CPU 上的演练：极小的尺寸，写到 build/，只检查脚本与格式

测量：

- matmul ``[m×k]·[k×n]``，k = n 固定、m 从很小到很大：算术强度 2mkn / (2(mk + kn + mn)) 从十几升到几千 FLOP/字节，
  穿过芯片的临界强度（H100 约 295），达到的 FLOP/s 先随强度上升（受 HBM 限制）再贴近峰值（受计算限制）；
  再加几个方阵。dtype 为 bfloat16（dry-run 在 CPU 上用 float32）。
- HBM：一个大数组（默认 1 GiB）的 ``2·x``（读 V、写 V，共 2V 字节）与 ``sum(x)``（读 V）。

每个点编译一次、预热、重复计时（`shardlab.bench.measure.time_call`），记中位数与 p10/p90。
文件里有设备（device_kind）、``nvidia-smi`` 给出的 GPU 名与驱动版本（有的话）、jax / jaxlib / CUDA 的版本与日期；
格式由 `shardlab.bench.roofline.validate` 检查，章节用 `shardlab.bench.roofline.gpu_reference_table` 读出“实测 / 预测”。
没有 GPU 时（且不是 --dry-run）脚本报错退出，不写任何文件：参考数据只能来自真实的硬件。
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np

from shardlab import cost
from shardlab.bench import measure, roofline

ROOT = Path(__file__).resolve().parent.parent
# (m 的取值, k = n)；m 取 2 的幂，强度约为 m（m ≪ k 时）
FULL = {"ms": [2**i for i in range(4, 14)], "kn": 8192, "squares": [1024, 2048, 4096, 16384], "hbm_bytes": 2**30}
DRY = {"ms": [8, 32, 128], "kn": 128, "squares": [64], "hbm_bytes": 2**20}


def _stats(times) -> dict:
    t = np.asarray(times, dtype=float)
    return {"median_s": float(np.median(t)), "p10_s": float(np.percentile(t, 10)), "p90_s": float(np.percentile(t, 90))}


def time_matmul(m: int, k: int, n: int, dtype, device, repeats: int, warmup: int) -> dict:
    a = jax.device_put(jnp.ones((m, k), dtype), device)
    b = jax.device_put(jnp.ones((k, n), dtype), device)
    times = measure.time_call(jax.jit(jnp.matmul), a, b, repeats=repeats, warmup=warmup)
    itemsize = jnp.dtype(dtype).itemsize
    return {
        "m": m,
        "k": k,
        "n": n,
        "dtype": jnp.dtype(dtype).name,
        "flops": cost.matmul_flops(m, k, n),
        "bytes": itemsize * (m * k + k * n + m * n),  # 读 A、B，写 C
        **_stats(times),
    }


def time_hbm(array_bytes: int, dtype, device, repeats: int, warmup: int) -> list[dict]:
    itemsize = jnp.dtype(dtype).itemsize
    x = jax.device_put(jnp.ones((array_bytes // itemsize,), dtype), device)
    ops = {
        "copy": (jax.jit(lambda v: v * 2), 2 * array_bytes),
        "sum": (jax.jit(lambda v: jnp.sum(v, dtype=jnp.float32)), array_bytes),
    }
    rows = []
    for op, (fn, moved) in ops.items():
        times = measure.time_call(fn, x, repeats=repeats, warmup=warmup)
        rows.append(
            {"op": op, "dtype": jnp.dtype(dtype).name, "array_bytes": array_bytes, "bytes": moved, **_stats(times)}
        )
    return rows


def nvidia_smi() -> tuple[str | None, str | None]:
    """(GPU 名, 驱动版本)；没有 nvidia-smi 或它失败时为 (None, None)"""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    first = out.strip().splitlines()[0] if out.strip() else ""
    name, _, driver = (s.strip() for s in first.partition(","))
    return name or None, driver or None


def cuda_version(device) -> str | None:
    """XLA 后端报告的平台版本（GPU 上含 CUDA 版本）；CPU 上为 None"""
    if device.platform == "cpu":
        return None
    text = getattr(device.client, "platform_version", "") or ""
    return " ".join(text.split()) or None


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def run(dry_run: bool, repeats: int, warmup: int) -> dict:
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if dry_run:
        device, dtype, sizes = jax.devices("cpu")[0], jnp.float32, DRY
    elif gpus:
        device, dtype, sizes = gpus[0], jnp.bfloat16, FULL
    else:
        raise SystemExit(
            "没有 GPU（jax.devices() 里没有 gpu 设备）：参考数据只能在 GPU 上测；CPU 上只能用 --dry-run 检查脚本"
        )
    kn = sizes["kn"]
    shapes = [(m, kn, kn) for m in sizes["ms"]] + [(s, s, s) for s in sizes["squares"]]
    matmul = []
    for m, k, n in shapes:
        matmul.append(time_matmul(m, k, n, dtype, device, repeats, warmup))
        print(f"matmul [{m}×{k}]·[{k}×{n}]：{matmul[-1]['median_s'] * 1e6:.1f} µs", flush=True)
    hbm = time_hbm(sizes["hbm_bytes"], dtype, device, repeats, warmup)
    gpu_name, driver = nvidia_smi() if not dry_run else (None, None)
    data = {
        "schema": roofline.SCHEMA,
        "dry_run": dry_run,
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "device_kind": device.device_kind,
        "platform": device.platform,
        "gpu_name": gpu_name,
        "driver_version": driver,
        "cuda_version": cuda_version(device),
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "python": platform.python_version(),
        "repeats": repeats,
        "warmup": warmup,
        "matmul": matmul,
        "hbm": hbm,
    }
    return roofline.validate(data)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="GPU 上第 6 章的单芯片测量：matmul roofline 与 HBM 带宽")
    p.add_argument(
        "--out", type=Path, help="输出目录（默认 book/data/；--dry-run 时默认 build/，演练的文件不进 book/data）"
    )
    p.add_argument("--dry-run", action="store_true", help="在 CPU 上用极小的尺寸演练（只检查脚本与文件格式）")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args(argv)
    data = run(args.dry_run, args.repeats, args.warmup)
    name = "cpu-dry-run" if args.dry_run else slug(data["gpu_name"] or data["device_kind"])
    out = args.out or (ROOT / "build" if args.dry_run else ROOT / "book" / "data")
    path = out / f"gpu_reference_{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    print(f"已写入 {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
