"""What the Training screen does to the selected job, off the UI thread and in the order pressed:
`s` graceful stop, `k` kill (press twice), `r` resume, `P` a profile of N steps (training_profile.py).
Each answer or refusal is a notification."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial

from textual import work
from textual.widgets import TabbedContent
from textual.worker import get_current_worker

from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.profile_ask import refusal
from gaudi_tui.ui.screens.base import PanelScreen
from gaudi_tui.ui.screens.training_details import stop_words
from gaudi_tui.ui.screens.training_profile import ProfileDialog, asked

KILL_CONFIRM_S = 5.0


class JobActionsScreen(PanelScreen):
    """The Training screen's job actions, on the job `selected` names."""

    def __init__(self) -> None:
        super().__init__()
        self.selected: str | None = None
        self._kill_armed: tuple[str, float] | None = None
        self._last_action = threading.Event()
        self._last_action.set()
        self._pane = "charts"

    def _selected_run(self) -> runfolder.RunFolder | None:
        if self.selected is None:
            self.notify("No job selected: press n to launch one.", severity="warning")
            return None
        try:
            return runfolder.find(self.selected)
        except runfolder.RunNotFound as exc:
            self.notify(str(exc), severity="error")
            return None

    def action_pane(self, pane: str) -> None:
        self._pane = pane  # the panes mount after the list: they open on it
        for panes in self.query(TabbedContent):
            if panes.children:  # its tabs are there (a key pressed while they mount: they open on it)
                panes.active = pane

    def action_stop_job(self) -> None:
        run = self._selected_run()
        if run is not None:
            self.in_order(run, lambda r, cancel: self._stopped(r), "stop job")

    @staticmethod
    def _stopped(run: runfolder.RunFolder) -> str:
        from gaudi_tui.core.jobs import control

        control.stop(run)
        return stop_words(run)

    def action_kill_job(self) -> None:
        run = self._selected_run()
        if run is None:
            return
        armed = self._kill_armed
        now = time.monotonic()
        if armed is None or armed[0] != run.id or now - armed[1] > KILL_CONFIRM_S:
            self._kill_armed = (run.id, now)
            self.notify("Press k again to kill this job (no checkpoint is saved).", severity="warning")
            return
        self._kill_armed = None
        from gaudi_tui.core.jobs import control

        self.in_order(run, lambda r, cancel: control.kill(r, cancel=cancel), "kill job")

    def action_resume_job(self) -> None:
        from gaudi_tui.core.jobs import control

        run = self._selected_run()
        if run is not None:  # it may ask a cluster, or wait for a job's processes to exit
            self.in_order(run, lambda r, cancel: control.resume(r), "resume job")

    def action_profile_job(self) -> None:
        """Ask the selected running job for a profile: N chosen in a dialog, then Details shows it."""
        run = self._selected_run()
        if run is None:
            return
        if (why := refusal(run)) is not None:
            self.notify(f"No profile of {run.id}: {why}.", severity="warning", markup=False)
            return
        self.app.push_screen(ProfileDialog(run.id), partial(self._profile, run))

    def _profile(self, run: runfolder.RunFolder, steps: int | None) -> None:
        if steps is not None:
            self.action_pane("details")  # where the profile shows once the job has taken it
            self.in_order(run, lambda r, cancel: asked(r, steps), "ask for a profile")

    def in_order(
        self,
        run: runfolder.RunFolder,
        action: Callable[[runfolder.RunFolder, threading.Event], str],
        description: str,
    ) -> None:
        """Run a job action off the UI thread, after the actions pressed before it (r then k k:
        the kill sees what the resume did); its answer or refusal is the notification."""
        before, done = self._last_action, threading.Event()
        self._last_action = done
        self._act(run, action, before, done, description)

    @work(thread=True, exit_on_error=False, group="job-action", description="job action")
    def _act(
        self,
        run: runfolder.RunFolder,
        action: Callable[[runfolder.RunFolder, threading.Event], str],
        before: threading.Event,
        done: threading.Event,
        description: str,
    ) -> None:
        from gaudi_tui.core.jobs import control  # the stop/kill/resume code loads on first use

        cancel = get_current_worker().cancelled_event
        try:
            while not before.wait(0.2):
                if cancel.is_set():
                    return
            said, severity = action(run, cancel), "information"
        except control.JobControlError as exc:
            said, severity = str(exc), "warning"
        except OSError as exc:  # the run folder cannot be read or written: say so, keep the panel
            said, severity = f"cannot {description}: {exc}", "error"
        finally:
            done.set()
        self.app.call_from_thread(self.notify, said[:1].upper() + said[1:] + ".", severity=severity)
