"""正文不照抄素材：book/、solutions/、exercises/ 的每一句与 ../shared/seeds/ 比较（tools/seed_overlap.py）"""

from pathlib import Path

import pytest
from tools import seed_overlap

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
FILES = sorted(p for d in seed_overlap.DEFAULT_DIRS for p in (ROOT / d).rglob("*.md"))
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
