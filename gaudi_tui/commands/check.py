"""`gaudi-tui check`: run the environment checklist, or explain an error text."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaudi_tui.core.doctor.model import CheckResult


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="run the environment checklist",
        description="Run the Gaudi environment checklist: every finding with why it matters and the fix. "
        "Exit 0 when nothing failed, 1 when a check failed. With --explain, match an error text "
        "against known Gaudi errors instead (exit 0 when one matched, 1 when none did).",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--explain",
        metavar="FILE",
        help="explain the known Gaudi errors in FILE (a job log, a traceback; '-' reads stdin)",
    )
    parser.add_argument(
        "--timeout", type=float, default=20.0, metavar="SECONDS", help="limit for each check (default 20)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.explain is not None:
        return _explain(args.explain, as_json=args.json)
    from gaudi_tui.core.doctor.checks import ALL_CHECKS
    from gaudi_tui.core.doctor.context import CheckContext
    from gaudi_tui.core.doctor.runner import run_checks

    if args.timeout <= 0:
        print("gaudi-tui check: --timeout must be more than 0 seconds", file=sys.stderr)
        return 2
    start = time.monotonic()
    results = run_checks(ALL_CHECKS, CheckContext.for_this_host(timeout=args.timeout))
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=2, ensure_ascii=False))
    else:
        print(_report(results, time.monotonic() - start))
    return 1 if any(r.status == "fail" for r in results) else 0


def _wrap(indent: str, label: str, text: str) -> str:
    """`text` after `label`, wrapped to the terminal; commands are never split at their hyphens."""
    width = max(shutil.get_terminal_size((100, 24)).columns, 60)
    return textwrap.fill(
        text,
        width,
        initial_indent=f"{indent}{label}",
        subsequent_indent=indent + " " * len(label),
        break_on_hyphens=False,
        break_long_words=False,
    )


def _report(results: list[CheckResult], seconds: float) -> str:
    from gaudi_tui.core.doctor.model import GLYPHS, counts

    tally = ", ".join(f"{n} {status}" for status, n in counts(results).items())
    lines = [f"gaudi-tui check: {len(results)} checks in {seconds:.1f} s — {tally}", ""]
    for r in results:
        lines.append(f"{GLYPHS[r.status]} {r.status:<5} {r.id:<27} {r.finding}")
        if r.status in ("warn", "fail"):
            if r.explanation:
                lines.append(_wrap(" " * 8, "why: ", r.explanation))
            if r.fix:
                lines.append(_wrap(" " * 8, "fix: ", r.fix))
    return "\n".join(lines)


def _explain(source: str, as_json: bool) -> int:
    from pathlib import Path

    from gaudi_tui.core.doctor.knowledge import explain, read_log_tail

    try:
        text = sys.stdin.read() if source == "-" else read_log_tail(Path(source))
    except OSError as exc:
        print(f"gaudi-tui check: cannot read {source}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    matches = explain(text)
    name = "stdin" if source == "-" else source
    if as_json:
        print(json.dumps([m.to_json() for m in matches], indent=2, ensure_ascii=False))
    elif not matches:
        print(f"No known Gaudi error in {name}. `gaudi-tui check` looks for the usual causes.")
    else:
        print(f"{len(matches)} known Gaudi error(s) in {name}:")
        for m in matches:
            times = f" (×{m.count})" if m.count > 1 else ""
            print(f"\nline {m.line_number}{times}: {m.line}")
            print(f"  {m.entry.title}")
            for label, text in (
                ("cause: ", m.entry.cause),
                ("fix: ", m.entry.fix),
                ("source: ", m.entry.source),
            ):
                print(_wrap("  ", label, text))
            print(f"  check: {m.entry.check} (`gaudi-tui check` runs it)")
    return 0 if matches else 1
