"""The delivery child against webhooks that answer badly (issue 38: M3, L3, L4), each test failing on
73fabd2. Every alert goes the product's way: `deliver.dispatch` starts the real child (`python -m
gaudi_tui.core.alerts.deliver`), which reads `[alerts]` from this test's config.toml, posts to a raw
socket server on an ephemeral loopback port and runs a command sink (a Python one-liner that writes
what it saw: its parent's argv and the alert text in its environment). The tests wait for what the
child says in deliveries.log, never for a moment."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.alerts import config, deliver
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.store import Ledger
from tests.alerts.conftest import configure, wait_for
from tests.conftest import PYTHON
from tests.raw_server import RawServer

SECRET = "T0KEN-9f3a"
"""The webhook's path is its token: it never appears in what the panel writes."""
ALERT = Alert(
    "idle_held", "warning", "host1 card 3", "Card idle, memory held",
    "PID 4242 <!channel> (mallory) holds 30 GiB", "card-3:idle:4242", 1.0,
)  # fmt: skip
RECORD = (
    "import json, os, sys\n"
    "argv = open(f'/proc/{os.getppid()}/cmdline', 'rb').read().decode(errors='replace')\n"
    "json.dump({'parent_argv': argv, 'text': os.environ['GAUDI_TUI_ALERT_TEXT']}, open(sys.argv[1], 'w'))\n"
)
"""The command sink: what the delivery child's argv shows to every user of the host (/proc), and
the alert text it was given."""


class Hook:
    """A webhook on 127.0.0.1 that answers every request with `answer(path)`, noting each request's
    first line and body."""

    def __init__(self, answer: bytes | None = None) -> None:
        self.answer = answer
        self.requests: list[tuple[str, bytes]] = []
        self.server = RawServer(lambda conn, _stop: self._serve(conn))
        self.url = self.server.url

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data and (got := conn.recv(65536)):
            data += got
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(h.split(":", 1)[1]) for h in lines if h.lower().startswith("content-length:")), 0)
        while len(body) < length and (got := conn.recv(65536)):
            body += got
        path = lines[0].split(" ")[1] if lines[0].count(" ") >= 2 else lines[0]
        self.requests.append((lines[0].split(" ")[0] + " " + path, body))
        if path.startswith("/moved-here"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        else:
            conn.sendall(
                self.answer or b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            )

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    served = Hook()
    yield served
    served.close()


def send(tmp_path: Path, webhook: str, retries: int) -> Path:
    """Configure the webhook and the recording command, dispatch ALERT; the command's record file."""
    record = tmp_path / "command.json"
    configure(
        webhook=webhook,
        command=[PYTHON, "-c", RECORD, str(record)],
        timeout_s=3.0,
        retries=retries,
        retry_s=0.0,
    )
    loaded, problems = config.load()
    assert problems == [] and loaded.webhook == webhook
    assert deliver.dispatch(ALERT, Ledger(tmp_path / "ledger"), loaded)
    return record


def child_done() -> str:
    """deliveries.log once the child has finished with both sinks (or died: its traceback)."""
    log = deliver.log_path()

    def finished() -> str:
        text = log.read_text(errors="replace") if log.exists() else ""
        ended = "command " in text and ("delivered" in text.split("command ")[-1] or "gave up" in text)
        return text if ended or "Traceback" in text else ""

    return str(wait_for(finished, 60, "the delivery child to finish"))


HOSTILE = {
    "bad status line": b"HTZP/9 what\r\n\r\n",
    "closes mid-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
    "header too long": b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 70_000 + b"\r\n\r\n",
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_m3_a_webhook_that_answers_badly_is_retried_and_the_command_still_runs(
    case: str, tmp_path: Path
) -> None:
    """73fabd2: http.client's BadStatusLine, IncompleteRead and LineTooLong escaped `sinks.post` and
    ended the child: no retry, and the command sink never ran."""
    hook = Hook(HOSTILE[case])
    try:
        record = send(tmp_path, f"{hook.url}/hooks/{SECRET}", retries=1)
        said = child_done()
    finally:
        hook.close()
    assert "Traceback" not in said, said
    assert "webhook 127.0.0.1: try 1 failed" in said and "webhook 127.0.0.1: gave up after 2 tries" in said
    assert len(hook.requests) == 2
    assert f"command {PYTHON}: delivered (try 1)" in said and record.exists()
    assert SECRET not in said


def test_m3_a_webhook_url_with_a_space_never_puts_its_token_in_the_log(hook: Hook, tmp_path: Path) -> None:
    """73fabd2: http.client's InvalidURL quoted the path (the token) into the child's traceback,
    which went to deliveries.log, and the command sink never ran."""
    record = send(tmp_path, f"{hook.url}/hooks/{SECRET} x", retries=0)
    said = child_done()
    assert SECRET not in said and "Traceback" not in said, said
    assert "webhook 127.0.0.1: try 1 failed: the URL is not valid" in said
    assert not [line for line, _ in hook.requests if SECRET in line]  # nothing was asked with it
    assert f"command {PYTHON}: delivered (try 1)" in said and record.exists()


def test_l3_the_alert_is_not_on_the_delivery_childs_argv(hook: Hook, tmp_path: Path) -> None:
    """73fabd2: the alert's JSON was the child's argument (/proc/PID/cmdline is every user's to read)."""
    record = send(tmp_path, f"{hook.url}/hooks/{SECRET}", retries=0)
    said = child_done()
    assert f"command {PYTHON}: delivered (try 1)" in said, said
    seen = json.loads(record.read_text())
    assert seen["text"] == ALERT.text  # the command has the alert: it came to the child another way
    assert "gaudi_tui.core.alerts.deliver" in seen["parent_argv"]
    assert ALERT.key not in seen["parent_argv"] and "mallory" not in seen["parent_argv"]


def test_l3_another_users_process_name_reaches_slack_as_text_not_a_mention(
    hook: Hook, tmp_path: Path
) -> None:
    """73fabd2: `<!channel>` in another user's process name went into Slack's `text` as it was."""
    send(tmp_path, f"{hook.url}/hooks/{SECRET}", retries=0)
    said = child_done()
    assert "webhook 127.0.0.1: delivered (try 1)" in said, said
    ((line, body),) = hook.requests
    text = json.loads(body)["text"]
    assert line == f"POST /hooks/{SECRET}" and "PID 4242 &lt;!channel&gt; (mallory)" in text
    assert "<!channel>" not in text


def test_l4_a_webhook_that_redirects_is_not_called_delivered(tmp_path: Path) -> None:
    """73fabd2: urllib followed a 302 to a POST as a GET without the body, and the 200 there was
    taken for a delivered alert."""
    hook = Hook(
        b"HTTP/1.1 302 Found\r\nLocation: /moved-here\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    try:
        send(tmp_path, f"{hook.url}/hooks/{SECRET}", retries=0)
        said = child_done()
    finally:
        hook.close()
    assert [line for line, _ in hook.requests] == [f"POST /hooks/{SECRET}"]
    assert "webhook 127.0.0.1: try 1 failed: HTTP 302" in said and "webhook 127.0.0.1: gave up" in said, said
    assert "webhook 127.0.0.1: delivered" not in said
