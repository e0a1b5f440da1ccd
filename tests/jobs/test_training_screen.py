"""The Training screen with Pilot: job list, charts, log, form, stop/kill/resume keys."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import psutil
from textual.widgets import Checkbox, DataTable, Input, Log, Select, Static, TabbedContent

from gaudi_tui.core.jobs import control, runfolder, supervisor
from gaudi_tui.core.jobs.status import ProcRef
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.job_form import JobFormScreen
from gaudi_tui.ui.screens.training import TrainingScreen
from gaudi_tui.ui.screens.training_poll import JobsPoller
from tests.conftest import CPU, PYTHON
from tests.jobs.conftest import replay, tiny, wait_done, wait_for
from tests.pilot import settle


def make_app() -> GaudiApp:
    return GaudiApp(accelerator=CPU, hostname="gaudi-host")


def rows(app: GaudiApp) -> list[list[str]]:
    table = app.screen.query_one("#jobs", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_a_job_named_like_markup_is_shown_as_its_name() -> None:
    """A job's name is its spec's (a team's shared runs folder): the list shows it as text, not as
    markup (`[/x]` raised MarkupError and stopped the panel)."""
    run = replay()
    spec = run.path / "spec.toml"
    spec.write_text(spec.read_text().replace('name = "demo fine-tune"', 'name = "[/x] [bold]b"'))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: rows(app))
        assert rows(app)[0][0] == "[/x] [bold]b · " + run.id[-4:]


async def test_recorded_run_shows_in_the_list_with_charts_and_log() -> None:
    run = replay()
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: rows(app))
        assert rows(app) == [
            ["demo fine-tune · " + run.id[-4:], "succeeded", "3:42", "200/200", "—", "0.1311"]
        ]
        screen = app.screen
        assert isinstance(screen, TrainingScreen)
        await settle(pilot, lambda: bool(screen.query("#job-log")))  # the panes mount after the list
        await settle(pilot, lambda: screen.query_one("#job-log", Log).line_count > 10)

        def loss_title() -> str:
            return screen.query_one("#chart-loss").plt._active.monitor.title  # noqa: SLF001 - plotext state

        await settle(pilot, lambda: loss_title() != "loss: no data yet")  # the series loads off the UI thread
        assert loss_title().startswith("loss 0.1311 (smoothed"), loss_title()
        await pilot.press("l")
        assert screen.query_one("TabbedContent").active == "log"
        await pilot.press("d")
        details = str(screen.query_one("#job-details", Static).render())
        assert f"folder   {run.path}" in details and "max_steps            200" in details


async def test_form_refuses_bad_input_and_creates_nothing(tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4", "n")
        form = app.screen
        assert isinstance(form, JobFormScreen)
        form.query_one("#f-batch_size", Input).value = "lots"
        await pilot.press("ctrl+s")
        assert "batch_size: 'lots' is not a whole number" in str(form.query_one("#form-problems").render())
        form.query_one("#f-batch_size", Input).value = "0"
        form.query_one("#f-dataset", Input).value = str(tmp_path / "missing.csv")
        await pilot.press("ctrl+s")
        await settle(pilot, lambda: "dataset:" in str(form.query_one("#form-problems").render()))
        shown = str(form.query_one("#form-problems").render())
        assert "batch_size: 0 is not between 1 and 65536" in shown
        assert "missing.csv does not exist: check the path" in shown
        assert runfolder.all_runs() == []
        await pilot.press("escape")
        assert isinstance(app.screen, TrainingScreen)


async def test_presets_fill_the_form_and_devices_cards_are_used() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.selected_cards = (0, 1)
        await pilot.press("4", "n")
        form = app.screen
        assert form.query_one("#f-cards", Input).value == "0,1"
        assert form.query_one("#f-lora", Checkbox).value is False
        form.query_one("#preset", Select).value = "QLoRA"
        await pilot.pause()
        assert form.query_one("#f-lora", Checkbox).value is True
        assert form.query_one("#f-quantization", Select).value == "nf4"
        assert form.query_one("#f-cards", Input).value == "0,1"


async def test_keys_on_a_finished_job_explain_why_nothing_happens() -> None:
    replay()
    app = make_app()
    notes: list[str] = []
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("4")
        await settle(pilot, lambda: rows(app))
        await pilot.press("s", "r", "k", "k")
        await settle(pilot, lambda: len(notes) > 3)
        armed = "Press k again to kill this job (no checkpoint is saved)."
        assert armed in notes
        done = [n for n in notes if n != armed]  # off the UI thread, in the order the keys came
        assert done[0].endswith("is succeeded: nothing to stop.")
        assert "already finished; its weights are in" in done[1]
        assert done[2].endswith("is succeeded: nothing to kill.")


async def test_r_waits_for_a_jobs_exiting_processes_off_the_ui_thread() -> None:
    """r on a job that just ended waits for its processes to exit (up to 10 s): the panel answers
    keys meanwhile, and r's answer comes before that of a key pressed after it. The exiting
    process is held until the test lets it go (its stdin closed), so no moment is guessed."""
    run = replay()
    exiting = subprocess.Popen(  # noqa: ASYNC220 - its supervisor
        [PYTHON, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        status = run.status()
        ref = ProcRef.of(exiting.pid)
        assert status is not None and ref is not None
        run.write_status(status.with_(state="cancelled", ended=time.time(), supervisor=ref))
        app = make_app()
        notes: list[str] = []
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
            await pilot.press("4")
            await settle(pilot, lambda: rows(app))
            await pilot.press("r", "s", "l")  # l while r waits: the screen still answers keys
            panes = app.screen.query_one(TabbedContent)
            await settle(pilot, lambda: panes.active == "log")
            assert exiting.poll() is None and notes == []  # r is still waiting, s behind it
            assert exiting.stdin is not None
            exiting.stdin.close()  # the job's last process exits now
            await settle(pilot, lambda: len(notes) > 1)
            assert "no complete checkpoint" in notes[0] and notes[1].endswith("nothing to stop.")
            assert exiting.poll() is not None  # r waited for it
    finally:
        exiting.kill()
        exiting.wait(5)


async def test_a_job_that_fails_at_run_time_shows_its_error(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("prompt\nhello\n")
    run = runfolder.create(tiny(dataset=str(data)), accelerator="cpu")  # as if the file changed after launch
    supervisor.start(run)
    assert wait_done(run) == "failed"
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        error = app.screen.query_one("#job-error", Static)
        await settle(pilot, lambda: "failed" in str(error.render()))
        assert (
            str(error.render())
            == "failed: dataset d.csv has no column 'text' (columns: prompt); set text_field"
        )


def test_snapshot_of_a_recorded_run(snap_compare) -> None:  # noqa: ANN001 - pytest-textual-snapshot fixture
    replay()

    async def until_drawn(pilot) -> None:  # noqa: ANN001
        await pilot.press("4")
        await settle(pilot, lambda: rows(pilot.app) and "loss 0" in _loss_title(pilot.app))
        await pilot.pause(0.3)

    assert snap_compare(make_app(), terminal_size=(100, 30), run_before=until_drawn)


def _loss_title(app: GaudiApp) -> str:
    """The loss chart's title; empty while the panes are still to mount after the list."""
    charts = app.screen.query("#chart-loss")
    return str(charts.first().plt._active.monitor.title) if charts else ""  # noqa: SLF001 - plotext state


async def test_form_launch_carries_the_checklists_env_fixes_into_the_job() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.env_fixes = {"PT_ENABLE_INT64_SUPPORT": "1"}
        await pilot.press("4", "n")
        form = app.screen
        form.query_one("#f-max_steps", Input).value = "10000"
        form.query_one("#f-kill_grace_s", Input).value = "3"
        await pilot.press("ctrl+s")
        await settle(
            pilot, lambda: isinstance(app.screen, TrainingScreen) and runfolder.all_runs(), timeout=20
        )
    (run,) = runfolder.all_runs()
    try:
        assert run.spec().env == {"PT_ENABLE_INT64_SUPPORT": "1"}
        launcher = wait_for(lambda: (s := run.status()) and s.launcher, 30, "the launcher")
        assert psutil.Process(launcher.pid).environ()["PT_ENABLE_INT64_SUPPORT"] == "1"
    finally:
        control.kill(run)
    assert wait_done(run, timeout=30) == "cancelled"


async def test_the_list_draws_before_the_panes_which_then_show_the_run_at_once(monkeypatch) -> None:  # noqa: ANN001
    """Key 4: the list's first frame carries the rows alone; the tabs, charts, log and details mount
    right after it and show the selected run (issue 28: the list draws sooner)."""
    run = replay()
    panes_with_rows: list[bool] = []
    polled = TrainingScreen.on_jobs_polled

    def spy(self: TrainingScreen, message) -> None:  # noqa: ANN001
        if message.order is not None:
            panes_with_rows.append(bool(self.query(TabbedContent)))
        polled(self, message)

    monkeypatch.setattr(TrainingScreen, "on_jobs_polled", spy)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: rows(app) and app.screen.query("#job-details"))
        assert panes_with_rows[0] is False
        details = app.screen.query_one("#job-details", Static)
        await settle(pilot, lambda: run.id in str(details.render()))
        await settle(pilot, lambda: app.screen.query_one("#job-log", Log).line_count > 10)


async def test_with_no_runs_the_panes_still_come() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: app.screen.query(TabbedContent))
        assert app.screen.query_one("#empty").display
        await pilot.press("l")
        assert app.screen.query_one(TabbedContent).active == "log"


async def test_a_pane_key_pressed_before_the_panes_mount_opens_them_on_that_pane(monkeypatch) -> None:  # noqa: ANN001
    """The key comes while the list is not loaded yet, on every machine: the screen's first poll (the
    real one) is held at its start until the key was pressed, so the panes can only mount after it."""
    replay()
    polling, loaded = threading.Event(), threading.Event()
    poll = JobsPoller.poll

    def held(self: JobsPoller, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        polling.set()
        loaded.wait(30)
        return poll(self, *args, **kwargs)

    monkeypatch.setattr(JobsPoller, "poll", held)
    app = make_app()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("4")
            await settle(pilot, polling.is_set, what="the list's first poll, held")
            assert isinstance(app.screen, TrainingScreen) and not rows(app)  # not loaded yet
            await pilot.press("l")
            assert not app.screen.query(TabbedContent)  # no panes yet: the key waits for them
            loaded.set()

            def opened() -> str:  # the pane the panes opened on ("" until their tabs are set up)
                return next((panes.active for panes in app.screen.query(TabbedContent)), "")

            await settle(pilot, lambda: opened() and rows(app), what="the panes, opened on a pane")
            assert opened() == "log"
    finally:
        loaded.set()


async def test_the_newest_rows_come_first_and_the_older_ones_after_that_frame(monkeypatch) -> None:  # noqa: ANN001
    import shutil

    from gaudi_tui.ui.screens.training import FIRST_ROWS

    run = replay()
    for i in range(FIRST_ROWS + 9):
        shutil.copytree(run.path, run.path.with_name(f"{run.path.name}-{i:03d}"))
    first_frame: list[int] = []
    polled = TrainingScreen.on_jobs_polled

    def spy(self: TrainingScreen, message) -> None:  # noqa: ANN001
        polled(self, message)
        if message.order is not None:
            first_frame.append(self.query_one("#jobs", DataTable).row_count)

    monkeypatch.setattr(TrainingScreen, "on_jobs_polled", spy)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        table = app.screen.query_one("#jobs", DataTable)
        await settle(pilot, lambda: table.row_count == FIRST_ROWS + 10)
        assert first_frame[0] == FIRST_ROWS
