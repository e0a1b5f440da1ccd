"""Card alerts on a replayed card (issue 30 items 2, 6): a real process holding a stand-in card
file while the recorded card is idle with memory held alerts once, after the (shortened) threshold,
naming the process and its owner, also when a second watcher (the panel beside `gaudi-tui watch`)
sees it; a port that goes down and ECC errors that rise alert once each."""

from __future__ import annotations

import getpass
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gaudi_tui.core.alerts.cards import CardRules
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.alerts.watcher import CardWatcher
from gaudi_tui.core.devices.feed import MonitorUpdate
from gaudi_tui.core.devices.holders import HolderScanner
from gaudi_tui.core.devices.model import DeviceSnapshot
from gaudi_tui.core.devices.sources.replay import ReplayFeed, resolve, snapshots
from gaudi_tui.core.devices.usage import BUSY_MIB, memory_busy
from gaudi_tui.data import ALERT_RULES
from tests.alerts.conftest import kept, wait_for
from tests.conftest import PYTHON, SAMPLES

PROCESS_TABLE = SAMPLES / "gaudi2-hl225-x8-1.16.0-process-table.txt"
"""Recorded: card 6 holds 27098 MiB at 0 % utilization (a Ray Serve replica); the other cards are idle."""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A real process holding the stand-in node of card 6, and the node pattern that matches it."""
    node = tmp_path / "accel" / "accel6"
    node.parent.mkdir()
    node.touch()
    child = subprocess.Popen(
        [PYTHON, "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); print('ready', flush=True); "
         "sys.stdin.read()", str(node)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    yield child, rf"^{re.escape(str(node.parent))}/accel(\d+)$"
    child.kill()
    child.wait(5)


class Counted:
    """A watcher's `on_update` that counts the updates it took."""

    def __init__(self, watcher: CardWatcher) -> None:
        self.watcher, self.updates = watcher, 0
        self.sent: list[Alert] = []
        self.first: float | None = None
        """When it took its first update (the card already idle with memory held)."""

    def __call__(self, update: MonitorUpdate) -> None:
        if self.first is None:
            self.first = time.time()
        self.sent += self.watcher.on_update(update)
        self.updates += 1


def run_feed(on_update: Counted, name: str, cancel: threading.Event) -> threading.Thread:
    replay = resolve(name)
    feed = ReplayFeed(
        snapshots(replay), 0.05, on_update, cancel, host_reader=lambda: None, hold_last=replay.hold_last
    )
    thread = threading.Thread(target=feed.run, daemon=True)
    thread.start()
    return thread


def test_a_card_idle_with_memory_held_alerts_once_naming_its_holder(
    holder: tuple[subprocess.Popen[str], str],
) -> None:
    child, pattern = holder
    config = AlertConfig(idle_held_s=1.0, off=("hbm_full",))
    first = Counted(CardWatcher(config, HolderScanner(node_pattern=pattern), host="node7"))
    second = Counted(CardWatcher(config, HolderScanner(node_pattern=pattern), host="node7"))
    cancel = threading.Event()
    threads = [run_feed(first, str(PROCESS_TABLE), cancel)]
    try:
        wait_for(lambda: first.updates >= 3, 10, "three updates")
        threads.append(run_feed(second, str(PROCESS_TABLE), cancel))
        (alert,) = wait_for(lambda: kept("idle_held"), 15, "the idle-held alert")  # type: ignore[misc]
        assert first.first is not None and alert.time >= first.first + config.idle_held_s  # not before
        seen = first.updates + second.updates
        wait_for(lambda: first.updates + second.updates >= seen + 40, 15, "40 more updates of both watchers")
    finally:
        cancel.set()
        for thread in threads:
            thread.join(5)
    assert len(kept("idle_held")) == 1 and len(first.sent) + len(second.sent) == 1
    assert alert.subject == "node7 card 6" and alert.title == "Card idle with memory held"
    assert f"PID {child.pid}" in alert.text and f"({getpass.getuser()})" in alert.text
    assert "27098 MiB" in alert.text
    assert "PID 618796 ray::ServeRepli" in alert.text  # the recording's own process table names it too


def test_a_port_going_down_alerts_once() -> None:
    watcher = Counted(CardWatcher(AlertConfig(), host="node7"))
    cancel = threading.Event()
    thread = run_feed(watcher, "gaudi2-port-down", cancel)
    try:
        wait_for(lambda: watcher.updates >= 20, 15, "20 updates (the port stays down after the 4th)")
    finally:
        cancel.set()
        thread.join(5)
    (alert,) = kept("port_down")
    assert alert.text == "node7 card 3: port 8 is down" and alert.severity == "critical"


def test_ecc_errors_rising_alert_once_per_rise_and_hbm_near_full_once() -> None:
    busy = snapshots(resolve("gaudi2"))[2]  # recorded: card 3 at 96565 of 98304 MiB

    def with_errors(count: int) -> MonitorUpdate:
        devices = tuple(replace(d, uncorrected_errors=count if d.index == 1 else 0) for d in busy.devices)
        return MonitorUpdate(replace(busy, devices=devices), None, ())

    watcher = CardWatcher(AlertConfig(hbm_full_pct=98.0), host="node7")
    for count in (0, 0, 2, 2, 2, 5, 5):
        watcher.on_update(with_errors(count))
    assert [a.text for a in kept("ecc_rising")] == [
        "node7 card 1: uncorrected ECC errors 0 → 2",
        "node7 card 1: uncorrected ECC errors 2 → 5",
    ]
    # cards 3 and 5 hold 96565 and 96564 of 98304 MiB (98.2 %) in all seven updates: once each
    assert sorted(a.subject for a in kept("hbm_full")) == ["node7 card 3", "node7 card 5"]


def test_a_busy_card_or_one_with_little_memory_is_not_idle_held() -> None:
    busy = snapshots(resolve("gaudi2"))[0]
    rules = CardRules(AlertConfig(idle_held_s=0.0), "node7")
    working = replace(
        busy, devices=tuple(replace(d, memory_used_mib=20000, utilization_pct=80.0) for d in busy.devices)
    )
    assert rules.update(working, (), 0.0) == []
    assert rules.update(busy, (), 0.0) == []  # 768 MiB: what an idle Gaudi 2 shows with nothing on it


def test_held_is_one_threshold_for_the_alert_the_panel_and_the_prometheus_rule() -> None:
    """A card is held above `usage.BUSY_MIB` (the Devices screen's own word) for the alert too, and
    the shipped Prometheus rule fires above the same number of bytes."""
    assert AlertConfig().held_mib == BUSY_MIB
    (rule,) = (
        rule
        for group in yaml.safe_load(ALERT_RULES.read_text())["groups"]
        for rule in group["rules"]
        if rule["alert"] == "GaudiCardIdleWithMemoryHeld"
    )
    (threshold,) = re.findall(r"habanalabs_memory_used_bytes > (\d+)", rule["expr"])
    assert int(threshold) == BUSY_MIB * 1024 * 1024
    idle = snapshots(resolve("gaudi2"))[0]
    rules = CardRules(AlertConfig(idle_held_s=0.0), "node7")

    def idle_at(mib: int) -> DeviceSnapshot:
        return replace(
            idle, devices=tuple(replace(d, memory_used_mib=mib, utilization_pct=0.0) for d in idle.devices)
        )

    assert [memory_busy(d) for d in idle_at(BUSY_MIB).devices] == [False] * len(idle.devices)
    assert rules.update(idle_at(1536), (), 0.0) == []  # more than 1 GiB, not held for the panel
    assert rules.update(idle_at(BUSY_MIB), (), 0.0) == []  # the panel holds a card *above* BUSY_MIB
    held = rules.update(idle_at(BUSY_MIB + 1), (), 0.0)
    assert len(held) == len(idle.devices) and {a.kind for a in held} == {"idle_held"}
    assert all(memory_busy(d) for d in idle_at(BUSY_MIB + 1).devices)
