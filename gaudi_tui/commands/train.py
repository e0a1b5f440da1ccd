"""`gaudi-tui train SPEC [--set key=value …]`: validate a job spec and launch it detached."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="launch a training job from a spec",
        description=(
            "Validate a training job and launch it detached (it survives this shell). SPEC is a "
            "spec.toml file (every run folder has one) or a preset: 'demo', 'lora', 'qlora'. "
            "Follow it with `gaudi-tui jobs logs ID -f`. On a Ray cluster: --set target=ray "
            "--set ray_address=http://127.0.0.1:8265 --set workers=2 (see --fields)."
        ),
    )
    parser.add_argument(
        "spec", metavar="SPEC", nargs="?", help="spec.toml file or preset name (demo, lora, qlora)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change one setting (repeatable), e.g. --set max_steps=50 --set lora=true",
    )
    parser.add_argument("--cards", default="", help="Gaudi module IDs to use, e.g. 0,1 (sets `cards`)")
    parser.add_argument("--dry-run", action="store_true", help="validate and print the spec; launch nothing")
    parser.add_argument("--follow", action="store_true", help="stay and print metrics until the job ends")
    parser.add_argument("--fields", action="store_true", help="list every setting with its default and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gaudi_tui.core.jobs import spec as spec_mod
    from gaudi_tui.core.jobs.spec import SpecError

    if args.fields:
        return _print_fields()
    if not args.spec:
        print("gaudi-tui train: give a SPEC (a spec.toml or a preset: demo, lora, qlora)", file=sys.stderr)
        return 2
    try:
        path = Path(args.spec).expanduser()
        spec = spec_mod.load(path) if path.suffix == ".toml" or path.is_file() else spec_mod.preset(args.spec)
        pairs = list(args.overrides) + ([f"cards={args.cards}"] if args.cards else [])
        spec = spec_mod.with_overrides(spec, pairs)
    except SpecError as exc:
        print(f"gaudi-tui train: {exc}", file=sys.stderr)
        return 2
    return start_job(spec, dry_run=args.dry_run, follow=args.follow)


def start_job(spec, *, dry_run: bool, follow: bool, prog: str = "train") -> int:  # noqa: ANN001 - JobSpec, imported lazily
    from gaudi_tui.core import accelerator
    from gaudi_tui.core.jobs import control, targets, validate
    from gaudi_tui.core.jobs import spec as spec_mod

    target = targets.for_spec(spec)
    if not target.runs_here:
        accel = accelerator.Accelerator("cpu", f"the job runs on {target.name}, not on this host")
    elif spec.device == "cpu":
        accel = accelerator.Accelerator("cpu", "the spec asks for cpu")
    else:
        accel = accelerator.probe()
    if dry_run:
        prepared, problems = control.check(spec, accel)
        print(spec_mod.to_toml(prepared), end="")
        return _report(problems, prog)
    try:
        run = control.submit(spec, accel)
    except validate.InvalidSpec as exc:
        return _report(exc.problems, prog)
    print(f"started job {run.id} on {target.summary(run.spec())}")
    print(f"run folder: {run.path}")
    print(f"follow it:  gaudi-tui jobs logs {run.id} -f")
    if follow:
        from gaudi_tui.commands.jobs import follow_metrics

        return follow_metrics(run)
    return 0


def _report(problems: list, prog: str = "train") -> int:
    if not problems:
        return 0
    print(f"gaudi-tui {prog}: the spec is not valid:", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return 2


def _print_fields() -> int:
    from gaudi_tui.core.jobs import spec as spec_mod

    default = spec_mod.JobSpec()
    for name in spec_mod.field_names():
        value = spec_mod.display(name, getattr(default, name))
        print(f"{name:<20} {value:<16} {spec_mod.field_help(name)}")
    return 0
