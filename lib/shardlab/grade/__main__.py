"""``python -m shardlab.grade``：与 ``shardlab-grade`` 相同"""

import sys

from shardlab.grade.cli import main

sys.exit(main())
