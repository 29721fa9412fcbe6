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


def setup_cell_lines(config: dict) -> list[str]:
    """每个笔记本第一个代码单元开头必须有的几行（之后可以再加本页需要的 import）"""
    return [
        "# 设置设备：必须在任何 JAX 运算之前运行（Colab 上先安装课程库）",
        "import sys",
        'if "google.colab" in sys.modules:',
        f'    %pip install -q "{colab_install_spec(config)}"',
        "from shardlab import runtime",
        "rt = runtime.setup()",
    ]
