"""Where an alert goes: the terminal (bell and desktop-notification escapes), a webhook, a command.

Terminal escapes (README "Alerts" names which terminals show which):
- BEL (`\\a`): every terminal; tmux marks the window with a bell flag and passes it on;
- OSC 9 (`ESC ] 9 ; text BEL`): a desktop notification in iTerm2, Windows Terminal, ConEmu, kitty, WezTerm;
- OSC 777 (`ESC ] 777 ; notify ; title ; body BEL`): urxvt (its notify extension), foot, Ghostty, WezTerm,
  VTE terminals (GNOME Terminal, Tilix).
Inside tmux each OSC is wrapped in tmux's DCS passthrough (`ESC P tmux; … ESC \\`, every ESC doubled),
which tmux 3.3+ forwards only with `set -g allow-passthrough on`. Text from an alert has its control
characters removed, so nothing in it can end the escape early or start another (and OSC 777's
`;` in its title and body, which would split its fields).

The webhook posts Slack-compatible JSON (`{"text": …}`, with `&`, `<` and `>` escaped as Slack
asks, so a process name such as `<!channel>` is shown, never a mention) through the bounded client
(`core/untrusted/http.py`: one deadline for the whole exchange, the answer capped); only a 2xx
answer is delivered: a redirect is not followed (a POST redirected would arrive as a GET without
its body) and is said. The command runs argv (never a shell) with the alert in GAUDI_TUI_ALERT_*
variables. Each returns None when it worked, else why not in words that never hold the webhook's
URL (its path is a token).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from typing import TextIO

from gaudi_tui.core.alerts.model import TEXT_FIELDS, Alert
from gaudi_tui.core.untrusted import http

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_ANSWER = 64 << 10
"""The most of a webhook's answer read (Slack answers `ok`)."""
ENV_CHARS = 16 << 10
"""The most of one alert field put in the `command` sink's environment: Linux refuses to start a
program with one variable over 128 KiB (E2BIG), so a 1 MiB error line would stop the sink."""
PREFIX = "gaudi-tui: "
"""OSC 9 text begins so: ConEmu and Windows Terminal read `9;<digit>;…` as other commands."""


def clean(text: str, limit: int = 240) -> str:
    """One line with no control characters (ESC, BEL, C1 codes), at most `limit` characters."""
    return _CONTROL.sub(" ", text).strip()[:limit]


def passthrough(escape: str) -> str:
    """`escape` wrapped in tmux's DCS passthrough."""
    return "\x1bPtmux;" + escape.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def escapes(alert: Alert, in_tmux: bool) -> str:
    """The bell, OSC 9 and OSC 777 for `alert`, wrapped for tmux when it runs inside tmux."""
    title = clean(alert.title, 80).replace(";", ",")
    osc9 = f"\x1b]9;{PREFIX}{clean(alert.line())}\a"
    osc777 = f"\x1b]777;notify;{title};{clean(alert.text).replace(';', ',')}\a"
    if in_tmux:
        osc9, osc777 = passthrough(osc9), passthrough(osc777)
    return "\a" + osc9 + osc777


def to_terminal(alert: Alert, stream: TextIO, environ: Mapping[str, str] | None = None) -> None:
    """The bell and the escapes on `stream` (a terminal)."""
    environ = os.environ if environ is None else environ
    stream.write(escapes(alert, bool(environ.get("TMUX"))))
    stream.flush()


def slack_escape(text: str) -> str:
    """`text` as Slack's mrkdwn shows it literally: `&`, `<` and `>` escaped (no mention, no link)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def payload(alert: Alert) -> bytes:
    """Slack-compatible: `text` (what Slack, Mattermost, Rocket.Chat and Discord's /slack read) plus the alert."""
    icon = {"critical": ":rotating_light:", "warning": ":warning:"}.get(alert.severity, ":bell:")
    text = f"{icon} {slack_escape(alert.line())} ({slack_escape(alert.subject)})"
    body = {"text": text, "alert": json.loads(alert.to_json())}
    return json.dumps(body).encode()


def post(url: str, alert: Alert, timeout_s: float) -> str | None:
    """One webhook try; None on a 2xx answer."""
    try:
        answer = http.request(
            "POST", url, timeout=timeout_s, body=payload(alert),
            headers={"Content-Type": "application/json"}, max_body=MAX_ANSWER,
        )  # fmt: skip
    except http.HttpError as error:
        return f"no answer in {timeout_s:g} s" if error.late else clean(error.reason, 120)
    if 300 <= answer.status < 400:
        return f"HTTP {answer.status}: the webhook redirects (not followed: give its final URL)"
    if not 200 <= answer.status < 300:
        return f"HTTP {answer.status} {clean(answer.reason, 80)}"
    return None


def alert_env(alert: Alert, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for name in TEXT_FIELDS:
        env[f"GAUDI_TUI_ALERT_{name.upper()}"] = str(getattr(alert, name))[:ENV_CHARS]
    env["GAUDI_TUI_ALERT_TIME"] = f"{alert.time:.3f}"
    return env


def run_command(argv: tuple[str, ...], alert: Alert, timeout_s: float) -> str | None:
    """Run the user's command once; None when it exited 0 within the bound."""
    try:
        done = subprocess.run(
            list(argv), env=alert_env(alert), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, timeout=timeout_s, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"{argv[0]} did not end in {timeout_s:g} s (killed)"
    except OSError as error:
        return f"cannot run {argv[0]}: {error.strerror or error}"
    if done.returncode != 0:
        tail = clean(
            done.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if done.stderr.strip() else ""
        )
        return f"{argv[0]} exited {done.returncode}" + (f": {tail}" if tail else "")
    return None
