"""正文不照抄素材：book/、solutions/、exercises/ 的每一句与 ../shared/seeds/ 比较（tools/seed_overlap.py）"""

import difflib
from pathlib import Path

import pytest
from tools import seed_overlap

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
FILES = sorted(p for d in seed_overlap.DEFAULT_DIRS for p in (ROOT / d).rglob("*.md"))
NOTEBOOKS = [p for p in FILES if seed_overlap.is_notebook_source(p.read_text(encoding="utf-8"))]
KNOWN_OVERLAPS: tuple[str, ...] = ()  # 第 6 章已改写，没有已知的重合


def _param(path: Path):
    rel = str(path.relative_to(ROOT))
    marks = (
        [pytest.mark.xfail(reason="第 6 章仍有与素材相同的句子，待改写", strict=False)] if rel in KNOWN_OVERLAPS else []
    )
    return pytest.param(path, id=rel, marks=marks)


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"素材目录 {SEEDS} 不存在（只在课程的工作区里有），跳过照抄检查")
@pytest.mark.parametrize("path", [_param(p) for p in FILES])
def test_no_sentence_shared_with_seeds(path):
    overlaps = seed_overlap.find_overlaps([path], SEEDS)
    assert not overlaps, "与素材共有的句子（请用自己的话重写）：\n" + "\n".join(map(str, overlaps))


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"素材目录 {SEEDS} 不存在（只在课程的工作区里有），跳过照抄检查")
@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in NOTEBOOKS])
def test_no_sentence_close_to_a_seed_sentence(path):
    """规则 3：笔记本里没有一句正文与素材的某一句的 difflib 相似度 ≥ 0.75（换几个词不算自己的话）"""
    similar = seed_overlap.find_similar([path], SEEDS)
    assert not similar, "与素材太像的句子（请用自己的话重写，事实不变）：\n" + "\n".join(map(str, similar))


def _seeds(tmp_path, text):
    seeds = tmp_path / "seeds"
    seeds.mkdir(exist_ok=True)
    (seeds / "000.txt").write_text(text, encoding="utf-8")
    return seeds


def test_similarity_rule_catches_a_lightly_reworded_sentence(tmp_path):
    seed = "分片矩阵乘法的本质就是分块矩阵乘法（block matrix multiplication）。"
    seeds = _seeds(tmp_path, f"前言。\n{seed}\n")
    copied = (
        "分片矩阵乘法就是分块矩阵乘法（block matrix multiplication）。"  # 删掉三个字：没有 15 字的共同片段，整句也不同
    )
    page = tmp_path / "page.md"
    page.write_text(
        f"---\njupytext: {{}}\nkernelspec: {{}}\n---\n我们自己的一句话，讲的是同一件事。{copied}\n", encoding="utf-8"
    )
    assert seed_overlap.find_overlaps([page], seeds) == []  # 规则 1、2 抓不到
    (found,) = seed_overlap.find_similar([page], seeds)
    assert (found.line, found.sentence) == (5, copied.replace(" ", ""))
    assert found.ratio == pytest.approx(difflib.SequenceMatcher(None, found.sentence, found.seed).ratio())
    assert found.ratio > 0.9 and "相似度 0.97" in str(found)
    assert seed_overlap.main([str(page), "--seeds", str(seeds)]) == 1
    assert seed_overlap.main([str(page), "--seeds", str(seeds), "--ratio", "0.99"]) == 0


def test_similarity_rule_threshold_and_what_it_skips(tmp_path):
    seeds = _seeds(tmp_path, "AllGather 中每个分片需要到达所有设备；AllToAll 中每个分片只需到达一个目标设备。\n")
    page = tmp_path / "page.md"
    page.write_text(
        "---\njupytext: {}\nkernelspec: {}\n---\n"
        "# AllGather 中每个分片需要到达所有设备\n"  # 标题不算
        "```{code-cell} ipython3\n# AllGather 中每个分片需要到达所有设备；\n```\n"  # 代码不算
        "- [AllGather 中每个分片需要到达所有设备](https://example.org/paper)：引用的标题不算\n"
        "- AllGather 里每一块都要到达所有设备；\n"  # 第 10 行：0.80
        "AllGather 的每一块最后出现在每一台设备上；AllToAll 的每一块只去一台。\n",  # 自己的话
        encoding="utf-8",
    )
    ratios = {o.line: o.ratio for o in seed_overlap.find_similar([page], seeds)}
    assert list(ratios) == [10] and ratios[10] == pytest.approx(0.8)
    assert seed_overlap.find_similar([page], seeds, threshold=0.81) == []  # 门槛是 ≥，不是 >
    assert [o.line for o in seed_overlap.find_similar([page], seeds, threshold=0.8)] == [10]
    page.write_text("---\njupytext: {}\nkernelspec: {}\n---\n哪一种通信更大？\n哪一种通信量更大？\n", encoding="utf-8")
    assert [
        o.line for o in seed_overlap.find_similar([page], _seeds(tmp_path, "哪种通信更大？哪种通信量更大？\n"))
    ] == [6]  # 不到 8 个汉字的短句（第 5 行）不算
    readme = tmp_path / "README.md"  # 不是笔记本（没有 jupytext 头）：说明文件的表格标签不查
    readme.write_text("| p | AllGather 里每一块都要到达所有设备； |\n", encoding="utf-8")
    assert seed_overlap.find_similar([readme], seeds) == []
    with pytest.raises(ValueError, match="相似度门槛"):
        seed_overlap.find_similar([page], seeds, threshold=0)


def test_tool_finds_planted_copy(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "000.txt").write_text("前言。\n环形算法把数据切成很多块在相邻设备之间接力传递直到每个设备都收齐。\n")
    page = tmp_path / "page.md"
    page.write_text(
        "---\nkernelspec: {}\n---\n"
        "# 环形算法把数据切成很多块在相邻设备之间接力传递\n"  # 标题也按连续汉字检查
        "我们的话：环把数据切成 $N$ 块。\n"
        "```{code-cell} ipython3\n# 环形算法把数据切成很多块在相邻设备之间接力传递直到每个设备\n```\n"
        "```{admonition} 答案\n:class: dropdown\n"
        "环形算法把数据切成很多块（chunk），在相邻设备之间接力传递 `ppermute`。\n```\n"
        "$$\n环形算法把数据切成很多块在相邻设备之间接力传递\n$$\n"
    )
    found = seed_overlap.find_overlaps([page], seeds)
    assert [o.line for o in found] == [4, 11]  # 代码单元与显示公式里的不算；英文、行内代码与标点不打断片段
    assert found[1].run == "环形算法把数据切成很多块在相邻设备之间接力传递"
    (seeds / "000.txt").write_text("前言。\nNCCL（读作 nickel）是 GPU 上集合通信的标准实现。\n")
    page.write_text("NCCL 读作 “nickel”，是 GPU 上集合通信的标准实现。\n")
    assert [o.run for o in seed_overlap.find_overlaps([page], seeds)] == ["读作是上集合通信的标准实现"]
    assert seed_overlap.main([str(page), "--seeds", str(seeds)]) == 1
    page.write_text("NCCL 是 NVIDIA 为 GPU 写的集合通信库。\n")
    assert seed_overlap.main([str(page), "--seeds", str(seeds)]) == 0


def test_tool_rejects_missing_seed_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="素材目录"):
        seed_overlap.find_overlaps([tmp_path], tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="素材目录"):
        seed_overlap.find_similar([tmp_path], tmp_path / "nope")
