"""``python -m shardlab.bench`` 的命令行

    python -m shardlab.bench                                  # cpu 档位，五种集合通信，1 KiB–16 MiB
    python -m shardlab.bench --profile tpu                    # 加速器：到 1 GiB
    python -m shardlab.bench --sizes 1k:1M:4 --collectives all_reduce,all_gather --repeats 5
    python -m shardlab.bench --processes 2                    # 2 个本地进程（jax.distributed + gloo），与单进程比较
    python -m shardlab.bench --matmul                         # 另测单芯片 matmul 的 FLOP/s

结果（CSV、JSON、PNG）写到 --out，默认 build/bench/<日期>-<设备>/。
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from pathlib import Path

from shardlab import bench, runtime, units


def _sizes(text: str) -> str:
    try:
        bench.parse_sizes(text)
    except bench.BenchError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _collectives(text: str) -> list[str]:
    try:
        return [bench.canonical(c) for c in re.split(r"[,\s]+", text.strip()) if c]
    except bench.BenchError as e:
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
    p = argparse.ArgumentParser(
        prog="python -m shardlab.bench",
        description="集合通信基准：计时、nccl-tests 的 algbw/busbw、与代价模型的预测比较",
    )
    p.add_argument("--profile", choices=runtime.PROFILES, help="运行档位；默认读 COURSE_PROFILE，再默认 cpu")
    p.add_argument(
        "--sizes", type=_sizes, help="大小：1k:16M（每次 ×2）、1k:16M:4（每次 ×4）或 1k,64k,1M；k/M/G 按 1024"
    )
    p.add_argument("--collectives", type=_collectives, help=f"逗号分隔，可选 {', '.join(bench.COLLECTIVES)}")
    p.add_argument("--repeats", type=_positive, help="每个点最多重复几次（默认 cpu 10，加速器 20）")
    p.add_argument("--warmup", type=_count, help="预热次数（默认 cpu 2，加速器 5）")
    p.add_argument("--out", type=Path, help="输出目录（默认 build/bench/<日期>-<设备>/）")
    p.add_argument("--processes", type=_positive, default=1, help="> 1 时在本机启动这么多进程跨进程计时")
    p.add_argument("--devices-per-process", type=_positive, default=4, help="跨进程时每个进程的 CPU 设备数")
    p.add_argument("--timeout", type=float, default=180.0, help="跨进程时等待子进程的秒数")
    p.add_argument("--matmul", action="store_true", help="另测单芯片 matmul 的 FLOP/s（roofline）")
    p.add_argument("--no-progress", action="store_true", help="不显示进度条")
    p.add_argument("--no-plot", action="store_true", help="不画图")
    worker = p.add_argument_group("worker（由 --processes 或多机启动器调用）")
    worker.add_argument("--worker", action="store_true", help="作为 jax.distributed 的一个进程运行")
    worker.add_argument("--rank", type=int, default=0)
    worker.add_argument("--world", type=int, default=1)
    worker.add_argument("--coordinator", help="协调者地址；省略时 jax.distributed.initialize() 自己检测（TPU/SLURM）")
    worker.add_argument("--port", type=int, default=12355)
    worker.add_argument("--result", help="worker 写结果的 JSON 路径")
    return p


def _default_out(device_kind: str) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-") or "device"
    return Path("build/bench") / f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{slug}"


def _print_table(result: bench.BenchResult) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{result.metadata.get('chip', '')} · n = {result.metadata.get('n_devices', '')}")
    for col in ("collective", "V", "median", "p10–p90", "algbw", "busbw", "predicted", "meas/pred", "regime"):
        t.add_column(col, justify="left" if col in ("collective", "regime") else "right")
    for r in result.rows:
        t.add_row(
            bench.DISPLAY[r.collective],
            bench.fmt_size(r.bytes),
            units.fmt_time(r.median_s),
            f"{units.fmt_time(r.p10_s)}–{units.fmt_time(r.p90_s)}",
            units.fmt_bw(r.algbw),
            units.fmt_bw(r.busbw),
            units.fmt_time(r.predicted_s) if r.predicted_s == r.predicted_s else "—",
            f"{r.ratio:.3g}" + ("" if r.model_valid else "*"),
            r.regime,
        )
    console = Console()
    if not console.is_terminal:
        console = Console(width=150)  # 管道或文件：不按 80 列折行
    console.print(t)
    if result.metadata.get("note"):
        console.print(f"* {result.metadata['note']}")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.worker:
        from shardlab import bench_multiprocess

        args.sizes = args.sizes or bench_multiprocess.DEFAULT_SIZES
        args.collectives = ",".join(args.collectives or bench_multiprocess.DEFAULT_COLLECTIVES)
        args.repeats, args.warmup = args.repeats or 5, 2 if args.warmup is None else args.warmup
        return bench_multiprocess.worker_main(args)
    if args.processes > 1:
        return _main_multiprocess(args)

    rt = runtime.setup(args.profile)
    print(rt.describe())
    result = bench.run_sweep(
        args.collectives or bench.COLLECTIVES,
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
        mm = bench.time_matmul(*bench.demo_matmul_shape(rt), rt=rt)
        print(mm)
    print("结果已写入：" + "，".join(str(p) for p in paths))
    return 0


def _main_multiprocess(args) -> int:
    from shardlab import bench_multiprocess as mp

    print(f"启动 {args.processes} 个进程，每个 {args.devices_per_process} 个 CPU 设备（jax.distributed，gloo）…")
    try:
        res = mp.run_multiprocess(
            args.processes,
            args.sizes or mp.DEFAULT_SIZES,
            args.collectives or mp.DEFAULT_COLLECTIVES,
            devices_per_process=args.devices_per_process,
            repeats=args.repeats or 5,
            warmup=2 if args.warmup is None else args.warmup,
            timeout_s=args.timeout,
        )
    except mp.MultiProcessError as e:
        print(f"跨进程基准失败：{e}", file=sys.stderr)
        return 1
    print(res.table())
    out = args.out or _default_out("cpu-multiprocess")
    print(f"结果已写入：{res.to_json(out / 'multiprocess.json')}，{res.cross.to_csv(out / 'cross_process.csv')}")
    return 0
