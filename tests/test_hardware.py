"""hardware 模块：常数与出处、派生带宽、wraparound 规则、名字查找、表格行"""

import dataclasses

import pytest

from shardlab import hardware as hw


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@pytest.mark.parametrize("chip", hw.ALL_CHIPS, ids=lambda c: c.key)
def test_every_numeric_field_has_a_source(chip):
    def is_numeric(value) -> bool:
        return _is_number(value) or (isinstance(value, tuple) and bool(value) and all(map(_is_number, value)))

    numeric = [
        f.name for f in dataclasses.fields(chip) if is_numeric(getattr(chip, f.name)) or f.name == "ib_bw_per_gpu"
    ]
    assert "hbm_bw" in numeric and "flops_bf16" in numeric
    for name in numeric:
        assert chip.sources.get(name), f"{chip.key}.{name} 没有出处"


def test_emulated_cpu_is_labelled_nominal():
    assert hw.CPU.emulated is True and hw.CPU.kind == "cpu"
    assert all("名义值" in src for src in hw.CPU.sources.values())
    assert not any(c.emulated for c in hw.ALL_CHIPS if c is not hw.CPU)


# (芯片, HBM bytes, HBM bytes/s, bf16 FLOP/s, int8 OP/s, ICI one-way bytes/s, DCN bytes/s)：How To Scale Your Model 的 tpus.md「TPU specs」表
TPU_TABLE = [
    (hw.TPU_V3, 32e9, 9.0e11, 1.4e14, 1.4e14, 1e11, 6.25e9),
    (hw.TPU_V4P, 32e9, 1.2e12, 2.75e14, 2.75e14, 4.5e10, 6.25e9),
    (hw.TPU_V5P, 96e9, 2.8e12, 4.59e14, 9.18e14, 9e10, 6.25e9),
    (hw.TPU_V5E, 16e9, 8.2e11, 1.97e14, 3.94e14, 4.5e10, 3.125e9),
    (hw.TPU_V6E, 32e9, 1.6e12, 9.2e14, 1.84e15, 9e10, 12.5e9),
]
TPU_TABLE_CHIPS = [row[0] for row in TPU_TABLE]


@pytest.mark.parametrize(("chip", "hbm", "hbm_bw", "bf16", "int8", "oneway", "dcn"), TPU_TABLE, ids=lambda x: "")
def test_tpu_constants(chip, hbm, hbm_bw, bf16, int8, oneway, dcn):
    assert (chip.hbm_bytes, chip.hbm_bw, chip.flops_bf16, chip.ops_int8) == (hbm, hbm_bw, bf16, int8)
    assert (chip.ici_oneway_bw, chip.dcn_bw_per_chip) == (oneway, dcn)
    assert chip.ici_bidir_bw == 2 * oneway
    assert chip.hop_latency == 1e-6


def test_bidir_bandwidth_is_derived_not_typed():
    names = {f.name for f in dataclasses.fields(hw.TpuChip)}
    assert "ici_oneway_bw" in names and "ici_bidir_bw" not in names
    assert hw.TPU_V5E.ici_bidir_bw == 9e10 and hw.TPU_V5P.ici_bidir_bw == 1.8e11
    assert hw.CPU.ici_bidir_bw == 2 * hw.CPU.ici_oneway_bw


def test_v4p_is_tpu_v4_not_v5p():
    assert "TPU v4" in hw.TPU_V4P.note and "不是 v5p" in hw.TPU_V4P.note
    assert hw.TPU_V5P.ici_oneway_bw == 2 * hw.TPU_V4P.ici_oneway_bw
    assert hw.TPU_V4P.pod_shape == (16, 16, 16) and hw.TPU_V5P.pod_shape == (16, 20, 28)


def test_tpu_topology_and_host_links():
    assert [c.torus_dims for c in TPU_TABLE_CHIPS] == [2, 3, 3, 2, 2]
    assert hw.TPU_V4P.neighbours == 6 and hw.TPU_V5E.neighbours == 4
    assert hw.TPU_V5E.topology == "2D torus，4 个邻居"
    assert hw.TPU_V6E.pcie_bw == 3.2e10 and hw.TPU_V5E.pcie_bw == 1.6e10
    assert hw.TPU_V5E.devices_per_chip == 1 and hw.TPU_V3.devices_per_chip == 2


@pytest.mark.parametrize(
    ("chip", "hbm", "hbm_bw", "bf16", "nvlink", "node", "scaleout"),
    [
        (hw.A100, 80e9, 2.0e12, 3.1e14, 300e9, 8, None),
        (hw.H100, 80e9, 3.35e12, 9.89e14, 450e9, 8, 400e9),
        (hw.H200, 141e9, 4.8e12, 9.89e14, 450e9, 8, 400e9),
        (hw.B200, 192e9, 8.0e12, 2.25e15, 900e9, 8, 400e9),
        (hw.GB200_NVL72, 192e9, 8.0e12, 2.25e15, 900e9, 72, 3.6e12),
    ],
    ids=lambda x: "",
)
def test_gpu_constants_and_derived_bandwidths(chip, hbm, hbm_bw, bf16, nvlink, node, scaleout):
    assert (chip.hbm_bytes, chip.hbm_bw, chip.flops_bf16) == (hbm, hbm_bw, bf16)
    assert chip.nvlink_bw_per_direction == pytest.approx(nvlink)
    assert chip.gpus_per_node == node
    assert chip.node_scaleout_bw == (None if scaleout is None else pytest.approx(scaleout))
    assert "NVSwitch" in chip.topology


def test_gpu_link_counts():
    assert (hw.H100.nvlink_links, hw.H100.nvlink_link_bw_per_direction) == (18, 25e9)
    assert hw.H100.ib_bw_per_gpu == 50e9 and hw.H100.nvswitches_per_node == 4
    assert hw.GB200_NVL72.nvswitches_per_node == 18


# ---- wraparound ----


@pytest.mark.parametrize(
    ("chip", "axis", "shape", "expected"),
    [
        ("v5e", 16, (8, 16), True),
        ("v5e", 8, (8, 16), False),
        ("v5e", 4, (4, 4), False),
        ("v5e", 8, (8, 4), False),
        ("v5e", 4, (8, 4), False),
        ("v5e", 16, (16, 16), True),
        ("v6e", 16, (16, 4), True),
        ("v6e", 4, (16, 4), False),
        ("v4p", 4, (4, 4, 4), True),
        ("v4", 8, (4, 4, 8), True),
        ("v4p", 4, (4, 4, 8), True),
        ("v5p", 16, (16, 20, 28), True),
        ("v5p", 4, (2, 2, 4), False),
        ("v4p", 2, (2, 2, 2), False),
        ("v4p", 4, (2, 4, 4), False),
        ("v3", 32, (32, 16), True),
        ("v3", 16, (32, 16), False),
        ("cpu", 8, (8,), True),
        ("cpu", 3, (2, 3), True),
    ],
)
def test_has_wraparound(chip, axis, shape, expected):
    assert hw.has_wraparound(chip, axis, shape) is expected


def test_gpu_has_no_torus():
    with pytest.raises(hw.TopologyError, match="NVSwitch"):
        hw.has_wraparound("h100", 8, (8,))


@pytest.mark.parametrize(
    ("chip", "axis", "shape", "message"),
    [
        ("v5e", 4, (4, 4, 4), "2D torus"),
        ("v4p", 4, (4, 4), "3D torus"),
        ("v5e", 2, (8, 4), "没有长度为 2 的轴"),
        ("v5e", 4, (0, 4), "正整数"),
        ("v5e", 4, (4.0, 4), "正整数"),
        ("v5e", 4, (), "正整数"),
        ("v5e", 32, (32, 4), "超出"),
        ("v5p", 16, (16, 32, 32), "超出"),
    ],
)
def test_slice_shape_is_validated(chip, axis, shape, message):
    with pytest.raises(hw.TopologyError, match=message):
        hw.has_wraparound(chip, axis, shape)


def test_check_slice_shape_returns_tuple():
    assert hw.check_slice_shape("v5e", [8, 16]) == (8, 16)


# ---- 名字查找 ----


@pytest.mark.parametrize(
    ("name", "chip"),
    [
        ("v5e", hw.TPU_V5E),
        ("TPU v5e", hw.TPU_V5E),
        ("tpu V5E", hw.TPU_V5E),
        ("v4", hw.TPU_V4P),
        ("tpu v4", hw.TPU_V4P),
        ("TPU v4p", hw.TPU_V4P),
        ("v5p", hw.TPU_V5P),
        ("TPU v5", hw.TPU_V5P),
        ("trillium", hw.TPU_V6E),
        ("v3", hw.TPU_V3),
        ("h100", hw.H100),
        ("NVIDIA H100", hw.H100),
        ("a100", hw.A100),
        ("H200", hw.H200),
        ("b200", hw.B200),
        ("GB200 NVL72", hw.GB200_NVL72),
        ("gb200", hw.GB200_NVL72),
        ("cpu", hw.CPU),
    ],
)
def test_get_chip_aliases(name, chip):
    assert hw.get_chip(name) is chip


def test_get_chip_accepts_chip_objects():
    assert hw.get_chip(hw.TPU_V5E) is hw.TPU_V5E
    assert str(hw.TPU_V5E) == "TPU v5e"


@pytest.mark.parametrize(
    ("kind", "chip"),
    [
        ("TPU v4", hw.TPU_V4P),
        ("TPU v5 lite", hw.TPU_V5E),
        ("TPU v5e", hw.TPU_V5E),
        ("TPU v5", hw.TPU_V5P),
        ("TPU v5p", hw.TPU_V5P),
        ("TPU v6 lite", hw.TPU_V6E),
        ("TPU v6e", hw.TPU_V6E),
        ("TPU v3", hw.TPU_V3),
        ("NVIDIA H100 80GB HBM3", hw.H100),
        ("NVIDIA H100 PCIe", hw.H100),
        ("NVIDIA H100 NVL", hw.H100),
        ("NVIDIA H200", hw.H200),
        ("NVIDIA B200", hw.B200),
        ("NVIDIA GB200", hw.GB200_NVL72),
        ("NVIDIA A100-SXM4-80GB", hw.A100),
        ("cpu", hw.CPU),
    ],
)
def test_from_device_kind(kind, chip):
    assert hw.from_device_kind(kind) is chip


@pytest.mark.parametrize("bad", ["TPU v7x", "NVIDIA GH200 480GB", "v9", "A100 but not nvidia"])
def test_unknown_names_list_known_chips(bad):
    lookup = hw.from_device_kind if bad.startswith(("TPU", "NVIDIA")) else hw.get_chip
    with pytest.raises(hw.UnknownChipError, match="未知的") as info:
        lookup(bad)
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    message = str(info.value)
    assert all(chip.name in message for chip in hw.ALL_CHIPS)
    assert "known chips" in message


def test_get_chip_rejects_non_strings():
    with pytest.raises(hw.UnknownChipError):
        hw.get_chip(42)
