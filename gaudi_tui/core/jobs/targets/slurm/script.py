"""The batch script of one attempt (kept in the run folder as `slurm/attempt-N.sbatch`).

One srun task per card: `srun` starts `worker/slurm_rank.py` once per rank on every node; the
wrapper maps Slurm's allocation to the rank's environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT, HABANA_VISIBLE_MODULES) and execs the rank's own argv. The batch shell waits for
srun in the background so a trapped USR1 (sent by Slurm 120 s before the time limit when there is
one, `--signal=B:USR1@120`) writes the STOP file at once: every rank then stops at one step with a
checkpoint, and `r` continues from it. The output file is opened in append mode, so a requeue by
Slurm (a node failure) does not wipe the first run's lines.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec

RANK_MODULE = "gaudi_tui.core.jobs.worker.slurm_rank"
STOP_WARNING_S = 120
ALLOWED_OPTIONS = frozenset(
    {
        "constraint", "exclude", "nodelist", "reservation", "mem", "mem-per-cpu", "mem-per-gpu",
        "cpus-per-task", "exclusive", "comment", "mail-type", "mail-user", "begin", "dependency",
        "hint", "wckey", "licenses", "switches", "network", "nice", "priority", "prefer",
        "gpu-bind", "cpu-bind", "distribution", "propagate", "requeue", "no-requeue",
    }
)  # fmt: skip
"""Extra sbatch options a spec may add. Everything that decides where the job's files go, how
many tasks run, what runs or what it inherits (--output, --ntasks, --wrap, --chdir, --export ...)
is the panel's own."""
_TIME = re.compile(r"^(?:\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2})$")
_NAME = re.compile(r"^[A-Za-z0-9_.,:@%+=/-]*$")


def option_problems(options: Sequence[str]) -> list[str]:
    """Why each extra option is refused: not `--name[=value]`, not allowed, a value with a newline."""
    out = []
    for option in options:
        name, _, value = option.partition("=")
        if not name.startswith("--") or name[2:] not in ALLOWED_OPTIONS:
            allowed = ", ".join(f"--{o}" for o in sorted(ALLOWED_OPTIONS))
            out.append(f"{option!r} is not an sbatch option gaudi-tui passes on; allowed: {allowed}")
        elif any(ch in value for ch in "\n\r\0"):
            out.append(f"{name}: the value has a line break")
    return out


def time_problem(limit: str) -> str | None:
    if limit and not _TIME.match(limit):
        return f"{limit!r} is not a Slurm time: minutes (30), H:MM:SS (2:00:00) or D-HH:MM:SS (1-00:00:00)"
    return None


def name_problem(field: str, value: str) -> str | None:
    if value and not _NAME.match(value):
        return f"{field}: {value!r} has characters Slurm names do not use"
    return None


def job_name(run: RunFolder, attempt: int) -> str:
    """How a new supervisor finds an attempt in the queue when its id was never recorded."""
    return f"gaudi-tui-{run.id}-a{attempt}"


def gres(spec: JobSpec) -> str | None:
    if spec.slurm_gres == "none":
        return None
    kind = f":{spec.slurm_gres_type}" if spec.slurm_gres_type else ""
    return f"{spec.slurm_gres}{kind}:{spec.slurm_cards_per_node}"


def script_path(run: RunFolder, attempt: int) -> Path:
    return run.path / "slurm" / f"attempt-{attempt}.sbatch"


def output_pattern(run: RunFolder) -> str:
    return str(run.path / "slurm" / "job-%j.out")


def render(
    spec: JobSpec,
    run: RunFolder,
    attempt: int,
    rank_argv: Sequence[str],
    python: str | None = None,
    cwd: Path | None = None,
) -> str:
    """The batch script: sorted, quoted #SBATCH lines, then the srun of every rank (started in `cwd`,
    default the run folder)."""
    options: dict[str, str | None] = {
        "job-name": job_name(run, attempt),
        "nodes": str(spec.slurm_nodes),
        "ntasks-per-node": str(spec.slurm_cards_per_node),
        "output": output_pattern(run),
        "open-mode": "append",
        "chdir": str(run.path),
        "kill-on-invalid-dep": "yes",
    }
    if (resources := gres(spec)) is not None:
        options["gres"] = resources
    for key, value in (("partition", spec.slurm_partition), ("time", spec.slurm_time_limit),
                       ("account", spec.slurm_account), ("qos", spec.slurm_qos)):  # fmt: skip
        if value:
            options[key] = value
    if spec.slurm_time_limit:
        options["signal"] = f"B:USR1@{STOP_WARNING_S}"
    lines = [
        "#!/bin/bash",
        f"# gaudi-tui run {run.id}, attempt {attempt}: written by the panel, submitted with sbatch",
    ]
    lines += [
        f"#SBATCH --{k}={shlex.quote(v)}" if v is not None else f"#SBATCH --{k}"
        for k, v in sorted(options.items())
    ]
    for option in spec.slurm_options:
        name, sep, value = option.partition("=")
        lines.append(f"#SBATCH {name}={shlex.quote(value)}" if sep else f"#SBATCH {name}")
    stop = shlex.quote(str(run.stop_path))
    srun = [
        "srun", "--kill-on-bad-exit=1", f"--ntasks-per-node={spec.slurm_cards_per_node}",
        f"--chdir={cwd or run.path}",
        python or sys.executable, "-m", RANK_MODULE, "--run", str(run.path), "--gres", spec.slurm_gres, "--",
        *rank_argv,
    ]  # fmt: skip
    lines += [
        "",
        'echo "[gaudi-tui] Slurm job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on $SLURM_JOB_NODELIST"',
        f"trap 'echo \"[gaudi-tui] the time limit is near: graceful stop\"; touch {stop}' USR1",
        f"{shlex.join(srun)} &",
        "pid=$!",
        'while true; do wait "$pid"; rc=$?; if [ "$rc" -gt 128 ] && kill -0 "$pid" 2>/dev/null; then continue; fi; break; done',
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)
