"""Fixtures for alert tests: `[alerts]` written into this test's config.toml, the alerts kept in
its notifications file, waiting on a condition, and (from tests/jobs) no process left behind."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from gaudi_tui.core.alerts import store
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.appearance import config_path
from tests.jobs.conftest import no_stray_processes  # noqa: F401 (an autouse fixture)


def configure(**values: object) -> None:
    """config.toml with these `[alerts]` values (JSON's strings, numbers, lists and booleans are TOML's)."""
    lines = ["[alerts]", *(f"{key} = {json.dumps(value)}" for key, value in values.items())]
    config_path().write_text("\n".join(lines) + "\n", encoding="utf-8")


def kept(kind: str | None = None) -> list[Alert]:
    """The alerts in the notifications file (of `kind`)."""
    alerts = store.NotificationReader(from_start=True).poll()
    return [a for a in alerts if kind is None or a.kind == kind]


def wait_for(predicate: Callable[[], object], timeout: float, what: str, poll: float = 0.05) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
