"""`gaudi-tui devices`: print the device map (hl-smi / HLML / NVML / host)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "devices",
        help="print the device map (hl-smi / HLML / NVML / host)",
        description="print the device map (hl-smi / HLML / NVML / host).",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gaudi-tui devices: not built yet", file=sys.stderr)
    return 2
