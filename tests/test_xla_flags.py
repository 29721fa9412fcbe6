from shardlab import xla_flags

FLAG = xla_flags.DEVICE_COUNT_FLAG


def test_adds_the_flag_to_empty_or_other_flags():
    assert xla_flags.with_device_count("", 8) == f"{FLAG}=8"
    assert xla_flags.with_device_count("--xla_dump_to=/tmp/x", 4) == f"--xla_dump_to=/tmp/x {FLAG}=4"


def test_replace_or_keep_an_existing_setting():
    assert xla_flags.with_device_count(f"{FLAG}=2 --a", 8) == f"--a {FLAG}=8"
    assert xla_flags.with_device_count(f"{FLAG}=2 --a", 8, replace=False) == f"{FLAG}=2 --a"
