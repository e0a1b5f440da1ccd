"""`[alerts]` in config.toml (defaults, bad values named by line, the webhook from the environment,
never printed) and the command sink (argv, no shell, the alert in its environment, a time bound,
retries)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gaudi_tui.core import settings
from gaudi_tui.core.alerts import config, deliver
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.appearance import config_path
from tests.alerts.conftest import configure
from tests.conftest import PYTHON, child_env

ALERT = Alert(
    "job_ended", "critical", "run-7", "Job failed", "tiny (run-7) — $(rm -rf ~); `x`", "run-7:ended:1"
)


def test_defaults_without_a_file() -> None:
    loaded, problems = config.load()
    assert loaded == AlertConfig() and problems == []
    assert (loaded.idle_held_s, loaded.hbm_full_pct, loaded.stall_factor, loaded.terminal) == (
        900.0,
        95.0,
        10.0,
        True,
    )


def test_bad_values_keep_their_default_and_name_their_line() -> None:
    config_path().write_text(
        'theme = "nord"\n[alerts]\nidle_held_s = 60\nhbm_full_pct = 150\ncommand = "notify-send hi"\n'
        'webhook = "file:///etc/passwd"\noff = ["job_ended", "nope"]\nloud = true\n',
        encoding="utf-8",
    )
    loaded, problems = config.load()
    assert loaded == AlertConfig(idle_held_s=60.0)
    assert problems == [
        "config.toml line 4: alerts.hbm_full_pct must be a number from 1 to 100; using the default",
        'config.toml line 5: alerts.command must be a list of words, e.g. ["notify-send", "gaudi-tui"] (no shell); '
        "using the default",
        "config.toml line 6: alerts.webhook must be an http:// or https:// URL; using the default",
        "config.toml line 7: alerts.off must be a list of: job_ended, job_stalled, compiling, compile_limit, "
        "torch_recompiling, input_stall, idle_held, hbm_full, port_down, ecc_rising; using the default",
        "config.toml line 8: unknown key 'loud' in [alerts] (ignored)",
    ]
    assert settings.load().problems == ()  # the panel's own settings leave [alerts] to it


def test_the_webhook_from_the_environment_outranks_the_file_and_is_never_printed() -> None:
    configure(webhook="https://example.invalid/file-hook")
    secret = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"
    loaded, _ = config.load(environ={config.WEBHOOK_ENV: secret})
    assert loaded.webhook == secret and loaded.webhook_host == "hooks.slack.com"
    env = child_env(**{config.WEBHOOK_ENV: secret})
    for args in (["config", "--json"], ["config"], ["watch", "--replay", "nope"]):
        shown = subprocess.run([PYTHON, "-m", "gaudi_tui", *args], capture_output=True, text=True, env=env)
        assert (
            "XXXXSECRET" not in shown.stdout + shown.stderr and "file-hook" not in shown.stdout + shown.stderr
        )
    data = json.loads(subprocess.run([PYTHON, "-m", "gaudi_tui", "config", "--json"], capture_output=True,
                                     text=True, env=env, check=True).stdout)  # fmt: skip
    assert data["alerts"] == {
        "to": "terminal, webhook hooks.slack.com",
        "changed": {"webhook": "hooks.slack.com"},
    }


def test_the_config_command_lists_the_alerts_and_their_problems() -> None:
    configure(idle_held_s=60, off=["ecc_rising"], loud=True)
    shown = subprocess.run(
        [PYTHON, "-m", "gaudi_tui", "config"], capture_output=True, text=True, env=child_env()
    )
    assert shown.returncode == 1
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("  alerts ")]
    assert line.split() == ["alerts", "to", "terminal;", "2", "value(s)", "changed", "in", "[alerts]"]
    assert "    off = ['ecc_rising']" in shown.stdout and "    idle_held_s = 60.0" in shown.stdout
    assert "problem: config.toml line 4: unknown key 'loud' in [alerts] (ignored)" in shown.stdout


def test_the_command_gets_the_alert_in_its_environment_never_through_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    script = (
        "import json, os, sys; json.dump({k: v for k, v in os.environ.items() "
        "if k.startswith('GAUDI_TUI_ALERT_')}, open(sys.argv[1], 'w'))"
    )
    said: list[str] = []
    assert deliver.deliver(ALERT, AlertConfig(command=(PYTHON, "-c", script, str(out))), said.append)
    seen = json.loads(out.read_text())
    assert seen["GAUDI_TUI_ALERT_TEXT"] == ALERT.text  # as it is: nothing ran `$(...)` or the backticks
    assert seen["GAUDI_TUI_ALERT_KIND"] == "job_ended" and seen["GAUDI_TUI_ALERT_KEY"] == "run-7:ended:1"
    assert {
        "GAUDI_TUI_ALERT_SEVERITY",
        "GAUDI_TUI_ALERT_SUBJECT",
        "GAUDI_TUI_ALERT_TITLE",
        "GAUDI_TUI_ALERT_TIME",
    } <= set(seen)
    assert said == [f"command {PYTHON}: delivered (try 1)"]


def test_a_command_past_its_time_bound_is_killed_and_retried_then_given_up() -> None:
    said: list[str] = []
    hung = AlertConfig(
        command=(sys.executable, "-c", "import time; time.sleep(30)"), timeout_s=0.3, retries=2, retry_s=0.0
    )
    assert not deliver.deliver(ALERT, hung, said.append)
    assert said == [
        *(
            f"command {sys.executable}: try {n} failed: {sys.executable} did not end in 0.3 s (killed)"
            for n in (1, 2, 3)
        ),
        f"command {sys.executable}: gave up after 3 tries",
    ]


def test_a_failing_command_says_its_last_error_line() -> None:
    said: list[str] = []
    failing = AlertConfig(command=(PYTHON, "-c", "import sys; sys.exit('no display')"), retries=0)
    assert not deliver.deliver(ALERT, failing, said.append)
    assert said[0] == f"command {PYTHON}: try 1 failed: {PYTHON} exited 1: no display"
