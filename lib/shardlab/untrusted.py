"""不可信的文本（untrusted text）：学生的笔记本、花名册和沙箱送回来的一切字符串，在进入任何文件、日志或终端之前都经过这里

``clean`` 把任意输入变成一段安全的 Unicode 文本：字节按 UTF-8 解码（坏字节换成 U+FFFD），去掉孤立的代理项
（surrogate）、控制字符（保留换行与制表符）和改变显示方向的字符，再截到给定长度。
之后按去处再转义一次：CSV 单元格（不让电子表格把它当公式）、Markdown（没有生效的 HTML、链接和图片）、终端（没有转义序列）。
JSON 由 ``json.dumps`` 转义，只需先 ``clean``。
"""

from __future__ import annotations

import re

MAX_TEXT = 4000  # 一条消息的默认长度上限（字符）

# C0（除 \t \n）、DEL、C1 控制字符；改变文字方向的字符（Trojan Source）；BOM 与零宽字符；孤立的代理项
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n", "|", "%")
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&\"'=:@$^])")
_URLISH = re.compile(r"(?i)\S*(?:://|www\.|@|\bmailto:|\bjavascript:|\bdata:)\S*")


def clean(value, limit: int = MAX_TEXT, newlines: bool = True) -> str:
    """任意值 → 安全的文本：字节按 UTF-8（坏字节换成 U+FFFD），去掉不安全的字符，截到 limit 个字符"""
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "replace")
    elif isinstance(value, str):
        text = value
    else:
        text = str(value)
    if len(text) > 4 * limit + 64:  # 先粗截，免得对几兆字节做正则
        text = text[: 4 * limit + 64]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _UNSAFE.sub(lambda m: "\ufffd" if "\ud800" <= m.group(0) <= "\udfff" else "", text)
    if not newlines:
        text = " ".join(text.split("\n"))
    if len(text) > limit:
        cut = len(text) - limit
        text = text[:limit] + f"…（截去 {cut} 个字符）"
    return text


def clean_tree(value, limit: int = MAX_TEXT):
    """递归地 clean 一个 JSON 样的值里的全部字符串（键也一样）"""
    if isinstance(value, str):
        return clean(value, limit)
    if isinstance(value, dict):
        return {clean(k, 200): clean_tree(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_tree(v, limit) for v in value]
    return value


def csv_cell(value) -> str:
    """CSV 单元格：电子表格会把以 = + - @ 制表符 回车 开头的内容当公式，前面加一个 ' 让它只是文字"""
    text = clean(value, newlines=False)
    return "'" + text if text.lstrip(" ").startswith(_CSV_FORMULA) else text


def md_inline(value, limit: int = MAX_TEXT) -> str:
    """Markdown 行内文字：转义全部 Markdown 与 HTML 标点；像网址、邮件地址的片段放进代码段（code span），不会成为链接"""
    text = clean(value, limit, newlines=False)
    out, pos = [], 0
    for m in _URLISH.finditer(text):
        out.append(_MD_PUNCT.sub(r"\\\1", text[pos : m.start()]))
        out.append(md_code(m.group(0)))
        pos = m.end()
    out.append(_MD_PUNCT.sub(r"\\\1", text[pos:]))
    return "".join(out)


def md_code(value) -> str:
    """代码段：用比文字里最长的一串反引号更长的反引号围起来"""
    text = clean(value, newlines=False)
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_block(value, limit: int = MAX_TEXT) -> str:
    """代码块（fenced code block）：围栏比文字里最长的一串反引号更长，里面的内容不会被当成 Markdown 或 HTML"""
    text = clean(value, limit)
    fence = "`" * max(3, max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


def terminal(value, limit: int = 300) -> str:
    """终端里打印的一行：没有转义序列、没有换行"""
    return clean(value, limit, newlines=False)


def md_cell(value, limit: int = MAX_TEXT) -> str:
    """Markdown 表格的一格：同 md_inline，另外把 | 换成全角的｜（代码段里的 | 在 GFM 表格里照样会分格）"""
    return md_inline(clean(value, limit, newlines=False).replace("|", "｜"), limit)
