"""`gaudi-tui slurm queue|nodes`: the Slurm queue (yours or everyone's) and each node's cards."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "slurm",
        help="the Slurm queue and each node's cards (squeue/sinfo --json)",
        description=(
            "Ask Slurm (the cluster SLURM_CONF or /etc/slurm names) for its queue or its nodes. "
            "queue: your jobs (--all: everyone's) with state, why they wait in words, nodes, cards, "
            "elapsed and time left. nodes: cards total/used/free per node, drained and down nodes "
            "with their reason. Exit 0, or 2 when Slurm cannot be asked (no tools, no controller)."
        ),
    )
    parser.add_argument("what", choices=("queue", "nodes"), help="queue or nodes")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--all", action="store_true", help="queue: every user's jobs, not only yours")
    parser.add_argument("--user", metavar="NAME", help="queue: this user's jobs")
    parser.add_argument(
        "--timeout", type=float, default=15.0, metavar="SECONDS", help="per call (default 15)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core.slurm import model, table
    from gaudi_tui.core.slurm.cli import Slurm, SlurmError

    slurm = Slurm(timeout=args.timeout)
    try:
        if args.what == "nodes":
            nodes = model.nodes_from_json(slurm.sinfo())
            if args.json:
                print(json.dumps([table.node_json(n) for n in nodes], indent=2))
            else:
                print(table.text_table(table.NODE_COLUMNS, [table.node_row(n) for n in nodes]))
            return 0
        jobs = model.jobs_from_json(slurm.squeue())
    except SlurmError as exc:
        print(f"gaudi-tui slurm: {exc}", file=sys.stderr)
        return 2
    if not args.all:
        jobs = table.mine(jobs, args.user)
    jobs.sort(key=lambda j: (not j.active, j.job_id))
    if args.json:
        print(json.dumps([table.queue_json(j) for j in jobs], indent=2))
    else:
        print(table.text_table(table.QUEUE_COLUMNS, [table.queue_row(j) for j in jobs]))
    return 0
