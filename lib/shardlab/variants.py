"""个人版题目参数（personal variant）：由（教师密钥, 作业, 学生 id）确定地抽出一组仍然有效的参数

- 种子是 HMAC-SHA256(密钥, "shardlab-variant/v1" ‖ len ‖ 作业 ‖ len ‖ 学生 id)：同一个学生永远得到同样的数；
  没有密钥就推不出别人的数（HMAC 是带密钥的伪随机函数）。
- 抽法：每个参数从它的可选值（``problems.Param.choices``）里均匀地取，逐题重抽直到整组参数满足 ``valid``
  （确定的拒绝采样）。
- 有效（``problems.violations`` 之外再加两条，它们需要答案登记表）：
  1. 每个随参数变化的答案（``Answer.varies``）与发布版的答案不同（超过它的容差），抄书里的数不会碰巧对；
  2. 发布版的答案不会恰好落在这个变体的某个常见失误上（否则抄来的数会被当成失误，而不是被认出是抄的）。
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shardlab import answers, problems

DOMAIN = b"shardlab-variant/v1"
MAX_TRIES = 10_000


def seed(secret: bytes, assignment: str, student: str) -> bytes:
    """32 字节的种子；每个字段前写上它的长度，不同的（作业, 学生）不会拼出同一个输入"""
    msg = DOMAIN + b"".join(
        len(f).to_bytes(4, "big") + f for f in (assignment.encode("utf-8"), student.encode("utf-8"))
    )
    return hmac.new(secret, msg, hashlib.sha256).digest()


def _close(a: float, b: float, rtol: float) -> bool:
    if b == 0:
        return abs(a) <= 1e-12
    return math.isclose(a, b, rel_tol=rtol)


@functools.cache
def _published_values(assignment: str) -> dict[str, float]:
    base = problems.published(assignment)
    return {a.id: a.value(base) for a in answers.chapter_answers(assignment) if a.kind == "value"}


def answer_violations(assignment: str, params: Mapping[str, Any]) -> list[tuple[int, str]]:
    """规则 1、2（见模块说明）：[(题号, 中文说明)]"""
    bad = []
    published = _published_values(assignment)
    for spec in answers.chapter_answers(assignment):
        if spec.kind != "value" or not spec.varies:
            continue
        right, pub = spec.value(params), published[spec.id]
        if _close(pub, right, max(spec.rtol, 0.02) * 2):
            bad.append((spec.problem, f"{spec.id}：答案与发布版相同"))
            continue
        for slip in spec.slips:
            if _close(pub, slip.wrong_value(right, params), 0.05):
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

    按题号逐题抽：先把每个参数都抽一遍，然后只重抽出了问题的那几道题的参数（一道题的规则只看它自己和前面的题共用的参数）。
    """
    specs = problems.params_of(assignment)
    params = {p.name: problems._copy(rng.choice(p.choices)) for p in specs}
    for _ in range(MAX_TRIES):
        bad = {k for k, _ in _violations(assignment, params)}
        if not bad:
            return params
        first = min(bad)
        for p in specs:
            if p.problem == first:
                params[p.name] = problems._copy(rng.choice(p.choices))
    raise RuntimeError(f"{assignment}：抽了 {MAX_TRIES} 次都没有得到有效的参数，请检查 problems.PARAMS 的可选值")


def for_student(secret: bytes, assignment: str, student: str) -> dict[str, Any]:
    """学生 student 在作业 assignment 上的个人版参数"""
    digest = seed(secret, assignment, student)
    return draw(assignment, random.Random(int.from_bytes(digest, "big")))


def read_secret(path) -> bytes:
    """读教师密钥文件（任意字节）；空文件是错误"""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"读不了密钥文件（secret file）{path}：{exc.strerror or exc}") from None
    if not data.strip():
        raise ValueError(f"密钥文件（secret file）{path} 是空的：请放进一段随机字节，例如 head -c 32 /dev/urandom")
    return data
