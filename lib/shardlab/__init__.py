"""shardlab：《集合通信与分片矩阵乘法》课程的配套库

模块（数据单向流动：hardware → cost → ring / sharding → 笔记本）：

- runtime：设备与档位（profile）设置，JAX API 差异的唯一适配层
- hardware：芯片常数（带宽名称里都写明方向）
- cost：代价模型，一个公式一个函数
- reference：集合通信的 NumPy 参考语义
- torus：环、线与环面（torus）拓扑，以及每一步哪些数据块走哪条有向链路（schedule）
- ring：按 schedule 真实搬运数据块的模拟器，逐步记录内容并计数每条链路的字节
- collectives：JAX shard_map 版本的集合通信与 HLO 检查
- sharding：分片记号 A[I_X, J_Y]{U_X} ⇄ PartitionSpec，本地形状、字节数与复制份数
- planner：分片矩阵乘法的规划器（四种情形、需要的集合通信、备选方案、T_math 与 T_comms）
- collective_matmul：AllGather-matmul 与 matmul-ReduceScatter 的通信/计算重叠（ppermute 环）
- megatron：Megatron 列并行 + 行并行 MLP（有无序列并行），以及前向/反向各插入多少集合通信
- bench（子包）：集合通信与单芯片 matmul 的计时、nccl-tests 的 algbw/busbw、与代价模型对比、多进程运行
- plots：全书统一的 matplotlib 样式与画图小工具
- answers、check：练习的答案登记表与自检
- grade/：教师用评分器（一个子包）：在沙箱里用 nbval 运行提交的笔记本，只导出答案，在评分进程里比较
- units、notebook：单位格式化；把算出的数字交给正文（glue）

导入本包不会导入 JAX；需要 JAX 的模块在使用时才导入它。
"""

__version__ = "0.1.0"
