"""hardware 模块：常数与出处、派生带宽、wraparound 规则、名字查找、表格行"""

import dataclasses

import pytest

from shardlab import hardware


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@pytest.mark.parametrize("chip", hardware.ALL_CHIPS, ids=lambda c: c.key)
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
    assert hardware.CPU.emulated is True and hardware.CPU.kind == "cpu"
    assert all("名义值" in src for src in hardware.CPU.sources.values())
    assert not any(c.emulated for c in hardware.ALL_CHIPS if c is not hardware.CPU)


# (芯片, HBM bytes, HBM bytes/s, bf16 FLOP/s, int8 OP/s, ICI one-way bytes/s, DCN bytes/s)：How To Scale Your Model 的 tpus.md「TPU specs」表
TPU_TABLE = [
    (hardware.TPU_V3, 32e9, 9.0e11, 1.4e14, 1.4e14, 1e11, 6.25e9),
    (hardware.TPU_V4P, 32e9, 1.2e12, 2.75e14, 2.75e14, 4.5e10, 6.25e9),
    (hardware.TPU_V5P, 96e9, 2.8e12, 4.59e14, 9.18e14, 9e10, 6.25e9),
    (hardware.TPU_V5E, 16e9, 8.2e11, 1.97e14, 3.94e14, 4.5e10, 3.125e9),
    (hardware.TPU_V6E, 32e9, 1.6e12, 9.2e14, 1.84e15, 9e10, 12.5e9),
]
TPU_TABLE_CHIPS = [row[0] for row in TPU_TABLE]


@pytest.mark.parametrize(("chip", "hbm", "hbm_bw", "bf16", "int8", "oneway", "dcn"), TPU_TABLE, ids=lambda x: "")
def test_tpu_constants(chip, hbm, hbm_bw, bf16, int8, oneway, dcn):
    assert (chip.hbm_bytes, chip.hbm_bw, chip.flops_bf16, chip.ops_int8) == (hbm, hbm_bw, bf16, int8)
    assert (chip.ici_oneway_bw, chip.dcn_bw_per_chip) == (oneway, dcn)
    assert chip.ici_bidir_bw == 2 * oneway
    assert chip.hop_latency == 1e-6


def test_bidir_bandwidth_is_derived_not_typed():
    names = {f.name for f in dataclasses.fields(hardware.TpuChip)}
    assert "ici_oneway_bw" in names and "ici_bidir_bw" not in names
    assert hardware.TPU_V5E.ici_bidir_bw == 9e10 and hardware.TPU_V5P.ici_bidir_bw == 1.8e11
    assert hardware.CPU.ici_bidir_bw == 2 * hardware.CPU.ici_oneway_bw


def test_v4p_is_tpu_v4_not_v5p():
    assert "TPU v4" in hardware.TPU_V4P.note and "不是 v5p" in hardware.TPU_V4P.note
    assert hardware.TPU_V5P.ici_oneway_bw == 2 * hardware.TPU_V4P.ici_oneway_bw
    assert hardware.TPU_V4P.pod_shape == (16, 16, 16) and hardware.TPU_V5P.pod_shape == (16, 20, 28)


def test_tpu_topology_and_host_links():
    assert [c.torus_dims for c in TPU_TABLE_CHIPS] == [2, 3, 3, 2, 2]
    assert hardware.TPU_V4P.neighbours == 6 and hardware.TPU_V5E.neighbours == 4
    assert hardware.TPU_V5E.topology == "2D torus，4 个邻居"
    assert hardware.TPU_V6E.pcie_bw == 3.2e10 and hardware.TPU_V5E.pcie_bw == 1.6e10
    assert hardware.TPU_V5E.devices_per_chip == 1 and hardware.TPU_V3.devices_per_chip == 2


@pytest.mark.parametrize(
    ("chip", "hbm", "hbm_bw", "bf16", "nvlink", "node", "scaleout"),
    [
        (hardware.A100, 80e9, 2.0e12, 3.1e14, 300e9, 8, None),
        (hardware.H100, 80e9, 3.35e12, 9.89e14, 450e9, 8, 400e9),
        (hardware.H200, 141e9, 4.8e12, 9.89e14, 450e9, 8, 400e9),
        (hardware.B200, 192e9, 8.0e12, 2.25e15, 900e9, 8, 400e9),
        (hardware.GB200_NVL72, 192e9, 8.0e12, 2.25e15, 900e9, 72, 3.6e12),
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
    assert (hardware.H100.nvlink_links, hardware.H100.nvlink_link_bw_per_direction) == (18, 25e9)
    assert hardware.H100.ib_bw_per_gpu == 50e9 and hardware.H100.nvswitches_per_node == 4
    assert hardware.GB200_NVL72.nvswitches_per_node == 18


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
    assert hardware.has_wraparound(chip, axis, shape) is expected


def test_gpu_has_no_torus():
    with pytest.raises(hardware.TopologyError, match="NVSwitch"):
        hardware.has_wraparound("h100", 8, (8,))


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
    with pytest.raises(hardware.TopologyError, match=message):
        hardware.has_wraparound(chip, axis, shape)


def test_check_slice_shape_returns_tuple():
    assert hardware.check_slice_shape("v5e", [8, 16]) == (8, 16)


# ---- 名字查找 ----


@pytest.mark.parametrize(
    ("name", "chip"),
    [
        ("v5e", hardware.TPU_V5E),
        ("TPU v5e", hardware.TPU_V5E),
        ("tpu V5E", hardware.TPU_V5E),
        ("v4", hardware.TPU_V4P),
        ("tpu v4", hardware.TPU_V4P),
        ("TPU v4p", hardware.TPU_V4P),
        ("v5p", hardware.TPU_V5P),
        ("TPU v5", hardware.TPU_V5P),
        ("trillium", hardware.TPU_V6E),
        ("v3", hardware.TPU_V3),
        ("h100", hardware.H100),
        ("NVIDIA H100", hardware.H100),
        ("a100", hardware.A100),
        ("H200", hardware.H200),
        ("b200", hardware.B200),
        ("GB200 NVL72", hardware.GB200_NVL72),
        ("gb200", hardware.GB200_NVL72),
        ("cpu", hardware.CPU),
    ],
)
def test_get_chip_aliases(name, chip):
    assert hardware.get_chip(name) is chip


def test_get_chip_accepts_chip_objects():
    assert hardware.get_chip(hardware.TPU_V5E) is hardware.TPU_V5E
    assert str(hardware.TPU_V5E) == "TPU v5e"


@pytest.mark.parametrize(
    ("kind", "chip"),
    [
        ("TPU v4", hardware.TPU_V4P),
        ("TPU v5 lite", hardware.TPU_V5E),
        ("TPU v5e", hardware.TPU_V5E),
        ("TPU v5", hardware.TPU_V5P),
        ("TPU v5p", hardware.TPU_V5P),
        ("TPU v6 lite", hardware.TPU_V6E),
        ("TPU v6e", hardware.TPU_V6E),
        ("TPU v3", hardware.TPU_V3),
        ("NVIDIA H100 80GB HBM3", hardware.H100),
        ("NVIDIA H100 PCIe", hardware.H100),
        ("NVIDIA H100 NVL", hardware.H100),
        ("NVIDIA H200", hardware.H200),
        ("NVIDIA B200", hardware.B200),
        ("NVIDIA GB200", hardware.GB200_NVL72),
        ("NVIDIA A100-SXM4-80GB", hardware.A100),
        ("cpu", hardware.CPU),
    ],
)
def test_from_device_kind(kind, chip):
    assert hardware.from_device_kind(kind) is chip


@pytest.mark.parametrize("bad", ["TPU v7x", "NVIDIA GH200 480GB", "v9", "A100 but not nvidia"])
def test_unknown_names_list_known_chips(bad):
    lookup = hardware.from_device_kind if bad.startswith(("TPU", "NVIDIA")) else hardware.get_chip
    with pytest.raises(hardware.UnknownChipError, match="未知的") as info:
        lookup(bad)
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    message = str(info.value)
    assert all(chip.name in message for chip in hardware.ALL_CHIPS)
    assert "known chips" in message


def test_get_chip_rejects_non_strings():
    with pytest.raises(hardware.UnknownChipError):
        hardware.get_chip(42)
