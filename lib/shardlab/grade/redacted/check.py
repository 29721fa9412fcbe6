"""评分沙箱里的 shardlab.check：自检在评分时不运行（评分在沙箱外进行）；公开的名字与真正的 check 相同"""

MISSING = "missing"
CORRECT = "correct"
WRONG = "wrong"
INVALID = "invalid"


def check(answer_id, value):
    print(f"… {answer_id}：评分时不运行自检")


def evaluate(answer_id, value, params=None):
    raise RuntimeError("评分时不提供自检")


def notebook_params(assignment, namespace=None):
    raise RuntimeError("评分时不提供自检")
