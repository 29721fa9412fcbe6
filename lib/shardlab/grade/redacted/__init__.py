"""评分沙箱里替换 ``shardlab.exercise.answers`` 与 ``shardlab.check`` 的两个模块（``sandbox.stage_library`` 复制它们）

它们不含参考算法和参考值：沙箱里的学生代码 import 到的是这两个文件，判定只在评分器进程里做。
"""
