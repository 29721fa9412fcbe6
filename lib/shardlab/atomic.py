"""原子地写一个文件：同目录下 ``mkstemp``（新文件，``O_EXCL``，不跟随符号链接）→ 写入、chmod、fsync → ``os.replace``

读者要么看到旧的文件，要么看到完整的新文件；目标本身是符号链接时，被替换的是链接，不会写到它指向的地方。
布置个人版（``shardlab.assign``）与评分器（``shardlab.grade``）都用它。
评分器要用 root 运行（``sudo``）：那时写出的文件交还给调用 sudo 的用户（``SUDO_UID``/``SUDO_GID``），教师自己打得开。
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write(path: Path, data: str | bytes, mode: int) -> None:
    """把 data（文字按 UTF-8，不改换行）原子地写到 path，权限 mode；上级目录不存在时建好"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        hand_back(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def sudo_owner() -> tuple[int, int] | None:
    """以 root 经 sudo 运行时，调用 sudo 的用户（uid, gid）；否则 None"""
    uid, gid = os.environ.get("SUDO_UID", ""), os.environ.get("SUDO_GID", "")
    if os.geteuid() != 0 or not uid.isdigit() or not gid.isdigit() or int(uid) == 0:
        return None
    return int(uid), int(gid)


def hand_back(path: Path) -> None:
    """经 sudo 运行时把 path（不跟随符号链接）交还给调用 sudo 的用户"""
    owner = sudo_owner()
    if owner is not None:
        os.chown(path, *owner, follow_symlinks=False)
