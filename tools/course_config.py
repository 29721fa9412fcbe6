"""从 _config.yml 读出课程的公共设置，并给出每个笔记本第一个代码单元应有的样子"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def load_config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def colab_install_spec(config: dict) -> str:
    """Colab 上 %pip 安装课程库所用的规格，来自 _config.yml 的 repository.url 与 branch"""
    repo = config["repository"]
    return f"shardlab @ git+{repo['url']}@{repo.get('branch', 'main')}"


# 只用纯 Python 的代价模型、不碰 JAX 设备的笔记本：设置单元不调用 runtime.setup()，内核里不启动 JAX（评分时每份提交都省下这段时间）
NO_DEVICE_PAGES = {"exercises/ch05_exercises", "solutions/ch05_solutions"}


def setup_cell_lines(config: dict, devices: bool = True) -> list[str]:
    """每个笔记本第一个代码单元开头必须有的几行（之后可以再加本页需要的 import）

    devices=False 给 NO_DEVICE_PAGES 里的页面：只在 Colab 上安装课程库，不设置 JAX 设备。
    """
    install = ["import sys", 'if "google.colab" in sys.modules:', f'    %pip install -q "{colab_install_spec(config)}"']
    if not devices:
        return ["# 设置：Colab 上先安装课程库（这一页只用纯 Python 的代价模型，不需要 JAX 设备）", *install]
    return [
        "# 设置设备：必须在任何 JAX 运算之前运行（Colab 上先安装课程库）",
        *install,
        "from shardlab import runtime",
        "rt = runtime.setup()",
    ]
