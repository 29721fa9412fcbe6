"""个人版题目参数（personal variant）：由（教师密钥, 作业, 学生 id）确定地抽出，全班一起检查撞车

- 种子是 HMAC-SHA256(密钥, "shardlab-variant/v2" ‖ len ‖ 作业 ‖ len ‖ 学生 id ‖ 第几次抽)：没有密钥就推不出任何人的数。
- 一个学生的一次抽取：每个参数从它的可选值（``problems.Param.choices``）里均匀地取，逐题重抽直到整组参数有效
  （确定的拒绝采样）。有效 = ``problems.violations`` 之外再加两条（它们需要答案登记表）：
  1. 每个随参数变化的答案（``Answer.varies``）与发布版的答案不同（相差超过 ``distinct`` 的容差），抄书里的数不会碰巧对；
  2. 发布版的答案不会恰好落在这个变体的某个常见失误上（否则抄书的数会被当成失误，而不是被认出是书上的）。
- 全班（``for_class``）：按花名册的顺序，每个学生取第一次与**之前每个学生**都共有不超过 ``MAX_SHARED`` 个答案的抽取
  （第 0 次、第 1 次……）。所以在花名册末尾加人不会改变已有学生的数；删掉或调换已有的行会改变后面的人的数。
  “共有”按 ``distinct`` 判断：两个答案相差不超过两倍容差就算同一个答案（照抄过去也会被判对）。
- 保证（``benchmarks/integrity_bench.py`` 实测，见 README）：花名册不超过 ``MAX_CLASS`` 人时，
  任意两名学生随参数变化的答案里共有的不超过 ``MAX_SHARED`` 个；抽不出来时报错，而不是悄悄放宽。
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from shardlab.exercise import answers, problems
from shardlab.exercise.judge import SLIP_RTOL, close

DOMAIN = b"shardlab-variant/v2"
MAX_TRIES = 10_000  # 一次抽取里最多重抽几次
STUCK_AFTER = 20  # 同一道题连着重抽这么多次仍不行，就把它前面的题的参数也重抽
MAX_ATTEMPTS = 2_000  # 全班分配时一个学生最多抽几次
TAG_DOMAIN = b"shardlab-params-ed25519/v1"
MAX_CLASS = 300
# 任意两名学生共有的随参数变化的答案数上限（两章各 14 个随参数变化的数值答案）。
# 有几个答案天生只有三四种取值（受延迟限制的时间只取决于轴长或 TP；问题 8 不需要通信的方案答案是 0），
# 所以 300 人的班级做不到 10%：这是 benchmarks/integrity_bench.py 在 300 人上实测能稳定满足的上限
MAX_SHARED = {"ch05": 5, "ch06": 6}
MIN_SECRET_BYTES = 16
MIN_DISTINCT_BYTES = 8  # 32 个随机字节通常有 30 种左右
SECRET_BYTES = 32


class VariantError(RuntimeError):
    """抽不出满足规则的参数（可选值太少，或班级太大）"""


def seed(secret: bytes, assignment: str, student: str, attempt: int = 0) -> bytes:
    """32 字节的种子；每个字段前写上它的长度，不同的（作业, 学生, 次数）不会拼出同一个输入"""
    fields = (assignment.encode("utf-8"), student.encode("utf-8"), str(attempt).encode())
    msg = DOMAIN + b"".join(len(f).to_bytes(4, "big") + f for f in fields)
    return hmac.new(secret, msg, hashlib.sha256).digest()


def distinct(spec: answers.Answer, a: float, b: float) -> bool:
    """两个参考值算不算不同的答案：相差超过两倍容差（一个判对的答案不会同时对两个人）"""
    return not close(a, b, 2 * spec.rtol)


def far_from_published(spec: answers.Answer, right: float, published: float) -> bool:
    """规则 1：与发布版的答案相差超过 2·max(容差, 认出失误的容差)，照抄书上的数既不会被判对，也不会被当成“差一点”"""
    return not close(published, right, 2 * max(spec.rtol, SLIP_RTOL))


@functools.cache
def _published_values(assignment: str) -> dict[str, float]:
    base = problems.published(assignment)
    return {a.id: a.value(base) for a in answers.chapter_answers(assignment) if a.kind == "value"}


def varying(assignment: str) -> list[answers.Answer]:
    """本章随参数变化的数值答案（撞车与抄袭只看它们）"""
    return [a for a in answers.chapter_answers(assignment) if a.kind == "value" and a.varies]


def answer_violations(assignment: str, params: Mapping[str, Any]) -> list[tuple[int, str]]:
    """规则 1、2（见模块说明）：[(题号, 中文说明)]"""
    bad = []
    published = _published_values(assignment)
    for spec in varying(assignment):
        right, pub = spec.value(params), published[spec.id]
        if not far_from_published(spec, right, pub):
            bad.append((spec.problem, f"{spec.id}：答案与发布版相同"))
            continue
        for slip in (s for s in spec.slips if s.draw_check):
            wrong = slip.wrong_value(right, params)
            if wrong is not None and close(pub, wrong, 0.05):
                bad.append((spec.problem, f"{spec.id}：发布版的答案恰好是常见失误“{slip.hint[:20]}…”"))
                break
    return bad


def _violations(assignment: str, params: Mapping[str, Any]) -> list[tuple[int, str]]:
    """(题号, 中文说明)：先看参数本身的规则，都满足了再看答案（与发布版不同、不撞上常见失误）"""
    return problems.violations(assignment, params) or answer_violations(assignment, params)


def valid(assignment: str, params: Mapping[str, Any]) -> list[str]:
    """这组参数违反了哪些规则（中文说明）；空列表表示有效"""
    return [msg for _, msg in _violations(assignment, params)]


def draw(assignment: str, rng: random.Random) -> dict[str, Any]:
    """用 rng 抽一组有效的参数（确定：同一个 rng 状态得到同一组）

    先把每个参数都抽一遍，然后只重抽出了问题的那一道题的参数（一道题的规则只看它自己和前面的题共用的参数）。
    """
    specs = problems.params_of(assignment)
    params = {p.name: problems._copy(rng.choice(p.choices)) for p in specs}
    stuck = 0
    for _ in range(MAX_TRIES):
        bad = {k for k, _ in _violations(assignment, params)}
        if not bad:
            return params
        first = min(bad)
        stuck += 1
        # 一道题的答案也可能取决于前面的题的参数（第 2 题的时间只取决于第 1 题的网格）：重抽几次仍不行，就把前面的也重抽
        upto = first if stuck % STUCK_AFTER else max(first, 1)
        widen = stuck % STUCK_AFTER == 0
        for p in specs:
            if p.problem == first or (widen and p.problem <= upto):
                params[p.name] = problems._copy(rng.choice(p.choices))
    raise VariantError(f"{assignment}：抽了 {MAX_TRIES} 次都没有得到有效的参数，请检查 problems.PARAMS 的可选值")


def for_student(secret: bytes, assignment: str, student: str, attempt: int = 0) -> dict[str, Any]:
    """学生 student 在作业 assignment 上的第 attempt 次抽取（全班的分配见 ``for_class``）"""
    digest = seed(secret, assignment, student, attempt)
    return draw(assignment, random.Random(int.from_bytes(digest, "big")))


def answer_vector(assignment: str, params: Mapping[str, Any]) -> list[float]:
    """这组参数下本章每个随参数变化的答案（按 ``varying`` 的顺序）"""
    return [spec.value(params) for spec in varying(assignment)]


def shared(assignment: str, a: Sequence[float], b: Sequence[float]) -> int:
    """两个答案向量共有几个答案（按 ``distinct``）"""
    return sum(not distinct(spec, x, y) for spec, x, y in zip(varying(assignment), a, b))


def for_class(
    secret: bytes, assignment: str, students: Sequence[str], max_shared: int | None = None
) -> dict[str, dict[str, Any]]:
    """全班的个人版参数 {学生 id: 参数}：按花名册顺序，每人取第一次与之前每个人共有不超过 max_shared 个答案的抽取"""
    bound = MAX_SHARED[assignment] if max_shared is None else max_shared
    out: dict[str, dict[str, Any]] = {}
    vectors: list[list[float]] = []
    for sid in students:
        for attempt in range(MAX_ATTEMPTS):
            params = for_student(secret, assignment, sid, attempt)
            vec = answer_vector(assignment, params)
            if all(shared(assignment, vec, other) <= bound for other in vectors):
                break
        else:
            raise VariantError(
                f"{assignment}：给第 {len(out) + 1} 个学生（{sid}）抽了 {MAX_ATTEMPTS} 次，都与前面的某个学生共有超过 "
                f"{bound} 个答案；班级超过 {MAX_CLASS} 人时请分成几个花名册（每个用自己的密钥）"
            )
        out[sid] = params
        vectors.append(vec)
    return out


def for_roster(secret: bytes, students: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """两章都分配：{学生 id: {作业: 参数}}"""
    per = {a: for_class(secret, a, students) for a in problems.ASSIGNMENTS}
    return {sid: {a: per[a][sid] for a in problems.ASSIGNMENTS} for sid in students}


# ---- 参数的签名：笔记本里的参数确实是这个密钥发给这个学生的 ----
# 用 Ed25519（cryptography 库）：私钥由教师密钥和章确定地派生，只有有密钥的人能签名；
# 公钥（每章一个，32 字节）可以放进 Gradescope 的 zip：拿着它只能验证，伪造不出签名。
def _signing_key(secret: bytes, assignment: str) -> Ed25519PrivateKey:
    seed_bytes = hmac.new(secret, TAG_DOMAIN + assignment.encode("utf-8"), hashlib.sha256).digest()
    return Ed25519PrivateKey.from_private_bytes(seed_bytes)


def public_key(secret: bytes, assignment: str) -> bytes:
    """这一章的验证公钥（32 字节）"""
    return _signing_key(secret, assignment).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def canonical(params: Mapping[str, Any]) -> bytes:
    """一组参数的规范写法（元组与列表一样）"""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _message(assignment: str, student: str, params: Mapping[str, Any]) -> bytes:
    return canonical({"assignment": assignment, "student": student, "params": params})


def sign(secret: bytes, assignment: str, student: str, params: Mapping[str, Any]) -> str:
    """参数的签名（128 个十六进制字符）：``shardlab-assign`` 写进笔记本的元数据；签的是（章, 学生 id, 参数）"""
    return _signing_key(secret, assignment).sign(_message(assignment, student, params)).hex()


def verify(public: bytes, assignment: str, student: str, params: Mapping[str, Any], tag) -> bool:
    """tag 是不是这一章的私钥对（章, student, params）的签名"""
    if not isinstance(tag, str) or len(tag) != 128:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(tag), _message(assignment, student, params))
    except (InvalidSignature, ValueError):
        return False
    return True


# ---- 教师密钥 ----
def read_secret(path) -> bytes:
    """读教师密钥文件（任意字节，至少 16 个）；太短或空是错误"""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"读不了密钥文件（secret file）{path}：{exc.strerror or exc}") from None
    if len(data.strip()) < MIN_SECRET_BYTES:
        raise ValueError(
            f"密钥文件（secret file）{path} 只有 {len(data.strip())} 个字节，至少要 {MIN_SECRET_BYTES} 个："
            "日期、学号这样的短字符串几秒钟就能被猜出来。请用 shardlab-assign --new-secret 文件 生成一个"
        )
    if len(set(data.strip())) < MIN_DISTINCT_BYTES:
        raise ValueError(
            f"密钥文件（secret file）{path} 只用了 {len(set(data.strip()))} 种不同的字节（像 aaaa… 或 1212…），很容易猜出来；"
            "请用 shardlab-assign --new-secret 文件 生成一个随机的"
        )
    return data


def edited_key_hint(path) -> str:
    """“密钥不对”时给教师的一句提示：文字密钥（口令、openssl rand -hex 的输出）末尾的换行也是密钥的一部分，
    用编辑器打开再存盘可能加上或去掉它。不替教师去掉换行：那样用带换行的密钥发过的个人版就全对不上了"""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return ""
    body = data.rstrip(b"\r\n")
    try:
        printable = body.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return ""
    if not printable:
        return ""
    ending = "有换行" if body != data else "没有换行"
    return (
        f"密钥文件 {path} 是一段文字，末尾{ending}：换行也是密钥的一部分。如果这个文件用编辑器存过盘，"
        "末尾的换行可能被加上或去掉了，请把它恢复成生成个人版时的样子（备份里的那一份）。"
    )


_HEX_KEY = re.compile(r"[0-9a-fA-F]{32,}")  # openssl rand -hex 16 及以上：可读，但是随机的


def secret_warnings(path) -> list[str]:
    """密钥文件能用、却不安全的地方（给教师的中文警告，不拦）：一段可读的文字（口令、句子，甚至花名册本身）
    能被猜出来，猜到的学生就能给任意参数签名；同组或其他用户能读的文件，同一台机器上的学生能直接读到"""
    path = Path(path)
    out = []
    try:
        data, mode = path.read_bytes().strip(), path.stat().st_mode
    except OSError:
        return out
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.isprintable() and not _HEX_KEY.fullmatch(text):
        out.append(
            f"密钥文件（secret file）{path} 是一段可读的文字（口令、句子或表格？）：这样的密钥能被猜出来，"
            "猜到的学生就能给任意参数签名。请用 shardlab-assign --new-secret 文件 生成随机密钥，再重新生成并分发个人版"
        )
    if mode & 0o077:
        out.append(
            f"密钥文件（secret file）{path} 的权限（permissions）是 {mode & 0o777:04o}，同组或其他用户能读到它："
            f"请运行 chmod 600 {path}"
        )
    return out


def new_secret(path) -> Path:
    """写一个新的 32 字节随机密钥，权限 0600；文件已经存在（包括符号链接）时拒绝，不覆盖"""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise ValueError(
            f"{path} 已经存在（或是一个符号链接）：不会覆盖密钥（换了密钥，已经发出的个人版就对不上了）"
        ) from None
    except OSError as exc:
        raise ValueError(f"写不了密钥文件 {path}：{exc.strerror or exc}") from None
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, os.urandom(SECRET_BYTES))
    finally:
        os.close(fd)
    return path
