"""``python -m shardlab.bench`` / ``shardlab-bench`` 的命令行

    python -m shardlab.bench                                  # cpu 档位，五种集合通信，1 KiB–16 MiB
    python -m shardlab.bench --profile tpu                    # 加速器：1 KiB–1 GiB
    python -m shardlab.bench --sizes 1k:1M:4 --collectives all_reduce,all_gather --repeats 5
    python -m shardlab.bench --processes 2                    # 2 个本地进程（jax.distributed + gloo），与单进程比较
    python -m shardlab.bench --matmul                         # 另测单芯片 matmul 的 FLOP/s

结果（CSV、JSON、PNG）写到 --out，默认 build/bench/<日期>-<设备>/。
跨进程的 worker 有自己的入口（`shardlab.bench.worker`），不经过这里。
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from pathlib import Path

from rich.console import Console

from shardlab import runtime
from shardlab.bench.measure import demo_matmul_shape, run_sweep, time_matmul
from shardlab.bench.model import COLLECTIVES, DEFAULT_TIMING, BenchError, canonical, parse_sizes
from shardlab.bench.multiprocess import MultiProcessConfig, MultiProcessError, run_multiprocess
from shardlab.bench.result import TABLE_WIDTH, BenchResult

_MP = MultiProcessConfig()  # 跨进程的默认值（只在 MultiProcessConfig 里定义）


def _sizes(text: str) -> list[int]:
    try:
        return parse_sizes(text)
    except BenchError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _collectives(text: str) -> list[str]:
    try:
        return [canonical(c) for c in re.split(r"[,\s]+", text.strip()) if c]
    except ValueError as e:  # names.UnknownCollectiveError
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"需要正整数，收到 {text!r}")
    return value


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"需要非负整数，收到 {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    (r_cpu, w_cpu, _), (r_acc, w_acc, _) = DEFAULT_TIMING["cpu"], DEFAULT_TIMING["accelerator"]
    p = argparse.ArgumentParser(
        prog="python -m shardlab.bench",
        description="集合通信基准：计时、nccl-tests 的 algbw/busbw、与代价模型的预测比较",
    )
    p.add_argument("--profile", choices=runtime.PROFILES, help="运行档位；默认读 COURSE_PROFILE，再默认 cpu")
    p.add_argument(
        "--sizes",
        type=_sizes,
        help="大小：1k:16M（每次 ×2）、1k:16M:4（每次 ×4）或 1k,64k,1M；k/M/G 按 1024（KiB/MiB/GiB）；"
        "默认 cpu 1 KiB–16 MiB，加速器 1 KiB–1 GiB",
    )
    p.add_argument("--collectives", type=_collectives, help=f"逗号分隔，可选 {', '.join(COLLECTIVES)}")
    p.add_argument(
        "--repeats",
        type=_positive,
        help=f"每个点最多重复几次（默认 cpu {r_cpu}，加速器 {r_acc}；跨进程 {_MP.repeats}）",
    )
    p.add_argument("--warmup", type=_count, help=f"预热次数（默认 cpu {w_cpu}，加速器 {w_acc}；跨进程 {_MP.warmup}）")
    p.add_argument("--out", type=Path, help="输出目录（默认 build/bench/<日期>-<设备>/）")
    p.add_argument("--processes", type=_positive, default=1, help="> 1 时在本机启动这么多进程跨进程计时")
    p.add_argument(
        "--devices-per-process",
        type=_positive,
        help=f"跨进程时每个进程的 CPU 设备数（默认 {_MP.devices_per_process}）",
    )
    p.add_argument("--timeout", type=float, help=f"跨进程时等待子进程的秒数（默认 {_MP.timeout_s:g}）")
    p.add_argument("--matmul", action="store_true", help="另测单芯片 matmul 的 FLOP/s（roofline）")
    p.add_argument("--no-progress", action="store_true", help="不显示进度条")
    p.add_argument("--no-plot", action="store_true", help="不画图")
    return p


def _default_out(device_kind: str) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-") or "device"
    return Path("build/bench") / f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{slug}"


def _print_table(result: BenchResult) -> None:
    console = Console()
    if not console.is_terminal:
        console = Console(width=TABLE_WIDTH)  # 管道或文件：不按 80 列折行
    console.print(result.rich_table())
    for note in result.notes():
        console.print(note, markup=False)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.processes > 1:
        return _main_multiprocess(args)

    rt = runtime.setup(args.profile)
    print(rt.describe())
    result = run_sweep(
        args.collectives or COLLECTIVES,
        args.sizes,
        rt=rt,
        repeats=args.repeats,
        warmup=args.warmup,
        progress=not args.no_progress,
    )
    meta = result.metadata
    name = meta["device_kind"] if not meta["emulated_mesh"] else "cpu-emulated"
    if meta["emulated_mesh"] and meta["compute_device_kind"] != "cpu":
        name += f"-{meta['compute_device_kind']}"  # 单芯片加速器：集合通信在 CPU 网格上
    out = args.out or _default_out(name)
    _print_table(result)
    paths = [result.to_csv(out / "bench.csv"), result.to_json(out / "bench.json")]
    if not args.no_plot:
        paths.append(result.plot(out / "bench.png"))
    if args.matmul:
        print(time_matmul(*demo_matmul_shape(rt), rt=rt))
    print("结果已写入：" + "，".join(str(p) for p in paths))
    return 0


def _main_multiprocess(args) -> int:
    given = {
        "processes": args.processes,
        "devices_per_process": args.devices_per_process,
        "collectives": args.collectives,
        "sizes": args.sizes,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "timeout_s": args.timeout,
    }
    try:
        config = MultiProcessConfig(**{k: v for k, v in given.items() if v is not None})
    except ValueError as e:  # BenchError 或 names.UnknownCollectiveError
        print(f"参数不合法：{e}", file=sys.stderr)
        return 2
    print(f"启动 {config.processes} 个进程，每个 {config.devices_per_process} 个 CPU 设备（jax.distributed，gloo）…")
    try:
        res = run_multiprocess(config)
    except MultiProcessError as e:
        print(f"跨进程基准失败：{e}", file=sys.stderr)
        return 1
    print(res.table())
    out = args.out or _default_out("cpu-multiprocess")
    print(f"结果已写入：{res.to_json(out / 'multiprocess.json')}，{res.cross.to_csv(out / 'cross_process.csv')}")
    return 0
