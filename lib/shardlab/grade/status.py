"""评分器的全部状态和它们的中文说明：一处定义，成绩册、反馈和测试都用这里的名字

每道题的判定 ``correct`` / ``wrong`` / ``missing`` / ``invalid`` 由判定（``shardlab.exercise.judge``）定义，这里只引用；
其余是评分器自己的状态：运行出的问题、结构问题（按题）和整份提交的问题。
没有“抄袭”之类的按题状态：一个不对的答案就是 ``wrong``（附上按学生自己的参数认出的失误）；
与别人的答案相同只是证据，由 ``shardlab.grade.integrity`` 按整份提交统计，只写进助教看的文件。
"""

from __future__ import annotations

from shardlab.exercise.judge import CORRECT, INVALID, MISSING, WRONG

# ---- 每道题：运行中出的问题 ----
ERROR = "error"
TIMEOUT = "timeout"
KERNEL_DIED = "kernel-died"
CRASHED = "crashed"
NO_EXPORT = "no-export"
NO_KEY = "no-key"
# ---- 每道题：结构问题 ----
MISSING_CELL = "missing-cell"
DUPLICATE_TAG = "duplicate-tag"
REORDERED = "reordered"
# ---- 整份提交 ----
GRADED = "graded"
NOT_JSON = "not-json"
NOT_NOTEBOOK = "not-notebook"
NBFORMAT_3 = "nbformat-3"
TOO_LARGE = "too-large"
UNRELATED = "unrelated-notebook"
UNREADABLE = "unreadable"
INVALID_TEXT = "invalid-text"
INVALID_NUMBER = "invalid-number"
OTHER_CHAPTER = "other-chapter"
GRADER_ERROR = "grader-error"
# 整份提交没有评出分数的两种状态：成绩待核对、Gradescope 上不记分，也不用缓存（再运行一次会重评）
NO_SCORE = (GRADER_ERROR, CRASHED)

TEXT = {
    CORRECT: "正确",
    WRONG: "不对",
    MISSING: "未作答",
    INVALID: "答案类型不对",
    ERROR: "出错",
    TIMEOUT: "超时",
    KERNEL_DIED: "内核退出",
    CRASHED: "评分进程崩溃",
    NO_EXPORT: "没有导出答案",
    NO_KEY: "答案表里没有这道题",
    MISSING_CELL: "找不到答案单元",
    DUPLICATE_TAG: "答案标签重复",
    REORDERED: "答案单元顺序被调换",
    GRADED: "已评分",
    NOT_JSON: "不是 JSON",
    NOT_NOTEBOOK: "不是笔记本",
    NBFORMAT_3: "nbformat 3",
    TOO_LARGE: "文件太大",
    UNRELATED: "不是本章的笔记本",
    UNREADABLE: "读不了文件",
    INVALID_TEXT: "含不合法的字符",
    INVALID_NUMBER: "数超出范围",
    OTHER_CHAPTER: "别的章的练习（没有评）",
    GRADER_ERROR: "评分器出错",
}

# 整份提交出问题时，反馈里的一句说明（每道题都记这个状态，0 分）
SUBMISSION_MESSAGES = {
    NOT_JSON: "文件不是 JSON，打不开（是不是把别的文件改成了 .ipynb，或者保存时出错了？）",
    NOT_NOTEBOOK: "文件是 JSON，但不是 Jupyter 笔记本",
    NBFORMAT_3: "笔记本是旧的 nbformat 3 格式；请在新版 Jupyter 里打开并另存为 nbformat 4 再提交",
    TOO_LARGE: "文件太大或太复杂（单元太多、源码太长或嵌套太深）；请清除输出后再提交",
    UNRELATED: "这个笔记本里没有本章的任何答案单元（答案 id 标签），看起来不是本章的练习",
    UNREADABLE: "读不了这个文件",
    INVALID_TEXT: "代码单元里有不合法的字符（孤立的代理项 surrogate 或 NUL）：正常保存的笔记本不会这样，请在 Jupyter 里重新保存",
    INVALID_NUMBER: "笔记本里有超出范围的数（位数太多的整数）：正常保存的笔记本不会这样，请在 Jupyter 里重新保存",
    OTHER_CHAPTER: "这是别的章的练习，这次评的不是它；请提交本章的练习",
    GRADER_ERROR: "评分器在评这份提交时自己出错了（不是学生的错）；请告诉教师（原因记在评分器的记录里）",
}


def text(status: str) -> str:
    """状态的中文说明；不认识的状态原样返回"""
    return TEXT.get(status, status)


def describe(status: str, message: str) -> str:
    """一道题给学生看的一句话：状态的中文说明 + 说明；说明本身已经以它开头（“正确”“不对。……”）时不重复"""
    head = text(status)
    if not message:
        return head
    return message if message.startswith(head) else f"{head}。{message}"
