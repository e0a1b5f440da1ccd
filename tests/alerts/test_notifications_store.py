"""The notifications file (append-only, bounded, read by offset: each alert once, across a
rotation, a half-written line only when complete) and the ledger (each key claimed once, also by
two processes racing for it; a card claim again after it expires)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gaudi_tui.core.alerts import store
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.store import Ledger, NotificationReader
from tests.conftest import PYTHON, child_env


def alert(number: int) -> Alert:
    return Alert(
        "job_ended", "info", f"run-{number}", "Job succeeded", f"run {number} " + "x" * 100, f"k{number}"
    )


def test_a_follower_reads_each_alert_once_across_rotations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "MAX_BYTES", 1000)  # a rotation every few alerts
    follower = NotificationReader()
    seen: list[str] = []
    for number in range(40):
        store.append(alert(number))
        if number % 3 == 0:
            seen += [a.key for a in follower.poll()]
    seen += [a.key for a in follower.poll()]
    assert seen == [f"k{n}" for n in range(40)]
    path = store.notifications_path()
    assert path.stat().st_size <= 1000 and path.with_name(path.name + ".1").stat().st_size <= 1000
    kept = [a.key for a in NotificationReader().history()]
    assert kept == [f"k{n}" for n in range(40 - len(kept), 40)] and len(kept) >= 8  # the newest, in order


def test_a_half_written_line_waits_and_a_foreign_line_is_skipped() -> None:
    follower = NotificationReader()
    path = store.notifications_path()
    line = alert(1).to_json()
    with path.open("a") as fh:
        fh.write("not json\n" + line[:30])
    assert follower.poll() == []
    with path.open("a") as fh:
        fh.write(line[30:] + "\n")
    assert [a.key for a in follower.poll()] == ["k1"]


def test_a_key_is_claimed_once_and_a_card_claim_again_after_it_expires(tmp_path: Path) -> None:
    jobs = Ledger(tmp_path / "run" / "alerts")
    (tmp_path / "run").mkdir()
    assert jobs.claim("run:ended:1") and not jobs.claim("run:ended:1") and jobs.claim("run:ended:2")
    cards = Ledger(tmp_path / "sent", repeat_s=0.0)
    assert cards.claim("hbm-full:h:3:") and cards.claim("hbm-full:h:3:")  # expired at once


def test_two_processes_racing_for_the_same_keys_claim_each_once(tmp_path: Path) -> None:
    """Both racers start claiming at one moment (each waits at a barrier until the other is ready),
    so their claims of the same keys overlap instead of one finishing before the other starts."""
    script = (
        "import sys; from pathlib import Path; from gaudi_tui.core.alerts.store import Ledger; "
        "ledger = Ledger(Path(sys.argv[1])); print('ready', flush=True); sys.stdin.readline(); "
        "print(sum(ledger.claim(f'key-{n}') for n in range(2000)))"
    )
    racers = [
        subprocess.Popen([PYTHON, "-c", script, str(tmp_path / "sent")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=child_env())
        for _ in range(2)
    ]  # fmt: skip
    for racer in racers:  # the barrier: both imported and waiting
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    won = [int(r.communicate(timeout=60)[0]) for r in racers]
    assert sum(won) == 2000


def test_a_line_longer_than_one_read_is_passed_over_and_the_next_alert_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A foreign line longer than MAX_READ (a damaged or hostile file) with an alert after it: the
    follower passes over it and reads the alert (it re-read the same MAX_READ bytes for ever)."""
    monkeypatch.setattr(store, "MAX_BYTES", 64 << 20)  # no rotation: the line stays in the file read
    follower = NotificationReader()
    store.append(alert(1))
    with store.notifications_path().open("ab") as fh:
        fh.write(b"x" * (2 * store.MAX_READ) + b"\n")
    store.append(alert(2))
    seen = [a.key for _ in range(5) for a in follower.poll()]
    assert seen == ["k1", "k2"]
