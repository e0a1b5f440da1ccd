"""`gaudi-tui fleet`: every Gaudi host and card a Prometheus server sees, or a saved /metrics text."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gaudi_tui.core.fleet.model import Fleet

COLUMNS = ("host", "state", "cards", "util%", "free", "fits", "flags")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fleet",
        help="every Gaudi host and card through Prometheus (Intel's exporter or `gaudi-tui exporter`)",
        description=(
            "Ask a Prometheus server (--prometheus URL, else $GAUDI_TUI_PROMETHEUS) for the habanalabs_* "
            "metrics of every scraped Gaudi host, one query per metric, and print hosts, cards, free "
            "cards, which job sizes fit (Intel's card sets; 16 = a whole host of a multi-host job, every "
            "card free with its scale-out ports up) and health flags (down, stale, missing, hot, over cap, "
            "ECC rows, scale-out down). Or read a saved /metrics "
            "text with --input. Exit 0 with hosts, 2 when Prometheus cannot be asked or nothing is found. "
            "--rules prints Prometheus alerting rules for the same card conditions, to copy into yours."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print JSON (hosts with their cards) instead")
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="Prometheus server, e.g. http://127.0.0.1:9090 (also a global option)",
    )
    parser.add_argument(
        "--input", metavar="FILE", help="read a saved /metrics text (Intel's exporter or ours) instead"
    )
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS", help="per query (default 5)")
    parser.add_argument(
        "--rules",
        action="store_true",
        help="print the alerting rules file for Prometheus (idle card holding memory, HBM full, scale-out "
        "port down, ECC rows rising, exporter down) and where it is installed, then exit",
    )
    parser.set_defaults(func=run)


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(fleet: Fleet) -> str:
    from gaudi_tui.core.fleet.model import JOB_SIZES

    rows = [COLUMNS]
    for host in fleet.hosts:
        utils = [c.utilization_pct for c in host.cards if c.utilization_pct is not None]
        fits = ",".join(str(n) for n in JOB_SIZES if host.fits(n)) or "—"
        rows.append(
            (
                host.name,
                host.state,
                f"{len(host.cards)}/{host.usual_cards}",
                _num(sum(utils) / len(utils) if utils else None),
                str(len(host.free_ids)),
                fits,
                ", ".join(host.flags) or "ok",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join([*(f"! {p}" for p in fleet.problems), *lines])


def _print_rules() -> int:
    from gaudi_tui.data import ALERT_RULES

    print(f"# {ALERT_RULES}: save as a file named under rule_files: in prometheus.yml", file=sys.stderr)
    print(ALERT_RULES.read_text(encoding="utf-8"), end="")
    return 0


def run(args: argparse.Namespace) -> int:
    import json

    from gaudi_tui.core.fleet import fetch
    from gaudi_tui.core.fleet.address import ENV_VAR, prometheus_url
    from gaudi_tui.core.fleet.model import Fleet
    from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError

    if args.rules:
        return _print_rules()
    if args.input:
        fleet = fetch.from_file(args.input)
    else:
        url = prometheus_url(getattr(args, "prometheus", None))
        if url is None:
            print(
                f"gaudi-tui fleet: no Prometheus server: give --prometheus URL or set {ENV_VAR}, "
                "or read a saved /metrics text with --input FILE",
                file=sys.stderr,
            )
            return 2
        try:
            fleet = fetch.refresh(PrometheusClient(url, timeout=args.timeout))
        except PrometheusError as error:
            fleet = Fleet(url, problems=(str(error),))
    if args.json:
        print(json.dumps(fleet.to_json(), indent=2))
    elif fleet.hosts:
        print(_table(fleet))
    if not fleet.hosts:
        for problem in fleet.problems:
            print(f"gaudi-tui fleet: {problem}", file=sys.stderr)
        return 2
    return 0
