"""The card feed goes on past an update whose alert rules raise (issue 38, A.4): the raise once ended
the feed's thread, and `gaudi-tui watch` (which runs while that thread does) exited without a word.
Now the update sends nothing, it is logged once, and the next updates are checked. The rules are
made to raise on purpose for the first updates (a rule's bug: any exception)."""

from __future__ import annotations

import logging
import threading

import pytest

from gaudi_tui.core.alerts.cards import CardRules
from gaudi_tui.core.alerts.config import AlertConfig
from gaudi_tui.core.alerts.watcher import CardWatcher
from tests.alerts.conftest import kept, wait_for
from tests.alerts.test_card_alerts import Counted, run_feed


def test_a_port_down_is_still_sent_after_updates_whose_rules_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    checked: list[float] = []
    update = CardRules.update

    def flaky(self: CardRules, snapshot, holders, now):  # noqa: ANN001, ANN202
        checked.append(now)
        if len(checked) <= 3:
            raise ValueError("a rule's bug")
        return update(self, snapshot, holders, now)

    monkeypatch.setattr(CardRules, "update", flaky)
    watcher = Counted(CardWatcher(AlertConfig(), host="node7"))
    cancel = threading.Event()
    with caplog.at_level(logging.ERROR, logger="gaudi_tui.core.alerts.watcher"):
        thread = run_feed(watcher, "gaudi2-port-down", cancel)
        try:
            wait_for(lambda: kept("port_down"), 15, "the port-down alert after the raising updates")
            assert thread.is_alive()
        finally:
            cancel.set()
            thread.join(5)
    assert len(caplog.records) == 1 and len(checked) > 3
