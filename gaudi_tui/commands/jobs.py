"""`gaudi-tui jobs`: list, follow, stop, resume and compare training jobs (the Training screen, headless)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from gaudi_tui.commands.jobs_compare import ACTIONS as COMPARE_ACTIONS
from gaudi_tui.commands.jobs_compare import register as register_compare
from gaudi_tui.commands.jobs_compare import run as run_compare
from gaudi_tui.commands.jobs_profile import ACTIONS as PROFILE_ACTIONS
from gaudi_tui.commands.jobs_profile import register as register_profile
from gaudi_tui.commands.jobs_profile import run as run_profile

if TYPE_CHECKING:
    from gaudi_tui.core.jobs.monitor import JobView
    from gaudi_tui.core.jobs.runfolder import RunFolder

FOLLOW_POLL_S = 0.5
NO_METRICS = "no metrics found in its output (see its log; --metrics json/pattern)"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "jobs",
        help="list, follow, stop, resume and compare training jobs",
        description="List training jobs, or act on one: logs, stop, resume, insight; compare or export some. "
        "ID may be a unique part of the id.",
    )
    parser.add_argument("--json", action="store_true", help="print the job list as JSON")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    logs = actions.add_parser("logs", help="print a job's output", description="print a job's output")
    logs.add_argument("id", metavar="ID")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the job ends")
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines from the end to start with")
    stop = actions.add_parser(
        "stop",
        help="graceful stop (checkpoint, then exit)",
        description="Graceful stop: all ranks stop at the same step and save one checkpoint.",
    )
    stop.add_argument("id", metavar="ID")
    stop.add_argument(
        "--force",
        action="store_true",
        help="kill: SIGTERM to the launcher, SIGKILL to its workers after a grace",
    )
    resume = actions.add_parser(
        "resume", help="continue from the newest complete checkpoint", description="resume a stopped job"
    )
    resume.add_argument("id", metavar="ID")
    insight = actions.add_parser(
        "insight",
        help="why a Gaudi job is slow: graph compiles, CPU fallbacks, HBM, with findings",
        description="Graph compiles (warm-up and after, by step and rank), compile time, recipes, "
        "CPU-fallback ops, defragmentations, HBM peak and the findings, from the Gaudi runtime's "
        "metrics files and the job's log.",
    )
    insight.add_argument("id", metavar="ID")
    insight.add_argument("--json", action="store_true", help="print it as JSON")
    nodes = actions.add_parser(
        "nodes",
        help="list a Ray cluster's nodes (alive/dead, IP, HPU/CPU/memory free of total)",
        description="List the nodes of the Ray cluster at ADDRESS (default: $RAY_ADDRESS) or of job ID.",
    )
    nodes.add_argument("where", nargs="?", default="", metavar="ADDRESS|ID")
    register_compare(actions)
    register_profile(actions)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action is None:
        return list_jobs(as_json=args.json)
    if args.action == "nodes":
        return print_nodes(args.where)
    if args.action in COMPARE_ACTIONS:
        return run_compare(args)
    if args.action in PROFILE_ACTIONS:
        return run_profile(args)
    from gaudi_tui.core.jobs import control, runfolder  # not for the list: it imports the supervisor

    try:
        job = runfolder.find(args.id)
        if args.action == "logs":
            return print_logs(job, lines=args.lines, follow=args.follow)
        if args.action == "insight":
            return print_insight(job, as_json=args.json)
        if args.action == "stop":
            if args.force:
                print(f"{job.id}: {control.kill(job)}")
            else:
                control.stop(job)
                print(f"{job.id}: stop requested; {_stop_words(job)}")
            return 0
        print(f"{job.id}: {control.resume(job)}")
        return 0
    except (runfolder.RunNotFound, control.JobControlError) as exc:
        print(f"gaudi-tui jobs: {exc}", file=sys.stderr)
        return 1


def list_jobs(as_json: bool) -> int:
    from gaudi_tui.core.jobs.monitor import Monitor

    views = Monitor().poll()
    if as_json:
        print(json.dumps([v.to_dict() for v in views], indent=1))
        return 0
    if not views:
        print("no jobs yet: `gaudi-tui train demo` starts the demo fine-tune")
        return 0
    print(format_table(views))
    return 0


def _stop_words(job: RunFolder) -> str:
    """What the stop does: a checkpoint where the STOP file is read, else the kind's own words (a
    command is sent signals; a server drains)."""
    from gaudi_tui.core.jobs import kinds

    spec = job.spec()
    kind = kinds.for_spec(spec)
    if kind.stops_by_file(job, spec):
        return "it saves a checkpoint and exits (resume with `jobs resume`)"
    return kind.stop_words(job, spec).removeprefix("s ")


def format_table(views: list[JobView]) -> str:
    from gaudi_tui.core.jobs.monitor import format_duration

    header = ("ID", "NAME", "STATE", "ELAPSED", "STEP", "ETA", "LOSS", "NOTE")
    rows = [header]
    for v in views:
        step = f"{v.step}/{v.max_steps}" if v.max_steps else str(v.step)
        loss = f"{v.loss:.4f}" if v.loss is not None else "—"
        rows.append(
            (
                v.id,
                v.name,
                v.state,
                format_duration(v.elapsed_s),
                step,
                format_duration(v.eta_s),
                loss,
                v.error or v.where or (NO_METRICS if v.metrics_found is False else ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows
    ).rstrip()


def print_nodes(where: str) -> int:
    from gaudi_tui.core.jobs import runfolder
    from gaudi_tui.core.jobs.spec import default_ray_address
    from gaudi_tui.core.jobs.targets.ray import nodes
    from gaudi_tui.core.jobs.targets.ray.record import read_record

    address = where or default_ray_address()
    if where and "://" not in where and ":" not in where:
        try:
            record = read_record(runfolder.find(where))
        except runfolder.RunNotFound as exc:
            print(f"gaudi-tui jobs nodes: {exc}", file=sys.stderr)
            return 1
        if record is None:
            print(f"gaudi-tui jobs nodes: {where} is not a Ray job", file=sys.stderr)
            return 1
        address = record.address
    if not address:
        print("gaudi-tui jobs nodes: give the dashboard URL or set RAY_ADDRESS", file=sys.stderr)
        return 2
    try:
        print(nodes.format_nodes(nodes.list_nodes(address)))
    except nodes.ClusterError as exc:
        print(f"gaudi-tui jobs nodes: {exc}", file=sys.stderr)
        return 1
    return 0


def print_insight(job: RunFolder, as_json: bool) -> int:
    from gaudi_tui.core.jobs.insight import text
    from gaudi_tui.core.jobs.insight.report import InsightWatcher

    watcher = InsightWatcher(job)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    spec = watcher.spec
    if insight.max_memory_mib is None and spec is not None and spec.cards and spec.target == "local":
        from gaudi_tui.core.devices.query import read_once

        insight = watcher.insight(devices=read_once(timeout=5.0))  # this host's cards: hl-smi's memory
    if as_json:
        print(json.dumps(insight.to_dict(), indent=1, ensure_ascii=False))
    else:
        print(f"{job.id} ({insight.device})")
        print("\n".join(text.lines(insight)))
    return 0


def print_logs(job: RunFolder, lines: int, follow: bool) -> int:
    from gaudi_tui.core.jobs.tailing import LogTail

    tail = LogTail(job.log_path, max_lines=max(lines, 1))
    tail.poll()
    for line in list(tail.lines)[-lines:] if lines > 0 else []:
        print(line)
    if not follow:
        return 0
    try:
        while True:
            new = tail.poll()
            for line in new:
                print(line, flush=True)
            if not new and _finished(job):
                new = tail.poll()
                for line in new:
                    print(line)
                return 0
            time.sleep(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        return 130


def _finished(job: RunFolder) -> bool:
    from gaudi_tui.core.jobs.liveness import current
    from gaudi_tui.core.jobs.status import TERMINAL

    status = job.status()
    return status is not None and current(job.status_path, status, time.time())[1] in TERMINAL


def follow_metrics(job: RunFolder) -> int:
    """Print one line per metrics event until the job ends; exit 0 only if it succeeded."""
    from gaudi_tui.core.jobs.monitor import RunWatcher
    from gaudi_tui.core.jobs.status import TERMINAL
    from gaudi_tui.core.jobs.tailing import MetricsReader

    watcher, metrics = RunWatcher(job), MetricsReader(job.metrics_path)
    shown = 0
    try:
        while True:
            watcher.poll()
            metrics.poll()
            shown = min(shown, len(metrics.points))  # a resume drops points after its checkpoint
            for point in metrics.points[shown:]:
                print(
                    f"step {point.step}: loss {point.loss:.4f}"
                    if point.loss is not None
                    else f"step {point.step}"
                )
            shown = len(metrics.points)
            view = watcher.view(time.time())
            if view.state in TERMINAL:
                print(f"{job.id}: {view.state}" + (f" — {view.error}" if view.error else ""))
                return 0 if view.state == "succeeded" else 1
            time.sleep(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        print(f"\nstopped following; the job goes on: gaudi-tui jobs logs {job.id} -f")
        return 130
