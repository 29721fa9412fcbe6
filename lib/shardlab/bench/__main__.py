"""``python -m shardlab.bench``：命令行（`shardlab.bench.cli`）"""

import sys

from shardlab.bench.cli import main

sys.exit(main())
