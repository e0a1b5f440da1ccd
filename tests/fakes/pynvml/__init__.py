"""A stand-in for nvidia-ml-py (import name `pynvml`) replaying three NVIDIA A40 GPUs.

Values are from a recorded `nvidia-smi` (NVIDIA-SMI 550.127.05, 10× A40) published in
thamada/nvidia-smi:nvsim/A40x10_smi.py: bus 00000000:4F/52/53:00.0, 29/30/27 °C, 23/24/15 W of
300 W, 1 MiB of 46068 MiB, 0 %. Units as NVML gives them (bytes, mW).
`FAKE_PYNVML_FAULT=nodriver` makes nvmlInit fail as on a host without the NVIDIA driver.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

NVML_TEMPERATURE_GPU = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
DRIVER = "550.127.05"
GPUS = (
    {"bus": "00000000:4F:00.0", "temp": 29, "power": 23, "used": 1},
    {"bus": "00000000:52:00.0", "temp": 30, "power": 24, "used": 1},
    {"bus": "00000000:53:00.0", "temp": 27, "power": 15, "used": 1},
)


class NVMLError(Exception):
    pass


def nvmlInit() -> None:  # noqa: N802
    if os.environ.get("FAKE_PYNVML_FAULT") == "nodriver":
        raise NVMLError("Driver Not Loaded")


def nvmlShutdown() -> None:  # noqa: N802
    pass


def nvmlSystemGetDriverVersion() -> str:  # noqa: N802
    return DRIVER


def nvmlDeviceGetCount() -> int:  # noqa: N802
    return len(GPUS)


def nvmlDeviceGetHandleByIndex(index: int) -> dict:  # noqa: N802
    return GPUS[index]


def nvmlDeviceGetName(handle: dict) -> str:  # noqa: N802
    return "NVIDIA A40"


def nvmlDeviceGetPciInfo(handle: dict) -> SimpleNamespace:  # noqa: N802
    return SimpleNamespace(busId=handle["bus"])


def nvmlDeviceGetUUID(handle: dict) -> str:  # noqa: N802
    raise NVMLError("Not Supported")


def nvmlDeviceGetMemoryInfo(handle: dict) -> SimpleNamespace:  # noqa: N802
    total, used = 46068 * 2**20, handle["used"] * 2**20
    return SimpleNamespace(total=total, used=used, free=total - used)


def nvmlDeviceGetUtilizationRates(handle: dict) -> SimpleNamespace:  # noqa: N802
    return SimpleNamespace(gpu=0, memory=0)


def nvmlDeviceGetPowerUsage(handle: dict) -> int:  # noqa: N802
    return handle["power"] * 1000


def nvmlDeviceGetEnforcedPowerLimit(handle: dict) -> int:  # noqa: N802
    return 300 * 1000


def nvmlDeviceGetTemperature(handle: dict, sensor: int) -> int:  # noqa: N802
    return handle["temp"]


def nvmlDeviceGetTotalEccErrors(handle: dict, error_type: int, counter_type: int) -> int:  # noqa: N802
    return 0


def nvmlDeviceGetComputeRunningProcesses(handle: dict) -> list:  # noqa: N802
    return []
