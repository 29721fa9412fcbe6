"""集合通信基准（benchmark）：计时、nccl-tests 的 algbw/busbw、与代价模型的预测并排

这里只放章节与解答用到的名字；其余在子模块里（依赖单向，从下到上）：

- `model`：纯 Python：集合通信名字的唯一解析、大小、busbw、预测；
- `published`：书中发表的集合通信实测（包里的数据文件）与模型的预测；
- `plot`：结果的图与 `plot_reference`（matplotlib）；`result`：`BenchRow` / `BenchResult`、CSV/JSON、表格；
- `roofline`：GPU 单芯片参考数据（``benchmarks/gpu_reference.py`` 写的文件）的格式、读取与“实测 / 预测”表；
- `measure`：JAX 上的计时与扫描（`run_sweep`、`time_matmul`）；
- `multiprocess`：跨进程（``jax.distributed``）与单进程比较；`worker`：子进程的入口；
- `cli`：命令行 ``python -m shardlab.bench`` / ``shardlab-bench``。
"""

from shardlab.bench.measure import run_sweep, time_call
from shardlab.bench.model import fmt_size
from shardlab.bench.multiprocess import run_multiprocess
from shardlab.bench.plot import plot_reference
from shardlab.bench.published import REFERENCE_TABLE_HEADERS, reference_data, reference_table
from shardlab.bench.result import BenchResult
from shardlab.bench.roofline import (
    GPU_TABLE_HEADERS,
    describe_gpu_reference,
    gpu_reference_table,
    gpu_references,
    load_gpu_reference,
)

__all__ = [
    "GPU_TABLE_HEADERS",
    "REFERENCE_TABLE_HEADERS",
    "BenchResult",
    "describe_gpu_reference",
    "fmt_size",
    "gpu_reference_table",
    "gpu_references",
    "load_gpu_reference",
    "plot_reference",
    "reference_data",
    "reference_table",
    "run_multiprocess",
    "run_sweep",
    "time_call",
]
