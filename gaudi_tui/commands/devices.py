"""`gaudi-tui devices`: print the device map (HLML / hl-smi / NVML / host), once or repeatedly,
or read a saved hl-smi output of any form (`--input FILE`, `-` for stdin)."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaudi_tui.core.devices.monitor import MonitorUpdate

HOST_WINDOW_S = 0.25


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "devices",
        help="print the device map (hl-smi / HLML / NVML / host)",
        description=(
            "Print the device map once (HLML, else hl-smi, else NVML, else the host only). "
            "Exit 0 on success, 2 when no source works or the input or replay cannot be read."
        ),
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (schema in docs/architecture.md) instead of a table"
    )
    parser.add_argument(
        "--watch",
        type=float,
        metavar="SECONDS",
        help="refresh every SECONDS until Ctrl-C (one long-lived hl-smi)",
    )
    parser.add_argument("--count", type=int, metavar="N", help="with --watch: stop after N refreshes")
    parser.add_argument(
        "--input",
        action="append",
        metavar="FILE",
        help="read a saved hl-smi output instead of querying (table, -Q CSV, -L/-q, topo -c -N, -n link; "
        "auto-detected); '-' reads stdin; repeat to combine, e.g. a table and an index,module_id CSV",
    )
    parser.add_argument(
        "--replay",
        metavar="NAME|FILE",
        help="recorded real hl-smi outputs shipped with gaudi-tui (gaudi1, gaudi2, gaudi2e; gaudi2-port-down "
        "adds NIC link files made from documentation: card 3 loses a scale-out port) or a saved "
        'FILE, marked source "replay" with the file names; with --watch it cycles through them',
    )
    parser.add_argument(
        "--fields",
        metavar="F,F,…",
        help="field names of a header-less CSV given with --input (hl-smi -Q order)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="give up on hl-smi after this"
    )
    parser.set_defaults(func=run)


def _fail(reason: str) -> int:
    print(f"gaudi-tui devices: {reason}", file=sys.stderr)
    return 2


def _from_files(args: argparse.Namespace) -> int:
    import json

    from gaudi_tui.core.devices import render
    from gaudi_tui.core.devices.parsers.detect import InputError, read_inputs

    fields = [f.strip() for f in args.fields.split(",")] if args.fields else None
    try:
        reading = read_inputs(args.input, fields)
    except InputError as error:
        return _fail(str(error))
    snapshot = reading.to_snapshot("file")
    if not (reading.devices or reading.cpus_by_module or reading.nic_ports or reading.nic_port_types):
        first = reading.errors[0] if reading.errors else "no card data found"
        return _fail(f"cannot read the input: {first}")
    print(json.dumps(snapshot.to_json(), indent=2) if args.json else render.table(snapshot, extra=reading))
    return 0


def _once(args: argparse.Namespace) -> int:
    import json
    import time

    from gaudi_tui.core.devices import render
    from gaudi_tui.core.devices.holders import find_holders
    from gaudi_tui.core.devices.query import read_once
    from gaudi_tui.core.devices.sources.host import HostReader

    started = time.monotonic()
    host = HostReader(min_gap=0.0)
    snapshot = read_once(timeout=args.timeout)
    time.sleep(max(0.0, HOST_WINDOW_S - (time.monotonic() - started)))  # CPU % needs a window
    if args.json:
        print(json.dumps(snapshot.to_json(), indent=2))
    else:
        holders = tuple(find_holders()) if snapshot.source in ("hl-smi", "hlml") else ()
        print(render.table(snapshot, host.read(), holders))
    if snapshot.source == "none":
        return _fail(snapshot.errors[0] if snapshot.errors else "no device source works on this host")
    return 0


def _printer(args: argparse.Namespace, cancel: threading.Event) -> Callable[[MonitorUpdate], None]:
    """Prints each update (JSON line or a redrawn table); sets `cancel` after --count updates."""
    import json

    from gaudi_tui.core.devices import render

    seen = [0]

    def on_update(update: MonitorUpdate) -> None:
        if args.json:
            print(json.dumps(update.snapshot.to_json()), flush=True)
        else:
            stamp = "\033[H\033[2J" if sys.stdout.isatty() and args.watch else "---\n" if args.watch else ""
            if update.snapshot.recordings:
                made = any(n.startswith("made-") for n in update.snapshot.recordings)
                what = "recorded; made- files made from documentation" if made else "recorded"
                stamp += f"replay of {', '.join(update.snapshot.recordings)} ({what}, not this host)\n"
            print(stamp + render.table(update.snapshot, update.host, update.holders), flush=True)
        seen[0] += 1
        if args.count and seen[0] >= args.count:
            cancel.set()

    return on_update


def _watch(args: argparse.Namespace) -> int:
    from gaudi_tui.core.devices.monitor import DeviceMonitor, MonitorConfig

    cancel = threading.Event()
    on_update = _printer(args, cancel)
    monitor = DeviceMonitor(MonitorConfig(interval=float(args.watch)), on_update, cancel)
    try:
        monitor.run()
    except KeyboardInterrupt:
        cancel.set()
        if monitor.poller is not None:
            monitor.poller.stop()
    return 0


def _replay(args: argparse.Namespace) -> int:
    import json

    from gaudi_tui.core.devices.monitor import MonitorUpdate
    from gaudi_tui.core.devices.sources.replay import ReplayError, ReplayFeed, resolve, snapshots

    try:
        replay = resolve(args.replay)
        frames = snapshots(replay)
    except ReplayError as error:
        return _fail(str(error))
    cancel = threading.Event()
    if not args.watch:
        shown = frames[-1] if replay.hold_last else frames[0]  # a held replay: the state it ends in
        if args.json:
            print(json.dumps(shown.to_json(), indent=2))
        else:
            _printer(args, cancel)(MonitorUpdate(shown, None, ()))
        return 0
    try:
        ReplayFeed(
            frames, float(args.watch), _printer(args, cancel), cancel, hold_last=replay.hold_last
        ).run()
    except KeyboardInterrupt:
        pass
    return 0


def run(args: argparse.Namespace) -> int:
    if args.replay and args.input:
        return _fail("--replay and --input do not go together: a replay is a set of saved outputs")
    if args.input and args.watch:
        return _fail("--input and --watch do not go together: a saved output does not change")
    if args.watch is not None and args.watch <= 0:
        return _fail("--watch needs a positive number of seconds")
    if args.replay:
        return _replay(args)
    if args.input:
        return _from_files(args)
    if args.watch:
        return _watch(args)
    return _once(args)
