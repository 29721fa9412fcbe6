"""按个人版评分（``--roster`` + ``--secret-file``）：每个学生的答案表，以及核对密钥与花名册

- 每个学生的参数：``shardlab.exercise.variants.for_class`` 由（密钥, 作业, 花名册的顺序）分配（与 ``shardlab-assign`` 相同）；
  参考值由 ``shardlab.exercise.answers`` 现算。发布版的答案表（由解答笔记本算出）照样要读：它核对了参考算法；
- ``entry(答案 id, 学生 id)`` 给出这个学生的参考值和参数：判定只按这个学生自己的参数（常见失误也按自己的参数认），
  一个不对的答案是不是恰好等于别人的答案，由 ``shardlab.grade.integrity`` 在全班评完之后统计，只写进助教的文件；
- ``check_notebooks``：笔记本里写的参数与密钥推出的参数对不上的占多数时，多半是密钥或花名册给错了，评分器先停下；
- 函数答案的隐藏输入由密钥决定（``hidden_seed``），不随运行改变，也推不出来。
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field

from shardlab.exercise import answers, problems, roster, variants
from shardlab.exercise.judge import close
from shardlab.grade.key import AnswerKey, AnswerKeyError

KEY_MISMATCH_SHARE = 0.5  # 笔记本里的参数与推出的参数对不上的比例超过它（且至少 MIN_CHECKED 份）就停下
MIN_CHECKED = 2


def hidden_seed(secret: bytes) -> int:
    """函数答案隐藏输入的种子：密钥的确定函数（63 位）"""
    return int.from_bytes(hmac.new(secret, b"shardlab-hidden-inputs/v1", hashlib.sha256).digest()[:8], "big") >> 1


@dataclass(frozen=True)
class PersonalKey(AnswerKey):
    """每个学生一份答案表；entry(答案 id, 学生 id) 给出这个学生的参考值和参数"""

    names: dict[str, str] = field(default_factory=dict)  # 学生 id → 姓名
    params: dict[str, dict] = field(default_factory=dict)  # 学生 id → {作业: 参数}
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # 学生 id → {答案 id: 参考值}
    published: dict[str, float] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        base: AnswerKey,
        students: list[roster.Student],
        secret: bytes | None,
        assignments=problems.ASSIGNMENTS,
        known: dict[str, dict] | None = None,
        seed: int | None = None,
    ) -> PersonalKey:
        """known：已经分配好的 {学生 id: {作业: 参数}}（Gradescope 的 zip 里带着，容器里没有密钥）"""
        published = {a.id: a.value() for a in answers.ANSWER_LIST if a.kind == "value"}
        for aid, value in published.items():  # 参考算法在发布版上与解答笔记本一致
            entry = base.entries.get(aid)
            if entry is not None and not close(float(entry["value"]), value, 1e-9):
                raise AnswerKeyError(f"{aid}：解答笔记本得 {entry['value']}，参考算法得 {value}（发布版）")
        ids = [s.id for s in students]
        if known is None:
            if secret is None:
                raise AnswerKeyError("没有密钥，也没有分配好的参数")
            drawn = {a: variants.for_class(secret, a, ids) for a in assignments}
            params = {sid: {a: drawn[a][sid] for a in assignments} for sid in ids}
        else:
            params = {sid: {a: problems.from_values(a, known[sid][a]) for a in assignments} for sid in ids}
        values = {
            sid: {
                spec.id: spec.value(params[sid][spec.assignment])
                for spec in answers.ANSWER_LIST
                if spec.kind == "value" and spec.assignment in assignments
            }
            for sid in ids
        }
        salt = (seed if seed is not None else hidden_seed(secret or b"")).to_bytes(8, "big")
        digest = hashlib.sha256(
            json.dumps([base.fingerprint, ids, values], sort_keys=True).encode() + salt
        ).hexdigest()[:16]
        names = {s.id: s.name for s in students}
        return cls(base.entries, digest, names, params, values, published)

    def entry(self, answer_id: str, submission: str | None = None) -> dict | None:
        spec = answers.ANSWERS.get(answer_id)
        base = self.entries.get(answer_id)
        if spec is None or spec.kind != "value" or base is None:
            return base
        mine = self.values.get(submission or "")
        if mine is None or answer_id not in mine:
            return None
        return {"value": mine[answer_id], "unit": spec.unit, "params": self.params[submission][spec.assignment]}


def params_mismatch(assignment: str, expected: dict, written: dict) -> list[str]:
    """笔记本的参数单元里写的参数与推出的参数不同的那些（参数名）"""
    return [name for name, value in written.items() if name in expected and value != expected[name]]


def check_notebooks(found: list, key: PersonalKey, assignment: str) -> str | None:
    """found 里每份提交（带 roster_id 与 written_params）的参数与密钥推出的对不上的比例；占多数时返回中文说明"""
    checked = [f for f in found if f.roster_id and f.written_params]
    bad = [f for f in checked if params_mismatch(assignment, key.params[f.roster_id][assignment], f.written_params)]
    if len(checked) >= MIN_CHECKED and len(bad) > KEY_MISMATCH_SHARE * len(checked):
        examples = "；".join(
            f"{f.rel}（{f.roster_id}）的 "
            + "、".join(params_mismatch(assignment, key.params[f.roster_id][assignment], f.written_params)[:3])
            for f in bad[:3]
        )
        return (
            f"密钥不对？{len(checked)} 份带参数单元的提交里有 {len(bad)} 份的题目参数与这个密钥和花名册推出的不同"
            f"（例如 {examples}）。请确认 --secret-file 是生成个人版（shardlab-assign）时的那个密钥，"
            "--roster 是那时的花名册（同样的行、同样的顺序）。什么也没有写。"
        )
    return None
