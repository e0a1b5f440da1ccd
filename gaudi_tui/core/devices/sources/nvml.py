"""NVIDIA GPUs through NVML (`pynvml` from nvidia-ml-py, optional extra `nvidia`), for CUDA hosts."""

from __future__ import annotations

from gaudi_tui.core.devices.model import DeviceProcess
from gaudi_tui.core.devices.reading import Reading, make_device
from gaudi_tui.core.devices.sources import sysfs
from gaudi_tui.core.devices.sources.library import LibrarySource, SourceUnavailable, load, text


class NvmlSource(LibrarySource):
    def __init__(self, sys_root: str = "/sys") -> None:
        self.sys_root = sys_root
        self.lib = load("pynvml", "nvidia")
        try:
            self.lib.nvmlInit()
            self.driver_version = text(self.lib.nvmlSystemGetDriverVersion())
            self.handles = [
                self.lib.nvmlDeviceGetHandleByIndex(i) for i in range(self.lib.nvmlDeviceGetCount())
            ]
        except Exception as error:  # NVMLError: no driver, no GPU
            raise SourceUnavailable(f"NVML could not start: {error}") from error

    def read(self) -> Reading:
        devices, processes = [], []
        for index, handle in enumerate(self.handles):
            memory = self.lib.nvmlDeviceGetMemoryInfo(handle)
            rates = self.optional("nvmlDeviceGetUtilizationRates", handle)
            power = self.optional("nvmlDeviceGetPowerUsage", handle)
            cap = self.optional("nvmlDeviceGetEnforcedPowerLimit", handle)
            pci = self.optional("nvmlDeviceGetPciInfo", handle)
            bus_id = text(getattr(pci, "busId", None))
            errors = self.optional(
                "nvmlDeviceGetTotalEccErrors",
                handle,
                getattr(self.lib, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1),
                getattr(self.lib, "NVML_VOLATILE_ECC", 0),
            )
            devices.append(
                make_device(
                    index,
                    {
                        "name": text(self.lib.nvmlDeviceGetName(handle)),
                        "bus_id": bus_id,
                        "uuid": text(self.optional("nvmlDeviceGetUUID", handle)),
                        "memory_used_mib": int(memory.used / 2**20),
                        "memory_total_mib": int(memory.total / 2**20),
                        "utilization_pct": None if rates is None else float(rates.gpu),
                        "power_draw_w": None if power is None else power / 1000.0,
                        "power_cap_w": None if cap is None else cap / 1000.0,
                        "temperature_c": self.optional(
                            "nvmlDeviceGetTemperature", handle, getattr(self.lib, "NVML_TEMPERATURE_GPU", 0)
                        ),
                        "uncorrected_errors": errors,
                        "numa_node": sysfs.numa_node(_short_bus(bus_id), self.sys_root),
                    },
                )
            )
            for process in self.optional("nvmlDeviceGetComputeRunningProcesses", handle) or []:
                used = getattr(process, "usedGpuMemory", None)
                processes.append(
                    DeviceProcess(index, int(process.pid), "?", None if used is None else int(used / 2**20))
                )
        return Reading(
            kind="nvml",
            devices=tuple(devices),
            processes=tuple(processes),
            driver_version=self.driver_version,
        )

    def close(self) -> None:
        self.optional("nvmlShutdown")


def _short_bus(bus_id: str | None) -> str | None:
    """NVML's `00000000:4F:00.0` → sysfs's `0000:4f:00.0`."""
    if not bus_id:
        return None
    domain, _, rest = bus_id.partition(":")
    return f"{domain[-4:]}:{rest}".lower()
