"""同一个学生的文件：谁算“同一个学生”（``student_of``，只在这里定义），每个学生评哪几个文件（``limit``）

- 有花名册时，同一个学生就是对上的同一个花名册 id；
- 没有花名册时，是提交目录下的同一个文件夹；散放在顶层的文件各算各的。没有花名册就不知道哪几个散放的文件是同一个人的
  （以前按去掉扩展名的文件名算：别人放的 ``s001.IPYNB``、``s001.Ipynb``……占满了 ``s001.ipynb`` 的名额）。

每个学生最多评 ``cap`` 个内容不同的文件（每个文件最多占一个沙箱 ``--wall`` 秒：以前一个学生交 200 个文件能让全班的评分
拖上几个小时），内容相同的只评一次。超过上限时按可信程度选：

0. 签名核实过是他自己的个人版（``Found.own_signed``，笔记本里写的就是他）；
1. 身份来自教师分好的文件夹或 LMS（``Found.strong``）；
2. 凭学生自己起的文件名或笔记本里写的 id 认出的；
3. 不是这次评的这一章的，或读不成笔记本的（这些不进沙箱），以及他另有文件时、签名是发给另一位学生的个人版
   （它不会计入成绩；以前别人往他的文件夹里放几份同学的个人版，就能让他超过上限、成绩待核对）。
   超过上限没评的只是这些时，成绩不用待核对。

同一级里轮流从每个位置（每个文件夹、顶层）各取一个，位置里按路径。能往提交目录里放文件的人仍然可以用足够多的位置
挤掉一个学生自己的文件，所以超过上限不是悄悄选几份了事：这个学生留下的文件标上 ``over_cap``，成绩表里写“待核对”，
canvas.csv 里不给分，给教师的说明点名；核对之后用 ``--max-files`` 加大上限重评就全评了。
"""

from __future__ import annotations

from itertools import zip_longest

from shardlab.exercise import roster
from shardlab.grade.folder import Found, Scan, show
from shardlab.untrusted import clean

MAX_FILES = 5


def student_of(f: Found) -> tuple:
    """这份文件属于哪个学生（见模块说明）"""
    if f.roster_id:
        return ("roster", f.roster_id)
    parts = [p for p in f.raw_rel.split(b"/") if p]
    return ("folder", parts[0]) if len(parts) > 1 else ("file", f.raw_rel)


def place_of(f: Found) -> bytes:
    """文件在提交目录里的位置：顶层（b""）或第一级文件夹"""
    parts = [p for p in f.raw_rel.split(b"/") if p]
    return parts[0] if len(parts) > 1 else b""


def own(f: Found) -> bool:
    """签名核实过、笔记本里写的就是它对上的学生：他自己的个人版"""
    student = getattr(f.peek, "student", None)
    return bool(f.own_signed and f.roster_id and student and roster.normalize(student) == roster.normalize(f.roster_id))


def trust(f: Found, chapter: int | None = None, foreign: bool = False) -> int:
    """0 他自己签名的个人版；1 教师的文件夹或 LMS 认出的；2 别的；3 另一章的、读不成笔记本的（不进沙箱），
    以及 foreign：他另有文件时，签名是发给另一位学生的个人版（它不会计入成绩，见 cli.select_counted）"""
    if f.peek is None or (chapter is not None and getattr(f.peek, "chapter", chapter) != chapter) or foreign:
        return 3
    return 0 if own(f) else 1 if f.strong else 2


def _interleave(files: list[Found]) -> list[Found]:
    """同一级里轮流从每个位置取一个（位置按第一次出现的顺序，位置里按原来的顺序）"""
    places: dict[bytes, list[Found]] = {}
    for f in files:
        places.setdefault(place_of(f), []).append(f)
    return [f for row in zip_longest(*places.values()) for f in row if f is not None]


def limit(found: Scan, cap: int = MAX_FILES, chapter: int | None = None, signed_for_other=None) -> list[str]:
    """每个学生只留内容不同的、最多 cap 个文件（见模块说明）；返回文件超过上限的学生（给教师看）。
    signed_for_other(f)：这份文件的签名是不是发给另一位学生的（要密钥；只对超过上限的学生问）"""
    groups: dict[tuple, list[Found]] = {}
    for f in found.found:
        groups.setdefault(student_of(f), []).append(f)
    keep: set[int] = set()
    over: list[str] = []
    for who, files in groups.items():
        level_of = {id(g): trust(g, chapter) for g in files}
        if signed_for_other is not None and len({g.sha or g.rel for g in files}) > cap:
            foreign = {id(g) for g in files if level_of[id(g)] < 3 and signed_for_other(g)}
            if any(level_of[id(g)] < 3 and id(g) not in foreign for g in files):  # 他另有文件：同学的个人版不会计入
                level_of |= dict.fromkeys(foreign, 3)
        ordered = [f for level in range(4) for f in _interleave([g for g in files if level_of[id(g)] == level])]
        seen: dict[str, Found] = {}  # 内容的 sha256 → 留下的文件
        dropped = junk = 0
        for f in ordered:
            sha = f.sha or f"?{f.rel}"  # 读不了的文件各算各的（评分时报告）
            if sha in seen:
                found.ignored.append({"file": f.rel, "reason": f"与 {seen[sha].rel} 内容相同：只评一次"})
            elif len(seen) >= cap:
                # 没评的只是别的章的、读不成笔记本的：他这一章的文件都评了，成绩不用待核对
                # （以前：别人往他的文件夹里放几个垃圾文件，他的成绩就成了待核对）
                junk += level_of[id(f)] == 3
                dropped += 1
                found.ignored.append(
                    {
                        "file": f.rel,
                        "reason": f"同一个学生内容不同的文件超过 {cap} 个：这一个没有评（--max-files 可以加大上限）",
                    }
                )
            else:
                seen[sha] = f
                keep.add(id(f))
        if dropped > junk:
            over.append(f"{label(who)}（{len(seen) + dropped} 个，没评 {dropped} 个）")
            for f in seen.values():
                f.over_cap = True
    found.found[:] = [f for f in found.found if id(f) in keep]
    return over


def label(who: tuple) -> str:
    """student_of 的结果，写给教师看"""
    value = who[1]  # 文件夹与文件是路径的原始字节（坏字节写成 \\xff），花名册 id 是文字
    return show(value) if isinstance(value, bytes) else clean(value, 500, newlines=False)
