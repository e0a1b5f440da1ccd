"""Headless subcommands. Each module has `register(subparsers)`, which adds its parser and sets
`func(args) -> int` (the exit code). Importing this package must stay cheap: no Textual, no torch."""

from __future__ import annotations

import argparse

from gaudi_tui.commands import (
    chat,
    check,
    config,
    devices,
    exporter,
    fleet,
    jobs,
    run,
    serve,
    slurm,
    train,
    watch,
)

MODULES = (devices, check, chat, train, run, serve, jobs, fleet, slurm, exporter, config, watch)


def register_all(subparsers: argparse._SubParsersAction) -> None:
    for module in MODULES:
        module.register(subparsers)
