"""One-shot hl-smi children: run with a timeout (or read one already started), the `-Q` query
once, and the table and `topo` the live feed reads once beside its loop."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gaudi_tui.core import processes
from gaudi_tui.core.devices import faults
from gaudi_tui.core.devices.csv_query import BASIC_FIELDS, QUERY_FIELDS, query_args
from gaudi_tui.core.devices.faults import Fault
from gaudi_tui.core.devices.parsers.parse_csv import parse_csv
from gaudi_tui.core.devices.parsers.parse_table import parse_table
from gaudi_tui.core.devices.parsers.parse_topo import parse_topo
from gaudi_tui.core.devices.reading import Reading, merge


@dataclass(frozen=True)
class HlSmiOutput:
    """What one hl-smi run printed, and what went wrong with it (None: nothing)."""

    stdout: str
    fault: Fault | None = None


def tail(data: bytes, width: int = 160) -> str:
    """The end of a child's stderr, on one line."""
    text = " ".join(data.decode(errors="replace").split())
    return text if len(text) <= width else "…" + text[-width:]


def run_once(
    executable: str, args: Sequence[str], timeout: float, cancel: threading.Event | None = None
) -> HlSmiOutput:
    """Run `hl-smi args` once; a timeout or cancel ends it. Never raises."""
    try:
        child = subprocess.Popen(
            [executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except FileNotFoundError:
        return HlSmiOutput("", faults.hl_smi_missing(executable))
    except OSError as error:
        return HlSmiOutput("", faults.hl_smi_exited(-1, f"cannot start {executable}: {error.strerror}"))
    return finish(child, timeout, cancel)


def finish(
    child: subprocess.Popen[bytes], timeout: float, cancel: threading.Event | None = None
) -> HlSmiOutput:
    """Read a one-shot child to its end; `timeout` seconds from now or a cancel ends it. Never raises."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            out, err = child.communicate(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline or (cancel is not None and cancel.is_set()):
                ending = processes.end_child(child, "hl-smi", term_wait=None)
                close_streams(child)
                if ending == "abandoned":
                    return HlSmiOutput("", faults.hl_smi_abandoned(child.pid))
                return HlSmiOutput("", faults.hl_smi_hung(timeout))
    if child.returncode != 0:
        return HlSmiOutput(out.decode(errors="replace"), faults.hl_smi_exited(child.returncode, tail(err)))
    return HlSmiOutput(out.decode(errors="replace"))


def read_metadata(executable: str, timeout: float, cancel: threading.Event | None = None) -> Reading:
    """What the CSV loop lacks: versions and power caps (the table) and NUMA affinity (`topo -c -N`).
    Both commands run at once, so the wait is that of the slower one, not the sum."""
    readings = []
    topo_box: list[HlSmiOutput] = []
    topo_thread = threading.Thread(
        target=lambda: topo_box.append(run_once(executable, ["topo", "-c", "-N"], timeout, cancel)),
        name="hl-smi topo",
        daemon=True,
    )
    topo_thread.start()
    table = run_once(executable, [], timeout, cancel)
    if table.fault is None:
        readings.append(parse_table(table.stdout))
    topo_thread.join()  # run_once ends within its timeout (or at once when cancelled)
    topo = topo_box[0] if topo_box else HlSmiOutput("", faults.hl_smi_hung(timeout))
    if topo.fault is None:
        parsed = parse_topo(topo.stdout)
        readings.append(
            Reading(kind="topo", numa_by_module=parsed.numa_by_module, cpus_by_module=parsed.cpus_by_module)
        )
    return merge(readings)


def read_csv_text(text: str, fields: Sequence[str] = QUERY_FIELDS) -> tuple[Reading | None, Fault | None]:
    """A `-Q` query's answer, or the fault of one that names no card."""
    reading = parse_csv(text, fields)
    if reading.devices:
        return reading, None
    return None, faults.hl_smi_garbage(text.strip()[:60])


def read_csv_once(
    executable: str,
    timeout: float,
    cancel: threading.Event | None = None,
    started: subprocess.Popen[bytes] | None = None,
) -> tuple[Reading | None, Fault | None]:
    """One `-Q` query: the full field list, then the documented one if this hl-smi refuses it.
    `started`: that query of the full list, already running (`early_query.py`)."""
    fault = None
    for fields in (QUERY_FIELDS, BASIC_FIELDS):
        if started is not None:
            output, started = finish(started, timeout, cancel), None
        else:
            output = run_once(executable, query_args(fields), timeout, cancel)
        if output.fault is None:
            return read_csv_text(output.stdout, fields)
        fault = output.fault
        if not refused_fields(fault):
            break
    return None, fault


def refused_fields(fault: Fault) -> bool:
    """Did hl-smi exit complaining about the query itself (not, say, a failing driver)?"""
    said = fault.what.lower()
    return fault.code == "hl-smi-exit" and any(
        w in said for w in ("power.max", "query", "invalid", "unknown")
    )


def close_streams(child: subprocess.Popen[bytes]) -> None:
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
