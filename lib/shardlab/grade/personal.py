"""按个人版评分（``--roster`` + ``--secret-file``）：每个学生按自己的题目参数判定，认出抄来的答案

- 提交 → 花名册里的学生 id：``<id>/….ipynb``（每人一个文件夹）或文件名以 ``<id>_`` 开头（``<id>.ipynb`` 也算）；
  认不出、或能认成两个 id 的提交不评，报告出来，从不猜；
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
from dataclasses import dataclass, field
from pathlib import Path, PurePath

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
    def build(cls, base: AnswerKey, students: list[roster.Student], secret: bytes) -> PersonalKey:
        published = {a.id: a.value() for a in answers.ANSWER_LIST if a.kind == "value"}
        for aid, value in published.items():  # 参考算法在发布版上与解答笔记本一致
            entry = base.entries.get(aid)
            if entry is not None and not _close(float(entry["value"]), value, 1e-9):
                raise AnswerKeyError(f"{aid}：解答笔记本得 {entry['value']}，参考算法得 {value}（发布版）")
        params, values = {}, {}
        for s in students:
            params[s.id] = {a: variants.for_student(secret, a, s.id) for a in problems.ASSIGNMENTS}
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


def match(path: Path, root: Path | None, ids: set[str]) -> Match:
    """按文件夹（相对于提交目录 root 的第一段路径）或文件名前缀认出学生 id"""
    rel = PurePath(path)
    if root is not None:
        try:
            rel = PurePath(path).relative_to(root)
        except ValueError:
            rel = PurePath(path.name)
    if len(rel.parts) > 1:
        folder = rel.parts[0]
        if folder in ids:
            return Match(folder)
        return Match(None, f"文件夹 {folder!r} 不是花名册里的学生 id")
    name = rel.name
    stem = name[:-6] if name.lower().endswith(".ipynb") else name
    found = {sid for sid in ids if stem == sid or stem.startswith(sid + "_")}
    if len(found) == 1:
        return Match(found.pop())
    if found:
        return Match(None, f"文件名 {name!r} 能对上不止一个学生 id（{'、'.join(sorted(found))}），不猜")
    return Match(None, f"文件名 {name!r} 不以花名册里的学生 id 加 _ 开头（<id>_….ipynb），也不在 <id>/ 文件夹里")


def collect(specs: list[str], ids: set[str]) -> tuple[list[tuple[Path, str]], list[tuple[str, str]]]:
    """找出提交并认出学生 id：([(路径, 学生 id)], [(路径, 认不出的原因)])

    目录：里面的 ``*.ipynb`` 按文件名认，``<id>/`` 子文件夹里的 ``*.ipynb`` 按文件夹认；别的文件列为“忽略”。
    """
    matched, unmatched = [], []
    for spec in specs:
        root = Path(spec)
        if root.is_dir():
            for entry in sorted(root.iterdir()):
                if entry.is_dir() and not entry.is_symlink():
                    files = sorted(p for p in entry.iterdir() if p.name.lower().endswith(".ipynb"))
                    if not files:
                        unmatched.append((str(entry), "文件夹里没有 .ipynb"))
                    for f in files:
                        _add(f, root, ids, matched, unmatched)
                elif entry.name.lower().endswith(".ipynb"):
                    _add(entry, root, ids, matched, unmatched)
                else:
                    unmatched.append((str(entry), "不是 .ipynb 笔记本，忽略"))
        else:
            _add(root, None, ids, matched, unmatched)
    return matched, unmatched


def _add(path: Path, root: Path | None, ids, matched, unmatched) -> None:
    m = match(path, root, ids)
    if m.sid is None:
        unmatched.append((str(path), m.reason))
    else:
        matched.append((path, m.sid))
