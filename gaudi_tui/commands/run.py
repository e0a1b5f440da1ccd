"""`gaudi-tui run [options] -- COMMAND …`: your own training command as a detached job, or
`gaudi-tui run --attach LOG [--pid PID]`: watch a run you started by hand."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
examples:
  gaudi-tui run --cards 0,1 --launcher torchrun -- train.py --output_dir out --logging_steps 5
  gaudi-tui run --cards 0,1 -- accelerate launch train.py --output_dir out
  gaudi-tui run --metrics json -- python loop.py
  gaudi-tui run --metrics pattern --pattern 'step (?P<step>\\d+) loss (?P<loss>\\S+)' -- ./train.sh
  gaudi-tui run --attach train.log --pid 12345
  gaudi-tui run --set target=ray --set ray_address=http://127.0.0.1:8265 --set workers=2 \\
      --launcher torchrun -- train.py --output_dir out

The command runs without a shell, in the current folder (--workdir), with the chosen cards in
HABANA_VISIBLE_MODULES, the Checklist's fixes and PT_ENABLE_INT64_SUPPORT=1. Every Trainer it
builds gets the panel's callback (turn off with --no-wrap): metrics with their step, and `s` stops
every rank at one step with one checkpoint. Otherwise metrics are read from its output, and a stop
sends SIGINT, then SIGTERM, then SIGKILL. Its spec.toml runs it again: `gaudi-tui train spec.toml`.

On Ray (--set target=ray, as for `gaudi-tui train`) it is the job's entrypoint on one node with
`workers` processes; the working folder is shipped with the job (at most 100 MiB), or
--set ray_workdir=/path names one the nodes already have.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run your own training command as a job (or --attach to one started by hand)",
        description="Run your own training command detached, on the chosen cards, charted like the "
        "panel's own jobs; or attach to a run started by hand.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cards", default="", help="Gaudi module IDs, e.g. 0,1 (one process per card)")
    parser.add_argument("--processes", type=int, default=0, help="processes when no cards are chosen")
    parser.add_argument(
        "--launcher",
        default="direct",
        metavar="direct|torchrun|accelerate|deepspeed",
        help="direct runs COMMAND as given (default); the others start one process per card",
    )
    parser.add_argument(
        "--metrics",
        default="auto",
        metavar="auto|trainer|json|pattern",
        help="how metrics are read from the output",
    )
    parser.add_argument("--pattern", default="", help="--metrics pattern: a regex with named groups")
    parser.add_argument("--no-wrap", action="store_true", help="do not add the panel's callback to Trainers")
    parser.add_argument("--workdir", default="", help="working folder (default: the current one)")
    parser.add_argument(
        "--output-dir", default="", help="where checkpoint-N folders appear (default: --output_dir)"
    )
    parser.add_argument(
        "--resume-flag", default="--resume_from_checkpoint", help="flag that passes a checkpoint"
    )
    parser.add_argument("--name", default="", help="label in the job list (default: the script's name)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="any other setting (see `gaudi-tui train --fields`)")  # fmt: skip
    parser.add_argument("--attach", default="", metavar="LOG", help="follow the log of a run started by hand")
    parser.add_argument("--pid", type=int, default=0, help="--attach: the process of that run (to stop it)")
    parser.add_argument("--dry-run", action="store_true", help="check and print the spec; start nothing")
    parser.add_argument("--follow", action="store_true", help="stay and print metrics until the job ends")
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command and its arguments"
    )
    parser.set_defaults(func=run)


def build_spec(args: argparse.Namespace):  # noqa: ANN201 - JobSpec, imported lazily
    from pathlib import Path

    from gaudi_tui.core.jobs import spec as spec_mod

    words = list(args.command)
    if words and words[0] == "--":
        words = words[1:]
    values: dict[str, object] = {
        "kind": "command",
        "command": words,
        "command_launcher": args.launcher,
        "metrics_source": args.metrics,
        "metrics_pattern": args.pattern,
        "wrap_trainer": not args.no_wrap,
        "workdir": args.workdir,
        "output_dir": args.output_dir,
        "resume_flag": args.resume_flag,
        "log_file": args.attach,
        "pid": args.pid,
        "max_steps": 0,
        "env": dict(spec_mod.parse_assignments(args.env)) if args.env else {},
    }
    if args.cards:
        values["cards"] = args.cards
    if args.processes:
        values["processes"] = args.processes
    scripts = [w for w in words if w.endswith((".py", ".sh"))]
    label = Path(scripts[0]).name if scripts else (Path(words[0]).name if words else Path(args.attach).name)
    values["name"] = args.name or (f"attached {label}" if args.attach else label) or "my command"
    spec = spec_mod.from_mapping(values)
    return spec_mod.with_overrides(spec, list(args.overrides))


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core.jobs.spec import SpecError

    if bool(args.attach) == bool([w for w in args.command if w != "--"]):
        print("gaudi-tui run: give a COMMAND after --, or --attach LOG (not both)", file=sys.stderr)
        return 2
    try:
        spec = build_spec(args)
    except SpecError as exc:
        print(f"gaudi-tui run: {exc}", file=sys.stderr)
        return 2
    from gaudi_tui.commands.train import start_job

    return start_job(spec, dry_run=args.dry_run, follow=args.follow)
