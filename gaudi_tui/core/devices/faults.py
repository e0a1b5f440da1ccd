"""Why no card data: each fault says what happened and what to do, for a banner or a stderr line."""

from __future__ import annotations

from dataclasses import dataclass

from gaudi_tui.core import processes


@dataclass(frozen=True)
class Fault:
    code: str
    what: str
    todo: str

    def banner(self) -> str:
        return f"{self.what} — {self.todo}"


def hl_smi_missing(executable: str) -> Fault:
    return Fault(
        "hl-smi-missing",
        f"`{executable}` is not on PATH and HLML (pyhlml) is not available",
        "on a Gaudi host install the driver tools (habanalabs-firmware-tools) or "
        "`pip install 'gaudi-tui[gaudi]'`; showing the host only",
    )


def driver_not_loaded(detail: str = "") -> Fault:
    return Fault(
        "driver-not-loaded",
        "the habanalabs kernel driver is not loaded (/sys/module/habanalabs is absent)"
        + (f"; {detail}" if detail else ""),
        "load it with `sudo modprobe habanalabs` and check `dmesg | grep habanalabs` for errors",
    )


def permission_denied(nodes: list[str]) -> Fault:
    shown = ", ".join(nodes[:2]) + (" …" if len(nodes) > 2 else "")
    return Fault(
        "permission-denied",
        f"permission denied on {shown}: this user cannot open the cards",
        "add yourself to the group that owns /dev/accel (`ls -l /dev/accel`), log in again, or ask an admin",
    )


def hl_smi_exited(code: int, stderr: str) -> Fault:
    detail = f": {stderr}" if stderr else ""
    return Fault(
        "hl-smi-exit",
        f"hl-smi exited with code {code}{detail}",
        "run `hl-smi` in a shell to see why; if the driver is failing, see `dmesg | grep habanalabs`",
    )


def hl_smi_abandoned(pid: int) -> Fault:
    return Fault("hl-smi-abandoned", processes.abandoned_what("hl-smi", pid), processes.abandoned_todo(pid))


def hl_smi_hung(seconds: float) -> Fault:
    return Fault(
        "hl-smi-hang",
        f"hl-smi printed nothing for {seconds:.0f} s and was ended",
        "a hanging hl-smi often means a card or the driver is stuck: check `dmesg | grep habanalabs`",
    )


def hl_smi_garbage(sample: str) -> Fault:
    return Fault(
        "hl-smi-garbage",
        f"hl-smi printed output gaudi-tui cannot read ({sample!r})",
        "check `hl-smi -Q index,name -f csv` in a shell; a newer hl-smi format needs a gaudi-tui update",
    )


def feed_failed(error: str) -> Fault:
    return Fault(
        "feed-error",
        f"a card refresh could not be shown ({error})",
        "the next refreshes are tried; gaudi-tui's log has the traceback: please report it",
    )


def hlml_failed(error: str) -> Fault:
    return Fault(
        "hlml-error",
        f"HLML stopped answering ({error})",
        "falling back to hl-smi; see `dmesg | grep habanalabs`",
    )


def nvml_failed(error: str) -> Fault:
    return Fault("nvml-error", f"NVML stopped answering ({error})", "check `nvidia-smi` in a shell")


def most_specific(fault: Fault, sys_root: str = "/sys", dev_root: str = "/dev") -> Fault:
    """A clearer cause for a failing Gaudi source, when the kernel shows one: no access to the
    compute nodes, or (when hl-smi exists but fails) the driver not loaded."""
    from gaudi_tui.core.devices.sources import sysfs

    denied = sysfs.unusable_nodes(dev_root)
    if denied:
        return permission_denied([str(n) for n in denied])
    if fault.code != "hl-smi-missing" and not sysfs.driver_loaded(sys_root):
        return driver_not_loaded(fault.what)
    return fault
