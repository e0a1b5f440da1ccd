"""The Training screen's poll of the run folders (ui/screens/training_poll.py), without the screen."""

from __future__ import annotations

from gaudi_tui.ui.screens.training_poll import JobsPoller
from tests.jobs.conftest import replay


def test_the_chart_history_is_read_only_once_the_list_may_be_drawn() -> None:
    """The list's first rows come without the history; a poll with `history` reads it."""
    run = replay()
    poller = JobsPoller(lambda view, run, spec, nodes: view.state, lambda run: "")
    for _ in range(3):  # the first poll posts the rows; the next ones would read the history
        message = poller.poll(None, history=False)
        assert poller.charts is not None and poller.charts.offset == 0
    assert message is None  # nothing changed: nothing posted
    message = poller.poll(None, history=True)
    assert message is not None and message.detail is not None and message.detail.charts is not None
    assert poller.charts.offset == run.metrics_path.stat().st_size
    assert message.detail.charts.latest["loss"] > 0
