"""`gaudi-tui train`: launch a training job from a spec."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train", help="launch a training job from a spec", description="launch a training job from a spec."
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gaudi-tui train: not built yet", file=sys.stderr)
    return 2
