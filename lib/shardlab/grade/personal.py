"""按个人版评分（``--roster`` + ``--secret-file``）：每个学生按自己的题目参数判定，认出抄来的答案

- 提交 → 花名册里的学生 id：``<id>/….ipynb``（每人一个文件夹）或文件名以 ``<id>_`` 开头（``<id>.ipynb`` 也算）；
  认不出、能认成两个 id、或同一个学生有几份的提交不评，列为忽略（附原因），从不猜；
- 每个学生的答案表：``shardlab.variants`` 由（密钥, 作业, 学生 id）抽出参数，``shardlab.answers`` 算出参考值；
  发布版的答案表（由解答笔记本算出）照样要读，它核对了参考算法；
- 一个不对的答案如果等于发布版的答案，状态是 ``copied-published``；等于另一位同学的答案，是 ``other-variant``，都是 0 分；
- 函数答案的隐藏输入由密钥决定（``hidden_seed``），不随运行改变，也推不出来。
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
from dataclasses import dataclass, field

from shardlab import answers, problems, roster, variants
from shardlab.grade import status as st
from shardlab.grade.key import AnswerKey, AnswerKeyError


def hidden_seed(secret: bytes) -> int:
    """函数答案隐藏输入的种子：密钥的确定函数（63 位）"""
    return int.from_bytes(hmac.new(secret, b"shardlab-hidden-inputs/v1", hashlib.sha256).digest()[:8], "big") >> 1


def _close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= 1e-12 if b == 0 else math.isclose(a, b, rel_tol=rtol)


@dataclass(frozen=True)
class PersonalKey(AnswerKey):
    """每个学生一份答案表；entry(答案 id, 学生 id) 给出这个学生的参考值和要认出的别的答案"""

    names: dict[str, str] = field(default_factory=dict)  # 学生 id → 姓名
    params: dict[str, dict] = field(default_factory=dict)  # 学生 id → {作业: 参数}
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # 学生 id → {答案 id: 参考值}
    published: dict[str, float] = field(default_factory=dict)

    @classmethod
    def build(
        cls, base: AnswerKey, students: list[roster.Student], secret: bytes, known: dict[str, dict] | None = None
    ) -> PersonalKey:
        """known：已经算好的 {学生 id: {作业: 参数}}（Gradescope 的 zip 里带着，容器里不用再抽）"""
        published = {a.id: a.value() for a in answers.ANSWER_LIST if a.kind == "value"}
        for aid, value in published.items():  # 参考算法在发布版上与解答笔记本一致
            entry = base.entries.get(aid)
            if entry is not None and not _close(float(entry["value"]), value, 1e-9):
                raise AnswerKeyError(f"{aid}：解答笔记本得 {entry['value']}，参考算法得 {value}（发布版）")
        params, values = {}, {}
        for s in students:
            given = (known or {}).get(s.id)
            params[s.id] = given or {a: variants.for_student(secret, a, s.id) for a in problems.ASSIGNMENTS}
            values[s.id] = {
                spec.id: spec.value(params[s.id][spec.assignment])
                for spec in answers.ANSWER_LIST
                if spec.kind == "value"
            }
        digest = hashlib.sha256(
            json.dumps([base.fingerprint, values], sort_keys=True).encode() + hidden_seed(secret).to_bytes(8, "big")
        ).hexdigest()[:16]
        names = {s.id: s.name for s in students}
        return cls(base.entries, digest, names, params, values, published)

    def entry(self, answer_id: str, submission: str | None = None) -> dict | None:
        spec = answers.ANSWERS.get(answer_id)
        base = self.entries.get(answer_id)
        if spec is None or spec.kind != "value" or base is None:
            return base
        mine = self.values.get(submission or "")
        if mine is None:
            return None
        right = mine[answer_id]
        impostors, seen = [], set()
        if not _close(self.published[answer_id], right, 2 * spec.rtol):
            impostors.append([st.COPIED_PUBLISHED, self.published[answer_id]])
        for other, vals in sorted(self.values.items()):
            v = vals[answer_id]
            if other != submission and v not in seen and not _close(v, right, 2 * spec.rtol):
                seen.add(v)
                impostors.append([st.OTHER_VARIANT, v])
        return {
            "value": right,
            "unit": spec.unit,
            "params": self.params[submission][spec.assignment],
            "impostors": impostors,
        }


# ---- 提交 → 学生 id ----
@dataclass(frozen=True)
class Match:
    sid: str | None
    reason: str = ""  # sid 为 None 时：为什么认不出


def match(group: str, in_folder: bool, name: str, ids: set[str]) -> Match:
    """认出学生 id：每人一个文件夹时文件夹名就是 id；顶层文件的文件名是 ``<id>_….ipynb`` 或 ``<id>.ipynb``"""
    if in_folder:
        if group in ids:
            return Match(group)
        return Match(None, f"文件夹 {group!r} 不是花名册里的学生 id")
    found = {sid for sid in ids if group == sid or group.startswith(sid + "_")}
    if len(found) == 1:
        return Match(found.pop())
    if found:
        return Match(None, f"文件名 {name!r} 能对上不止一个学生 id（{'、'.join(sorted(found))}），不猜")
    return Match(None, f"文件名 {name!r} 不以花名册里的学生 id 加 _ 开头（<id>_….ipynb），也不在 <id>/ 文件夹里")


def map_to_roster(scan, ids: set[str]) -> dict[str, str]:
    """把 folder.scan 找到的提交对上花名册：对上的提交的 id 换成学生 id；对不上的、或同一个学生有几份的，
    移到 scan.ignored（附原因），不评。返回 {提交 id: 学生 id}"""
    matched: dict[str, list] = {}
    for f in scan.found:
        name = os.path.basename(os.fsdecode(f.raw_rel))
        group = os.fsdecode(f.group)
        in_folder = os.sep in os.fsdecode(f.raw_rel) and group != name[:-6]
        m = match(group, in_folder, name, ids)
        if m.sid is None:
            scan.ignored.append({"file": f.rel, "reason": m.reason})
        else:
            matched.setdefault(m.sid, []).append(f)
    keep = []
    for sid, files in matched.items():
        if len(files) > 1:
            shown = "、".join(f.rel for f in files)
            for f in files:
                scan.ignored.append(
                    {"file": f.rel, "reason": f"学生 {sid} 有 {len(files)} 份提交（{shown}），不知道评哪一份，都不评"}
                )
            continue
        files[0].sid = sid
        keep.append(files[0])
    scan.found[:] = [f for f in scan.found if f in keep]
    return {f.sid: f.sid for f in keep}
