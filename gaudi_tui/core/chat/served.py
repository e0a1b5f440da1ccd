"""The panel's own served jobs, for Chat's model dialog: each running job whose run folder holds a
`serve.json` (written by the serve job: {"url", "model", "engine", "api_key_env", "ready",
"ready_at"}), newest first. The file is read as untrusted: a field of the wrong type, a URL that is
not http(s) or a key variable that is not a name drops the job (or the key name), never the list."""

from __future__ import annotations

import time
from dataclasses import dataclass

from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.openai_api import ENV_NAME, parse_url
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.status import effective_state
from gaudi_tui.core.untrusted.files import load_json

SERVE_FILE = "serve.json"


@dataclass(frozen=True)
class ServedJob:
    run_id: str
    url: str
    model: str
    engine: str
    api_key_env: str
    ready: bool
    started: float

    def summary(self) -> str:
        state = "ready" if self.ready else "warming up"
        return f"{self.run_id} · {self.engine} · {self.model} · {self.url} · {state}"


def served_jobs(now: float | None = None) -> list[ServedJob]:
    """Running served jobs, newest first."""
    now = time.time() if now is None else now
    found = [job for run in runfolder.all_runs() if (job := served_job(run, now)) is not None]
    return sorted(found, key=lambda job: job.started, reverse=True)


def served_job(run: RunFolder, now: float) -> ServedJob | None:
    """The job's endpoint while it runs; None for any other job, or an unreadable serve.json."""
    path = run.path / SERVE_FILE
    if not path.is_file():
        return None
    status = run.status()
    if status is None or effective_state(status, now) != "running":
        return None
    try:
        data = load_json(path)
        if not isinstance(data, dict):
            return None
        url = parse_url(str(data["url"])).url
    except (OSError, ValueError, TypeError, KeyError, ChatError):
        return None
    model, engine, key = data.get("model"), data.get("engine"), data.get("api_key_env")
    if not isinstance(model, str):
        return None
    return ServedJob(
        run_id=run.id,
        url=url,
        model=model,
        engine=engine if isinstance(engine, str) else "?",
        api_key_env=key if isinstance(key, str) and ENV_NAME.fullmatch(key) else "",
        ready=data.get("ready") is True,
        started=status.started or status.created,
    )
