"""nbval 的内核启动重试（conftest.with_start_retry）：偶发的启动失败再试，持续失败照样报错"""

import pytest
from conftest import KERNEL_START_TRIES, with_start_retry
from nbval import kernel


def _flaky(failures: int):
    calls = []

    def start(*args, **kwargs):
        calls.append((args, kwargs))
        if len(calls) <= failures:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "km", "kc"

    return start, calls


def test_installed_on_nbval():
    assert kernel.start_new_kernel.shardlab_retry


def test_one_failed_start_is_retried_with_a_warning():
    start, calls = _flaky(1)
    with pytest.warns(UserWarning, match="第 1 次启动失败"):
        assert with_start_retry(start)(kernel_name="python3", cwd="book") == ("km", "kc")
    assert len(calls) == 2 and calls[1] == ((), {"kernel_name": "python3", "cwd": "book"})


def test_a_kernel_that_never_starts_still_fails():
    start, calls = _flaky(KERNEL_START_TRIES)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="kernel_info"):
        with_start_retry(start)()
    assert len(calls) == KERNEL_START_TRIES
