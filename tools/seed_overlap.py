"""找出课程正文里与素材（seeds）太像的句子：逐句比较，三条规则

1. 共有 15 个以上连续汉字的片段；
2. 整句相同（只看汉字，至少 8 个字）；
3. 整句相似：difflib 的相似度（``SequenceMatcher.ratio()``，两个方向取大者）≥ 0.75。

先去掉不算正文的部分：YAML 头、代码单元与代码块、显示公式、
行内公式（``$…$``）、行内代码与 MyST 角色（``{glue:text}`…```）、指令的选项行、HTML 注释；
剩下的文字按句切开（。！？；与换行）。规则 1、2 每句只保留汉字，于是拉丁字母写的专有名词（AllGather、NCCL、TPU v5e）、
数字、标点和空格都被略过，两边的片段只要汉字序列相同就算共有。
规则 3 只看笔记本（带 jupytext 头的 .md）的正文，比较整句文字（去掉空白与 Markdown 记号，拉丁字母、数字与标点都算），
只看至少 8 个汉字的非标题句；外部链接的文字（引用的论文与文档的标题）不算。换几个词、加一个“所以”的句子由它抓到。

用法（在仓库根目录）::

    python tools/seed_overlap.py                        # 默认检查 book/ solutions/ exercises/ 的 .md
    python tools/seed_overlap.py book/ch06_sharded_matmul.md --min 15
    python tools/seed_overlap.py --seeds ../shared/seeds solutions/
    python tools/seed_overlap.py --ratio 0.7             # 换一个相似度门槛

有共同片段或相似的句子时退出码为 1，并逐条打印 ``文件:行: 片段（n 字）`` 与 ``文件:行: 句子 ≈ 素材句（相似度）``。
"""

from __future__ import annotations

import argparse
import bisect
import difflib
import functools
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SEEDS = ROOT.parent / "shared" / "seeds"
DEFAULT_DIRS = ("book", "solutions", "exercises")
MIN_RUN = 15
MIN_SAME_SENTENCE = 8  # 整句与素材的某一句相同（只看汉字）且至少这么长，也算共有
MAX_RATIO = 0.75  # 整句与素材某一句的 difflib 相似度达到这个值就算照抄（规则 3）
MIN_RATIO_HAN = 8  # 规则 3 只看至少这么多汉字的句子（“哪一种更大？”这样的短句不算）

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_NOT_HAN = re.compile(r"[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_SENTENCE_END = re.compile(r"[。！？；!?;]")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE = [
    re.compile(r"\{[\w:-]+\}`[^`]*`"),  # MyST 角色：{glue:text}`key`、{numref}`fig`
    re.compile(r"`[^`]*`"),  # 行内代码
    re.compile(r"\$\$.*?\$\$"),  # 同一行里的显示公式
    re.compile(r"(?<!\\)\$[^$]*(?<!\\)\$"),  # 行内公式
    re.compile(r"<!--.*?-->"),
]


@dataclass(frozen=True)
class Overlap:
    path: str
    line: int
    run: str  # 共同的汉字片段（最长的那一段，或整句）

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.run}（{len(self.run)} 字）"


@dataclass(frozen=True)
class Similar:
    path: str
    line: int
    sentence: str  # 正文的句子（规范化之后）
    seed: str  # 最像的素材句（规范化之后）
    ratio: float

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.sentence} ≈ {self.seed}（相似度 {self.ratio:.2f}）"


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(行号, 正文) ：跳过 YAML 头、代码块 / 代码单元、显示公式与指令选项行，去掉行内公式与代码"""
    lines = text.splitlines()
    i = 0
    if lines and lines[0].strip() == "---":  # YAML 头
        i = next((j + 1 for j in range(1, len(lines)) if lines[j].strip() == "---"), len(lines))
    stack: list[tuple[str, bool]] = []  # 打开的围栏：(围栏字符串, 是否是代码)
    in_math = False
    for no in range(i, len(lines)):
        line = lines[no]
        m = _FENCE.match(line)
        if m:
            mark, rest = m.group(1), line.strip()[len(m.group(1)) :].strip()
            if not rest and stack and stack[-1][0][0] == mark[0] and len(mark) >= len(stack[-1][0]):
                stack.pop()  # 闭合
                continue
            if not (stack and stack[-1][1]):
                # 代码单元、代码块整个跳过；admonition、glue:figure 等指令的内容是正文
                stack.append((mark, rest.startswith("{code-cell}") or not rest.startswith("{")))
                continue
        if stack and stack[-1][1]:
            continue
        stripped = line.strip()
        if stripped.startswith("$$"):
            closed = stripped.count("$$") >= 2
            if not closed:
                in_math = not in_math
            continue
        if in_math or re.match(r"^:[\w-]+:", stripped):  # 公式内部、指令选项（:class: dropdown）
            continue
        for pattern in _INLINE:
            line = pattern.sub(" ", line)
        yield no + 1, line


def sentences(text: str) -> Iterator[tuple[int, str, bool]]:
    """(行号, 只含汉字的句子, 是否是标题行)"""
    for no, line in prose_lines(text):
        heading = line.lstrip().startswith("#")
        for part in _SENTENCE_END.split(line):
            han = _NOT_HAN.sub("", part)
            if han:
                yield no, han, heading


def seed_sentences(seed_dir: Path) -> list[str]:
    """素材的句子（只含汉字）；素材是纯文本，不去代码"""
    out = []
    for path in sorted(seed_dir.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for part in _SENTENCE_END.split(line):
                han = _NOT_HAN.sub("", part)
                if han:
                    out.append(han)
    return out


def _grams(texts: Iterable[str], n: int) -> set[str]:
    return {t[i : i + n] for t in texts for i in range(len(t) - n + 1)}


def longest_shared_run(sentence: str, seed_grams: set[str], n: int) -> str:
    """sentence 里最长的、每个 n 字窗口都出现在素材里的片段（没有则为空串）

    相邻窗口都在素材里不保证整段在素材的同一处出现，但对 n = 15 的汉字窗口，这样的巧合可以忽略；
    我们只用它来报告片段的长度。
    """
    best, start = "", None
    for i in range(len(sentence) - n + 1):
        if sentence[i : i + n] in seed_grams:
            if start is None:
                start = i
            if i + n - start > len(best):
                best = sentence[start : i + n]
        else:
            start = None
    return best


def find_overlaps(paths: Iterable[Path], seed_dir: Path = DEFAULT_SEEDS, min_run: int = MIN_RUN) -> list[Overlap]:
    """逐句比较 paths（文件或目录；目录取其中的 .md）与 seed_dir 里的素材

    返回两种句子：与素材共有 ≥ min_run 个连续汉字的；只看汉字时与素材的某一句完全相同、
    且至少 MIN_SAME_SENTENCE 个汉字的（短句换了几个英文词仍是照抄；标题行不算，节名相同是常事）。
    """
    if min_run < 1:
        raise ValueError(f"min_run 必须 ≥ 1，收到 {min_run}")
    seed_dir = Path(seed_dir)
    if not seed_dir.is_dir():
        raise FileNotFoundError(f"找不到素材目录 {seed_dir}")
    seeds = seed_sentences(seed_dir)
    grams, whole = _grams(seeds, min_run), set(seeds)
    found = []
    for path in _expand(paths):
        rel = _display(path)
        for no, han, heading in sentences(path.read_text(encoding="utf-8")):
            run = longest_shared_run(han, grams, min_run)
            if not run and not heading and len(han) >= min(MIN_SAME_SENTENCE, min_run) and han in whole:
                run = han
            if run:
                found.append(Overlap(rel, no, run))
    return found


# ---- 规则 3：整句相似 ----

_EXTERNAL_LINK = re.compile(r"\[[^\]]*\]\((?:https?:)?//[^)]*\)")  # 引用的标题照原文写，不算正文
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"[\s*_#>•·]+")
_LEADING = re.compile(r"^(?:[-+:]|\d+[.、)）])+")  # 列表与定义列表的记号、题号
_SPLIT_KEEP_END = re.compile(r"(?<=[。！？；!?;])|\|")  # 句末标点留在句子里；表格的单元格各算一句


def normalized_sentences(line: str) -> Iterator[str]:
    """一行里的句子，去掉空白、Markdown 记号与外部链接的文字；拉丁字母、数字与标点保留"""
    line = _LINK.sub(r"\1", _EXTERNAL_LINK.sub(" ", line))
    for part in _SPLIT_KEEP_END.split(line):
        text = _LEADING.sub("", _MARKUP.sub("", part))
        if text:
            yield text


def is_notebook_source(text: str) -> bool:
    """带 jupytext 头（YAML 头里有 jupytext: 与 kernelspec:）的 .md 是笔记本；与 tools/nbsync.py 的判断相同"""
    if not text.startswith("---\n"):
        return False
    header = text.split("\n---", 1)[0]
    return "jupytext:" in header and "kernelspec:" in header


def _han_count(text: str) -> int:
    return len(_HAN.findall(text))


class _SeedIndex:
    """素材句按长度排好，另存每句的字符计数，用来快速排除不可能相似的句对

    ``ratio = 2M / (|a| + |b|)``，M 是匹配的字符数，不超过两句共有字符的多重集交集（``quick_ratio`` 的上界），
    也不超过较短的一句；先用这两个上界筛，剩下的才算 ``ratio()``。
    """

    def __init__(self, seeds: Iterable[str]):
        self.texts = sorted(set(seeds), key=len)
        self.lengths = [len(t) for t in self.texts]
        alphabet = sorted({c for t in self.texts for c in t})
        self.column = {c: i for i, c in enumerate(alphabet)}
        self.counts = np.zeros((len(self.texts), len(alphabet)), dtype=np.int32)
        for row, t in enumerate(self.texts):
            for c in t:
                self.counts[row, self.column[c]] += 1

    def best(self, sentence: str, threshold: float) -> tuple[float, str]:
        """与 sentence 最像的素材句及相似度（两个方向的 ratio 取大者）；没有达到 threshold 的返回 (0, "")"""
        n = len(sentence)
        lo = bisect.bisect_left(self.lengths, threshold / (2 - threshold) * n)
        hi = bisect.bisect_right(self.lengths, (2 - threshold) / threshold * n)
        if lo >= hi:
            return 0.0, ""
        chars: dict[str, int] = {}
        for c in sentence:
            chars[c] = chars.get(c, 0) + 1
        known = [(self.column[c], k) for c, k in chars.items() if c in self.column]
        if not known:
            return 0.0, ""
        cols = np.array([i for i, _ in known])
        want = np.array([k for _, k in known])
        shared = np.minimum(self.counts[lo:hi][:, cols], want).sum(axis=1)
        lengths = np.array(self.lengths[lo:hi])
        bound = 2 * shared / (lengths + n)
        best = (0.0, "")
        for i in np.flatnonzero(bound >= threshold):
            seed = self.texts[lo + i]
            ratio = max(
                difflib.SequenceMatcher(None, sentence, seed, autojunk=False).ratio(),
                difflib.SequenceMatcher(None, seed, sentence, autojunk=False).ratio(),
            )
            if ratio >= threshold and ratio > best[0]:
                best = (ratio, seed)
        return best


def _seed_index(seed_dir: Path) -> _SeedIndex:
    """素材目录的索引；文件改了（修改时间或大小变了）就重建"""
    files = sorted(seed_dir.glob("*.txt"))
    return _cached_index(tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))


@functools.lru_cache(maxsize=4)
def _cached_index(files: tuple[tuple[str, int, int], ...]) -> _SeedIndex:
    texts = []
    for name, _, _ in files:
        for line in Path(name).read_text(encoding="utf-8").splitlines():
            texts.extend(normalized_sentences(line))
    return _SeedIndex(texts)


def find_similar(paths: Iterable[Path], seed_dir: Path = DEFAULT_SEEDS, threshold: float = MAX_RATIO) -> list[Similar]:
    """规则 3：笔记本里与素材某一句的 difflib 相似度 ≥ threshold 的正文句子（至少 MIN_RATIO_HAN 个汉字，标题行不算）

    只看带 jupytext 头的 .md（学生读的章节、解答与练习）；README 之类的说明文件不查（它们的表格标签不是正文）。
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"相似度门槛必须在 (0, 1] 之间，收到 {threshold}")
    seed_dir = Path(seed_dir)
    if not seed_dir.is_dir():
        raise FileNotFoundError(f"找不到素材目录 {seed_dir}")
    index = _seed_index(seed_dir.resolve())
    found = []
    for path in _expand(paths):
        rel, text = _display(path), path.read_text(encoding="utf-8")
        if not is_notebook_source(text):
            continue
        for no, line in prose_lines(text):
            if line.lstrip().startswith("#"):
                continue  # 节名与素材相同是常事
            for sentence in normalized_sentences(line):
                if _han_count(sentence) < MIN_RATIO_HAN:
                    continue
                ratio, seed = index.best(sentence, threshold)
                if seed:
                    found.append(Similar(rel, no, sentence, seed, ratio))
    return found


def _expand(paths: Iterable[Path]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.md")) if p.is_dir() else [p])
    return out


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="找出与素材（seeds）共有长串汉字或整句相似的句子")
    parser.add_argument("paths", nargs="*", help="要检查的文件或目录（默认 book/ solutions/ exercises/）")
    parser.add_argument("--seeds", type=Path, default=DEFAULT_SEEDS, help=f"素材目录（默认 {DEFAULT_SEEDS}）")
    parser.add_argument("--min", type=int, default=MIN_RUN, dest="min_run", help="共同汉字的最短长度（默认 15）")
    parser.add_argument(
        "--ratio", type=float, default=MAX_RATIO, help=f"整句相似度（difflib ratio）的门槛（默认 {MAX_RATIO}）"
    )
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.paths] or [ROOT / d for d in DEFAULT_DIRS]
    overlaps = find_overlaps(paths, args.seeds, args.min_run)
    similar = find_similar(paths, args.seeds, args.ratio)
    for o in overlaps:
        print(o)
    for o in similar:
        print(o)
    print(f"{len(overlaps)} 句与素材共有 ≥ {args.min_run} 个连续汉字，或整句相同", file=sys.stderr)
    print(f"{len(similar)} 句与素材某一句的相似度 ≥ {args.ratio}", file=sys.stderr)
    return 1 if overlaps or similar else 0


if __name__ == "__main__":
    sys.exit(main())
