"""NCCL 延迟模型：常数来自哪个版本、下包络的性质、与书中实测的 370 GB/s 的联系

常数核对自 NVIDIA/nccl 的 src/graph/tuning.cc 与 src/graph/topo.h（v2.17.1-1 与 v2.18.1-1 … v2.30.3-1 的标签）。
"""

import numpy as np
import pytest

from shardlab import cost, hardware

H100 = hardware.H100


def test_constants_name_their_release():
    assert hardware.NCCL_RELEASE == "NCCL 2.30.3"
    assert (H100.nccl_base_latency, H100.nvlink_step_latency, H100.net_step_latency) == (6.6e-6, 0.6e-6, 2.7e-6)
    for name in ("nccl_base_latency", "nvlink_step_latency", "nccl_ll_bus_bw", "nccl_nvlink_bw_per_link"):
        assert "2.30.3" in H100.sources[name]
    assert "3.6 µs" in H100.sources["nccl_base_latency"]  # 旧版本的值写在出处里，不再当作现值
    assert hardware.NCCL_RING_PROTOCOLS["LL"][:2] == (H100.nccl_base_latency, H100.nvlink_step_latency)


def test_8_gpu_allreduce_latency_is_15us():
    # 2(N-1) = 14 步：6.6 + 14 × 0.6 = 15.0 µs（旧常数给出 3.6 + 14 × 0.47 = 10.2 µs）
    assert cost.gpu_ring_latency("all_reduce", 8, 8, H100) == pytest.approx(15.0e-6)


def test_hopper_bus_bandwidth_cap_is_the_measured_370():
    # NCCL 记每条 SM90 NVLink 20.6 GB/s：18 条 = 370.8 GB/s；书中 8×H100 AllReduce 实测约 370 GB/s（REFERENCE §4）
    assert H100.nccl_bus_bw == pytest.approx(370.8e9)
    assert cost.nccl_bus_bw(H100, "Simple") == pytest.approx(370.8e9)
    assert cost.nccl_bus_bw(H100, "LL") == pytest.approx(141e9)  # LL 的上限远低于 450 GB/s
    v = 10e9  # 书中实测接近 370 GB/s 的大小
    t = cost.nccl_ring_time("all_reduce", v, 8, H100, "Simple")
    assert 2 * 7 / 8 * v / t == pytest.approx(370e9, rel=2e-3)


@pytest.mark.parametrize("coll", ["all_gather", "reduce_scatter", "all_reduce"])
def test_estimate_is_a_lower_envelope_of_every_protocol(coll):
    for v in np.logspace(2, 10, 33):
        env = cost.estimate(coll, v, {"X": 8}, H100).time_s
        per_protocol = [cost.nccl_ring_time(coll, v, 8, H100, p) for p in hardware.NCCL_RING_PROTOCOLS]
        assert env <= min(per_protocol) * (1 + 1e-12)
    # 58 MB：实测约 150 GB/s；NCCL 自己的模型（最快的协议）给出约 308 GB/s，下包络更高：模型都不是测量
    v = 58e6
    best = min(cost.nccl_ring_time("all_reduce", v, 8, H100, p) for p in hardware.NCCL_RING_PROTOCOLS)
    assert 2 * 7 / 8 * v / best == pytest.approx(307.8e9, rel=1e-3)


def test_nccl_model_rejects_what_it_does_not_model():
    with pytest.raises(ValueError, match="协议"):
        cost.nccl_bus_bw(H100, "LL256")
    with pytest.raises(ValueError, match="节点内"):
        cost.nccl_ring_time("all_reduce", 1e6, 16, H100, "LL")
    with pytest.raises(ValueError, match="AllToAll"):
        cost.nccl_ring_time("all_to_all", 1e6, 8, H100, "LL")
    with pytest.raises(ValueError, match="GPU"):
        cost.nccl_ring_time("all_reduce", 1e6, 8, "v5e", "LL")
    assert cost.nccl_ring_time("all_reduce", 1e6, 1, H100, "Simple") == 0.0


def test_tree_and_nvls_do_not_beat_the_ring_for_small_messages_in_one_node():
    # tuning.cc（2.30.3）：节点内 tree/LL = 6.8 + 2·7·0.6 = 15.2 µs，ring/LL = 15.0 µs，NVLS = 25 µs
    base, step = hardware.NCCL_TREE_LL_LATENCY
    tree = base + 2 * (8 - 1) * step
    assert tree == pytest.approx(15.2e-6)
    assert tree > cost.gpu_ring_latency("all_reduce", 8, 8, H100)
    assert hardware.NCCL_NVLS_LATENCY == pytest.approx(25e-6) and hardware.NCCL_NVLS_LATENCY > tree
    assert "2.21.5" in H100.sources["nccl_ll_bus_bw"] and "87.7" in H100.sources["nccl_ll_bus_bw"]
