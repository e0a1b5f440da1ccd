"""`gaudi-tui exporter`: serve this host's cards on /metrics under Intel's Gaudi exporter names."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gaudi_tui.core.fleet.metrics import EXPORTER_PORT as DEFAULT_PORT

if TYPE_CHECKING:
    import threading

    from gaudi_tui.core.devices.details import DetailsPoller
    from gaudi_tui.core.devices.model import Device, DeviceSnapshot
    from gaudi_tui.core.fleet.exporter import LatestSnapshot


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "exporter",
        help="serve this host's cards as Prometheus metrics (Intel's habanalabs_* names)",
        description=(
            "Serve /metrics for Prometheus from the Devices sources (HLML, else one long-lived hl-smi), "
            "with the metric names, types and labels of Intel's Gaudi metric exporter, so one dashboard "
            "serves both, and the NIC ports' habanalabs_nic_port_status{port,port_type} (1 = up) from "
            "`hl-smi -n link`/`-n ports` every 30 s. Series a source cannot give (thresholds, ECC pending "
            "rows, PCIe) are left out. "
            "Runs until Ctrl-C or SIGTERM; exit 2 when the port cannot be opened or the input not read."
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}: Intel's exporter uses 41611, so both can run)",
    )
    parser.add_argument(
        "--interval", type=float, default=5.0, metavar="SECONDS", help="device refresh period (default 5)"
    )
    parser.add_argument(
        "--links-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how often the NIC links are read with one-shot `hl-smi -n link` per card (default 30)",
    )
    parser.add_argument(
        "--input",
        action="append",
        metavar="FILE",
        help="serve a saved hl-smi output instead (any form `devices --input` reads); repeat to combine",
    )
    parser.set_defaults(func=run)


def _fail(reason: str) -> int:
    print(f"gaudi-tui exporter: {reason}", file=sys.stderr)
    return 2


def _read_inputs(names: list[str]) -> DeviceSnapshot | str:
    """The snapshot the saved outputs give, or why there is none."""
    from gaudi_tui.core.devices.parsers.detect import InputError, read_inputs

    try:
        reading = read_inputs(names)
    except InputError as error:
        return str(error)
    if not reading.devices:
        return f"no card in the input: {reading.errors[0] if reading.errors else 'nothing read'}"
    return reading.to_snapshot("file")


def _links_reader(latest: LatestSnapshot, stop: threading.Event, every: float) -> DetailsPoller:
    """The NIC links every 30 s (one-shot `hl-smi -n link`/`-n ports` per card, or HLML's), for
    `habanalabs_nic_port_status`; never run by a scrape."""
    import sys as system

    from gaudi_tui.core.devices.details import DetailsPoller

    def devices() -> list[Device]:
        snapshot = latest.get()
        return list(snapshot.devices) if snapshot.source in ("hl-smi", "hlml") else []

    def hlml() -> object:
        return system.modules.get("pyhlml") if latest.get().source == "hlml" else None

    return DetailsPoller(
        devices, lambda details: latest.set_links(details.links), stop, every=every, hlml=hlml
    )


def run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from prometheus_client import start_http_server

    from gaudi_tui.core.devices.monitor import DeviceMonitor, MonitorConfig, MonitorUpdate
    from gaudi_tui.core.fleet.exporter import LatestSnapshot, registry_for

    if args.interval <= 0 or args.links_interval <= 0:
        return _fail("--interval and --links-interval need a positive number of seconds")
    latest = LatestSnapshot()
    if args.input:
        snapshot = _read_inputs(args.input)
        if isinstance(snapshot, str):
            return _fail(snapshot)
        latest.set(snapshot)
    try:
        server, _thread = start_http_server(args.port, addr=args.host, registry=registry_for(latest.get))
    except OSError as error:
        return _fail(f"cannot listen on {args.host}:{args.port}: {error.strerror}; choose another --port")
    print(f"gaudi-tui exporter: serving http://{args.host}:{args.port}/metrics", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    monitor = None
    if not args.input:
        told: list[str] = []

        def on_update(update: MonitorUpdate) -> None:
            latest.set(update.snapshot)
            news = [f.banner() for f in update.faults]
            if news != told:  # say each change of fault once, not every refresh
                for line in news:
                    print(
                        f"gaudi-tui exporter: {line} (no card served until it works)",
                        file=sys.stderr,
                        flush=True,
                    )
                told[:] = news

        # NVML stays off: NVIDIA figures under habanalabs_* names would mislead a dashboard.
        config = MonitorConfig(interval=max(1.0, args.interval), use_nvml=False)
        monitor = DeviceMonitor(config, on_update, stop)
        threading.Thread(target=monitor.run, name="device-feed", daemon=True).start()
        reader = _links_reader(latest, stop, args.links_interval)
        threading.Thread(target=reader.run, name="card details", daemon=True).start()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        stop.set()
    if monitor is not None and monitor.poller is not None:
        monitor.poller.stop()
    server.shutdown()
    return 0
