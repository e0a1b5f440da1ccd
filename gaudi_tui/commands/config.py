"""`gaudi-tui config`: where the settings file is, and every effective value with its origin."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config",
        help="show the settings file and the effective settings",
        description=(
            "Print the path of config.toml and each setting's effective value with where it came from "
            "(default, file or environment; an environment variable overrides the file). A value the "
            "file gets wrong keeps its default and is listed with its line. Exit 0 when the file and the "
            "environment are fine, 1 when something was ignored."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run)


def _shown(value: object) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core import paths
    from gaudi_tui.core.alerts import config as alerts_config
    from gaudi_tui.core.settings import SPECS, load

    loaded = load()
    values = loaded.values()
    alerts, alert_problems = alerts_config.load(loaded.path)
    failed = bool(loaded.problems or alert_problems)
    if args.json:
        out = {
            "path": str(loaded.path),
            "exists": loaded.path.exists(),
            "settings": {
                name: {
                    "value": values[name],
                    "origin": loaded.origins[name],
                    "env": next((s.env for s in SPECS if s.name == name), None),
                }
                for name in values
            },
            "alerts": {"to": alerts.destinations(), "changed": alerts.changed()},
            "problems": [{"line": p.line, "message": str(p)} for p in loaded.problems]
            + [{"line": None, "message": p} for p in alert_problems],
        }
        print(json.dumps(out, indent=2))
        return 1 if failed else 0
    state = (
        "" if loaded.path.exists() else " (does not exist: every value is a default or from the environment)"
    )
    print(f"config file: {loaded.path}{state}")
    width = max(len(spec.name) for spec in SPECS)
    for spec in SPECS:
        origin = loaded.origins[spec.name]
        origin_text = f"${spec.env}" if origin == "environment" else origin
        value = values[spec.name]
        if spec.name == "runs_dir" and value is None:
            value = paths.state_dir() / "runs"
        print(f"  {spec.name:<{width}}  {_shown(value):<28} {origin_text}")
    keys = loaded.settings.keys
    print(f"  {'keys':<{width}}  {len(keys)} override(s)" + ("" if keys else " (the built-in keys)"))
    for binding_id, key in sorted(keys.items()):
        print(f"    {binding_id} = {key}")
    changed = alerts.changed()
    print(f"  {'alerts':<{width}}  to {alerts.destinations()}; {len(changed)} value(s) changed in [alerts]")
    for name, value in changed.items():
        print(f"    {name} = {_shown(value)}")
    for problem in [*map(str, loaded.problems), *alert_problems]:
        print(f"problem: {problem}")
    return 1 if failed else 0
