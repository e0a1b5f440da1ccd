"""The Slurm commands, each run with a time limit and its failure said in words.

Every call goes through `Slurm.run`: argv only (never a shell), the environment given (tests point
SLURM_CONF at their own cluster), stdout/stderr captured, killed at its limit. A client that
cannot reach the controller waits about 9 s before it gives up (22.05), so the default limit is
CALL_TIMEOUT_S = 15 s: long enough for its own answer, short enough that a screen never waits long.
Output is decoded as UTF-8 with bad bytes replaced (U+FFFD): any user's job is in the queue, and a
name or path with a byte that is not UTF-8 must not break anybody's panel.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaudi_tui.core.untrusted.data import loads

CALL_TIMEOUT_S = 15.0
SUBMIT_TIMEOUT_S = 30.0
REAP_S = 5.0
"""After killing a command at its limit, how long to wait for its pipes to close."""
SACCT_FORMAT = "JobID,JobName,State,ExitCode,Start,End,NodeList,AllocTRES"
NO_CONFIG = "no Slurm configuration here"
NOT_INSTALLED = "Slurm's client tools are not installed here ({name} not found on PATH)"
_CONTROLLER_DOWN = ("Unable to contact slurm controller", "Unable to establish controller", "connect failure")
_BUSY = (
    "Socket timed out on send/recv operation",
    "Zero Bytes were transmitted or received",
    "Slurm temporarily unable to accept job",
    "Resource temporarily unavailable",
)
"""A controller that took the request and did not answer in time: what it did is unknown."""


class SlurmError(RuntimeError):
    """A Slurm command failed; `kind` says how: missing (no tools), timeout, controller (no answer
    from slurmctld), busy (slurmctld took the request and did not answer in time: it may have acted
    on it), refused (it answered no: bad request, unknown job...)."""

    def __init__(self, message: str, kind: str = "refused") -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def unreachable(self) -> bool:
        """True when nothing can be known (no tools, no answer): a job's state is then unknown."""
        return self.kind in ("missing", "timeout", "controller", "busy")

    @property
    def definite(self) -> bool:
        """True when the request surely did nothing: no tools, a refusal, or no connection at all.
        After an sbatch that failed otherwise (our limit, a busy controller) the job may exist."""
        said = str(self)
        return self.kind in ("missing", "refused") or (
            self.kind == "controller" and ("connect failure" in said or said.startswith(NO_CONFIG))
        )


@dataclass(frozen=True)
class Slurm:
    """How to call Slurm: the environment (None = this process's) and the per-call limit."""

    env: Mapping[str, str] | None = None
    timeout: float = CALL_TIMEOUT_S

    def run(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        cwd: Path | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> str:
        """stdout of a command that exited 0, else SlurmError with its stderr's last line."""
        limit = self.timeout if timeout is None else timeout
        env = dict(self.env) if self.env is not None else None
        if extra_env:
            env = {**(os.environ if env is None else env), **extra_env}
        try:
            child = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,  # at the limit its whole group is killed, helpers included
            )
        except FileNotFoundError:
            raise SlurmError(NOT_INSTALLED.format(name=argv[0]), "missing") from None
        try:
            raw_out, raw_err = child.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.communicate(timeout=REAP_S)
            raise SlurmError(f"`{argv[0]}` did not answer within {limit:g} s", "timeout") from None
        stdout = raw_out.decode("utf-8", "replace")
        if child.returncode != 0:
            raise _failure(argv[0], child.returncode, raw_err.decode("utf-8", "replace") or stdout)
        return stdout

    def json(self, argv: Sequence[str], what: str) -> dict[str, Any]:
        """A `--json` command's document; its `errors` entries become a SlurmError (22.05 exits 0
        with an `errors` entry and empty lists when the controller is down)."""
        text = self.run(argv)
        try:
            data = loads(text, what=f"`{argv[0]} --json`")
        except ValueError:
            raise SlurmError(f"`{argv[0]} --json` printed something that is not JSON", "refused") from None
        return answered(data, argv[0], what)

    # --- the commands ----------------------------------------------------------------------------

    def squeue(self) -> dict[str, Any]:
        """Every job the controller holds (22.05 ignores filters: the caller filters)."""
        return self.json(["squeue", "--json"], "the queue")

    def squeue_text(self) -> str:
        """`squeue --json` as it printed it (the poll decodes only the jobs that changed: queue_text.py)."""
        return self.run(["squeue", "--json"])

    def squeue_fields(self, fields: str) -> str:
        """Every job's `--Format` fields, times in epoch seconds (the poll's text form: queue_fields.py)."""
        argv = ["squeue", "--all", "--states=all", "--noheader", f"--Format={fields}"]
        return self.run(argv, extra_env={"SLURM_TIME_FORMAT": "%s"})

    def sinfo(self) -> dict[str, Any]:
        return self.json(["sinfo", "--json"], "the nodes")

    def show_job(self, job_id: int | str) -> str | None:
        """`scontrol show job -o ID` (one line of Key=Value), None when the controller forgot it."""
        try:
            return self.run(["scontrol", "show", "job", "-o", str(job_id)]).strip() or None
        except SlurmError as exc:
            if "Invalid job id" in str(exc):
                return None
            raise

    def show_partitions(self) -> str:
        return self.run(["scontrol", "show", "partition", "-o"])

    def sacct(self, job_ids: Sequence[int | str]) -> str | None:
        """`sacct -P` lines for these jobs, None when the cluster keeps no accounting."""
        argv = ["sacct", "-n", "-P", f"--format={SACCT_FORMAT}"]
        for job_id in job_ids:
            argv += ["-j", str(job_id)]
        try:
            return self.run(argv)
        except SlurmError as exc:
            if "accounting storage is disabled" in str(exc) or "slurmdbd" in str(exc):
                return None
            raise

    def sbatch(self, script: Path, cwd: Path, options: Sequence[str] = ()) -> int:
        """Submit a batch script with `options` (each one argv element, so no value can become a
        second option); the job id (`--parsable`: `ID` or `ID;cluster`)."""
        argv = ["sbatch", "--parsable", *options, str(script)]
        out = self.run(argv, timeout=SUBMIT_TIMEOUT_S, cwd=cwd)
        head = out.strip().splitlines()[-1].split(";")[0] if out.strip() else ""
        if not head.isdigit():
            raise SlurmError(f"sbatch printed no job id: {out.strip()[:200]!r}", "refused")
        return int(head)

    def scancel(
        self, job_id: int | str, signal: str | None = None, *, batch: bool = False, full: bool = False
    ) -> None:
        """Cancel (no `signal`), or send `signal` to the job's steps (default), its batch shell only
        (`batch`), or batch shell, its children and steps (`full`). Never send a signal to a pending
        job: 22.05 blocks about 95 s and then fails."""
        argv = ["scancel"]
        if signal:
            argv.append(f"--signal={signal}")
        if batch:
            argv.append("--batch")
        if full:
            argv.append("--full")
        self.run([*argv, str(job_id)])


def answered(data: object, name: str, what: str) -> dict[str, Any]:
    """A `--json` document, or the SlurmError its `errors` entries say (22.05 exits 0 with an
    `errors` entry and empty lists when the controller is down)."""
    if not isinstance(data, dict):
        raise SlurmError(f"`{name} --json` printed no object", "refused")
    errors = data.get("errors") or []
    if errors:
        first = errors[0] if isinstance(errors[0], dict) else {"error": str(errors[0])}
        words = first.get("description") or first.get("error") or "an error"
        raise SlurmError(
            f"the Slurm controller did not answer ({name}: {words}); {what} is unknown", "controller"
        )
    return data


def _failure(name: str, code: int, text: str) -> SlurmError:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    said = lines[-1] if lines else f"exit code {code}"
    if any(mark in text for mark in _CONTROLLER_DOWN):
        return SlurmError(f"the Slurm controller did not answer ({name}: {said})", "controller")
    if any(mark in text for mark in _BUSY):
        return SlurmError(f"the Slurm controller is busy and did not answer in time ({name}: {said})", "busy")
    if "Could not establish a configuration source" in text:
        return SlurmError(
            f"{NO_CONFIG} ({name}: {said}): set SLURM_CONF or install /etc/slurm/slurm.conf",
            "controller",
        )
    return SlurmError(f"{name}: {said}", "refused")


def default() -> Slurm:
    """Slurm as this process's environment reaches it."""
    return Slurm(env=None)


def conf_key(env: Mapping[str, str] | None = None) -> str:
    """Which cluster an environment reaches (its SLURM_CONF, or the system's): keys shared caches."""
    source = os.environ if env is None else env
    return source.get("SLURM_CONF", "/etc/slurm/slurm.conf")
