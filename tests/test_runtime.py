"""shardlab.runtime：档位解析、设备数量、晚调用的报错、JAX 适配层"""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P

from shardlab import runtime


@pytest.mark.skipif(
    "SHARDLAB_EXPECT_JAX" not in os.environ, reason="只在 make test-compat 里检查（它设 SHARDLAB_EXPECT_JAX）"
)
def test_compat_environment_runs_the_pinned_jax():
    """make test-compat 真的在 Colab 的 jax 版本上运行（笔记本的内核是同一个解释器：nbval --nbval-current-env）"""
    import jaxlib

    expected = os.environ["SHARDLAB_EXPECT_JAX"]
    assert (jax.__version__, jaxlib.__version__) == (expected, expected)


def test_cpu_profile_gives_eight_emulated_devices():
    rt = runtime.setup("cpu")
    assert rt.profile == "cpu"
    assert rt.n_devices == 8
    assert rt.emulated_mesh
    assert {d.platform for d in rt.mesh_devices} == {"cpu"}
    assert rt.compute_device == rt.mesh_devices[0]
    assert rt.device_kind == "cpu"
    assert "8 个设备" in rt.describe()


def test_setup_is_idempotent():
    assert runtime.setup().mesh_devices == runtime.setup().mesh_devices


def test_profile_from_environment(monkeypatch):
    monkeypatch.setenv("COURSE_PROFILE", "AUTO")
    assert runtime.setup().profile == "cpu"  # 这台机器没有加速器，auto 退回 CPU


def test_unknown_profile_is_rejected(monkeypatch):
    with pytest.raises(ValueError, match="未知的运行档位.*可选 cpu, tpu, gpu, auto"):
        runtime.setup("npu")
    monkeypatch.setenv("COURSE_PROFILE", "fpga")
    with pytest.raises(ValueError, match="fpga"):
        runtime.setup()


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_bad_device_count(bad):
    with pytest.raises(ValueError, match="n_devices"):
        runtime.setup("cpu", n_devices=bad)


def test_accelerator_profile_without_accelerator():
    with pytest.raises(runtime.RuntimeSetupError, match="没有找到 GPU"):
        runtime.setup("gpu")


class _FakeTPU:
    platform = "tpu"
    device_kind = "TPU v5 lite"

    def __init__(self, i):
        self.id = i


def _fake_backend(monkeypatch, n_accel):
    cpu = jax.devices("cpu")
    accel = [_FakeTPU(i) for i in range(n_accel)]
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    monkeypatch.setattr(jax, "devices", lambda backend=None: cpu if backend == "cpu" else accel)
    monkeypatch.setattr(
        jax, "local_devices", lambda process_index=None, backend=None: cpu if backend == "cpu" else accel
    )
    return cpu, accel


def test_single_chip_accelerator_uses_cpu_mesh(monkeypatch):
    cpu, accel = _fake_backend(monkeypatch, 1)
    rt = runtime.setup("auto")
    assert rt.profile == "tpu"
    assert rt.mesh_devices == tuple(cpu[:8]) and rt.emulated_mesh
    assert rt.compute_device is accel[0]
    assert rt.device_kind == "TPU v5 lite"
    assert "模拟 CPU 设备" in rt.describe()


def test_enough_accelerators_form_the_mesh(monkeypatch):
    _, accel = _fake_backend(monkeypatch, 8)
    rt = runtime.setup("tpu")
    assert rt.mesh_devices == tuple(accel) and not rt.emulated_mesh
    assert rt.notes == ()


def test_late_setup_asks_for_a_kernel_restart():
    code = textwrap.dedent(
        """
        import jax
        jax.numpy.zeros(1)  # 后端已按默认的 1 个 CPU 设备启动
        from shardlab import runtime
        runtime.setup()
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "COURSE_PROFILE")}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert "RuntimeSetupError" in proc.stderr
    assert "重启内核" in proc.stderr and "Restart the kernel" in proc.stderr


def test_make_mesh_validates_and_builds():
    mesh = runtime.setup().mesh((2, 4), ("X", "Y"))
    assert dict(mesh.shape) == {"X": 2, "Y": 4}
    assert runtime.make_mesh((8,), ("X",), explicit=True).axis_types[0].name == "Explicit"
    with pytest.raises(ValueError, match="个数不一致"):
        runtime.make_mesh((2, 4), ("X",))
    with pytest.raises(ValueError, match="重复"):
        runtime.make_mesh((2, 4), ("X", "X"))
    with pytest.raises(runtime.RuntimeSetupError, match="需要 16 个设备"):
        runtime.make_mesh((4, 4), ("X", "Y"))


def test_shard_map_and_put_run_a_psum():
    mesh = runtime.setup().mesh((8,), ("X",))
    x = runtime.put(jnp.arange(16.0).reshape(8, 2), mesh, P("X", None))
    f = runtime.shard_map(lambda b: jax.lax.psum(b, "X"), mesh=mesh, in_specs=P("X", None), out_specs=P())
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), np.arange(16.0).reshape(8, 2).sum(0, keepdims=True))
