"""按个人版评分时，把每个提交文件对上花名册里的学生（``--roster``）

证据按强弱排列（id 一律按 NFC 规范化、不分大小写比较，``roster.normalize``）：

1. 文件夹：``<提交目录>/<id>/….ipynb``，文件夹名就是 id；
2. 文件名：整个文件名（去掉 .ipynb）就是 id；否则 id 作为一个完整的“词”出现在文件名里（前后是开头、结尾或 ``_ - . 空格 ( )``），
   如 ``s005_ch05.ipynb``、``ch05_exercises_s005.ipynb``、``alice_ch05 (1).ipynb``；一个 id 的出现被另一个更长的 id 的出现
   包住时只算长的那个（``li_wei_ch05`` 是 li_wei，不是 li）；
3. LMS 批量下载的文件名：
   - Canvas：``<姓名>_<用户号>_<提交号>_<原文件名>``、迟交的 ``<姓名>_LATE_<用户号>_…``；
   - Moodle：``<姓名>_<参与者号>_assignsubmission_file_<原文件名>``（文件或文件夹）；
   - Gradescope 的 “Export Submissions”：``submission_<提交号>/`` 文件夹，配 ``submission_metadata.yml``
     （其中每个提交的 ``:submitters:`` 有 ``:sid:`` 与 ``:email:``）；
   用户号对花名册的 ``lms_id`` 列，邮箱对 ``email`` 列，姓名（去掉空格与标点、不分大小写）对 ``name`` 列；原文件名再按 2 找 id；
4. 名字认不出、或能认成几个学生时，笔记本元数据里写的学生 id（``metadata.shardlab.student``，``shardlab-assign`` 写进去的）
   作为证据：它必须在花名册里，并且是名字给出的候选之一（没有候选时也接受）。

名字已经认出了学生，而笔记本里写的是另一个学生时，文件算名字上的学生（文件名是 LMS 给的身份），
并把这件事记下来交给助教（``embedded``）。认不出的文件不评，列为忽略并写明原因，从不猜。
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from shardlab.exercise import roster

SEP = r"[_\-\s.()\[\]]"
_CANVAS = re.compile(r"^(?P<name>[^_]+?)(?:_LATE)?_(?P<uid>\d+)_(?P<sub>\d+)_(?P<file>.+)$", re.IGNORECASE)
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<uid>\d+)_assignsubmission_(?:file|onlinetext)_?(?P<file>.*)$", re.IGNORECASE)
_GRADESCOPE = re.compile(r"^submission_(?P<sub>\d+)$", re.IGNORECASE)
MAX_METADATA_BYTES = 8 << 20


@dataclass
class Identity:
    """一个文件对上了谁：sid 为 None 时 reason 说明为什么认不出"""

    sid: str | None
    how: str = ""  # 给助教看的证据：“文件夹名”“文件名里的 id”“Canvas 用户号”“笔记本里写的 id”……
    reason: str = ""
    embedded: str | None = None  # 笔记本里写的学生 id（与 sid 不同时要报告）
    notes: list[str] = field(default_factory=list)


def _squash(text: str) -> str:
    """姓名的比较形式：NFC、不分大小写，只留字母和数字（Canvas 的文件名把“Wang, Zhang”写成 wangzhang）"""
    return "".join(ch for ch in unicodedata.normalize("NFC", text).casefold() if ch.isalnum())


class Roster:
    """花名册的查找表"""

    def __init__(self, students: list[roster.Student]):
        self.students = students
        self.by_id = {roster.normalize(s.id): s.id for s in students}
        self.by_lms = {s.lms_id: s.id for s in students if s.lms_id}
        self.by_email = {s.email.casefold(): s.id for s in students if s.email}
        names: dict[str, set[str]] = {}
        for s in students:
            for variant in {_squash(s.name), _squash("".join(reversed(s.name.split())))}:
                if variant:
                    names.setdefault(variant, set()).add(s.id)
        self.by_name = names

    def exact(self, text: str) -> str | None:
        return self.by_id.get(roster.normalize(text))

    def in_text(self, text: str) -> set[str]:
        """text 里作为完整的“词”出现的 id；被更长的 id 的出现包住的不算"""
        norm = roster.normalize(text)
        spans = []
        for key, sid in self.by_id.items():
            for m in re.finditer(rf"(?:^|{SEP})({re.escape(key)})(?=$|{SEP})", norm):
                spans.append((m.start(1), m.end(1), sid))
        keep = {
            sid
            for a0, a1, sid in spans
            if not any(b0 <= a0 and a1 <= b1 and (b1 - b0) > (a1 - a0) for b0, b1, _ in spans)
        }
        return keep


def gradescope_export(root: Path) -> dict[str, list[dict]]:
    """Gradescope 导出的 submission_metadata.yml：{文件夹名: [{sid, email, name}, …]}；没有或读不了时为空"""
    path = root / "submission_metadata.yml"
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_METADATA_BYTES:
            return {}
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    out: dict[str, list[dict]] = {}
    if not isinstance(data, dict):
        return out
    for folder, record in data.items():
        people = record.get(":submitters") if isinstance(record, dict) else None
        if isinstance(people, list):
            out[str(folder)] = [
                {k.lstrip(":"): str(v) for k, v in p.items() if isinstance(k, str)}
                for p in people
                if isinstance(p, dict)
            ]
    return out


def _from_lms(name: str, table: Roster) -> tuple[set[str], str, str]:
    """LMS 的文件名或文件夹名：(候选学生, 证据, 原文件名)；不是 LMS 的格式时候选为空、原文件名就是 name"""
    for kind, pattern in (("Canvas", _CANVAS), ("Moodle", _MOODLE)):
        m = pattern.match(name)
        if not m:
            continue
        uid, person, original = m.group("uid"), m.group("name"), m.group("file")
        if uid in table.by_lms:
            return {table.by_lms[uid]}, f"{kind} 用户号 {uid}", original
        if table.exact(uid):
            return {table.exact(uid)}, f"{kind} 用户号 {uid}", original
        by_name = table.by_name.get(_squash(person), set())
        if by_name:
            return set(by_name), f"{kind} 文件名里的姓名", original
        return set(), f"{kind} 文件名（用户号 {uid} 不在花名册的 lms_id 列里）", original
    return set(), "", name


def identify(
    rel_parts: tuple[str, ...], table: Roster, embedded: str | None, export: dict[str, list[dict]]
) -> Identity:
    """rel_parts：相对于提交目录的路径（文件夹, 文件名）或（文件名,）；embedded：笔记本里写的学生 id"""
    name = rel_parts[-1]
    stem = name[:-6] if name.lower().endswith(".ipynb") else name
    folder = rel_parts[0] if len(rel_parts) > 1 else None
    candidates: set[str] = set()
    how = ""
    if folder is not None:
        gs = _GRADESCOPE.match(folder)
        if gs and folder in export:
            people = export[folder]
            found = {table.exact(p.get("sid", "")) or table.by_email.get(p.get("email", "").casefold()) for p in people}
            candidates, how = {s for s in found if s}, "Gradescope 导出的提交者"
        elif table.exact(folder):
            candidates, how = {table.exact(folder)}, "文件夹名"
        else:
            lms, how, _ = _from_lms(folder, table)
            candidates = lms or table.in_text(folder)
            how = how if lms else ("文件夹名里的 id" if candidates else how)
    if not candidates:
        lms, lms_how, original = _from_lms(name, table)
        original_stem = original[:-6] if original.lower().endswith(".ipynb") else original
        if lms:
            candidates, how = lms, lms_how
        elif table.exact(stem):
            candidates, how = {table.exact(stem)}, "文件名"
        else:  # 先看 LMS 文件名里学生自己起的那部分，再看整个文件名
            candidates = table.in_text(original_stem) or table.in_text(stem)
            how = "文件名里的 id" if candidates else (lms_how or how)
    emb = table.exact(embedded) if embedded else None
    if len(candidates) == 1:
        sid = next(iter(candidates))
        ident = Identity(sid, how, embedded=embedded)
        if embedded and emb != sid:
            ident.notes.append(
                f"笔记本里写的学生 id 是 {embedded!r}，文件属于 {sid}（{how}）：按 {sid} 的参数评分；请助教核对"
            )
        return ident
    if emb is not None and (not candidates or emb in candidates):
        basis = "笔记本里写的学生 id" + (
            f"（{how}能对上几个学生：{'、'.join(sorted(candidates))}）" if candidates else ""
        )
        return Identity(emb, basis, embedded=embedded)
    if candidates:
        return Identity(
            None,
            reason=f"文件名能对上不止一个学生 id（{'、'.join(sorted(candidates))}），笔记本里也没有能确定的 id；不猜",
        )
    where = f"（{how}）" if how else ""
    return Identity(
        None,
        reason=f"认不出是哪位学生{where}：文件名和文件夹名里没有花名册里的 id，笔记本里也没有写 id；"
        "请把文件放进 <id>/ 文件夹，或在花名册里加 lms_id / email 列",
    )


def rel_parts(raw_rel: bytes) -> tuple[str, ...]:
    """相对路径的各段（按 UTF-8 解码、NFC 规范化）"""
    text = unicodedata.normalize("NFC", os.fsdecode(raw_rel))
    return tuple(p for p in text.split(os.sep) if p)
