"""提交目录：找出要评的文件（只要普通文件，不跟随符号链接），安全地读它们，给每份提交一个唯一、可追溯的学生 id

- 目录里的 ``*.ipynb``（不分大小写）和每个学生一个子目录（``subs/<学生>/*.ipynb``）都算提交；通配符同样
  （``'subs/*/ch05.ipynb'`` 里，路径从通配符前面的固定部分 ``subs/`` 算起，所以 ``<学生>/`` 照样是学生的文件夹）；
  以 ``.`` 开头的文件与文件夹（``.ipynb_checkpoints``、macOS 的 ``._x.ipynb``）和 ``__MACOSX`` 文件夹不看；
  符号链接、FIFO、设备、目录、套接字即使名字是 ``*.ipynb`` 也不读，列为“忽略”并写明原因；别的文件也列出来；
- 读文件用 ``O_NOFOLLOW | O_NONBLOCK`` 打开，确认是普通文件，最多读 ``MAX_SUBMISSION_BYTES + 1`` 个字节；
- 学生 id 由相对于提交目录的路径得到：顶层文件取文件名，子目录里的文件取子目录名；只保留字母（含中文）、数字、
  ``. _ -``，最多 ``MAX_ID_BYTES`` 个字节；改动过、截断过或与别的 id 相同（不分大小写）时，加上 ``~`` 和相对路径的
  短哈希——``~`` 不会出现在没加哈希的 id 里，所以加了哈希的 id 不可能等于另一个文件的 id；
- 同一个路径列出两次只评一次（按路径去重，从不按符号链接指向的目标）；同一个学生内容相同的几个文件只评一次、
  每个学生最多评几个文件，由 ``shardlab.grade.cli`` 在认出学生之后决定。
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from shardlab.untrusted import clean

MAX_SUBMISSION_BYTES = 20 << 20
MAX_ID_BYTES = 96  # 学生 id 的字节数上限（加上哈希、.json 和临时文件的前后缀仍远小于 255）
MAX_DEPTH = 2  # 提交目录下最多看两层：文件，或 <学生>/文件
HASH_SEP = "~"


class Unreadable(Exception):
    """不能当作提交读的文件（不是普通文件、太大、读不了）"""

    def __init__(self, reason: str, too_large: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.too_large = too_large


@dataclass
class Found:
    """一份要评的提交"""

    path: Path  # 真实路径（评分器打开它）
    rel: str  # 相对于提交目录的路径，可以显示（已清理）
    raw_rel: bytes  # 相对路径的原始字节（用来算 id 和哈希）
    group: bytes  # 决定 id 的那一段：顶层文件的文件名（去掉 .ipynb），或子目录名
    sid: str = ""
    roster_id: str | None = None  # 按个人版评分时：对上的花名册学生（shardlab.grade.identify）
    how: str = ""  # 怎样对上的（给助教看）
    notes: list[str] = field(default_factory=list)  # 给助教看的身份问题（笔记本里写的是另一个学生……）
    strong: bool = False  # 身份来自教师分好的文件夹或 LMS（不是学生自己起的文件名）
    members: list[str] = field(default_factory=list)  # 小组提交的全部组员（Gradescope 导出）
    written_params: dict | None = None  # 参数单元里写的参数（核对密钥用）
    peek: object = None  # inject.Peek：评分之前读出的章、笔记本里写的学生 id、参数单元；读不了时为 None
    sha: str | None = None  # 评分之前读到的内容的 sha256；读不了时为 None
    own_signed: bool = False  # 带着这个密钥为笔记本里写的学生 id 签的参数（一份真的个人版）
    over_cap: bool = (
        False  # 这个学生内容不同的文件超过上限，有的没有评（成绩待教师核对，见 shardlab.grade.per_student）
    )


@dataclass
class Scan:
    found: list[Found] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)  # {"file": 相对路径, "reason": 原因}
    notes: list[str] = field(default_factory=list)  # 给教师的说明（例如：进了 Gradescope 导出外面的那一层文件夹）
    # 有花名册时，让“这次没有文件的学生”不能放心记 0 分的线索（见 cli._held_without_file）：
    off_roster: list[str] = field(default_factory=list)  # 用这个密钥为不在花名册里的 id 生成的个人版写着的 id
    unidentified: list[str] = field(default_factory=list)  # 认不出是谁交的笔记本
    owned_ignored: dict[str, str] = field(
        default_factory=dict
    )  # 花名册 id → 认得出是他的、却没有评的文件（不是 .ipynb 等）
    partial: str = ""  # 这次只给了一部分提交（一个个文件、某个学生的文件夹）
    book_params: list[str] = field(default_factory=list)  # 公开练习（书上的参数、没有签名）的文件（相对路径）
    skipped_raw: list[tuple[bytes, str]] = field(default_factory=list)  # 没有评的文件的原始相对路径与原因


def _kind(mode: int) -> str | None:
    """不是普通文件时，它是什么"""
    for test, name in (
        (stat.S_ISLNK, "符号链接（symlink）"),
        (stat.S_ISDIR, "目录"),
        (stat.S_ISFIFO, "命名管道（FIFO）"),
        (stat.S_ISCHR, "字符设备"),
        (stat.S_ISBLK, "块设备"),
        (stat.S_ISSOCK, "套接字"),
    ):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "不是普通文件"


def _is_notebook(name: bytes) -> bool:
    return name.lower().endswith(b".ipynb")


def _stem(name: bytes) -> bytes:
    return name[:-6] if _is_notebook(name) else name


def show(raw: bytes) -> str:
    """路径的原始字节 → 可以显示的文字（坏字节写成 \\xff，控制字符去掉）"""
    return clean(raw.decode("utf-8", "backslashreplace"), 500, newlines=False)


def scan(specs: list[str], skip: Path | None = None, is_student=None) -> Scan:
    """列出要评的提交与被忽略的文件；目录按名字排序，不跟随符号链接。skip：不看的目录（输出目录在提交目录里面时）

    is_student(文件夹名) 说这个名字正好是花名册里的一个 id 时，直接给的这个文件夹是一个学生的文件夹
    （``subs/2024001``，重评一个学生）：路径从它的上级算起，文件夹名就是学生，与它在班级目录里时一样
    （以前从文件夹里面算起，文件夹名不算数，认不出是谁，整次运行停下）

    直接给的几个文件（没加引号的通配符被 shell 展开成的 ``subs/s1/x.ipynb subs/s2/x.ipynb``）从它们共同的上级目录算起，
    所以 ``s1/``、``s2/`` 照样是学生的文件夹（以前从整个路径算起，文件夹名认不出学生）"""
    result = Scan()
    seen: set[bytes] = set()
    skipped = os.path.normpath(os.path.abspath(os.fsencode(skip))) if skip is not None else None
    files = [os.fsencode(s) for s in specs if not any(ch in s for ch in "*?[") and os.path.isfile(s)]
    parents = {os.path.dirname(os.path.abspath(f)) for f in files}
    common = os.path.commonpath(list(parents)) if len(parents) > 1 else None  # 都在一个目录里：只看文件名
    folders = _student_folders([os.fsencode(s) for s in specs])
    if folders:
        result.notes.append(
            f"给了 {len(folders)} 个同级的文件夹，里面只有文件（多半是没加引号的通配符 subs/* 被 shell 展开了）："
            "每个文件夹算一个学生的文件夹，按文件夹名认人"
        )

    def add(path: bytes, rel: bytes, group: bytes) -> None:
        real = os.path.normpath(os.path.abspath(path))
        if real in seen:
            return
        seen.add(real)
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            result.ignored.append({"file": show(rel), "reason": f"读不了：{exc.strerror}"})
            return
        kind = _kind(mode)
        if kind is not None:
            result.ignored.append({"file": show(rel), "reason": f"{kind}，不是普通文件；评分器不读它"})
            result.skipped_raw.append((rel, f"{kind}，不是普通文件"))
            return
        result.found.append(Found(Path(os.fsdecode(path)), show(rel), rel, group))

    for spec in specs:
        top = os.fsencode(spec)
        try:
            top_mode = os.lstat(top).st_mode
        except OSError:
            top_mode = None
        if top_mode is not None and stat.S_ISDIR(top_mode):
            inner = export_inside(top)
            if inner is not None:
                result.notes.append(
                    f"{show(top)} 里只有一个文件夹 {show(os.path.basename(inner))}，里面是 Gradescope 的导出"
                    "（submission_metadata.yml）：评的是它里面的提交"
                )
                top = inner
            name = os.path.basename(os.path.normpath(os.path.abspath(top)))
            own = is_student is not None and inner is None and is_student(os.fsdecode(name))
            if top in folders or own:  # 学生的文件夹：路径从它的上级算起，文件夹名就是学生
                _walk(os.path.dirname(os.path.abspath(top)), os.path.basename(os.path.abspath(top)), 2, add, result,
                      skipped)  # fmt: skip
            else:
                _walk(top, b"", 1, add, result, skipped)
        elif any(ch in spec for ch in "*?["):
            base = _static_prefix(top)
            for match in sorted(glob.glob(top)):
                rel = os.path.relpath(match, base) if base else match
                parts = [p for p in rel.split(b"/") if p]
                if any(p.startswith(b".") or p == b"__MACOSX" for p in parts):
                    continue
                add(match, rel, parts[0] if len(parts) > 1 else _stem(parts[-1]))
        else:
            rel = os.path.relpath(os.path.abspath(top), common) if common and top in files else os.path.basename(top)
            parts = [p for p in rel.split(b"/") if p]
            if len(parts) != 2:  # 共同的上级目录下不是 <学生>/文件 这样的两层：只看文件名
                parts = [os.path.basename(top)]
            add(top, b"/".join(parts), parts[0] if len(parts) == 2 else _stem(parts[0]))
    assign_ids(result.found)
    return result


def _student_folders(specs: list[bytes]) -> set[bytes]:
    """几个同级的目录参数（``subs/*`` 被 shell 展开成的样子），其中一多半直接装着笔记本：它们是学生的文件夹。
    按多数判断，一个学生在自己的文件夹里建个子文件夹改变不了全班的认法；几个班级目录（里面是学生的子文件夹，
    自己不直接装笔记本）、Gradescope 导出、不同级的目录都按提交目录看"""
    dirs = [s for s in specs if os.path.isdir(s) and not os.path.islink(s)]
    if len(dirs) < 2 or len(dirs) != len(specs) or len({os.path.dirname(os.path.abspath(d)) for d in dirs}) != 1:
        return set()
    direct = 0
    for d in dirs:
        try:
            entries = [e for e in os.scandir(d) if not (e.name.startswith(b".") or e.name == b"__MACOSX")]
        except OSError:
            return set()
        if any(e.name == EXPORT_METADATA for e in entries):
            return set()
        direct += any(_is_notebook(e.name) and e.is_file(follow_symlinks=False) for e in entries)
    return set(dirs) if direct * 2 > len(dirs) else set()


EXPORT_METADATA = b"submission_metadata.yml"
MAX_EXPORT_DEPTH = 6  # Gradescope 导出的 submission_<号>/ 里学生上传的子文件夹（Gradescope 自己在整个提交里找笔记本）
_EXPORT_FOLDER = re.compile(rb"^submission_\d+$", re.IGNORECASE)


def _in_export(root: bytes, rel: bytes) -> bool:
    """rel 在 Gradescope 导出的某个 submission_<号>/ 文件夹里（提交目录里有 submission_metadata.yml）"""
    first = rel.split(b"/")[0]
    return bool(_EXPORT_FOLDER.match(first)) and os.path.isfile(os.path.join(root, EXPORT_METADATA))


def export_inside(top: bytes) -> bytes | None:
    """Gradescope 的导出 zip 原样解压时多一层文件夹（``assignment_<号>_export/``）：提交目录里除了隐藏文件只有这一个文件夹、
    它里面有 ``submission_metadata.yml`` 时返回它（不跟随符号链接），否则 None"""
    try:
        if os.path.lexists(os.path.join(top, EXPORT_METADATA)):
            return None
        entries = [e for e in os.scandir(top) if not (e.name.startswith(b".") or e.name == b"__MACOSX")]
    except OSError:
        return None
    if len(entries) != 1 or not entries[0].is_dir(follow_symlinks=False):
        return None
    inner = os.path.join(top, entries[0].name)
    meta = os.path.join(inner, EXPORT_METADATA)
    return inner if os.path.isfile(meta) and not os.path.islink(meta) else None


def _static_prefix(pattern: bytes) -> bytes:
    """通配符前面不含通配符的那几级目录（``subs/*/x.ipynb`` → ``subs``）"""
    parts = pattern.split(b"/")
    fixed = []
    for part in parts[:-1]:
        if any(ch in part for ch in b"*?["):
            break
        fixed.append(part)
    return b"/".join(fixed) if fixed else (b"/" if pattern.startswith(b"/") else b"")


def _walk(root: bytes, rel: bytes, depth: int, add, result: Scan, skip: bytes | None = None) -> None:
    if skip is not None and os.path.normpath(os.path.abspath(os.path.join(root, rel) if rel else root)) == skip:
        return  # 输出目录（在提交目录里面时）：评分器自己写的文件不是提交
    try:
        entries = sorted(os.scandir(os.path.join(root, rel) if rel else root), key=lambda e: e.name)
    except OSError as exc:
        result.ignored.append({"file": show(rel or root), "reason": f"读不了目录：{exc.strerror}"})
        return
    for entry in entries:
        name = entry.name
        sub = os.path.join(rel, name) if rel else name
        if name.startswith(b".") or name == b"__MACOSX":
            continue  # 隐藏文件（.DS_Store、.ipynb_checkpoints、.git、macOS 的 ._x.ipynb）与 macOS 压缩包里的 __MACOSX
        if entry.is_symlink():
            result.ignored.append({"file": show(sub), "reason": "符号链接（symlink），评分器不跟随它"})
            result.skipped_raw.append((sub, "符号链接（symlink）"))
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir and not _is_notebook(name):
            if depth < MAX_DEPTH or (depth < MAX_EXPORT_DEPTH and _in_export(root, sub)):
                _walk(root, sub, depth + 1, add, result, skip)
            else:
                result.ignored.append({"file": show(sub), "reason": "目录太深（只看提交目录下两层）"})
                result.skipped_raw.append((sub, "目录太深，里面的文件没有看"))
            continue
        if not _is_notebook(name):
            if name != EXPORT_METADATA:  # Gradescope 导出里的提交者名单：评分器读它，不是被忽略的文件
                result.ignored.append({"file": show(sub), "reason": "不是 .ipynb 笔记本"})
                result.skipped_raw.append((sub, "不是 .ipynb 笔记本"))
            continue
        group = _stem(name) if not rel else rel.split(b"/")[0]
        add(os.path.join(root, sub), sub, group)


def _safe(text: str) -> str:
    safe = re.sub(r"[^\w.-]", "_", unicodedata.normalize("NFC", text)).lstrip(".-") or "_"
    raw = safe.encode("utf-8")
    if len(raw) > MAX_ID_BYTES:
        safe = raw[:MAX_ID_BYTES].decode("utf-8", "ignore")
    return safe


def _hashed(base: str, raw_rel: bytes, n: int = 8) -> str:
    return f"{base}{HASH_SEP}{hashlib.sha256(raw_rel).hexdigest()[:n]}"


def assign_ids(found: list[Found]) -> None:
    """给每份提交一个唯一的 id（不分大小写也不同）；见模块说明"""
    bases: dict[int, str] = {}
    needs_hash: set[int] = set()
    for k, f in enumerate(found):
        try:
            text = f.group.decode("utf-8")
        except UnicodeDecodeError:
            text = f.group.decode("utf-8", "backslashreplace")
            needs_hash.add(k)
        bases[k] = _safe(text)
        if bases[k] != text:
            needs_hash.add(k)
    counts: dict[str, int] = {}
    for base in bases.values():
        counts[base.casefold()] = counts.get(base.casefold(), 0) + 1
    taken: set[str] = set()
    for k, base in bases.items():
        if counts[base.casefold()] == 1 and k not in needs_hash:
            found[k].sid = base
            taken.add(base.casefold())
    for k, base in bases.items():
        if found[k].sid:
            continue
        candidates = [_hashed(base, found[k].raw_rel, n) for n in range(8, 65, 8)]
        candidates += [f"{candidates[-1]}{HASH_SEP}{i}" for i in range(2, len(found) + 2)]
        sid = next(c for c in candidates if c.casefold() not in taken)  # 短哈希也撞上了：加长
        found[k].sid = sid
        taken.add(sid.casefold())


def read_submission(path: Path, cap: int = MAX_SUBMISSION_BYTES) -> bytes:
    """只读普通文件：不跟随符号链接，不在 FIFO 上卡住，最多读 cap + 1 个字节（超过就是太大）"""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Unreadable(f"打不开：{exc.strerror}") from None
    try:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind is not None:
            raise Unreadable(f"{kind}，不是普通文件")
        if info.st_size > cap:
            raise Unreadable(f"文件有 {info.st_size / (1 << 20):.1f} MB，超过 {cap >> 20} MB", too_large=True)
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise Unreadable(f"文件超过 {cap >> 20} MB", too_large=True)
        return b"".join(chunks)
    finally:
        os.close(fd)
