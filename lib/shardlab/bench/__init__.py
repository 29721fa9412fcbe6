"""集合通信基准（benchmark）：计时、nccl-tests 的 algbw/busbw、与代价模型的预测并排

这里只放章节与解答用到的名字；其余在子模块里（依赖单向，从下到上）：

- `model`：纯 Python：集合通信名字的唯一解析、大小、busbw、预测；
- `plot`：结果的图（matplotlib）；`result`：`BenchRow` / `BenchResult`、CSV/JSON、表格；
- `measure`：JAX 上的计时与扫描（`run_sweep`、`time_matmul`）；
- `multiprocess`：跨进程（``jax.distributed``）与单进程比较；`worker`：子进程的入口；
- `cli`：命令行 ``python -m shardlab.bench`` / ``shardlab-bench``。
"""

from shardlab.bench.measure import run_sweep, time_call
from shardlab.bench.model import fmt_size
from shardlab.bench.multiprocess import run_multiprocess
from shardlab.bench.result import BenchResult

__all__ = ["BenchResult", "fmt_size", "run_multiprocess", "run_sweep", "time_call"]
