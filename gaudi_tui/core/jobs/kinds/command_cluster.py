"""Your own command on a Ray cluster: what the job's entry point is, and what is checked here first.

The Jobs entrypoint is `worker/ray_command.py` on one node, which starts the command's launcher
there with one process per card (the node's HPUs are asked for as entrypoint resources, so Ray sets
HABANA_VISIBLE_MODULES). The working folder is either shipped from this host with the job
(`runtime_env["working_dir"]`, at most `SHIP_LIMIT_MIB`; the command runs in a copy of it in the
run folder under storage_path, so relative output folders last across attempts), or, with
`ray_workdir`, a folder the cluster's nodes already have (nothing is shipped or checked here).
What can only be told on the node (the program on PATH, the launcher installed, the script in
`ray_workdir`) is checked there by the entry driver, and a failure is the job's error line.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from gaudi_tui.core.jobs.kinds import ClusterEntry
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.validate import Problem

ENTRY_MODULE = "gaudi_tui.core.jobs.worker.ray_command"
SHIP_LIMIT_MIB = 100
"""The most a shipped working folder may hold (Ray's own limit is 512 MiB zipped, and every
attempt uploads it through the dashboard, perhaps over an SSH tunnel)."""
SHIP_MAX_FILES = 20_000
SKIPPED = (".git", "__pycache__")
"""Folders never shipped (passed to Ray as `excludes` too)."""
WORK = "work"
"""The copy of a shipped folder in the cluster-side run folder, where the command runs."""


def entry(spec: JobSpec) -> ClusterEntry:
    hpu = spec.device == "hpu"
    if spec.ray_workdir:
        where = f"in {spec.ray_workdir} on the node"
    else:
        where = f"its folder {spec.workdir} shipped with the job"
    return ClusterEntry(
        module=ENTRY_MODULE,
        hpus=spec.processes * spec.hpus_per_worker if hpu else 0,
        cpus=0 if hpu else spec.processes,
        working_dir="" if spec.ray_workdir else spec.workdir,
        excludes=tuple(f"{name}/" for name in SKIPPED),
        words=f"{spec.processes} process(es), {spec.command_launcher}, on one node; {where}",
    )


def problems(spec: JobSpec) -> list[Problem]:
    """What is checked on this host before a command goes to Ray: the folder to ship and the
    script in it, or that `ray_workdir` is a path the nodes can resolve."""
    if spec.ray_workdir:
        if not (spec.ray_workdir.startswith(("/", "~"))):
            return [
                Problem("ray_workdir", f"{spec.ray_workdir!r} is not an absolute path on the cluster's nodes")
            ]
        return []
    workdir = Path(spec.workdir)
    if not workdir.is_dir():
        return [
            Problem(
                "workdir",
                f"{workdir} is not a folder on this host, and it is shipped from here: give the folder to "
                "ship, or set ray_workdir to a folder the cluster's nodes have",
            )
        ]
    if (why := too_big(workdir)) is not None:
        return [Problem("workdir", why)]
    if spec.command_launcher != "direct" and spec.command[:1] and spec.command[0] not in ("-m", "--module"):
        script = spec.command[0]
    else:
        script = next(
            (a for a in spec.command[1:] if a.endswith((".py", ".sh")) and not a.startswith("-")), ""
        )
    if script and not (workdir / script).is_file():
        return [Problem("command", f"the script {script} is not in {workdir} (the folder shipped to Ray)")]
    return []


def too_big(folder: Path) -> str | None:
    """Why `folder` cannot be shipped with a job (over SHIP_LIMIT_MIB or SHIP_MAX_FILES), or None.
    The walk stops as soon as a limit is passed."""
    limit = SHIP_LIMIT_MIB * 2**20
    size = files = 0
    todo = deque([folder])
    while todo:
        try:
            entries = list(os.scandir(todo.popleft()))
        except OSError:
            continue
        for item in entries:
            if item.is_dir(follow_symlinks=False):
                if item.name not in SKIPPED:
                    todo.append(Path(item.path))
                continue
            files += 1
            try:
                size += item.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            if size > limit or files > SHIP_MAX_FILES:
                what = (
                    f"more than {SHIP_LIMIT_MIB} MiB" if size > limit else f"more than {SHIP_MAX_FILES} files"
                )
                return (
                    f"{folder} holds {what}, too much to ship with a Ray job: move data and checkpoints out "
                    "of it (read them from a path the nodes have), or put the folder on the cluster and set "
                    "ray_workdir"
                )
    return None
