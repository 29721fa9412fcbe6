"""集合通信名字表：每种写法都解析到同一个规范名，HLO 名与 collectives 里的正则一致"""

import pytest

from shardlab import names


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("AllGather", "all_gather"),
        ("all-gather", "all_gather"),
        ("all gather", "all_gather"),
        ("psum", "all_reduce"),
        ("psum_scatter", "reduce_scatter"),
        ("ReduceScatter", "reduce_scatter"),
        ("all-to-all", "all_to_all"),
        ("ALL_TO_ALL", "all_to_all"),
    ],
)
def test_every_spelling_parses_to_one_key(text, key):
    assert names.canonical(text) == key


def test_ppermute_only_where_allowed():
    with pytest.raises(names.UnknownCollectiveError, match="未知的集合通信"):
        names.canonical("ppermute")  # 不是四种核心原语之一
    assert names.canonical("collective-permute", names.ALL) == "ppermute"


def test_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match="AllGather、ReduceScatter、AllReduce、AllToAll"):
        names.canonical("broadcast")


def test_hlo_names_round_trip():
    for key in names.ALL:
        assert names.from_hlo(names.hlo(key)) == key
        assert names.from_hlo(names.hlo(key) + "-start") == key
    assert names.HLO_COLLECTIVES == tuple(c.hlo for c in names.ALL.values())


def test_display_names():
    assert [names.display(k) for k in names.COLLECTIVES] == ["AllGather", "ReduceScatter", "AllReduce", "AllToAll"]
    assert names.info("all_to_all").nccl is None  # NCCL 没有 AllToAll 原语
