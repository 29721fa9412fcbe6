"""测试的共同设置：在任何测试触碰 JAX 设备之前建立 8 个模拟 CPU 设备"""

import os

os.environ.setdefault("COURSE_PROFILE", "cpu")

from shardlab import runtime  # noqa: E402

RT = runtime.setup("cpu")
