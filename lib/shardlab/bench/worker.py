"""跨进程基准的 worker 入口：``python -m shardlab.bench.worker [CONFIG_JSON]``

CONFIG_JSON 是 `multiprocess.WorkerConfig` 的 JSON（本机的 `multiprocess.launch` 写好整份传进来；
多机时只写要改的键，如 ``'{"profile": "tpu"}'``，其余取默认值）。本模块只做入口，包的 ``__init__`` 不导入它，
所以 ``python -m`` 运行它时不会出现“模块已在 sys.modules 里”的警告。
"""

from __future__ import annotations

import sys

from shardlab.bench.model import BenchError
from shardlab.bench.multiprocess import WorkerConfig, worker_main


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print("用法：python -m shardlab.bench.worker [CONFIG_JSON]", file=sys.stderr)
        return 2
    try:
        config = WorkerConfig.from_json(args[0]) if args else WorkerConfig()
    except BenchError as e:
        print(e, file=sys.stderr)
        return 2
    return worker_main(config)


if __name__ == "__main__":  # pragma: no cover - 子进程
    sys.exit(main())
