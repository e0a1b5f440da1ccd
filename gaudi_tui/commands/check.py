"""`gaudi-tui check`: run the environment checklist."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check", help="run the environment checklist", description="run the environment checklist."
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gaudi-tui check: not built yet", file=sys.stderr)
    return 2
