"""`gaudi-tui chat`: stream one answer from a model."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "chat", help="stream one answer from a model", description="stream one answer from a model."
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gaudi-tui chat: not built yet", file=sys.stderr)
    return 2
