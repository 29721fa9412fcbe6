"""shardlab.bench：大小解析、nccl-tests 的 busbw、预测、微型扫描、命令行与跨进程运行（8 个模拟 CPU 设备）"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from shardlab import bench, cost, hardware, names, runtime  # noqa: E402
from shardlab.bench import cli, measure, model, multiprocess, result, worker  # noqa: E402

RT = runtime.setup("cpu")  # conftest 已调用；重复调用是幂等的
KiB, MiB, GiB = 2**10, 2**20, 2**30


# ---- 大小 ----


@pytest.mark.parametrize(
    "text, want",
    [
        ("4096", 4096),
        ("64k", 64 * KiB),
        ("64K", 64 * KiB),
        ("16M", 16 * MiB),
        ("1G", GiB),
        ("2KiB", 2 * KiB),
        ("1.5k", 1536),
        (" 8 MB ", 8 * MiB),
        (512, 512),
    ],
)
def test_parse_size(text, want):
    assert model.parse_size(text) == want


@pytest.mark.parametrize("bad", ["", "abc", "-1k", "0", "1.1", "12x", "k"])
def test_parse_size_rejects_garbage_in_chinese(bad):
    with pytest.raises(model.BenchError, match="大小"):
        model.parse_size(bad)


def test_parse_sizes_ranges_and_lists():
    assert model.parse_sizes("1k:16k") == [1024, 2048, 4096, 8192, 16384]
    assert model.parse_sizes("1k:16M:4") == [KiB * 4**i for i in range(8)]
    assert model.parse_sizes("1k, 64k,1M") == [KiB, 64 * KiB, MiB]
    assert model.parse_sizes([4096, "1M"]) == [4096, MiB]
    for bad in ("1k:2k:1", "16M:1k", "1k:2k:x", "1:2:3:4", ","):
        with pytest.raises(model.BenchError):
            model.parse_sizes(bad)


def test_default_sizes_scale_with_profile():
    cpu, acc = model.default_sizes("cpu"), model.default_sizes("tpu")
    assert (cpu[0], cpu[-1], acc[-1]) == (KiB, 16 * MiB, GiB)
    assert model.default_sizes(RT) == cpu  # Runtime 对象：模拟网格按 cpu 取
    assert model.default_sizes(SimpleNamespace(emulated_mesh=False)) == acc
    assert measure.demo_matmul_shape("cpu") == (1024,) * 3 and measure.demo_matmul_shape("gpu") == (8192,) * 3


def test_round_size_divides_for_every_collective():
    assert model.round_size(1000, 8, 4) == 1024  # 8²·4 = 256 的倍数
    assert model.round_size(1, 8, 4) == 256
    assert model.round_size(KiB, 8, 4) == KiB
    assert bench.fmt_size(16 * MiB) == "16 MiB" and bench.fmt_size(1000) == "1 kB"


def test_canonical_names():
    assert model.canonical("AllGather") == "all_gather"
    assert model.canonical("psum") == "all_reduce"
    assert model.canonical("all-to-all") == "all_to_all"
    assert model.canonical("sendrecv") == "ppermute"
    assert model.canonical("collective-permute") == "ppermute"
    with pytest.raises(names.UnknownCollectiveError, match="未知的集合通信.*AllGather.*ppermute"):
        model.canonical("broadcast")


# ---- nccl-tests 的 algbw / busbw ----


def test_bus_factors_are_nccl_tests_values():
    n = 8
    assert model.bus_factor("all_reduce", n) == 2 * 7 / 8 == 1.75
    assert model.bus_factor("all_gather", n) == model.bus_factor("reduce_scatter", n) == 7 / 8
    assert model.bus_factor("all_to_all", n) == 7 / 8
    assert model.bus_factor("ppermute", n) == 1.0
    assert model.bus_factor("all_reduce", 2) == 1.0


def test_nccl_size_and_bandwidths():
    assert model.nccl_size("all_gather", 8 * MiB, 8) == 8 * MiB  # S = V（收集后的整个数组）
    assert model.nccl_size("all_to_all", 8 * MiB, 8) == MiB  # S = V/n（每个 rank 的发送缓冲区）
    algbw, busbw = model.bandwidths("all_reduce", 1e6, 8, 1e-3)
    assert algbw == pytest.approx(1e9) and busbw == pytest.approx(1.75e9)
    algbw, busbw = model.bandwidths("all_to_all", 8e6, 8, 1e-3)
    assert algbw == pytest.approx(1e9) and busbw == pytest.approx(0.875e9)


# ---- 预测 ----


def test_predict_matches_cost_model_on_cpu_nominal():
    t, regime, t_bw = model.predict("all_gather", 16 * MiB, 8, hardware.CPU)
    est = cost.estimate("all_gather", 16 * MiB, {"X": 8}, hardware.CPU)
    assert (t, regime, t_bw) == (est.time_s, est.regime, est.bandwidth_term_s)
    # 名义环：延迟项 ⌊N/2⌋·t_hop = 4 µs 与带宽项 V/W_bidir 相等的 V = N·W_oneway·t_hop = 80 kB
    assert model.crossover_bytes("all_gather", 8, hardware.CPU) == pytest.approx(8 * 1e10 * 1e-6)


def test_predict_ppermute_one_hop():
    assert model.predict("ppermute", 1e3, 8, hardware.CPU) == (1e-6, "latency-bound", 1e-7)
    t, regime, _ = model.predict("ppermute", 1e6, 8, hardware.TPU_V5E)
    assert t == pytest.approx(1e6 / 4.5e10) and regime == "bandwidth-bound"
    t, regime, _ = model.predict("ppermute", 4.5e9, 8, hardware.H100)
    assert t == pytest.approx(10e-3) and regime == "bandwidth-bound"
    assert model.predict("ppermute", 5e9, 16, hardware.H100)[0] == pytest.approx(0.1)  # 跨节点：50 GB/s 的网卡
    # GPU：延迟项来自 NCCL 的模型（3.6 µs + 14 步 × 0.47 µs），带宽项的斜率 2(N-1)/(N·W_nvlink)
    lat = cost.gpu_ring_latency("all_reduce", 8, 8, hardware.H100)
    assert model.crossover_bytes("all_reduce", 8, hardware.H100) == pytest.approx(lat / (2 * 7 / 8 / 450e9))


def test_predict_tpu_uses_physical_slice():
    # v5e-8 是 2x4 切片：覆盖整个切片的 8 设备轴按两个物理轴（都没有 wraparound）计
    t, _, _ = model.predict("all_gather", 64 * MiB, 8, hardware.TPU_V5E, slice_shape=(2, 4))
    est = cost.estimate("all_gather", 64 * MiB, {"a": 2, "b": 4}, "v5e", slice_shape=(2, 4))
    assert t == est.time_s
    # 8x16 切片上长 16 的轴有 wraparound
    t16, _, _ = model.predict("all_gather", 64 * MiB, 16, hardware.TPU_V5E, slice_shape=(8, 16))
    assert t16 == pytest.approx(64 * MiB / 9e10 * 15 / 16, rel=0.1)
    with pytest.raises(model.BenchError, match="slice_shape"):
        model.predict("all_gather", 1e6, 8, hardware.TPU_V5E)


def test_tpu_slice_shape_from_coords():
    devs = [SimpleNamespace(coords=(x, y, 0)) for x in range(2) for y in range(4)]
    assert model.tpu_slice_shape(devs, 2) == (2, 4)
    assert model.tpu_slice_shape(devs, 3) == (2, 4, 1)
    assert model.tpu_slice_shape([SimpleNamespace()], 2) is None


def test_collective_chip_detects_hardware():
    assert model.collective_chip(RT) is hardware.CPU
    fake = SimpleNamespace(emulated_mesh=False, mesh_devices=(SimpleNamespace(device_kind="NVIDIA H200"),))
    assert model.collective_chip(fake) is hardware.H200
    fake = SimpleNamespace(emulated_mesh=False, mesh_devices=(SimpleNamespace(device_kind="TPU v6 lite"),))
    assert model.collective_chip(fake) is hardware.TPU_V6E


# ---- 计时 ----


class _Ready:
    def block_until_ready(self):
        return self


def test_time_call_budget_and_arguments():
    calls = []

    def fn():
        calls.append(1)
        return _Ready()

    assert len(bench.time_call(fn, repeats=5, warmup=2)) == 5 and len(calls) == 7
    assert len(bench.time_call(fn, repeats=100, warmup=0, budget_s=0.0)) == model.MIN_REPEATS
    with pytest.raises(model.BenchError, match="repeats"):
        bench.time_call(fn, repeats=0)


def test_make_input_rejects_indivisible_sizes():
    mesh = RT.mesh((8,), ("X",))
    with pytest.raises(model.BenchError, match="整分"):
        measure.make_input("all_to_all", 8 * 4 * 3, mesh, "X")


@pytest.fixture(scope="module")
def tiny():
    return bench.run_sweep(sizes="1k,64k", rt=RT, repeats=2, warmup=1, progress=False)


def test_tiny_sweep_rows_are_sane(tiny):
    assert [(r.collective, r.bytes) for r in tiny.rows] == [(c, v) for c in model.COLLECTIVES for v in (KiB, 64 * KiB)]
    for r in tiny.rows:
        assert r.n == 8 and r.repeats == 2 and r.dtype == "float32"
        assert 0 < r.min_s <= r.p10_s <= r.median_s <= r.p90_s <= r.max_s < 5
        assert r.algbw == pytest.approx(model.nccl_size(r.collective, r.bytes, 8) / r.median_s)
        assert r.busbw == pytest.approx(r.algbw * model.bus_factor(r.collective, 8))
        assert r.predicted_s > 0 and r.ratio == pytest.approx(r.median_s / r.predicted_s)
        assert r.regime in ("latency-bound", "bandwidth-bound")
        assert not r.model_valid and r.chip == hardware.CPU.name
    meta = tiny.metadata
    assert meta["profile"] == "cpu" and meta["n_devices"] == 8 and meta["device_kind"] == "cpu"
    assert meta["jax_version"] and meta["host"] and meta["date"] and "memcpy" in meta["note"]
    text = tiny.table()
    assert "AllToAll" in text and "64 KiB" in text and "memcpy" in text


def test_round_trip_csv_json_and_plot(tiny, tmp_path):
    back = bench.BenchResult.from_json(tiny.to_json(tmp_path / "r.json"))
    assert back.rows == tiny.rows and back.metadata == tiny.metadata
    assert bench.BenchResult.from_csv(tiny.to_csv(tmp_path / "r.csv")).rows == tiny.rows
    png = tiny.plot(tmp_path / "sub" / "r.png")
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_plot_on_axes(tiny):
    import matplotlib.pyplot as plt

    fig = tiny.plot()
    assert len(fig.axes) == 2
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)
    assert tiny.plot(axes)[0] is axes[0]
    assert tiny.plot(axes[0], predicted=False) is axes[0]
    ragged = bench.BenchResult(tiny.rows[:3], tiny.metadata)  # 各集合通信的大小个数不同
    assert ragged.plot(axes[1]) is axes[1]
    plt.close(fig)


def test_sweep_argument_errors():
    with pytest.raises(model.BenchError, match="没有轴"):
        bench.run_sweep(["psum"], [KiB], rt=RT, mesh=RT.mesh((8,), ("X",)), axis="Y", progress=False)
    with pytest.raises(names.UnknownCollectiveError, match="未知的集合通信"):
        bench.run_sweep(["gather"], [KiB], rt=RT, progress=False)


def test_sweep_on_one_axis_of_a_2d_mesh():
    res = bench.run_sweep(
        "all_gather", [KiB], rt=RT, mesh=RT.mesh((2, 4), ("X", "Y")), axis="Y", repeats=2, warmup=0, progress=True
    )
    assert [(r.n, r.bytes) for r in res.rows] == [(4, KiB)]
    res = bench.run_sweep("psum", [KiB], rt=RT, repeats=2, warmup=0, progress=False, dtype="bfloat16")
    assert res.rows[0].dtype == "bfloat16" and res.metadata["dtype"] == "bfloat16"


def test_time_matmul_on_cpu():
    mm = measure.time_matmul(64, 32, 16, rt=RT, repeats=2, warmup=1)
    assert (mm.m, mm.k, mm.n, mm.dtype, mm.device_kind) == (64, 32, 16, "float32", "cpu")
    assert mm.flops == 2 * 64 * 32 * 16 and mm.achieved_flops == pytest.approx(mm.flops / mm.median_s)
    assert mm.peak_is_nominal and mm.peak_flops == hardware.CPU.flops_bf16
    assert "名义值" in str(mm)


# ---- 跨进程：worker 的计算部分在本进程里也能跑 ----


def test_worker_body_checks_psum_and_all_gather():
    mesh = RT.mesh((8,), ("X",))
    job = multiprocess.MultiProcessConfig(
        collectives=("all_reduce", "all_gather", "ppermute"), sizes=[KiB], repeats=2, warmup=0
    )
    rows, checks = multiprocess.worker_body(mesh, job, hardware.CPU)
    assert checks == {
        f"all_reduce:{KiB}": "psum = 28 ✓",
        f"all_gather:{KiB}": "all_gather 0…n-1 ✓",
        f"ppermute:{KiB}": "",
    }
    assert [r.collective for r in rows] == ["all_reduce", "all_gather", "ppermute"]
    wrong = measure.build_fn("ppermute", mesh, "X")(measure.make_input("all_reduce", KiB, mesh, "X"))
    assert "✗" in multiprocess.check_output("all_reduce", wrong, mesh) and "✗" in multiprocess.check_output(
        "all_gather", wrong, mesh
    )


def test_child_env_replaces_device_count():
    env = multiprocess.child_env(4, {"XLA_FLAGS": "--foo --xla_force_host_platform_device_count=8", "PATH": "/bin"})
    assert env["XLA_FLAGS"] == "--foo --xla_force_host_platform_device_count=4"
    assert env["JAX_PLATFORMS"] == "cpu" and env["PATH"] == "/bin"
    assert 0 < multiprocess.free_port() < 65536


def _children() -> list[int]:
    """本进程仍在运行（不算僵尸）的全部后代进程，读 /proc（Linux）；没有 /proc 时返回空表"""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc/self") else []:
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if entry.isdigit() and state != "Z":
            parents.setdefault(int(ppid), []).append(int(entry))
    out, todo = [], [os.getpid()]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_cli_multiprocess_two_ranks(tmp_path, capsys):
    before = set(_children())
    rc = cli.main(
        [
            "--processes",
            "2",
            "--sizes",
            "4k",
            "--collectives",
            "psum,all_gather",
            "--repeats",
            "2",
            "--timeout",
            "120",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "rank 0 / world size 2" in out and "rank 1 / world size 2" in out and "psum = 28 ✓" in out
    data = json.loads((tmp_path / "multiprocess.json").read_text())
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1]
    assert all(r["local_devices"] == 4 and r["global_devices"] == 8 for r in data["ranks"])
    assert data["metadata"]["processes"] == 2
    for row in data["rows"]:
        assert row["cross_process_s"] > 0 and row["in_process_s"] > 0 and row["slowdown"] > 0
    assert (tmp_path / "cross_process.csv").exists()
    assert set(_children()) <= before  # 没有留下子进程
    assert not any(_alive(r["pid"]) for r in data["ranks"])


def test_multiprocess_timeout_kills_children():
    before = set(_children())
    with pytest.raises(multiprocess.MultiProcessError, match="没有结束"):
        multiprocess.launch(multiprocess.MultiProcessConfig(2, sizes="4k", collectives=["psum"], timeout_s=0.3))
    assert set(_children()) <= before
    with pytest.raises(model.BenchError, match="至少要 2 个进程"):
        multiprocess.MultiProcessConfig(processes=1)


# ---- 命令行 ----


def test_cli_in_process_writes_outputs(tmp_path, capsys):
    rc = cli.main(
        [
            "--sizes",
            "1k",
            "--collectives",
            "all_reduce,AllToAll",
            "--repeats",
            "2",
            "--warmup",
            "0",
            "--out",
            str(tmp_path),
            "--no-progress",
            "--matmul",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "AllReduce" in out and "AllToAll" in out and "matmul" in out
    assert {p.name for p in tmp_path.iterdir()} == {"bench.csv", "bench.json", "bench.png"}


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--collectives", "broadcast"], "未知的集合通信"),
        (["--sizes", "12x"], "看不懂的大小"),
        (["--repeats", "0"], "正整数"),
        (["--warmup", "-1"], "非负整数"),
        (["--profile", "npu"], "npu"),
    ],
)
def test_cli_bad_arguments(argv, msg, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and msg in capsys.readouterr().err


def test_python_m_shardlab_bench(tmp_path):
    env = {**os.environ, "COURSE_PROFILE": "cpu"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shardlab.bench",
            "--sizes",
            "1k,4k",
            "--collectives",
            "all_gather",
            "--repeats",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--no-plot",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "AllGather" in proc.stdout and "busbw" in proc.stdout
    rows = bench.BenchResult.from_json(tmp_path / "out" / "bench.json").rows
    assert [r.bytes for r in rows] == [KiB, 4 * KiB] and all(math.isfinite(r.busbw) for r in rows)


# ---- 包的结构：依赖单向、不在函数里 import、名字只解析一次 ----

BENCH_DIR = Path(bench.__file__).parent
# 包内的层次：每个模块只能导入排在它前面的模块（worker 与 __main__ 是入口，排在最后）
LAYERS = (
    "model",
    "published",
    "plot",
    "result",
    "roofline",
    "measure",
    "multiprocess",
    "cli",
    "worker",
    "__main__",
    "__init__",
)


def _bench_imports(py: Path) -> tuple[list[str], list[str]]:
    """(模块顶层导入的 shardlab.bench 子模块, 函数体里的 import 语句)"""
    tree = ast.parse(py.read_text(encoding="utf-8"))
    inner = [
        f"{py.name}:{node.lineno}"
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    subs = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "shardlab.bench":
            subs += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shardlab.bench."):
            subs.append(node.module.split(".")[2])
    return subs, inner


def test_bench_modules_import_one_way_and_only_at_top():
    found = sorted(p.stem for p in BENCH_DIR.glob("*.py"))
    assert found == sorted(LAYERS)
    for py in BENCH_DIR.glob("*.py"):
        subs, inner = _bench_imports(py)
        assert not inner, f"函数里的 import：{inner}"
        rank = LAYERS.index(py.stem)
        upward = [s for s in subs if s in LAYERS and LAYERS.index(s) >= rank]
        assert not upward, f"{py.name} 导入了同层或上层的 {upward}"


def test_collective_names_are_parsed_once_per_sweep(monkeypatch):
    calls = []

    def counting(name):
        calls.append(name)
        return model.canonical(name)

    monkeypatch.setattr(measure, "canonical", counting)
    bench.run_sweep(["psum", "AllGather"], [KiB, 4 * KiB], rt=RT, repeats=1, warmup=0, progress=False)
    assert calls == ["psum", "AllGather"]  # 入口一次；行、输入、预测不再解析
    with pytest.raises(model.BenchError, match="canonical"):
        model.bus_factor("AllReduce", 8)  # 内部函数只收解析过的名字


def test_time_matmul_uses_numpy_median(monkeypatch):
    monkeypatch.setattr(measure, "time_call", lambda *a, **k: [1.0, 2.0, 3.0, 10.0])
    assert measure.time_matmul(8, 8, 8, rt=RT).median_s == 2.5  # 不是 sorted(t)[n // 2] = 3


def test_unpredictable_rows_say_why():
    row = result.summarize("all_gather", MiB, 16, [1e-3, 2e-3], dtype="float32", chip=hardware.A100)
    assert math.isnan(row.predicted_s) and math.isnan(row.ratio) and row.regime == ""
    assert "无法预测" in row.note and "node_scaleout_bw" in row.note
    text = bench.BenchResult([row]).table()
    assert "node_scaleout_bw" in text and "unknown" not in text


def test_rows_carry_their_crossover_so_the_plot_needs_no_chip_lookup():
    row = result.summarize("all_gather", MiB, 8, [1e-3], dtype="float32", chip=hardware.TPU_V5E, slice_shape=(2, 4))
    want = model.crossover_bytes("all_gather", 8, hardware.TPU_V5E, slice_shape=(2, 4))
    assert want and row.crossover_bytes == pytest.approx(want) and row.chip == "TPU v5e"


def test_from_csv_converts_by_real_field_types(tiny, tmp_path):
    back = bench.BenchResult.from_csv(tiny.to_csv(tmp_path / "r.csv")).rows[0]
    assert [type(getattr(back, f.name)) for f in dataclasses.fields(back)] == [
        f.type for f in dataclasses.fields(result.BenchRow)
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text((tmp_path / "r.csv").read_text().replace("False", "no", 1))
    with pytest.raises(model.BenchError, match="True 或 False"):
        bench.BenchResult.from_csv(bad)


def test_cli_prints_the_same_table_as_result_table(tiny, capsys):
    nan_row = dataclasses.replace(tiny.rows[0], predicted_s=math.nan, ratio=math.nan, regime="")
    res = bench.BenchResult([*tiny.rows[:2], nan_row], tiny.metadata)
    cli._print_table(res)
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert printed == res.table().splitlines()
    assert "algbw" in res.table() and "nan" not in res.table()


def test_worker_config_travels_once_as_json():
    job = multiprocess.MultiProcessConfig(3, sizes="4k,64k", collectives=("psum",), repeats=2)
    assert job.collectives == ("all_reduce",) and job.sizes == (4 * KiB, 64 * KiB)
    cfg = multiprocess.WorkerConfig(job, rank=1, coordinator="127.0.0.1:1234", result="/tmp/r.json")
    cmd = multiprocess.worker_command(cfg)
    assert cmd[1:3] == ["-m", "shardlab.bench.worker"] and len(cmd) == 4
    assert multiprocess.WorkerConfig.from_json(cmd[3]) == cfg
    # 多机：只写要改的键，其余取 MultiProcessConfig 的默认值
    partial = multiprocess.WorkerConfig.from_json('{"profile": "tpu", "job": {"repeats": 9}}')
    assert partial.profile == "tpu" and partial.job == multiprocess.MultiProcessConfig(repeats=9)
    for bad in ('{"rnak": 1}', "[1]", '{"job": {"sizes": "12x"}}', "not json"):
        with pytest.raises(model.BenchError):
            multiprocess.WorkerConfig.from_json(bad)
    assert worker.main(['{"rnak": 1}']) == 2 and worker.main(["{}", "{}"]) == 2  # 报错退出，不启动 jax.distributed


def test_multiprocess_defaults_live_in_one_place():
    p = cli.parser()
    assert p.get_default("devices_per_process") is None and p.get_default("timeout") is None
    help_text = p.format_help()
    default = multiprocess.MultiProcessConfig()
    assert f"默认 {default.devices_per_process}" in help_text and f"默认 {default.timeout_s:g}" in help_text
    assert multiprocess.run_multiprocess.__kwdefaults__ == {"compare_in_process": True, "rt": None}


def test_size_texts_say_kib_like_the_sizes():
    root = BENCH_DIR.parents[2]
    cpu, acc = model.default_sizes("cpu"), model.default_sizes("tpu")
    cpu_range = f"{model.fmt_size(cpu[0])}–{model.fmt_size(cpu[-1])}"
    assert cpu_range == "1 KiB–16 MiB"
    assert cpu_range in (root / "Makefile").read_text(encoding="utf-8")
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert cpu_range in readme and f"到 {model.fmt_size(acc[-1])}" in readme
    help_text = " ".join(cli.parser().format_help().split())
    assert cpu_range in help_text.replace(" –", "–") and "KiB/MiB/GiB" in help_text
