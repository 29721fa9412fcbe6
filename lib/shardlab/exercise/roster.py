"""花名册（roster）：教师给出的学生名单，CSV，至少有 ``id`` 与 ``name`` 两列

学生 id 同时是个人版的文件夹名（``OUT/<id>/``）和评分时认提交的依据（``<id>/…``、``<id>_….ipynb`` …），
所以它必须能安全地当文件夹名：字母（含中文）、数字、``_``、``.``、``-``，不以 ``.`` 或 ``-`` 开头，
UTF-8 最多 64 个字节（中文约 21 个字；一个 emoji 之类的字占 4 个字节）；
id 按 Unicode NFC 规范化（macOS 的文件名是 NFD）；只差大小写或写法（全角、连字，NFKC）的两个 id 看起来一样，
在不区分大小写的文件系统（Windows、macOS）上还会落进同一个文件夹，也算重复。
可选的列：``lms_id``（Canvas / Moodle 批量下载的文件名里的用户编号）、``email``（Gradescope 导出里的邮箱）：
评分器用它们把 LMS 下载的文件对上学生（``shardlab.grade.identify``）。
读入时逐行检查，所有问题一起报告（中文说明，带行号和英文关键词），不会只报第一个。
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

REQUIRED = ("id", "name")
OPTIONAL = ("lms_id", "email")
MAX_ID = 64  # 字节（UTF-8）
MAX_NAME = 200  # 字符
SECRET_FILE_BYTES = (
    32  # shardlab-assign --new-secret 写的密钥长度（variants.SECRET_BYTES；这里不导入它，花名册不依赖签名库）
)
_SAFE_ID = re.compile(r"^[^\W_][\w.-]*$")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


class RosterError(ValueError):
    """花名册有问题；message 列出每一处（行号从 1 开始，表头是第 1 行）"""


@dataclass(frozen=True)
class Student:
    id: str
    name: str
    row: int  # 在 CSV 里的行号（表头是第 1 行）
    lms_id: str = ""
    email: str = ""


def normalize(sid: str) -> str:
    """比较学生 id 的形式：NFKC 规范化 + casefold（不区分大小写；macOS 的 NFD 文件名、全角的 ｓ００１ 都对得上 s001）"""
    return unicodedata.normalize("NFKC", sid).casefold()


def without_leading_zeros(ids, sid: str) -> str | None:
    """Excel 去掉了开头的 0（0101 → 101）：ids（normalize 过的 id → 原样的 id）里去掉开头的 0 之后与 sid 相同的
    恰好一个时返回它，否则 None（两个都对得上时不猜）"""
    key = normalize(sid).lstrip("0")
    hits = [orig for norm, orig in ids.items() if norm.lstrip("0") == key]
    return hits[0] if len(hits) == 1 else None


def id_problem(sid: str) -> str | None:
    """sid 作为学生 id（也是文件夹名）有什么问题；没有问题时返回 None"""
    if not sid:
        return "学生 id（id）是空的"
    if len(sid.encode("utf-8")) > MAX_ID:
        return f"学生 id（id）{sid[:20]!r}… 超过 {MAX_ID} 个字节（UTF-8；中文每字 3 个字节）"
    if re.fullmatch(r"\d(\.\d+)?[eE]\+\d+", sid):
        return f"学生 id（id）{sid!r} 看起来是 Excel 把长数字写成了科学记数法：在 Excel 里把 id 列设成“文本”再另存"
    if not _SAFE_ID.match(sid) or ".." in sid:
        return (
            f"学生 id（id）{sid!r} 不能安全地用作文件夹名（folder name）："
            '只能用字母（含中文）、数字、_ . -，以字母或数字开头，不能含 ..、空格或 / \\ : * ? " < > |'
        )
    if sid.split(".")[0].lower() in _WINDOWS_RESERVED:
        return f"学生 id（id）{sid!r} 是 Windows 的保留文件名（reserved name）"
    return None


def _duplicate_contact(more: dict[str, str], contacts: dict, row_no: int) -> str:
    """lms_id 与 email 也要各不相同：评分器按它们认 LMS 下载的文件，两个人共用一个就会把一个人的作业算给另一个人"""
    for column, value in more.items():
        key = (column, value.casefold())
        if not value:
            continue
        if key in contacts:
            return f"第 {row_no} 行：{column} {value!r} 与第 {contacts[key]} 行相同（duplicate {column}）"
        contacts[key] = row_no
    return ""


def parse(text: str, source: str = "花名册") -> list[Student]:
    """解析花名册文本；有任何问题时抛出 RosterError，一次列出全部问题"""
    text = text.lstrip("\ufeff")  # Excel 存的 UTF-8 CSV 带 BOM
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise RosterError(f"{source}是空的：第一行应当是表头（header）id,name") from None
    except csv.Error as exc:
        raise RosterError(f"{source}不是合法的 CSV：{exc}") from None
    cols = [h.strip().lower() for h in header]
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        hint = "；看起来是用分号分隔的（有的 Excel 这样存）：请另存为逗号分隔的 CSV" if ";" in ",".join(header) else ""
        raise RosterError(
            f"{source}缺少列（column）{'、'.join(missing)}：第一行应当是表头（header），至少有 id,name 两列；"
            f"现在的表头是 {','.join(header) or '（空）'}{hint}"
        )
    i_id, i_name = cols.index("id"), cols.index("name")
    extra = {c: cols.index(c) for c in OPTIONAL if c in cols}
    problems, students, seen, contacts = [], [], {}, {}
    try:
        for row_no, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue  # 空行
            if len(row) <= max(i_id, i_name):
                problems.append(f"第 {row_no} 行：列数不够（缺少 id 或 name 列，missing column）")
                continue
            sid, name = unicodedata.normalize("NFC", row[i_id].strip()), row[i_name].strip()
            bad = id_problem(sid)
            if bad:
                problems.append(f"第 {row_no} 行：{bad}")
                continue
            if not name:
                problems.append(f"第 {row_no} 行：学生 {sid} 的姓名（name）是空的")
            elif len(name) > MAX_NAME or any(unicodedata.category(ch) in ("Cc", "Cs") for ch in name):
                problems.append(f"第 {row_no} 行：学生 {sid} 的姓名（name）太长（超过 {MAX_NAME} 个字）或含控制字符")
            folded = normalize(sid)
            if folded in seen:
                first = seen[folded]
                same = "相同" if first.id == sid else f"只差大小写或写法（全角、连字……；与 {first.id!r}）"
                problems.append(f"第 {row_no} 行：学生 id 重复（duplicate id）{sid!r}，与第 {first.row} 行{same}")
                continue
            more = {c: row[k].strip() if k < len(row) else "" for c, k in extra.items()}
            lms = more.get("lms_id", "")
            if re.fullmatch(r"\d+\.0+|\d(\.\d+)?[eE]\+?\d+", lms):
                problems.append(
                    f"第 {row_no} 行：lms_id {lms!r} 看起来被 Excel 改成了小数或科学记数法："
                    "在 Excel 里把 lms_id 列设成“文本”，再从 LMS 导出的原值另存"
                )
                continue
            dup = _duplicate_contact(more, contacts, row_no)
            if dup:
                problems.append(dup)
                continue
            student = Student(sid, name, row_no, **more)
            seen[folded] = student
            students.append(student)
    except csv.Error as exc:
        problems.append(f"第 {reader.line_num} 行：不是合法的 CSV（{exc}）")
    if problems:
        raise RosterError(f"{source}有 {len(problems)} 处问题：\n" + "\n".join(f"  - {p}" for p in problems))
    if not students:
        raise RosterError(f"{source}里没有学生：表头之后至少要有一行 id,name")
    return students


def read(path: str | Path) -> list[Student]:
    """读花名册文件（UTF-8，可以带 BOM）"""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RosterError(f"读不了花名册（roster）{path}：{exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if len(data) == SECRET_FILE_BYTES:  # shardlab-assign --new-secret 写的正是这么多个随机字节
            raise RosterError(
                f"花名册（roster）{path} 是 {SECRET_FILE_BYTES} 个不可读的字节，像是密钥文件（secret file）："
                "参数顺序反了？花名册是第一个参数，密钥跟在 --secret-file 后面"
            ) from None
        raise RosterError(
            f"花名册（roster）{path} 不是 UTF-8 编码（encoding）：在 Excel 里另存为 “CSV UTF-8”，或用 iconv 转换"
        ) from None
    return parse(text, f"花名册（roster）{path} ")
