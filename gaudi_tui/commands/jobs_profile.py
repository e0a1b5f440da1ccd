"""`gaudi-tui jobs profile ID --steps N [--json]`: ask a running job for a profile of N steps."""

from __future__ import annotations

import argparse
import json
import sys

from gaudi_tui.core.insight.profile import DEFAULT_STEPS

ACTIONS = ("profile",)


def register(actions: argparse._SubParsersAction) -> None:
    profile = actions.add_parser(
        "profile",
        help="take a profile of N steps from a running job (no restart)",
        description="Write a profile request into the job's run folder (as STOP is). The job's Trainer "
        "callback (the built-in job, or a command's Trainer through the wrapper) answers it between two "
        "steps: torch.profiler records N steps (CPU; CUDA on NVIDIA; HPU on Gaudi) and writes a "
        "Chrome/Perfetto trace, profile-<step>.json, into the run folder; `jobs insight` then lists the "
        "top ops by self time. Refused: a job not running, a serve job (no training steps), and a second "
        "request while one is pending or taken. Training's P key asks the same.",
    )
    profile.add_argument("id", metavar="ID")
    profile.add_argument(
        "--steps", type=int, default=DEFAULT_STEPS, help=f"how many steps to record (default {DEFAULT_STEPS})"
    )
    profile.add_argument("--json", action="store_true", help="print the answer as JSON")


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core.jobs import runfolder
    from gaudi_tui.core.jobs.profile_ask import ask

    try:
        job = runfolder.find(args.id)
    except runfolder.RunNotFound as exc:
        print(f"gaudi-tui jobs: {exc}", file=sys.stderr)
        return 1
    refused = ask(job, args.steps)
    if args.json:
        print(json.dumps({"job": job.id, "asked": refused is None, "steps": args.steps, "refused": refused}))
    elif refused is None:
        print(f"{job.id}: a profile of {args.steps} steps asked for; the trace lands in {job.path}")
    else:
        print(f"gaudi-tui jobs profile: {job.id}: refused: {refused}", file=sys.stderr)
    return 0 if refused is None else 1
