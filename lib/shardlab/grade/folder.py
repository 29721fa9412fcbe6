"""提交目录：找出要评的文件，给每份提交一个学生 id"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from pathlib import Path


def student_id(path: Path) -> str:
    """由文件名得到学生 id：保留字母（含中文）、数字、. _ -；改动过或不是 UTF-8 时加上短哈希防止重名"""
    raw = os.fsencode(path.name)
    stem = raw[:-6] if raw.lower().endswith(b".ipynb") else raw
    try:
        text, changed = stem.decode("utf-8"), False
    except UnicodeDecodeError:
        text, changed = stem.decode("utf-8", "backslashreplace"), True
    safe = re.sub(r"[^\w.-]", "_", text).lstrip(".")[:80] or "_"
    if changed or safe != text:
        safe += "-" + hashlib.sha1(raw).hexdigest()[:6]
    return safe


def display_name(path: Path) -> str:
    return os.fsencode(path.name).decode("utf-8", "backslashreplace")


def collect_submissions(specs: list[str]) -> list[Path]:
    found: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            entries = sorted(os.listdir(os.fsencode(path)))
            found += [path / os.fsdecode(e) for e in entries if e.lower().endswith(b".ipynb")]
        elif any(ch in spec for ch in "*?["):
            found += [Path(p) for p in sorted(glob.glob(spec)) if Path(p).is_file()]
        else:
            found.append(path)
    seen, unique = set(), []
    for p in found:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique
