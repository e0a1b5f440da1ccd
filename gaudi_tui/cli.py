"""Command line: `gaudi-tui` opens the panel; subcommands run the same features headless."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gaudi_tui import __version__

if TYPE_CHECKING:
    import argparse

DESCRIPTION = """\
A keyboard-driven control panel for Intel Gaudi hosts.

Without a command it opens the panel: 1 Devices, 2 Checklist, 3 Chat, 4 Training, 5 Fleet, 6 Slurm,
? help, q quit.
The commands below run the same features without the panel, for scripts.
Falls back from Gaudi (hpu) to CUDA to CPU; the embedded demo model works offline.
Settings: config.toml (`gaudi-tui config` shows where, and every value with its origin)."""


def build_parser() -> argparse.ArgumentParser:
    import argparse  # here, not at the top: `gaudi-tui` alone opens the panel without it

    from gaudi_tui.commands import register_all

    parser = argparse.ArgumentParser(
        prog="gaudi-tui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"gaudi-tui {__version__}")
    parser.add_argument(
        "--replay",
        dest="panel_replay",
        metavar="NAME|FILE",
        help="open the panel with the Devices screen fed from recorded real hl-smi outputs instead of "
        "this host's cards: gaudi1, gaudi2 or gaudi2e (shipped with gaudi-tui), or a saved hl-smi FILE",
    )
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus server the Fleet screen and `fleet` read (else $GAUDI_TUI_PROMETHEUS, else "
        "[cluster] prometheus_url in config.toml)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_all(subparsers)
    return parser


def run_tui(replay_name: str | None = None, prometheus: str | None = None) -> int:
    """The panel. Before its first frame only the theme and keymap are read (`core/appearance.py`);
    the rest of config.toml and the log file are the app's, right after it. The Devices map's first
    hl-smi query starts before Textual loads (`core/devices/early_query.py`)."""
    from gaudi_tui.core import appearance

    replay = None
    if replay_name is not None:
        from gaudi_tui.core.devices.sources.replay import ReplayError, resolve, snapshots

        try:
            replay = resolve(replay_name)
            snapshots(replay)  # read it now: a bad FILE is reported here, not in the panel
        except ReplayError as error:
            print(f"gaudi-tui --replay: {error}", file=sys.stderr)
            return 2
    early = None
    if replay is None:  # hl-smi runs while Textual loads and the first frame is built
        from gaudi_tui.core.devices import early_query

        early = early_query.start()
    try:
        from gaudi_tui.ui.app import GaudiApp

        app = GaudiApp(appearance=appearance.read(), replay=replay, prometheus=prometheus, early=early)
        return int(app.run() or 0)
    finally:
        if early is not None:  # the Devices feed did not take it
            early.close()


def main(argv: Sequence[str] | None = None) -> int:
    if not (sys.argv[1:] if argv is None else argv):
        return run_tui()  # the panel at once: no parser, no headless command modules to import
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.panel_replay is not None and args.command is not None:
        parser.error("--replay opens the panel; for a command use `gaudi-tui devices --replay NAME`")
    if args.command is None:
        return run_tui(args.panel_replay, args.prometheus)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
