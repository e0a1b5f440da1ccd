"""A served job's one task on its Slurm node: `python -m gaudi_tui.core.jobs.worker.slurm_serve --run RUN`.

`worker/slurm_rank.py` execs it with the job's cards (one task holds them all: `Kind.one_task`). It
reads the prepared spec from the shared run folder, decides the address and port on the node
(`core/serve/node.py`), builds the server's argv as the local job does
(`kinds/serve_supervise.server`), writes `serve-node.json` for the panel, and execs the server: the
signals Slurm passes to the task (`s`: SIGINT, `k`: SIGTERM) reach the server itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs.kinds import serve_engines, serve_supervise
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import SpecError
from gaudi_tui.core.serve import node


def say(text: str) -> None:
    print(f"[gaudi-tui] {text}", flush=True)


def main(args_in: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.worker.slurm_serve")
    parser.add_argument("--run", type=Path, required=True)
    args = parser.parse_args(args_in)
    run = RunFolder(args.run)
    status = run.status()
    try:
        spec = run.spec()
    except SpecError as exc:
        say(f"cannot read the job's spec: {exc}")
        return 1
    host, reach = node.bind_and_reach(spec.serve_host, os.environ)
    try:
        port = spec.serve_port or node.free_port(host)
    except OSError as exc:
        say(f"cannot listen on {host} on node {os.environ.get('SLURMD_NODENAME', '?')}: {exc}")
        return 1
    spec = replace(spec, serve_host=host, serve_port=port)
    try:
        argv, served = serve_supervise.server(run.path, spec, say)
    except serve_supervise.CannotServe as exc:
        say(str(exc))
        return 1
    env = dict(os.environ)
    key = serve_supervise.api_key(spec)
    if key:
        env[serve_engines.API_KEY_VAR] = key
    attempt = status.attempt if status is not None else 0
    name = os.environ.get("SLURMD_NODENAME", "")
    node.write(run.path, attempt, name, host, port, reach, served)
    say(f"serving on {node.url(reach, port)} (node {name or '?'}, bound to {host})")
    os.execvpe(argv[0], argv, env)
    return 127  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main())
