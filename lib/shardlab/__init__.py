"""shardlab：《集合通信与分片矩阵乘法》课程的配套库

分层（导入只从上往下，规则见 pyproject.toml 的 [tool.importlinter] 与 README「库的结构与导入规则」）：

纯 Python 核心（不导入 JAX）
- units、names、xla_flags：单位与格式化；集合通信的各种名字（唯一的一张表）；XLA 模拟设备数的标志
- hardware：芯片常数（带宽名称里都写明方向）
- cost：代价模型，一个公式一个函数；reference：集合通信的 NumPy 参考语义
- torus：环、线与环面拓扑和每一步的调度；ring：按调度搬运数据块、计数并计时每条链路的模拟器
- sharding：分片记号 A[I_X, J_Y]{U_X}，本地形状、字节数与复制份数；planner：分片矩阵乘法的规划器
- explorer：网页上两个交互探索器显示的数字（浏览器里由 Pyodide 运行；units … planner 与它只用标准库）
- untrusted：不可信的文本（学生的笔记本、花名册、沙箱的输出）在进入文件、日志或终端之前的清理与转义

JAX 层（只经由 runtime 使用 JAX）
- runtime：设备与档位（profile）设置，JAX API 差异的唯一适配层（shard_map、网格、PartitionSpec）
- collectives：shard_map 版本的集合通信与 HLO 检查；collective_matmul：通信与计算的重叠；megatron：TP / SP 的 MLP

练习系统：exercise/（problems 题目参数、answers 答案登记表、judge 判定、variants 个人版、roster 花名册）；
check：学生笔记本里的自检，读参数单元、调用 exercise.judge
展示：notebook（把算出的数交给正文）、plots（课程的图样式与 CJK 字体）
工具（互不导入）：bench/（基准）、grade/（评分器）、assign/（布置个人作业）、animate（算法动画）

导入本包本身不导入 JAX；runtime 和 JAX 层的模块在导入时导入 JAX。
"""

__version__ = "0.1.0"
