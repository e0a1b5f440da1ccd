"""The batch script of one attempt (kept in the run folder as `slurm/attempt-N.sbatch`).

One srun task per card, or one task holding every card of its node for a kind that is one process
(`Kind.one_task`: a model server, tensor parallel over the cards): `srun` starts `worker/slurm_rank.py` once per rank on every node; the
wrapper maps Slurm's allocation to the rank's environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT, HABANA_VISIBLE_MODULES) and execs the rank's own argv. The batch shell waits for
srun in the background so a trapped USR1 (sent by Slurm 120 s before the time limit when there is
one, `--signal=B:USR1@120`) writes the STOP file at once: every rank then stops at one step with a
checkpoint, and `r` continues from it. The output file is opened in append mode, so a requeue by
Slurm (a node failure) does not wipe the first run's lines.

Every sbatch option goes on sbatch's command line (`options`), none in the script: sbatch's
`#SBATCH` parser treats a backslash as an escape even inside quotes, so no quoting makes a value
safe on such a line, while an argv element is one option whatever it holds. The script lists them
in a comment, for the reader. Paths reach the shell only as `shlex.quote`d words (the STOP file
through a variable the trap names), and `%` in the output path is escaped as Slurm's `%%`.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gaudi_tui.core.jobs import kinds
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
VALUE_OPTIONAL = frozenset({"exclusive", "requeue", "no-requeue", "propagate", "nice"})
"""Allowed options that may come without `=value`; every other one must have it (given alone,
sbatch would take the next argument, the script itself, as its value)."""
SLURM_ENV_PREFIXES = ("SBATCH_", "SRUN_", "SALLOC_", "SLURM_")
CLUSTER_ENV = ("SLURM_CONF", "SLURM_CLUSTERS")
"""Variables that choose which cluster (or cluster of a federation) sbatch reaches."""
_TIME = re.compile(r"\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2}")
_NAME = re.compile(r"[A-Za-z0-9_.,:@%+=/-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def option_problems(options: Sequence[str]) -> list[str]:
    """Why each extra option is refused: not `--name[=value]`, not allowed, a value with a line
    break or another control character, a value missing."""
    out = []
    for option in options:
        name, sep, value = option.partition("=")
        if not name.startswith("--") or name[2:] not in ALLOWED_OPTIONS:
            allowed = ", ".join(f"--{o}" for o in sorted(ALLOWED_OPTIONS))
            out.append(f"{option!r} is not an sbatch option gaudi-tui passes on; allowed: {allowed}")
        elif _CONTROL.search(value):
            out.append(f"{name}: the value has a line break or another control character")
        elif not sep and name[2:] not in VALUE_OPTIONAL:
            out.append(f"{name} needs a value: {name}=VALUE")
    return out


def env_problems(env: Mapping[str, str]) -> list[str]:
    """sbatch reads options from SBATCH_* variables (SBATCH_ARRAY_INX=0-99 makes 100 copies), and
    srun inside the job from SLURM_*/SRUN_*: a spec's env would pass the allow-list by them.
    The CLUSTER_ENV variables (which cluster) are judged where the cluster is chosen."""
    return [
        f"{key}: Slurm reads it as an option of sbatch or srun; put sbatch options in slurm_options"
        for key in sorted(env)
        if key.startswith(SLURM_ENV_PREFIXES) and key not in CLUSTER_ENV
    ]


def time_problem(limit: str) -> str | None:
    if limit and not _TIME.fullmatch(limit):
        return f"{limit!r} is not a Slurm time: minutes (30), H:MM:SS (2:00:00) or D-HH:MM:SS (1-00:00:00)"
    return None


def name_problem(field: str, value: str) -> str | None:
    if value and not _NAME.fullmatch(value):
        return f"{field}: {value!r} has characters Slurm names do not use"
    return None


def path_problem(run: RunFolder) -> str | None:
    """A run folder Slurm cannot write the output file into: a backslash in an output path turns
    Slurm's %-patterns off (the job id would not be in the name), a control character breaks lines."""
    text = str(run.path)
    if "\\" in text or _CONTROL.search(text):
        return f"the run folder {text!r} holds a backslash or a control character, which Slurm's output file names cannot carry: choose a runs folder without one"
    return None


def job_name(run: RunFolder, attempt: int) -> str:
    """How a new supervisor finds an attempt in the queue when its id was never recorded."""
    return f"gaudi-tui-{run.id}-a{attempt}"


def gres(spec: JobSpec) -> str | None:
    if spec.slurm_gres == "none":
        return None
    kind = f":{spec.slurm_gres_type}" if spec.slurm_gres_type else ""
    return f"{spec.slurm_gres}{kind}:{spec.slurm_cards_per_node}"


def tasks_per_node(spec: JobSpec) -> int:
    """One task per card, or one for all of them where the kind is one process (`Kind.one_task`)."""
    return 1 if kinds.for_spec(spec).one_task else spec.slurm_cards_per_node


def script_path(run: RunFolder, attempt: int) -> Path:
    return run.path / "slurm" / f"attempt-{attempt}.sbatch"


def output_pattern(run: RunFolder) -> str:
    """`<run>/slurm/job-%j.out`, a `%` of the run folder's path escaped (Slurm expands `%x`, `%j`...
    anywhere in the name: the supervisor would wait for a file that never appears)."""
    folder = str(run.path / "slurm").replace("%", "%%")
    return f"{folder}/job-%j.out"


def options(spec: JobSpec, run: RunFolder, attempt: int) -> list[str]:
    """The sbatch options of an attempt, each one argv element: the panel's own, sorted, then the
    spec's extras (checked by `option_problems`)."""
    own: dict[str, str | None] = {
        "job-name": job_name(run, attempt),
        "nodes": str(spec.slurm_nodes),
        "ntasks-per-node": str(tasks_per_node(spec)),
        "output": output_pattern(run),
        "open-mode": "append",
        "chdir": str(run.path),
        "kill-on-invalid-dep": "yes",
    }
    if (resources := gres(spec)) is not None:
        own["gres"] = resources
    for key, value in (("partition", spec.slurm_partition), ("time", spec.slurm_time_limit),
                       ("account", spec.slurm_account), ("qos", spec.slurm_qos)):  # fmt: skip
        if value:
            own[key] = value
    if spec.slurm_time_limit:
        own["signal"] = f"B:USR1@{STOP_WARNING_S}"
    argv = [f"--{k}={v}" if v is not None else f"--{k}" for k, v in sorted(own.items())]
    return argv + list(spec.slurm_options)


def render(
    spec: JobSpec,
    run: RunFolder,
    attempt: int,
    rank_argv: Sequence[str],
    python: str | None = None,
    cwd: Path | None = None,
) -> str:
    """The batch script: no #SBATCH line (`options` go on sbatch's command line; a comment lists
    them), the USR1 trap, then the srun of every rank (started in `cwd`, default the run folder)."""
    lines = [
        "#!/bin/bash",
        f"# gaudi-tui run {run.id}, attempt {attempt}: written by the panel, submitted with sbatch",
        "# and these options on its command line (none is read from this file):",
        *(f"#   {_comment(shlex.quote(o))}" for o in options(spec, run, attempt)),
    ]
    srun = [
        "srun", "--kill-on-bad-exit=1", f"--ntasks-per-node={tasks_per_node(spec)}",
        f"--chdir={cwd or run.path}",
        python or sys.executable, "-m", RANK_MODULE, "--run", str(run.path), "--gres", spec.slurm_gres, "--",
        *rank_argv,
    ]  # fmt: skip
    lines += [
        "",
        'echo "[gaudi-tui] Slurm job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on $SLURM_JOB_NODELIST"',
        f"stop_file={shlex.quote(str(run.stop_path))}",
        """trap 'echo "[gaudi-tui] the time limit is near: graceful stop"; touch -- "$stop_file"' USR1""",
        f"{shlex.join(srun)} &",
        "pid=$!",
        'while true; do wait "$pid"; rc=$?; if [ "$rc" -gt 128 ] && kill -0 "$pid" 2>/dev/null; then continue; fi; break; done',
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)


def _comment(text: str) -> str:
    """One comment line whatever the text holds (a line break would start a line of its own)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
