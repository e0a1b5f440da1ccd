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


def test_a_settled_runs_details_are_made_once() -> None:
    """Idle on a finished run: its details text is not made again at every poll; a change in its
    folder (a STOP file) makes it again."""
    run = replay()
    made: list[str] = []

    def describe(view, run, spec, nodes) -> str:  # noqa: ANN001
        made.append(view.state)
        return view.state

    poller = JobsPoller(describe, lambda run: "")
    for _ in range(4):
        poller.poll(run.id, history=False)
    assert made == ["succeeded"]
    run.stop_path.write_text("")
    poller.poll(run.id, history=False)
    assert len(made) == 2


def test_after_a_poll_that_found_nothing_new_the_next_one_waits_longer() -> None:
    """Idle on a list of ended runs the poll backs off to IDLE_POLL_S; a run that appears brings
    it back to POLL_S at once (issue 28: idle CPU)."""
    import shutil

    from gaudi_tui.ui.screens import training_poll

    run = replay()
    poller = JobsPoller(lambda view, run, spec, nodes: view.state, lambda run: "")
    assert poller.poll(None, history=False) is not None
    assert poller.wait_s == training_poll.POLL_S
    assert poller.poll(None, history=False) is None
    assert poller.wait_s == training_poll.IDLE_POLL_S > training_poll.POLL_S
    shutil.copytree(run.path, run.path.with_name(run.path.name + "-copy"))
    message = poller.poll(None, history=False)
    assert message is not None and message.order is not None and len(message.order) == 2
    assert poller.wait_s == training_poll.POLL_S


def test_a_newly_selected_run_s_charts_come_with_its_first_poll() -> None:
    """Once the list may be drawn, the selected run's first poll (its panes reset) carries its
    history already: the charts do not wait for the next poll (issue 41: a long run's first open)."""
    run = replay()
    poller = JobsPoller(lambda view, run, spec, nodes: view.state, lambda run: "")
    message = poller.poll(run.id, history=True)
    assert message is not None and message.detail is not None and message.detail.reset_log
    assert message.detail.charts is not None and message.detail.charts.latest["loss"] > 0
