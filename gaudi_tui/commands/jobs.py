"""`gaudi-tui jobs`: list, follow, stop and resume training jobs."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "jobs",
        help="list, follow, stop and resume training jobs",
        description="list, follow, stop and resume training jobs.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gaudi-tui jobs: not built yet", file=sys.stderr)
    return 2
