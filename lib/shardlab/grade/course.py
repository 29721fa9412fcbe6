"""评分器要读的课程目录（course checkout）：解答、练习和默认的答案表位置

库本身不知道仓库在哪里：评分器用 ``--course DIR`` 指定，默认从当前目录向上找第一个课程目录。
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_SOLUTION = re.compile(r"ch(\d\d)_solutions\.md")


class CourseError(RuntimeError):
    """给的目录不是课程目录（course checkout）"""


@dataclass(frozen=True)
class Course:
    root: Path

    @staticmethod
    def is_course(path: Path) -> bool:
        return (path / "solutions").is_dir() and (path / "exercises").is_dir()

    @classmethod
    def at(cls, path: Path) -> Course:
        path = Path(path).absolute()
        if not cls.is_course(path):
            raise CourseError(
                f"{path} 不是课程目录（course checkout）：里面没有 solutions/ 和 exercises/；"
                "请在课程仓库里运行，或用 --course 指定它"
            )
        return cls(path)

    @classmethod
    def from_option(cls, path: Path | None) -> Course:
        """命令行的 --course：给了就用它（必须是课程目录），没给就从当前目录向上找"""
        return cls.at(path) if path else cls.find()

    @classmethod
    def find(cls, start: Path | None = None) -> Course:
        """从 start（默认当前目录）向上找第一个课程目录"""
        here = Path(start or Path.cwd()).absolute()
        for path in (here, *here.parents):
            if cls.is_course(path):
                return cls(path)
        raise CourseError(
            f"从 {here} 向上找不到课程目录（course checkout，含 solutions/ 与 exercises/）；"
            "请在课程仓库里运行，或用 --course 指定它"
        )

    def solutions(self) -> dict[int, Path]:
        """章 → 解答笔记本（jupytext MyST .md）"""
        found = {}
        for path in sorted((self.root / "solutions").glob("ch*_solutions.md")):
            m = _SOLUTION.fullmatch(path.name)
            if m:
                found[int(m.group(1))] = path
        return found

    def exercise(self, chapter: int) -> Path:
        return self.root / "exercises" / f"ch{chapter:02d}_exercises.ipynb"

    @property
    def default_key(self) -> Path:
        return self.root / "build" / "answer_key.json"
