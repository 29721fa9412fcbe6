"""按个人版评分时，把每个提交文件对上花名册里的学生（``--roster``）

id 一律按 NFKC 规范化、不分大小写比较（``roster.normalize``）。

0. 教师自己按学生分好的文件夹（文件夹名就是花名册里的 id）说了算，里面的文件叫什么都行；
1. LMS 批量下载的文件只认 LMS 给的身份：
   - Canvas：``<姓名>_<用户号>_<提交号>_<原文件名>``、迟交的 ``<姓名>_LATE_<用户号>_…``（姓名部分只有字母）；
   - Moodle：``<姓名>_<参与者号>_assignsubmission_file_<原文件名>``（文件或文件夹）；
   - Gradescope 的 “Export Submissions”：``submission_<提交号>/`` 文件夹，配 ``submission_metadata.yml``
     （其中每个提交的 ``:submitters:`` 有 ``:sid:`` 与 ``:email:``）。
   Canvas 的用户号对花名册的 ``lms_id`` 列（没有这一列时按姓名）；Moodle 的参与者号每个作业都不同，只按姓名
   （去掉空格与标点、不分大小写）；Gradescope 的提交者对 ``id`` 或 ``email`` 列。
   认不出就不评：学生自己起的那部分文件名和笔记本里写的 id 都不算，不然不在班上的人交的文件就能算到某个同学头上。
2. 自己收的文件：文件夹名就是 id；整个文件名（去掉 .ipynb）就是 id；否则 id 作为一个完整的“词”出现在文件夹名或文件名里
   （前后是开头、结尾或 ``_ - . 空格 ( )``），如 ``s005_ch05.ipynb``、``ch05_exercises_s005.ipynb``、``alice_ch05 (1).ipynb``；
   先去掉重复下载或复制加上的后缀（`` (1)``、`` - Copy``、`` - 副本``、`` copy 2``），其中的数字不是 id；
   一个 id 的出现被另一个更长的 id 的出现包住时只算长的那个（``li_wei_ch05`` 是 li_wei，不是 li）。
3. 名字认不出、或能认成几个学生时，笔记本元数据里写的学生 id（``metadata.shardlab.student``）作为证据：它必须在花名册里，
   并且是名字给出的候选之一（自己收的文件没有候选时也接受）。

名字已经认出了学生，而笔记本里写的是另一个学生时，文件算名字上的学生，并把这件事记下来交给助教（``notes``）。
认不出的文件不评，列为忽略并写明原因，从不猜。
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
EXPORT_HOW = "Gradescope 导出的提交者"
GROUP_NOTE = "小组提交"  # 小组提交的组员说明以它开头；按签名定了组员之后去掉（cli._group_member_by_signature）
BY_FOLDER = "文件夹名"  # 教师自己按学生分好的文件夹
LMS_KINDS = ("Canvas", "Moodle")  # 由文件名的格式认出的 LMS（Identity.how 以它们开头）
BY_EMBEDDED_ID = "笔记本里写的学生 id"  # 只凭它认出时，评分器还要核对签名（cli._drop_unsigned_claims）
# Canvas 的姓名部分只有字母（小写、去掉了空格与标点），用户号与提交号是数字：s005_2024_1_x 不是 Canvas 的名字
# Canvas：<姓名>[_LATE]_<用户号>_<提交号>_<原文件名>；姓名部分不一定只有字母（可能有数字、连字符），不能含下划线
_CANVAS = re.compile(
    r"^(?P<name>[^\W_](?:[^\W_]|-)*)(?:_LATE)?_(?P<uid>\d{2,})_(?P<sub>\d{2,})_(?P<file>.+)$", re.IGNORECASE
)
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<uid>\d+)_assignsubmission_(?:file|onlinetext)_?(?P<file>.*)$", re.IGNORECASE)
_GRADESCOPE = re.compile(r"^submission_(?P<sub>\d+)$", re.IGNORECASE)
MAX_METADATA_BYTES = 8 << 20
# 浏览器与文件管理器给重复下载、复制的文件加的后缀：“ (1)”“ - Copy”“ - 副本”“ copy 2”；其中的数字不是学生 id
_COPY_SUFFIX = re.compile(r"(?:\s*\(\d+\)|\s+-\s+(?:copy|副本)(?:\s*\(\d+\))?|\s+copy(?:\s+\d+)?)+$", re.IGNORECASE)


@dataclass
class Identity:
    """一个文件对上了谁：sid 为 None 时 reason 说明为什么认不出"""

    sid: str | None
    how: str = ""  # 给助教看的证据：“文件夹名”“文件名里的 id”“Canvas 用户号”“笔记本里写的 id”……
    reason: str = ""
    embedded: str | None = None  # 笔记本里写的学生 id（与 sid 不同时要报告）
    notes: list[str] = field(default_factory=list)
    group: list[str] = field(default_factory=list)  # Gradescope 导出里一起交的组员（小组提交；含 sid）
    strong: bool = False  # 身份来自教师分好的文件夹或 LMS，不是学生自己起的文件名或笔记本里写的 id


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


def gradescope_export(root: Path) -> dict[str, list[dict]] | None:
    """Gradescope 导出的 submission_metadata.yml：{文件夹名: [{sid, email, name}, …]}；没有或读不了时为空；
    提交目录里除了它和 ``submission_<号>/`` 文件夹还有别的东西时为 None：不是原样的导出（以前：往自己收作业的目录里
    放一份 yml 和一个 submission_1/，就能把自己的笔记本作为“小组提交”记到没交作业的朋友名下）"""
    path = root / "submission_metadata.yml"
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_METADATA_BYTES:
            return {}
        for entry in os.scandir(root):
            name = entry.name
            if name.startswith(".") or name in ("submission_metadata.yml", "__MACOSX"):
                continue
            if not (_GRADESCOPE.match(name) and entry.is_dir(follow_symlinks=False)):
                return None
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    out: dict[str, list[dict]] = {}
    if not isinstance(data, dict):
        return out
    for folder, record in data.items():
        people = record.get(":submitters") if isinstance(record, dict) else None
        if isinstance(people, list):
            out[str(folder)] = [  # 只取标量：别名（YAML 的 &/*）展开成巨大的列表再 str() 会耗尽时间和内存
                {k.lstrip(":"): str(v) for k, v in p.items() if isinstance(k, str) and isinstance(v, str | int | float)}
                for p in people
                if isinstance(p, dict)
            ]
    return out


@dataclass
class Lms:
    """文件名或文件夹名是 LMS 批量下载的格式时，LMS 给出的身份（学生自己起的那部分文件名不算证据）"""

    candidates: set[str]
    how: str
    reason: str = ""  # 认不出时的原因
    order: list[str] = field(default_factory=list)  # Gradescope 导出：提交者在 yml 里的次序


def _from_lms(name: str, table: Roster) -> Lms | None:
    """Canvas / Moodle 的文件名或文件夹名；不是这两种格式时为 None"""
    for kind, pattern in (("Canvas", _CANVAS), ("Moodle", _MOODLE)):
        m = pattern.match(name)
        if not m:
            continue
        uid, person = m.group("uid"), m.group("name")
        if kind == "Moodle":  # Moodle 文件名里的是每个作业各自的“参与者号”，不是用户号：只能按姓名
            found = table.by_name.get(_squash(person), set())
            if found:
                return Lms(set(found), "Moodle 文件名里的姓名")
            return Lms(set(), "", f"Moodle 文件名里的姓名 {person!r} 对不上花名册的 name 列")
        if uid in table.by_lms:
            return Lms({table.by_lms[uid]}, f"{kind} 用户号 {uid}")
        if table.by_lms:  # 花名册有 lms_id 列：用户号不在里面，就不是这个班的学生交的
            return Lms(set(), "", f"{kind} 用户号 {uid} 不在花名册的 lms_id 列里：不是这个班的学生交的？")
        by_name = table.by_name.get(_squash(person), set())
        if by_name:
            return Lms(set(by_name), f"{kind} 文件名里的姓名")
        return Lms(
            set(), "", f"{kind} 文件名里的姓名 {person!r} 对不上花名册；请在花名册里加 lms_id 列（{kind} 的用户号）"
        )
    return None


def _from_export(folder: str, export: dict[str, list[dict]] | None, table: Roster) -> Lms | None:
    """Gradescope 导出的 submission_<号>/ 文件夹：提交者由 submission_metadata.yml 决定；yml 里没有这个文件夹（或根本没有 yml）
    时不评：不退回到学生自己起的文件名"""
    if not _GRADESCOPE.match(folder):
        return None
    if export is None:
        return Lms(
            set(),
            "",
            "像 Gradescope 导出的提交文件夹，但提交目录里还有别的文件：不是原样的导出，submission_metadata.yml 不算数",
        )
    if folder not in export:
        why = "没有列在 submission_metadata.yml 里" if export else "旁边没有 Gradescope 导出的 submission_metadata.yml"
        return Lms(set(), "", f"像 Gradescope 导出的提交文件夹，但{why}：请把整个导出解压到提交目录")
    people = export[folder]
    ids = (table.exact(p.get("sid", "")) or table.by_email.get(p.get("email", "").casefold()) for p in people)
    order = list(dict.fromkeys(i for i in ids if i is not None))
    if order:
        return Lms(set(order), EXPORT_HOW, order=order)
    return Lms(set(), "", "Gradescope 导出的提交者（学号、邮箱）不在花名册里")


def _self_collected_hint(stem: str, table: Roster, embedded: str | None) -> str:
    """LMS 格式的名字认不出时，文件名或笔记本里却有花名册里的 id：多半是自己收的文件碰巧像 LMS 的名字
    （s003_20260301_1200_ch05 像 Canvas 的 <姓名>_<用户号>_<提交号>_…）。只是给教师的提示，仍然不评"""
    named = {table.exact(stem)} - {None} or table.in_text(stem)
    if len(named) != 1:
        return ""
    sid = next(iter(named))
    also = "，笔记本里写的也是它" if embedded and table.exact(embedded) == sid else ""
    return f"（文件名里有花名册里的 id {sid}{also}：如果这是自己收的文件，请把它放进 {sid}/ 文件夹再评）"


def identify(
    rel_parts: tuple[str, ...], table: Roster, embedded: str | None, export: dict[str, list[dict]] | None
) -> Identity:
    """rel_parts：相对于提交目录的路径（文件夹, 文件名）或（文件名,）；embedded：笔记本里写的学生 id"""
    name = rel_parts[-1]
    stem = _COPY_SUFFIX.sub("", name[:-6] if name.lower().endswith(".ipynb") else name)
    folder = rel_parts[0] if len(rel_parts) > 1 else None
    own_folder = table.exact(folder) if folder is not None else None  # 教师自己按学生分好的文件夹：它说了算
    lms = None
    if own_folder is None:
        lms = (_from_export(folder, export, table) or _from_lms(folder, table)) if folder else None
        lms = lms or _from_lms(name, table)
    if own_folder is not None:
        candidates, how = {own_folder}, BY_FOLDER
    elif lms is not None:  # LMS 给的身份说了算：认不出就不评，不退回到学生自己起的文件名或笔记本里写的 id
        candidates, how = lms.candidates, lms.how
        if not candidates:
            return Identity(None, reason=lms.reason + _self_collected_hint(stem, table, embedded))
    elif folder is not None and table.in_text(folder):
        candidates, how = table.in_text(folder), "文件夹名里的 id"
    elif table.exact(stem):
        candidates, how = {table.exact(stem)}, "文件名"
    else:
        candidates, how = table.in_text(stem), "文件名里的 id"
    emb = table.exact(embedded) if embedded else None
    if len(candidates) == 1:
        sid = next(iter(candidates))
        ident = Identity(sid, how, embedded=embedded, strong=own_folder is not None or lms is not None)
        named = _from_lms(name, table) if own_folder is not None else None
        if named is not None and named.candidates and sid not in named.candidates:
            others = "、".join(sorted(named.candidates))
            ident.notes.append(
                f"文件名是 LMS 下载的格式，按 {named.how} 是 {others} 的，却放在 {sid} 的文件夹里：按文件夹评给 {sid}；请助教核对"
            )
        if embedded and emb != sid:
            ident.notes.append(
                f"笔记本里写的学生 id 是 {embedded!r}，文件属于 {sid}（{how}）：按 {sid} 的参数评分；请助教核对"
            )
        return ident
    if emb is not None and emb in candidates and lms is not None and lms.how == EXPORT_HOW:
        members = sorted(candidates)
        return Identity(
            emb,
            f"{EXPORT_HOW}（小组：{'、'.join(members)}；笔记本是 {emb} 的）",
            embedded=embedded,
            group=members,
            strong=True,
        )
    if lms is not None and lms.how == EXPORT_HOW and lms.order:
        # 笔记本里没有写是哪位组员的（或写的不是组员）：与 Gradescope 容器里一样，按 yml 里的第一位评，告诉助教
        first, members = lms.order[0], sorted(candidates)
        return Identity(
            first,
            f"{EXPORT_HOW}（小组：{'、'.join(members)}；笔记本里没有写是哪位组员的，按第一位 {first} 的参数评分）",
            embedded=embedded,
            notes=[
                f"{GROUP_NOTE}（{'、'.join(members)}）的笔记本里没有写是哪位组员的个人版：按 {first} 的参数评分；请助教核对"
            ],
            group=members,
            strong=True,
        )
    if emb is not None and (emb in candidates or (not candidates and lms is None)):
        basis = BY_EMBEDDED_ID + (f"（{how}能对上几个学生：{'、'.join(sorted(candidates))}）" if candidates else "")
        return Identity(emb, basis, embedded=embedded)
    if candidates:
        return Identity(
            None,
            reason=f"{how}能对上不止一个学生 id（{'、'.join(sorted(candidates))}），笔记本里也没有能确定的 id；不猜",
        )
    claimed = f"笔记本里写的 id {embedded!r} 也不在花名册里" if embedded else "笔记本里也没有写 id"
    return Identity(
        None,
        reason=f"认不出是哪位学生：文件名和文件夹名里没有花名册里的 id，{claimed}；"
        "请把文件放进 <id>/ 文件夹，或在花名册里加 lms_id / email 列",
    )


def rel_parts(raw_rel: bytes) -> tuple[str, ...]:
    """相对路径的各段（按 UTF-8 解码、NFC 规范化）"""
    text = unicodedata.normalize("NFC", os.fsdecode(raw_rel))
    return tuple(p for p in text.split(os.sep) if p)
