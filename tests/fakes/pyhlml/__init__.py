"""A stand-in for `habana-pyhlml` (import name `pyhlml`) replaying cards from a real hl-smi sample.

Same function names, byte strings, units (bytes, mW) and HLMLError classes as habana-pyhlml
1.24 (docs/hl-smi-facts.md lists them with their sources). Environment:
  FAKE_PYHLML_SAMPLE  sample file (default gaudi2-hl225-x8-1.20.0-busy-table.txt)
  FAKE_PYHLML_FAULT   nolib: hlmlInit fails as on a host without libhlml
                      lost:  reads fail with AIP_IS_LOST after FAKE_PYHLML_AFTER reads (default 2)
  FAKE_PYHLML_LINK    `-n link` sample giving each card's port states by bus ID
                      (default made-gaudi2-x8-nic-link-up.txt; "" = no NIC: the calls raise NotSupported)
  FAKE_PYHLML_PORTS   `-n ports` sample giving the external ports (default made-gaudi2-x8-nic-ports.txt)
`calls` counts every call by name, so tests can check the slow and leaky ones are rationed.
"""

from __future__ import annotations

import os
from collections import Counter
from types import SimpleNamespace

import hlsmi_replay as replay

calls: Counter[str] = Counter()
_state: dict[str, object] = {"cards": None, "reads": 0}


class HLMLError(Exception):
    value = 49

    def __str__(self) -> str:
        return f"HLML Error with code {self.value}"


class HLMLError_Uninitialized(HLMLError):  # noqa: N801 (pyhlml's names)
    value = 1


class HLMLError_NotSupported(HLMLError):  # noqa: N801
    value = 3


class HLMLError_AipIsLost(HLMLError):  # noqa: N801
    value = 15


def _count(name: str) -> None:
    calls[name] += 1


def _cards() -> list[dict[str, str]]:
    cards = _state["cards"]
    if cards is None:
        raise HLMLError_Uninitialized()
    return cards  # type: ignore[return-value]


def _value(handle: dict[str, str], field: str) -> str:
    value = handle.get(field, "N/A")
    if value == "N/A":
        raise HLMLError_NotSupported()
    return value


def hlmlInit() -> None:  # noqa: N802
    _count("hlmlInit")
    if os.environ.get("FAKE_PYHLML_FAULT") == "nolib":
        print("Failed to load libhlml")
        raise HLMLError_Uninitialized()
    _state["cards"] = replay.cards(os.environ.get("FAKE_PYHLML_SAMPLE", replay.DEFAULT_SAMPLE))
    _state["reads"] = 0


def hlmlShutdown() -> None:  # noqa: N802
    _count("hlmlShutdown")
    _state["cards"] = None


def hlmlGetDriverVersion() -> bytes:  # noqa: N802
    _count("hlmlGetDriverVersion")
    return _cards()[0]["driver_version"].encode()


def hlmlDeviceGetCount() -> int:  # noqa: N802
    _count("hlmlDeviceGetCount")
    return len(_cards())


def hlmlDeviceGetHandleByIndex(index: int) -> dict[str, str]:  # noqa: N802
    _count("hlmlDeviceGetHandleByIndex")
    return _cards()[index]


def hlmlDeviceGetName(handle: dict[str, str]) -> bytes:  # noqa: N802
    _count("hlmlDeviceGetName")
    return _value(handle, "name").encode()


def hlmlDeviceGetPCIInfo(handle: dict[str, str]) -> SimpleNamespace:  # noqa: N802
    _count("hlmlDeviceGetPCIInfo")
    return SimpleNamespace(bus_id=_value(handle, "bus_id").encode() + b"\x00")


def hlmlDeviceGetMinorNumber(handle: dict[str, str]) -> int:  # noqa: N802
    _count("hlmlDeviceGetMinorNumber")
    return int(_value(handle, "index"))


def hlmlDeviceGetModuleID(handle: dict[str, str]) -> int:  # noqa: N802
    _count("hlmlDeviceGetModuleID")
    return int(_value(handle, "module_id"))


def hlmlDeviceGetUUID(handle: dict[str, str]) -> bytes:  # noqa: N802
    _count("hlmlDeviceGetUUID")
    return _value(handle, "uuid").encode()


def hlmlDeviceGetPowerManagementLimit(handle: dict[str, str]) -> int:  # noqa: N802
    _count("hlmlDeviceGetPowerManagementLimit")
    return int(_value(handle, "power.max")) * 1000


def _read(handle: dict[str, str]) -> None:
    if os.environ.get("FAKE_PYHLML_FAULT") == "lost":
        _state["reads"] = int(_state["reads"]) + 1  # type: ignore[call-overload]
        if int(_state["reads"]) > int(os.environ.get("FAKE_PYHLML_AFTER", "2")) * len(_cards()):  # type: ignore[call-overload]
            raise HLMLError_AipIsLost()


def hlmlDeviceGetMemoryInfo(handle: dict[str, str]) -> SimpleNamespace:  # noqa: N802
    _count("hlmlDeviceGetMemoryInfo")
    _read(handle)
    total, used = int(_value(handle, "memory.total")) * 2**20, int(_value(handle, "memory.used")) * 2**20
    return SimpleNamespace(total=total, used=used, free=total - used)


def hlmlDeviceGetUtilizationRates(handle: dict[str, str]) -> SimpleNamespace:  # noqa: N802
    _count("hlmlDeviceGetUtilizationRates")
    return SimpleNamespace(aip=int(_value(handle, "utilization.aip")), memory=0)


def hlmlDeviceGetPowerUsage(handle: dict[str, str]) -> int:  # noqa: N802
    _count("hlmlDeviceGetPowerUsage")
    return int(_value(handle, "power.draw")) * 1000


def hlmlDeviceGetTemperature(handle: dict[str, str], sensor: int) -> int:  # noqa: N802
    _count("hlmlDeviceGetTemperature")  # the real one leaks memory on every call
    return int(_value(handle, "temperature.aip"))


def hlmlDeviceGetTotalECCErrors(handle: dict[str, str], error_type: int, counter_type: int) -> int:  # noqa: N802
    _count("hlmlDeviceGetTotalECCErrors")
    return int(_value(handle, "ecc.errors.uncorrected.volatile.total"))


def _nic(handle: dict[str, str], kind: str, default: str) -> list[str]:
    sample = os.environ.get(f"FAKE_PYHLML_{kind}", default)
    if not sample:
        raise HLMLError_NotSupported()
    lines = replay.nic_sections(replay.read_text(sample)).get(handle.get("bus_id", ""))
    if lines is None:
        raise HLMLError_NotSupported()
    return lines


def _port_of(line: str) -> tuple[int, str]:
    number, value = line.split(":", 1)
    return int(number.split()[1]), value.strip()


def hlmlDeviceGetMacAddrInfo(handle: dict[str, str]) -> tuple[tuple[int, int], tuple[int, int]]:  # noqa: N802
    """((mask low, high), (external mask low, high)), as habana-pyhlml 1.24 returns them."""
    _count("hlmlDeviceGetMacAddrInfo")
    mask = external = 0
    for line in _nic(handle, "PORTS", "made-gaudi2-x8-nic-ports.txt"):
        number, kind = _port_of(line)
        mask |= 1 << number
        if kind == "external":
            external |= 1 << number
    return (mask & (2**64 - 1), mask >> 64), (external & (2**64 - 1), external >> 64)


def hlmlDeviceNicGetLink(handle: dict[str, str], port: int) -> bool:  # noqa: N802
    _count("hlmlDeviceNicGetLink")
    states = dict(_port_of(line) for line in _nic(handle, "LINK", "made-gaudi2-x8-nic-link-up.txt"))
    if port not in states:
        raise HLMLError_NotSupported()
    return states[port] == "UP"
