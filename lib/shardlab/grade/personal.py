"""按个人版评分（``--roster`` + ``--secret-file``）：每个学生的答案表，以及核对密钥与花名册

- 每个学生的参数：``shardlab.exercise.variants.for_class`` 由（密钥, 作业, 花名册的顺序）分配（与 ``shardlab-assign`` 相同）；
  参考值由 ``shardlab.exercise.answers`` 现算。发布版的答案表（由解答笔记本算出）照样要读：它核对了参考算法；
- ``entry(答案 id, 学生 id)`` 给出这个学生的参考值和参数：判定只按这个学生自己的参数（常见失误也按自己的参数认），
  一个不对的答案是不是恰好等于别人的答案，由 ``shardlab.grade.integrity`` 在全班评完之后统计，只写进助教的文件；
- ``reconcile``：每个学生自己的笔记本里写的参数与推出的不同、签名（``variants.sign``）也对不上的占多数时，
  多半是密钥给错了，评分器先停下；签名对得上的（花名册后来改过）按笔记本里的数评分并告诉教师；
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


class KeyDisproved(AnswerKeyError):
    """签名证明密钥不对：不评分，--trust-key 也不行"""


def hidden_seed(secret: bytes) -> int:
    """函数答案隐藏输入的种子：密钥的确定函数（63 位）"""
    return int.from_bytes(hmac.new(secret, b"shardlab-hidden-inputs/v1", hashlib.sha256).digest()[:8], "big") >> 1


def signed(public: bytes | None, assignment: str, sid: str, written: dict, tag) -> bool:
    """written（参数单元里的参数，一个不缺）带着 public 对应的私钥为学生 sid 签的名（shardlab-assign 写的签名）"""
    names = {p.name for p in problems.params_of(assignment)}
    return public is not None and set(written) == names and variants.verify(public, assignment, sid, written, tag)


def signed_for(key, assignment: str, written: dict, tag: str, sid: str) -> str | None:
    """签名对得上的是花名册里哪位别的同学（笔记本是发给他的个人版）；没有时为 None"""
    for other in getattr(key, "params", {}):
        if other != sid and key.authentic(other, assignment, written, tag):
            return other
    return None


@dataclass(frozen=True)
class PersonalKey(AnswerKey):
    """每个学生一份答案表；entry(答案 id, 学生 id) 给出这个学生的参考值和参数"""

    names: dict[str, str] = field(default_factory=dict)  # 学生 id → 姓名
    params: dict[str, dict] = field(default_factory=dict)  # 学生 id → {作业: 参数}
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # 学生 id → {答案 id: 参考值}
    published: dict[str, float] = field(default_factory=dict)
    public_keys: dict[str, bytes] = field(default_factory=dict)  # 作业 → 验证参数签名的公钥

    @classmethod
    def build(
        cls,
        base: AnswerKey,
        students: list[roster.Student],
        secret: bytes | None,
        assignments=problems.ASSIGNMENTS,
        known: dict[str, dict] | None = None,
        seed: int | None = None,
        public_keys: dict[str, bytes] | None = None,
    ) -> PersonalKey:
        """known：已经分配好的 {学生 id: {作业: 参数}}；public_keys：每章验证参数签名的公钥（Gradescope 的 zip 里带着这两样，
        容器里没有教师密钥）"""
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
        if public_keys is None:
            public_keys = {a: variants.public_key(secret, a) for a in assignments} if secret else {}
        return cls(base.entries, digest, names, params, values, published, public_keys)

    def authentic(self, sid: str, assignment: str, written: dict, tag) -> bool:
        """笔记本参数单元里的参数（一个不缺）是不是这个密钥发给学生 sid 的（shardlab-assign 写的签名对得上）"""
        return signed(self.public_keys.get(assignment), assignment, sid, written, tag)

    def owner(self, candidates, assignment: str, tag, written: dict | None = None) -> str | None:
        """candidates 里第一个签名对得上的学生：签的是发给他的参数，或（给了 written 时）笔记本里写的参数；都不是时为 None"""
        for sid in candidates:
            if not sid or sid not in self.params:
                continue
            if self.authentic(sid, assignment, dict(self.params[sid][assignment]), tag) or (
                written is not None and self.authentic(sid, assignment, written, tag)
            ):
                return sid
        return None

    def issue(self, sid: str, assignment: str, params: dict) -> None:
        """按学生笔记本里（签名对得上的）参数评分：花名册改过之后，推出的参数可能不是当初发给他的"""
        self.params[sid][assignment] = params
        self.values[sid].update(
            {s.id: s.value(params) for s in answers.chapter_answers(assignment) if s.kind == "value"}
        )
        changed = hashlib.sha256(f"{self.fingerprint}:{sid}:{variants.canonical(params).decode()}".encode())
        object.__setattr__(self, "fingerprint", changed.hexdigest()[:16])

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


def reconcile(found: list, key: PersonalKey, assignment: str) -> tuple[str | None, list[str]]:
    """核对每个学生自己的笔记本（这一章、笔记本里写的学生就是他）：(停下的原因 | None, 给教师的说明)

    参数与推出的相同：好。不同，但签名对得上：这个密钥当初发给他的就是这些数（花名册后来改过），按笔记本里的数评分并告诉教师。
    签名对得上推出的参数（学生改了参数单元）：密钥是对的。参数不同、签名对哪一组都对不上：这个学生的每个文件都这样时，
    算“对不上”。只要有一个签名对得上，密钥就是对的（没有密钥伪造不出签名），不会停下；一个签名也对不上、
    而对不上的学生超过一半（至少 MIN_CHECKED 人）时停下。
    """
    chapter = int(assignment[2:])
    on_roster = {roster.normalize(sid) for sid in key.params}
    own: dict[str, list] = {}
    # 笔记本里写的学生 id 根本不在花名册里、签名却证明它是用这个密钥为那个 id 生成的：花名册的 id 变了（Excel 去掉了开头的 0？）。
    # 按学生数，不按文件数；没有签名的不算（谁都能在元数据里写一个 id：以前一个学生交几份写着假 id 的文件就能拦下全班的评分）
    renamed: dict[str, object] = {}
    public = key.public_keys.get(assignment)
    for f in found:
        peek = f.peek
        if not (f.roster_id and f.written_params and peek is not None and peek.chapter == chapter):
            continue
        if peek.student is not None and roster.normalize(peek.student) != roster.normalize(f.roster_id):
            if (
                roster.normalize(peek.student) not in on_roster
                and public is not None
                and variants.verify(public, assignment, peek.student, f.written_params, peek.tag)
            ):
                # 按笔记本里写的 id 数：一个退课学生的真笔记本复制到几个同学名下，只算一份证据
                renamed.setdefault(roster.normalize(peek.student), f)
            continue  # 拿了别人的笔记本：不是密钥的证据（另有报告）
        own.setdefault(f.roster_id, []).append(f)
    checked = len(set(own) | {f.roster_id for f in renamed.values()})
    if renamed and len(renamed) > KEY_MISMATCH_SHARE * checked:
        examples = "；".join(
            f"{f.rel} 里写着 {f.peek.student!r}，对上的是 {f.roster_id!r}" for f in list(renamed.values())[:3]
        )
        return (
            f"花名册里的 id 与生成个人版时的不同？{checked} 名学生里有 {len(renamed)} 名的笔记本写着不在花名册里的学生 id，"
            f"而签名表明这些笔记本确实是用这个密钥为那些 id 生成的（例如 {examples}）。"
            "Excel 会去掉 id 开头的 0、把长数字写成科学记数法：请用生成个人版时的那份花名册。什么也没有写。"
        ), []
    bad, reissued, proof, forged_book = [], [], False, []
    book = variants.canonical(problems.published(assignment))
    for sid, files in own.items():
        derived = dict(key.params[sid][assignment])
        # 签名对得上推出的参数：密钥和花名册都对，这个学生只是改了参数单元；没有密钥伪造不出这样的签名
        edited = any(key.authentic(sid, assignment, derived, f.peek.tag) for f in files)
        proof = proof or edited
        # 一致要求这一章的参数一个不缺：只写了一个参数（TP 只有 4 种取值）的文件在任何密钥下都可能“一致”，
        # 以前一个学生给每位同学放几份这样的文件，就让错的密钥过了核对
        if any(set(f.written_params) >= set(derived) and not params_mismatch(assignment, derived, f.written_params)
               for f in files):  # fmt: skip
            continue
        signed_files = [f for f in files if key.authentic(sid, assignment, f.written_params, f.peek.tag)]
        # 书上的参数从来不会发给任何学生（个人版的答案都与书上的不同）：签名对得上书上的参数，只能是有人拿到了密钥
        # （猜出来的口令？）自己签的，好照抄公开的解答。不按它评，按推出的参数评，并告诉教师
        forged = [f for f in signed_files if variants.canonical(f.written_params) == book]
        issued = next((f for f in signed_files if f not in forged), None)
        if issued is not None:
            key.issue(sid, assignment, dict(issued.written_params))
            reissued.append(sid)
            proof = True
        elif forged:  # 签名对得上：密钥是对的（另有说明）
            forged_book.append(sid)
            proof = True
        elif any(f.peek.tag and signed_for(key, assignment, f.written_params, f.peek.tag, sid) for f in files):
            proof = True  # 签名对得上另一位同学：密钥是对的，这份是别人的个人版（评分时待核对，另有说明）
        elif not edited:
            bad.append((sid, files[0]))
    notes = []
    if reissued:
        notes.append(
            f"{len(reissued)} 名学生（{'、'.join(reissued[:10])}{'…' if len(reissued) > 10 else ''}）笔记本里的参数与现在的花名册"
            "推出的不同，但签名对得上：这些数是用这个密钥为他们生成的，按笔记本里的数评分。多半是花名册在生成个人版之后改过"
            "（删了行、调换了顺序）；如果花名册没改过，请核对这几份提交"
        )
    if forged_book:
        notes.append(
            f"{len(forged_book)} 名学生（{'、'.join(forged_book[:10])}{'…' if len(forged_book) > 10 else ''}）的笔记本写着书上的参数，"
            "签名却对得上：个人版从不发书上的参数，这样的签名只能用密钥签出来。密钥可能泄露了或被猜出来了（一段口令？），"
            "这几份按花名册推出的参数评分；请核对这几份提交，并用 shardlab-assign --new-secret 换一个随机密钥"
        )
    # 一两份签名对得上不能盖过别的：用对的密钥，没改过的签名总能对上。带着签名却对不上的学生超过一半（至少 2 名）时，
    # 多半是用了别的密钥（上学期的、另一个班的），对得上的那几份是用那个密钥发的旧个人版
    signed_bad = [sid for sid, _ in bad if any(f.peek.tag for f in own[sid])]
    if proof and len(signed_bad) >= MIN_CHECKED and len(signed_bad) > KEY_MISMATCH_SHARE * len(own):
        raise KeyDisproved(
            f"密钥不对：{len(own)} 名学生里有 {len(signed_bad)} 名（例如 {'、'.join(signed_bad[:3])}）的个人版带着签名，"
            "这个密钥（--secret-file）验证不了；对得上的只有少数几份，多半是用这个密钥发过的旧个人版（上学期的、另一个班的）。"
            "请用生成这次个人版（shardlab-assign）时的那个密钥；--trust-key 也不能越过这一条。什么也没有写。"
        )
    # 只有一两份提交时也核对：带着签名却谁的签名都对不上，本身就是密钥不对的证据（学生要故意改签名才会这样）
    enough = len(own) >= MIN_CHECKED or any(f.peek.tag for _, f in bad)
    if not proof and enough and len(bad) > KEY_MISMATCH_SHARE * len(own):
        examples = "；".join(
            f"{f.rel}（{sid}）的 "
            + "、".join(params_mismatch(assignment, key.params[sid][assignment], f.written_params)[:3])
            for sid, f in bad[:3]
        )
        if not any(f.peek.tag for _, f in bad):  # 一份签名也没有：多半交的是公开的练习，不是个人版
            published = problems.published(assignment)
            book = sum(all(f.written_params.get(k) == v for k, v in published.items()) for _, f in bad)
            return (
                f"学生交的不是个人版？{len(own)} 名学生的第 {chapter} 章笔记本里，有 {len(bad)} 名的题目参数不是为他们生成的，"
                f"而且一份签名也没有（其中 {book} 份是书上的数：公开的 exercises/ 练习）。请确认发给学生的是 shardlab-assign 写出的个人版，"
                f"或者密钥（--secret-file）与花名册（--roster）是生成个人版时的那一套（例如 {examples}）。什么也没有写。"
            ), notes
        signed_students = [sid for sid, _ in bad if any(f.peek.tag for f in own[sid])]
        if len(signed_students) >= MIN_CHECKED:
            # 不止一名学生的个人版带着签名，这个密钥却一份也验证不了：密钥一定不对（用对的密钥，没改过的签名总能对上
            # 发给他的参数）。--trust-key 也不能越过这一条：以前加了它，照样按错的参数评出整班的错分、导出 canvas.csv
            raise KeyDisproved(
                f"密钥不对：{len(signed_students)} 名学生（例如 {'、'.join(signed_students[:3])}）的个人版带着签名，"
                f"这个密钥（--secret-file）一份也验证不了（例如 {examples}）。请用生成个人版（shardlab-assign）时的那个密钥；"
                "签名就是证据，--trust-key 也不能越过这一条。什么也没有写。"
            )
        return (
            f"密钥不对？{len(own)} 名学生自己的第 {chapter} 章笔记本里，有 {len(bad)} 名的题目参数既不是这个密钥和花名册推出的，"
            f"签名也对不上（例如 {examples}）。请确认 --secret-file 是生成个人版（shardlab-assign）时的那个密钥，"
            "--roster 是那时的花名册。什么也没有写。"
        ), notes
    return None, notes
