"""`gaudi-tui jobs compare A B …` and `gaudi-tui jobs export ID … --csv|--parquet FILE`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaudi_tui.core.jobs.compare import Comparison
    from gaudi_tui.core.jobs.runfolder import RunFolder

ACTIONS = ("compare", "export")


def register(actions: argparse._SubParsersAction) -> None:
    compare = actions.add_parser(
        "compare",
        help="runs side by side: what differs, and their final figures",
        description="Compare two or more training runs (any state or target, the Trainer or a command; "
        "a serve job is refused): the spec fields, command "
        "arguments, environment (secrets masked), accelerator, world size and nodes that differ, and "
        "each run's outcome, steps, steps/s, best loss and its step, peak memory and wall time, and why it "
        "was slow: torch.compile's recompiles (and a frame that hit recompile_limit), the input wait, the "
        "last profile's top op, Gaudi's graph compiles (Gaudi runs only). "
        "--json adds each run's loss, learning-rate, throughput, compile and memory lines by step.",
    )
    compare.add_argument("ids", nargs="+", metavar="ID")
    compare.add_argument("--json", action="store_true", help="print it as JSON, with the lines")
    compare.add_argument("--all", action="store_true", help="every field, not only the ones that differ")
    export = actions.add_parser(
        "export",
        help="every metric of some runs as one table (CSV or parquet), for a notebook",
        description="One row per log, eval or summary event of each run: run, attempt, step, event, "
        "time, then one column per metric (loss, learning_rate, eval_loss, …). Written by pandas.",
    )
    export.add_argument("ids", nargs="+", metavar="ID")
    where = export.add_mutually_exclusive_group(required=True)
    where.add_argument("--csv", type=Path, metavar="FILE", help="write CSV to FILE")
    where.add_argument("--parquet", type=Path, metavar="FILE", help="write parquet to FILE (pyarrow)")


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core.jobs import runfolder

    try:
        runs = find_runs(args.ids)
    except runfolder.RunNotFound as exc:
        print(f"gaudi-tui jobs {args.action}: {exc}", file=sys.stderr)
        return 1
    if args.action == "compare":
        return compare(runs, as_json=args.json, everything=args.all)
    return export(runs, args.csv, args.parquet)


def find_runs(ids: list[str]) -> list[RunFolder]:
    """The runs named, each once, in the order given."""
    from gaudi_tui.core.jobs import runfolder

    found: dict[str, RunFolder] = {}
    for run_id in ids:
        run = runfolder.find(run_id)
        found.setdefault(run.id, run)
    return list(found.values())


def compare(runs: list[RunFolder], as_json: bool, everything: bool) -> int:
    from gaudi_tui.core.jobs import comparable
    from gaudi_tui.core.jobs.compare import compare as compare_runs

    if len(runs) < 2:
        print("gaudi-tui jobs compare: give two runs or more (`gaudi-tui jobs` lists them)", file=sys.stderr)
        return 2
    if why := comparable.refusal({run.id: comparable.kind_of(run) for run in runs}):
        print(f"gaudi-tui jobs compare: {why}", file=sys.stderr)
        return 2
    comparison = compare_runs(runs, everything=everything)
    if as_json:
        print(json.dumps(comparison.to_dict(), indent=1, ensure_ascii=False))
    else:
        print(format_comparison(comparison))
    return 0


def format_comparison(comparison: Comparison) -> str:
    from gaudi_tui.core.jobs.compare import final_table, why_table

    labels = [r.label for r in comparison.runs]
    out = [
        "runs: " + ", ".join(f"{label} ({r.id})" for label, r in zip(labels, comparison.runs, strict=True))
    ]
    out.append("")
    if comparison.diff:
        out += _columns([["field", *labels], *([name, *values] for name, values in comparison.diff)])
    else:
        out.append("no field differs (--all shows them)")
    table = final_table(comparison.runs)
    out += ["", *_columns([table.header, *table.rows])]
    why = why_table(comparison.runs)
    out += ["", *_columns([why.header, *why.rows])]
    return "\n".join(out)


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def export(runs: list[RunFolder], csv: Path | None, parquet: Path | None) -> int:
    from gaudi_tui.core.jobs import export as export_mod

    path, fmt = (csv, "csv") if csv is not None else (parquet, "parquet")
    assert path is not None  # argparse: one of the two is required
    try:
        rows, skipped = export_mod.write(runs, path, fmt)
    except export_mod.ExportError as exc:
        print(f"gaudi-tui jobs export: {exc}", file=sys.stderr)
        return 1
    print(f"{path}: {rows} rows of {len(runs)} run{'s' if len(runs) != 1 else ''}")
    if skipped:
        print(f"gaudi-tui jobs export: skipped {skipped}", file=sys.stderr)
    return 0
