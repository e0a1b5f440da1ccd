"""The subset of `torch.hpu` that transformers and gaudi-tui call."""

import os


def device_count() -> int:
    return int(os.environ.get("FAKE_HPU_CARDS", "8"))


def is_available() -> bool:
    return device_count() > 0


def get_device_name(device: int = 0) -> str:
    return os.environ.get("FAKE_HPU_NAME", "GAUDI2")


def memory_stats(device: int = 0) -> dict:
    # Keys as printed by habana_frameworks.torch.hpu.memory_stats() on Gaudi 2 (96 GB card).
    return {"Limit": 101_468_602_368, "InUse": 0, "MaxInUse": 0, "NumAllocs": 0, "NumFrees": 0}


def is_initialized() -> bool:
    # Ray's HPU detection (ray/_private/accelerators/hpu.py) asks before reading the device name.
    return is_available()
