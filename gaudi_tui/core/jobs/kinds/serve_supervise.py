"""A serve job's attempt in the supervisor: the model resolved (an adapter merged once for
`transformers serve`), the server's argv built, then the command's supervision runs it, with a
readiness watch writing `serve.json` (`core/serve/ready.py`)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs.kinds import serve_engines
from gaudi_tui.core.jobs.kinds.command_supervise import CommandSupervision
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.serve import model, ready, warmup

MERGED_DIR = "merged"


class ServeSupervision(CommandSupervision):
    stop_reason = "the server finishes the requests in flight, then exits"

    def __init__(self, watch: ready.ReadyWatch) -> None:
        super().__init__()
        self.ready_watch = watch

    def supervise(self, attempt: Attempt) -> int:
        self.ready_watch.start()
        try:
            return super().supervise(attempt)
        finally:
            self.ready_watch.close()  # again where it did not finish (it could not start, or is stuck)

    def start_logged(
        self, attempt: Attempt, *args: Any, **kwargs: Any
    ) -> tuple[subprocess.Popen[bytes], int] | None:
        """Start the server; the readiness watch learns its process (the key waits for its listener)."""
        started = super().start_logged(attempt, *args, **kwargs)
        if started is not None:
            self.ready_watch.server_pid = started[0].pid
        return started

    def finish_stuck(self, attempt: Attempt, launcher: int) -> None:
        self.ready_watch.close()
        super().finish_stuck(attempt, launcher)

    def finish(self, attempt: Attempt, code: int) -> None:
        """The outcome (serve.json says not ready first: once the job is seen ended, it is), and for
        a server that failed, what its output says and the fix."""
        self.ready_watch.close()
        super().finish(attempt, code)
        status = attempt.status()
        if status.state != "failed":
            return
        if (words := failure(attempt.run.log_path)) is not None:
            attempt.save(error=words)


class CannotServe(Exception):
    """The model cannot be served (refused, or its adapter could not be merged)."""


def server(run_path: Path, spec: JobSpec, say: Callable[[str], None]) -> tuple[list[str], str]:
    """The server's argv for a prepared spec (host and port decided) and the model id it answers
    to: the model resolved, an adapter merged once into the run folder for `transformers serve`.
    Runs where the server starts (the supervisor here, or the node: `worker/slurm_serve.py`)."""
    try:
        served = model.resolve(spec.serve_model)
        load, adapter = served.load, None
        if served.adapter is not None and spec.serve_engine == "vllm":
            adapter = (served.adapter_name, served.adapter)
        elif served.adapter is not None:
            say(f"merging the adapter {served.adapter} into {run_path / MERGED_DIR} (once)")
            from gaudi_tui.core.serve.merge import merged

            load = str(merged(served.load, served.adapter, run_path / MERGED_DIR, spec.trust_remote_code))
    except (model.ServeRefused, OSError, ValueError, ImportError, RuntimeError) as exc:
        raise CannotServe(f"cannot serve {spec.serve_model}: {exc}") from None
    return serve_engines.argv(spec, load, adapter), serve_engines.served_id(spec, load, adapter)


def api_key(spec: JobSpec) -> str | None:
    """The key from the variable the spec names (never in the spec, the argv or a log)."""
    return os.environ.get(spec.serve_api_key_env) if spec.serve_api_key_env else None


def info(spec: JobSpec, url: str, served: str) -> dict[str, object]:
    """serve.json's first values (`ready.py`)."""
    return {"url": url, "model": served, "engine": spec.serve_engine, "api_key_env": spec.serve_api_key_env}


def supervise(attempt: Attempt) -> int:
    run, spec = attempt.run, attempt.spec
    try:
        argv, served = server(run.path, spec, lambda text: _say(run.log_path, text))
    except CannotServe as exc:
        attempt.save(state="failed", ended=time.time(), error=str(exc))
        return 1
    key = api_key(spec)
    if key:
        os.environ[serve_engines.API_KEY_VAR] = (
            key  # this supervisor's own environment: the server inherits it
        )
    runnable = replace(
        spec, command=tuple(argv), command_launcher="direct", wrap_trainer=False, metrics_source="json",
        workdir=str(run.path),
    )  # fmt: skip
    first = info(spec, ready.url_of(spec.serve_host, spec.serve_port), served)
    watch = ready.ReadyWatch(run.path, run.log_path, first, key)
    return ServeSupervision(watch).supervise(replace(attempt, spec=runnable))


def _say(log: Path, text: str) -> None:
    with open(log, "ab") as out:
        out.write(f"[gaudi-tui] {text}\n".encode())


TAIL_BYTES = 64 * 1024


def failure(log: Path) -> str | None:
    """What the end of a failed server's log tells, with the fix (`warmup.explain`), or None."""
    found = warmup.explain(_tail(log))
    return found.words() if found is not None else None


def _tail(log: Path) -> str:
    """The end of the log, where a failure is told."""
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
