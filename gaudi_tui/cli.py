"""Command line: `gaudi-tui` opens the panel; subcommands run the same features headless."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gaudi_tui import __version__
from gaudi_tui.commands import register_all

DESCRIPTION = """\
A keyboard-driven control panel for Intel Gaudi hosts.

Without a command it opens the panel: 1 Devices, 2 Checklist, 3 Chat, 4 Training, 5 Fleet, ? help,
q quit.
The commands below run the same features without the panel, for scripts.
Falls back from Gaudi (hpu) to CUDA to CPU; the embedded demo model works offline."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gaudi-tui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"gaudi-tui {__version__}")
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus server the Fleet screen and `fleet` read (else $GAUDI_TUI_PROMETHEUS)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_all(subparsers)
    return parser


def run_tui(prometheus: str | None = None) -> int:
    from gaudi_tui.core import logsetup

    logsetup.configure()
    from gaudi_tui.ui.app import GaudiApp

    result = GaudiApp(autorun_checks=True, prometheus=prometheus).run()
    return int(result or 0)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        return run_tui(args.prometheus)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
