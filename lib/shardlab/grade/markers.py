"""评分笔记本里的标记（不导入任何东西：沙箱里的 pytest 插件也用它，那里的 ``shardlab.check`` 是删减过的）"""

MARKER = "@@SHARDLAB-ANSWERS@@"  # 导出行的开头
EXPORT_TAG = "autograder-export"  # 评分器注入的导出单元的标签
RUNNING_MARK = "@@SHARDLAB-RUNNING="  # 沙箱里的插件在每个单元开始前写到评分器的管道（fd 3）：被杀时知道正在跑哪一个
PROGRESS_FD = 3
