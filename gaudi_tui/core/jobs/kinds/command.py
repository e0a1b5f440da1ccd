"""The user's own command as a job (`kind = "command"`): what runs, with which environment, how it
stops and how it resumes.

The command is an argument list, never a shell string: `shlex` splits what the user typed, and the
list goes to `exec` as it is. It runs as given (`direct`) or under `torchrun`, `accelerate launch` or
`deepspeed` with one process per chosen card. With `wrap_trainer`, `worker/site/` goes first on
PYTHONPATH: every Python process of the command then adds the panel's callback to every Trainer it
builds (`worker/wrapped.py`), and touches nothing else. Without a Trainer, metrics are read from
the output (`core/jobs/readers`, followed by `command_follow.py`).

Stop: graceful (the STOP file, read by the callback) once the callback runs (`wrapper.json` in the
run folder); otherwise SIGINT, then SIGTERM, then SIGKILL, each `kill_grace_s` apart. Resume: the
newest complete `checkpoint-N` in the output folder is passed with `resume_flag`.

Attach (`log_file` set, no command): a run the user started by hand; its log is followed, and its
PID, when given, is watched and signalled only while it is the user's own process with the start
time recorded when attaching.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs import readers
from gaudi_tui.core.jobs.runfolder import COMPLETE_MARKER, SHARDED_INDEX, WEIGHT_FILES, RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import ProcRef
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.jobs.worker.logstream import WRAPPER_MARKER
from gaudi_tui.core.untrusted.files import load_json

SITE_DIR = Path(__file__).resolve().parent.parent / "worker" / "site"
"""Holds the wrapper's `sitecustomize.py`."""
RUN_ENV = "GAUDI_TUI_RUN"
LAUNCHER_MODULES = {
    "torchrun": "torch.distributed.run",
    "accelerate": "accelerate.commands.launch",
    "deepspeed": "deepspeed.launcher.runner",
}
PYTHONS = re.compile(r"^python(\d+(\.\d+)?)?$")
SCRIPT_SUFFIXES = (".py", ".sh")
MARKER_LIMIT = 64 << 10
"""The most the wrapper's marker (a few paths) may hold."""


def is_attach(spec: JobSpec) -> bool:
    return bool(spec.log_file) and not spec.command


def prepare(spec: JobSpec, cwd: Path | None = None) -> JobSpec:
    """Folders made absolute (from `cwd`, default this process's), the attached PID's start time
    recorded."""
    base = cwd or Path.cwd()
    workdir = (base / spec.workdir).resolve() if spec.workdir else base.resolve()
    changes: dict[str, object] = {"workdir": str(workdir)}
    if spec.output_dir:
        changes["output_dir"] = str((workdir / spec.output_dir).resolve())
    if spec.log_file:
        changes["log_file"] = str((base / spec.log_file).expanduser().resolve())
    if spec.pid and not spec.pid_started:
        ref = ProcRef.of(spec.pid)
        if ref is not None:
            changes["pid_started"] = ref.started
    return replace(spec, **changes)  # type: ignore[arg-type]  # each value has its field's type


def check(
    spec: JobSpec, env: Mapping[str, str], ranks_started_by_target: bool = False, files: bool = True
) -> list[Problem]:
    """Everything that would make the command fail to start, before anything starts. Where the target
    starts every rank (`ranks_started_by_target`), the number of processes is the target's; without
    `files`, the folder, program and script are not looked at (they are on a cluster's node)."""
    out: list[Problem] = []
    if not ranks_started_by_target and not 1 <= spec.processes <= 64:
        out.append(Problem("processes", f"{spec.processes} is not between 1 and 64"))
    if not 0 < spec.kill_grace_s <= 600:
        out.append(Problem("kill_grace_s", f"{spec.kill_grace_s:g} is not between 0 and 600 s"))
    if spec.metrics_source == "pattern" and (why := readers.check_pattern(spec.metrics_pattern)):
        out.append(Problem("metrics_pattern", why))
    if not spec.resume_flag.startswith("-"):
        out.append(
            Problem("resume_flag", f"{spec.resume_flag!r} is not a flag (e.g. --resume_from_checkpoint)")
        )
    if is_attach(spec):
        return out + _attach_problems(spec)
    if not spec.command:
        out.append(Problem("command", "type the command to run, e.g. torchrun --nproc-per-node 2 train.py"))
        return out
    if not files:
        return out
    workdir = Path(spec.workdir or ".")
    if not workdir.is_dir():
        out.append(Problem("workdir", f"{workdir} is not a folder"))
        return out
    if spec.command_launcher == "direct":
        out.extend(_program_problems(spec.command[0], workdir, env))
        scripts = [a for a in spec.command[1:] if a.endswith(SCRIPT_SUFFIXES) and not a.startswith("-")]
        out.extend(_script_problems(scripts[:1], workdir))
    else:
        if not ranks_started_by_target:  # else `rank_problems` says which launchers the target stands in for
            out.extend(_launcher_problems(spec))
        if spec.command[0] not in ("-m", "--module"):
            out.extend(_script_problems(spec.command[:1], workdir))
    return out


def _launcher_problems(spec: JobSpec) -> list[Problem]:
    """A launcher started on this host that cannot run here."""
    if spec.command_launcher == "deepspeed" and not _importable("deepspeed"):
        return [
            Problem("command_launcher", "deepspeed is not installed in this Python: pip install deepspeed")
        ]
    if spec.command_launcher == "accelerate" and spec.device == "cpu" and spec.processes > 1:
        return [
            Problem(
                "command_launcher",
                "accelerate launch starts only one process on CPU (multi-CPU needs MPI): use torchrun",
            )
        ]
    return []


RANK_LAUNCHERS = ("direct", "torchrun")
"""The launchers a target that starts every rank itself can stand in for: `direct` runs the command on
every rank; `torchrun` starts `python script …` per rank with the variables torchrun would set."""
_LAUNCHER_PROGRAMS = frozenset({"torchrun", "accelerate", "deepspeed", "mpirun", "srun"})


def rank_problems(spec: JobSpec) -> list[Problem]:
    """Why this command cannot run as one task per card started by the target (srun): a launcher
    whose own flags or config would be lost, a launcher typed into the command, a run started by hand."""
    if is_attach(spec):
        return [Problem("log_file", "a run started by hand is followed on this host: choose target local")]
    out: list[Problem] = []
    if spec.command_launcher not in RANK_LAUNCHERS:
        out.append(
            Problem(
                "command_launcher",
                f"under Slurm, srun starts one task per card and is the launcher: {spec.command_launcher} "
                "would lose its own flags and config (mixed precision, the DeepSpeed config, --local_rank); "
                "choose torchrun or direct (`python train.py …`): each rank gets RANK, WORLD_SIZE, "
                "LOCAL_RANK and MASTER_ADDR as torchrun sets them",
            )
        )
    elif spec.command and Path(spec.command[0]).name in _LAUNCHER_PROGRAMS:
        out.append(
            Problem(
                "command",
                f"{spec.command[0]} in the command would start its own processes on every one of srun's "
                "tasks: give the script (`python train.py …`) and let srun start one task per card",
            )
        )
    return out


def _program_problems(program: str, workdir: Path, env: Mapping[str, str]) -> list[Problem]:
    if "/" in program:
        path = workdir / program
        if not path.is_file():
            return [Problem("command", f"{program} not found in {workdir}")]
        if not os.access(path, os.X_OK):
            hint = f"python {program}" if program.endswith(".py") else f"bash {program}"
            return [Problem("command", f"{program} is not executable: chmod +x it, or run `{hint}`")]
        return []
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        if program.endswith(SCRIPT_SUFFIXES):
            runner = "python" if program.endswith(".py") else "bash"
            return [
                Problem(
                    "command",
                    f"{program!r} is not a program on PATH: run a script as `{runner} {program}`, or "
                    f"choose a launcher (torchrun, accelerate, deepspeed) for it",
                )
            ]
        return [
            Problem(
                "command",
                f"{program!r} is not a program on PATH: check the spelling, or give its path "
                "(launchers: direct, torchrun, accelerate, deepspeed)",
            )
        ]
    return []


def _script_problems(scripts: Sequence[str], workdir: Path) -> list[Problem]:
    return [
        Problem("command", f"the script {s} is not in {workdir}")
        for s in scripts
        if not (workdir / s).expanduser().is_file()
    ]


def _attach_problems(spec: JobSpec) -> list[Problem]:
    out: list[Problem] = []
    log = Path(spec.log_file)
    if not log.is_file() or not os.access(log, os.R_OK):
        out.append(Problem("log_file", f"{log} is not a readable file"))
    if spec.pid:
        if why := own_process_problem(spec.pid, spec.pid_started):
            out.append(Problem("pid", why))
    return out


def own_process_problem(pid: int, started: float) -> str | None:
    """Why `pid` may not be watched or signalled: gone, another user's, or no longer the same
    process (its start time differs from the one recorded)."""
    ref = ProcRef(pid, started)
    if ref.process() is None:
        return f"process {pid} is not running (or is no longer the process that was attached)"
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return f"process {pid} cannot be read in /proc"
    if owner != os.getuid():
        return f"process {pid} belongs to another user: only your own processes are watched and signalled"
    return None


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def argv(spec: JobSpec, resume: Path | None = None, python: str | None = None) -> list[str]:
    """The command line that runs (never a shell string): the launcher, then the user's arguments,
    then the resume flag."""
    python = python or sys.executable
    words = list(spec.command)
    if resume is not None:
        words = resume_args(words, spec.resume_flag, str(resume))
    n = spec.processes
    if spec.command_launcher == "torchrun":
        return [python, "-m", LAUNCHER_MODULES["torchrun"], "--standalone", f"--nproc-per-node={n}", *words]
    if spec.command_launcher == "accelerate":
        head = [python, "-m", LAUNCHER_MODULES["accelerate"], f"--num_processes={n}", "--num_machines=1"]
        if n > 1:
            from gaudi_tui.core.jobs.launch import free_port

            head += ["--multi_gpu", f"--main_process_port={free_port()}"]
        return [*head, *words]
    if spec.command_launcher == "deepspeed":
        return [python, "-m", LAUNCHER_MODULES["deepspeed"], f"--num_gpus={n}", *words]
    return words


def rank_argv(spec: JobSpec, resume: Path | None = None, python: str | None = None) -> list[str]:
    """One rank's command when the target starts every rank itself: the command as given (`direct`),
    or, for a launcher, what the launcher would start on each rank (`python script …`, `python -m …`)."""
    words = list(spec.command)
    if resume is not None:
        words = resume_args(words, spec.resume_flag, str(resume))
    if spec.command_launcher == "direct":
        return words
    return [python or sys.executable, *words]  # `-m module …` and `script.py …` alike


def resume_args(words: list[str], flag: str, value: str) -> list[str]:
    """`words` with `flag value` (replacing a value the user already gave)."""
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word == flag:
            skip = True
            continue
        if word.startswith(flag + "="):
            continue
        out.append(word)
    return [*out, flag, value]


def job_env(run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
    """The built-in job's environment (cards, Checklist fixes, PT_ENABLE_INT64_SUPPORT, unbuffered
    output) plus the run folder for the callback and, with `wrap_trainer`, the wrapper first on
    PYTHONPATH."""
    from gaudi_tui.core.jobs import launch

    env = launch.job_env(run, spec, base)
    env[RUN_ENV] = str(run.path)
    if spec.wrap_trainer:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE_DIR), env.get("PYTHONPATH", "")) if p)
    return env


def wrapper_active(run: RunFolder) -> bool:
    """A Trainer of this attempt runs with the panel's callback (graceful stop, metrics with steps)."""
    return (run.path / WRAPPER_MARKER).is_file()


def stop_mode(run: RunFolder, spec: JobSpec) -> str:
    """What `s` does to this command now, in words, for the screen before the key is pressed."""
    if wrapper_active(run):
        return "s stops gracefully: every rank stops at one step and Trainer saves one checkpoint"
    grace = f"{spec.kill_grace_s:g} s"
    if is_attach(spec):
        if not spec.pid:
            return "s does nothing: no PID was given when attaching (only its log is followed)"
        return f"s sends SIGINT to PID {spec.pid}, then SIGTERM after {grace}, then SIGKILL"
    return (
        f"s sends SIGINT to the command, then SIGTERM after {grace}, then SIGKILL (no Trainer callback "
        "runs: the script saves a checkpoint only if it handles the signal)"
    )


def output_folder(run: RunFolder, spec: JobSpec) -> Path | None:
    """Where checkpoint-N folders appear: `output_dir`, else the command's `--output_dir`, else the
    folder the callback saw."""
    if spec.output_dir:
        return Path(spec.output_dir)
    for i, word in enumerate(spec.command):
        for flag in ("--output_dir", "--output-dir"):
            if word == flag and i + 1 < len(spec.command):
                return Path(spec.workdir or ".") / spec.command[i + 1]
            if word.startswith(flag + "="):
                return Path(spec.workdir or ".") / word.split("=", 1)[1]
    try:  # the job's Trainer wrote it: bounded, and read as untrusted.data reads
        marker = load_json(run.path / WRAPPER_MARKER, limit=MARKER_LIMIT)
    except (OSError, ValueError):
        return None
    folder = marker.get("output_dir") if isinstance(marker, dict) else None
    return Path(folder) if isinstance(folder, str) else None


def newest_checkpoint(run: RunFolder, spec: JobSpec, marked: bool | None = None) -> Path | None:
    """The highest complete checkpoint-N: our marker, or Trainer's files when the callback did not
    run. `marked` (default: the callback ran in the last attempt) accepts only the marker: Trainer's
    files are there while it rewrites a folder (a rerun), the marker is not."""
    folder = output_folder(run, spec)
    if folder is None or not folder.is_dir():
        return None
    marked = wrapper_active(run) if marked is None else marked
    found = []
    for child in folder.iterdir():
        match = re.fullmatch(r"checkpoint-(\d+)", child.name)
        if match and child.is_dir() and is_complete(child, marked):
            found.append((int(match.group(1)), child))
    return max(found)[1] if found else None


def is_complete(checkpoint: Path, marked: bool = False) -> bool:
    if (checkpoint / "checkpoint-is-incomplete.txt").exists():
        return False
    if (checkpoint / COMPLETE_MARKER).is_file():
        return True
    if marked:
        return False
    has_weights = any((checkpoint / n).is_file() for n in WEIGHT_FILES + SHARDED_INDEX)
    return has_weights and (checkpoint / "trainer_state.json").is_file()


def remote_resume_problem(run: RunFolder, spec: JobSpec) -> str | None:
    """Why a command that ran on a cluster cannot be resumed: only the Trainer callback tells the
    panel where its checkpoints are there (its `save` events come through the log)."""
    if not spec.wrap_trainer or not wrapper_active(run):
        return (
            "it ran on the cluster without the panel's Trainer callback, so the panel does not know its "
            f"checkpoint-N folders there: start it again with {spec.resume_flag} PATH yourself"
        )
    return None


def resume_problem(run: RunFolder, spec: JobSpec) -> str | None:
    """Why this command cannot be resumed, or None."""
    if is_attach(spec):
        return "it was started by hand: start it again yourself (the panel does not know its command)"
    folder = output_folder(run, spec)
    if folder is None:
        return "no output folder is known: set output_dir (where its checkpoint-N folders appear)"
    if newest_checkpoint(run, spec) is None:
        return f"{folder} holds no complete checkpoint-N folder to resume from"
    return None
