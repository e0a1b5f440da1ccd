"""`gaudi-tui watch`: a small foreground watcher for a terminal or a tmux pane. It sends the card
alerts of this host (idle with memory held, HBM near full, a port down, ECC rising) and the alert of a
job whose supervisor is gone (`core/alerts/lost.py`), and puts every alert, a job's from its
supervisor too, on this terminal: a line, the bell, OSC 9 and OSC 777."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaudi_tui.core.alerts.watcher import CardWatcher
    from gaudi_tui.core.devices.monitor import DeviceMonitor
    from gaudi_tui.core.devices.sources.replay import ReplayFeed

POLL_S = 0.5


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="send card alerts and show every alert on this terminal (bell, OSC 9, OSC 777)",
        description=(
            "Watch this host's cards and the notifications file until Ctrl-C. Card alerts go to the "
            "notifications file, the webhook and the command of [alerts] in config.toml; every alert "
            "(jobs' too) shows here as a line with the bell and desktop-notification escapes."
        ),
    )
    parser.add_argument(
        "--replay",
        metavar="NAME|FILE",
        help="watch recorded hl-smi outputs (as `devices --replay`) instead of this host's cards",
    )
    parser.add_argument(
        "--interval", type=float, default=5.0, metavar="SECONDS", help="seconds between card readings (5)"
    )
    parser.set_defaults(func=run)


def _feed(
    args: argparse.Namespace, watcher: CardWatcher, cancel: threading.Event
) -> ReplayFeed | DeviceMonitor:
    from gaudi_tui.core.devices.monitor import DeviceMonitor, MonitorConfig
    from gaudi_tui.core.devices.sources.replay import ReplayFeed, resolve, snapshots

    if args.replay:
        replay = resolve(args.replay)
        frames = snapshots(replay)
        return ReplayFeed(frames, args.interval, watcher.on_update, cancel, hold_last=replay.hold_last)
    return DeviceMonitor(MonitorConfig(interval=args.interval), watcher.on_update, cancel)


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core.alerts import config, store
    from gaudi_tui.core.alerts.lost import LostJobs
    from gaudi_tui.core.alerts.watcher import CardWatcher, TerminalFollower
    from gaudi_tui.core.devices.holders import HolderScanner
    from gaudi_tui.core.devices.sources.replay import ReplayError

    if not args.interval > 0:
        print("gaudi-tui watch: --interval needs a positive number of seconds", file=sys.stderr)
        return 2
    settings, problems = config.load()
    for problem in problems:
        print(f"gaudi-tui watch: {problem}", file=sys.stderr)
    follower = TerminalFollower(settings, sys.stdout)
    watcher = CardWatcher(settings, HolderScanner() if args.replay else None)
    lost = LostJobs(settings)
    cancel = threading.Event()
    try:
        feed = _feed(args, watcher, cancel)
    except ReplayError as error:
        print(f"gaudi-tui watch: {error}", file=sys.stderr)
        return 2
    thread = threading.Thread(target=feed.run, name="card-feed", daemon=True)
    where = f"replay {args.replay}" if args.replay else "this host's cards"
    print(
        f"watching {where} and {store.notifications_path()} ({settings.destinations()}); Ctrl-C stops",
        flush=True,
    )
    for sig in (signal.SIGTERM, signal.SIGHUP):  # a closed pane or a kill: end hl-smi with the watch
        signal.signal(sig, lambda *_: cancel.set())
    thread.start()
    try:
        while thread.is_alive() and not cancel.is_set():
            lost.poll()  # a lost job has no supervisor to send its alert
            follower.poll()
            cancel.wait(POLL_S)
    except KeyboardInterrupt:
        pass
    finally:
        cancel.set()
        poller = getattr(feed, "poller", None)
        if poller is not None:
            poller.stop()
    return 0
