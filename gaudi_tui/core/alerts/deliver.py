"""Sending an alert: `dispatch` claims its key, keeps it in the notifications file, and hands the
webhook and the command to a short-lived child (`python -m gaudi_tui.core.alerts.deliver`, the
alert on its stdin: argv is readable by every user of the host), so a slow or unreachable webhook never holds up a job or its supervisor, which may exit at once.

The child tries each sink `1 + retries` times, each try bounded by `timeout_s`, waiting `retry_s`
(doubled each time) between them, and says every try in `<state>/alerts/deliveries.log` (the
webhook by its host only; past 1 MiB the log becomes `deliveries.log.1`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gaudi_tui.core.alerts import config as alert_config
from gaudi_tui.core.alerts import sinks, store
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.store import Ledger

LOG_NAME = "deliveries.log"


def log_path() -> Path:
    return store.alerts_dir() / LOG_NAME


def dispatch(alert: Alert, ledger: Ledger, config: AlertConfig) -> bool:
    """Send `alert` unless its kind is off or its key went out already; True when it was sent."""
    if not config.fires(alert.kind) or not ledger.claim(alert.key):
        return False
    store.append(alert)
    if config.delivers:
        start_child(alert)
    return True


def start_child(alert: Alert) -> None:
    path = log_path()
    try:
        if path.stat().st_size > store.MAX_BYTES:  # bounded like the notifications file: one old copy kept
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    with open(path, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "gaudi_tui.core.alerts.deliver"],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
        )  # fmt: skip
    assert child.stdin is not None
    try:
        with child.stdin:
            child.stdin.write(alert.to_json().encode())
    except OSError:
        pass  # the child ended at once: its log says why
    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()


def with_retries(
    what: str, attempt: Callable[[], str | None], config: AlertConfig, say: Callable[[str], None]
) -> bool:
    """`attempt` until it returns None, at most 1 + retries times; True when it did."""
    wait = config.retry_s
    for number in range(1, config.retries + 2):
        error = attempt()
        if error is None:
            say(f"{what}: delivered (try {number})")
            return True
        say(f"{what}: try {number} failed: {error}")
        if number <= config.retries:
            time.sleep(wait)
            wait *= 2
    say(f"{what}: gave up after {config.retries + 1} tries")
    return False


def deliver(alert: Alert, config: AlertConfig, say: Callable[[str], None]) -> bool:
    """Every configured sink, the webhook first; True when all of them took it."""
    ok = True
    if config.webhook:
        url = config.webhook
        ok &= with_retries(
            f"webhook {config.webhook_host}", lambda: sinks.post(url, alert, config.timeout_s), config, say
        )
    if config.command:
        argv = config.command
        ok &= with_retries(
            f"command {argv[0]}", lambda: sinks.run_command(argv, alert, config.timeout_s), config, say
        )
    return ok


MAX_ALERT = 1 << 20


def main(argv: list[str] | None = None) -> int:
    """The alert's JSON comes on stdin (or as the one argument, by hand)."""
    args = sys.argv[1:] if argv is None else argv
    text = args[0] if len(args) == 1 else sys.stdin.buffer.read(MAX_ALERT) if not args else b""
    alert = Alert.from_json(text) if text else None
    if alert is None:
        print("usage: python -m gaudi_tui.core.alerts.deliver < ALERT_JSON", file=sys.stderr)
        return 2
    config, _ = alert_config.load()

    def say(words: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"{stamp} {alert.key}: {words}", flush=True)

    return 0 if deliver(alert, config, say) else 1


if __name__ == "__main__":
    sys.exit(main())
