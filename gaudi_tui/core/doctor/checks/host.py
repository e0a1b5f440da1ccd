"""The host: kernel driver, hl-smi, container, the cards and who holds them."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

from gaudi_tui.core.devices.cardsets import SUPPORTED_SETS, visible_modules
from gaudi_tui.core.devices.model import DeviceSnapshot
from gaudi_tui.core.doctor.checks.envvars import requested_modules
from gaudi_tui.core.doctor.context import CheckContext, Unavailable
from gaudi_tui.core.doctor.model import CheckVerdict, fail, ok, skip, warn

SHM_MIN_BYTES = 1 << 30
DOCKER_FLAGS = (
    "--runtime=habana -e HABANA_VISIBLE_DEVICES=all -e OMPI_MCA_btl_vader_single_copy_mechanism=none "
    "--cap-add=sys_nice --ipc=host"
)
_NODE_FOLDERS = (("/dev/accel", re.compile(r"accel\d+")), ("/dev", re.compile(r"hl\d+")))


def device_nodes(ctx: CheckContext) -> list[str]:
    """Compute nodes of the cards: /dev/accel/accelN (kernel ≥ 6.3) or /dev/hlN (older drivers)."""
    found: list[str] = []
    for folder, pattern in _NODE_FOLDERS:
        try:
            names = os.listdir(ctx.host_path(folder))
        except OSError:
            continue
        found += [f"{folder}/{name}" for name in names if pattern.fullmatch(name)]
    return sorted(found, key=lambda p: (len(p), p))


def driver_loaded(ctx: CheckContext) -> CheckVerdict:
    module = ctx.host_path("/sys/module/habanalabs")
    nodes = device_nodes(ctx)
    try:
        version = f" {(module / 'version').read_text().strip()}"
    except OSError:
        version = ""
    if nodes:
        shown = ", ".join(nodes[:2]) + (f" … {nodes[-1]}" if len(nodes) > 2 else "")
        return ok(
            f"habanalabs driver{version} loaded: {len(nodes)} device node(s) ({shown})",
            "Each card has one compute node (/dev/accel/accelN, or /dev/hlN with older kernels); "
            "only one process at a time can open it.",
        )
    if module.is_dir():
        return fail(
            f"habanalabs driver{version} is loaded but no /dev/accel/accel* or /dev/hl* node is visible",
            "The kernel module is there, but this system has no device node to open: usually a container "
            "started without the Habana runtime, or with HABANA_VISIBLE_DEVICES=none.",
            f"Start the container with `docker run {DOCKER_FLAGS} …`.",
        )
    return fail(
        "habanalabs driver not loaded: no /sys/module/habanalabs and no /dev/accel/accel* or /dev/hl* node",
        "Without Intel's habanalabs kernel driver no Gaudi card can be used, so jobs fall back to CUDA "
        "or CPU. In a container the host's driver must be loaded and the container started with the "
        "Habana runtime.",
        "On the host: `sudo modprobe habanalabs` (install the driver with Intel's habanalabs-installer.sh "
        f"if it is missing), then `hl-smi`. In a container: restart it with `{DOCKER_FLAGS}`.",
    )


def hlsmi_present(ctx: CheckContext) -> CheckVerdict:
    path = ctx.which("hl-smi")
    if path:
        return ok(
            f"hl-smi found at {path}",
            "hl-smi gives the device map, the driver version and, as root outside a container, the "
            "processes on each card.",
        )
    return fail(
        "hl-smi not found on PATH",
        "hl-smi is Intel's System Management Interface for Gaudi; the device map, the driver version "
        "and the driver/plugin comparison come from it. It is installed with the Gaudi driver and "
        "firmware tools and ships in Intel's Gaudi containers as /usr/bin/hl-smi.",
        "Install the Gaudi software with Intel's habanalabs-installer.sh, or run inside Intel's Gaudi "
        "container; if hl-smi is installed elsewhere, add its folder to PATH.",
    )


@dataclass(frozen=True)
class Container:
    kind: str
    evidence: str


def detect_container(ctx: CheckContext) -> Container | None:
    for path, kind in (("/.dockerenv", "docker"), ("/run/.containerenv", "podman")):
        if ctx.host_path(path).exists():
            return Container(kind, path)
    if ctx.env.get("KUBERNETES_SERVICE_HOST"):
        return Container("Kubernetes pod", "KUBERNETES_SERVICE_HOST is set")
    if ctx.env.get("container"):
        return Container(ctx.env["container"], f"container={ctx.env['container']}")
    try:
        cgroup = ctx.host_path("/proc/1/cgroup").read_text()
    except OSError:
        cgroup = ""
    for word in ("docker", "kubepods", "containerd", "libpod", "lxc"):
        if word in cgroup:
            return Container(word, "/proc/1/cgroup")
    return None


CONTAINER_PIDS = (
    "Processes in other containers and on the host are invisible here, so hl-smi's process table "
    "shows N/A and a busy card may have no holder listed. `sudo hl-smi` on the host (not in a "
    "container) shows every process."
)


def host_container(ctx: CheckContext) -> CheckVerdict:
    found = detect_container(ctx)
    if found is None:
        return ok(
            "not in a container",
            "On the host, `sudo hl-smi` and this panel can see the processes of every user on each card.",
        )
    where = f"in a container ({found.kind}: {found.evidence})"
    try:
        shm = ctx.disk_usage(str(ctx.host_path("/dev/shm"))).total
    except OSError:
        shm = None
    if shm is not None and shm < SHM_MIN_BYTES:
        return warn(
            f"{where}, and /dev/shm is only {shm // (1 << 20)} MiB",
            "Intel's Gaudi containers are started with --ipc=host: multi-card jobs (HCCL) and DataLoader "
            f"workers need shared memory, and Docker's default /dev/shm is 64 MiB. {CONTAINER_PIDS}",
            f"Restart the container with `docker run {DOCKER_FLAGS} …` (or at least --shm-size=64g).",
        )
    return ok(where, CONTAINER_PIDS)


def _card(index: int, modules: dict[int, int]) -> str:
    return f"card {index} (module {modules[index]})" if index in modules else f"card {index}"


def _modules_by_index(snapshot: DeviceSnapshot | None) -> dict[int, int]:
    if snapshot is None:
        return {}
    return {d.index: d.module_id for d in snapshot.devices if d.module_id is not None}


def cards_detected(ctx: CheckContext) -> CheckVerdict:
    try:
        snapshot = ctx.snapshot()
    except Unavailable as exc:
        return skip(f"no device map: {exc}")
    if not snapshot.devices:
        why = "; ".join(snapshot.errors) or "hl-smi listed none"
        return fail(
            f"no Gaudi card detected ({why})",
            "The device map lists no card, so nothing can run on Gaudi: jobs fall back to CUDA or CPU.",
            "See driver.loaded and hlsmi.present; run `hl-smi` by hand to read its own error.",
        )
    kinds = Counter(f"{d.name} ({d.product})" if d.product else d.name for d in snapshot.devices)
    what = ", ".join(f"{n} × {kind}" for kind, n in kinds.items())
    driver = f", driver {snapshot.driver_version}" if snapshot.driver_version else ""
    finding = f"{len(snapshot.devices)} card(s): {what}{driver}"
    notes = ""
    if any(d.product == "Gaudi" for d in snapshot.devices):
        notes = (
            " First-generation Gaudi (HL-205): bf16 but no fp16 and no fp8, no int64 ops, and no "
            "bitsandbytes 4-bit (NF4/QLoRA)."
        )
    nodes = device_nodes(ctx)
    if nodes and len(nodes) != len(snapshot.devices):
        return warn(
            f"{finding}; but {len(nodes)} device node(s) under /dev",
            "hl-smi and the device nodes disagree: a card was lost after boot, or the container sees only "
            f"part of the host's cards.{notes}",
            "Compare `hl-smi -Q index,module_id,bus_id -f csv` with `ls /dev/accel`; check `dmesg | grep "
            "habanalabs` for 'Device is NOT usable'.",
        )
    return ok(finding, "The device map comes from hl-smi." + notes)


@dataclass(frozen=True)
class Hold:
    """A card held by a process, from the /proc scan or hl-smi's process table."""

    index: int
    pid: int
    who: str

    def describe(self, modules: dict[int, int]) -> str:
        return f"{_card(self.index, modules)} pid {self.pid} {self.who}"


def _holds(ctx: CheckContext, snapshot: DeviceSnapshot | None) -> tuple[list[Hold], str]:
    """Who holds which card, and why that list may be incomplete ('' when it is not)."""
    try:
        found = [Hold(h.index, h.pid, f"{h.user or '?'}: {h.command}") for h in ctx.holders()]
        partial = ""
    except Unavailable as exc:
        found, partial = [], str(exc)
    seen = {(h.index, h.pid) for h in found}
    for p in snapshot.processes if snapshot else ():
        if (p.index, p.pid) not in seen:
            found.append(Hold(p.index, p.pid, f"{p.user or '?'}: {p.name}"))
    return sorted(found, key=lambda h: (h.index, h.pid)), partial


def _free_set(free: set[int], sizes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The first supported set of module IDs, of one of these sizes, that is entirely free."""
    for size in sizes:
        if size == 1 and free:
            return (min(free),)
        for candidate in SUPPORTED_SETS:
            if len(candidate) == size and candidate <= free:
                return tuple(sorted(candidate))
    return None


def _wanted(ctx: CheckContext, modules: dict[int, int], everything: set[int]) -> tuple[set[int], str | None]:
    """Indices of the cards jobs will use, and the HABANA_VISIBLE_MODULES value that chose them (if any)."""
    try:
        chosen = requested_modules(ctx.env)
    except ValueError:
        chosen = None
    index_of = {m: i for i, m in modules.items()}
    if chosen and all(m in index_of for m in chosen):
        return {index_of[m] for m in chosen}, visible_modules(chosen)
    return everything, None


def cards_busy(ctx: CheckContext) -> CheckVerdict:
    try:
        snapshot: DeviceSnapshot | None = ctx.snapshot()
    except Unavailable:
        snapshot = None
    holds, partial = _holds(ctx, snapshot)
    indices = {d.index for d in snapshot.devices} if snapshot else set()
    if partial and not indices:
        return skip(f"cannot tell: {partial}, and there is no device map")
    modules = _modules_by_index(snapshot)
    wanted, chosen = _wanted(ctx, modules, indices or {h.index for h in holds})
    scope = f"HABANA_VISIBLE_MODULES={chosen}" if chosen else "this host"
    blind = f" {CONTAINER_PIDS}" if detect_container(ctx) else ""
    explanation = (
        "Only one process can open a Gaudi card; a job that needs a held card fails with "
        f"'synStatus=20 [Device already acquired] Device acquire failed'.{blind}"
    )
    taken = [h for h in holds if h.index in wanted]
    if not taken:
        note = f" ({partial})" if partial else ""
        return ok(f"no card of {scope} is held by another process{note}", explanation)
    cards = sorted({h.index for h in taken})
    finding = f"{len(cards)} of {len(wanted)} card(s) of {scope} busy: " + "; ".join(
        h.describe(modules) for h in taken
    )
    stop = (
        f"stop the holder if it is yours (`kill {' '.join(str(p) for p in sorted({h.pid for h in taken}))}`)"
    )
    free = {modules[i] for i in indices - {h.index for h in holds} if i in modules}
    spare = _free_set(free, (len(wanted),) if chosen else (8, 4, 2, 1))
    if spare:
        fix = (
            f"Either {stop}, or choose free cards: `export HABANA_VISIBLE_MODULES={visible_modules(spare)}`."
        )
    else:
        fix = f"{stop[0].upper()}{stop[1:]}, or wait for it to finish."
    return (fail if len(cards) == len(wanted) else warn)(finding, explanation, fix)
