"""评分沙箱里的 shardlab.exercise.answers：参考算法与参考值不在这里（评分在沙箱外进行）"""


def __getattr__(name):
    raise AttributeError(f"评分时不提供 shardlab.exercise.answers.{name}：参考答案只在评分器进程里")
