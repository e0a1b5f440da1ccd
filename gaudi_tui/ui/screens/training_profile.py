"""Training's `P`: the dialog that chooses how many steps to profile, and the request itself, which
is `core/jobs/profile_ask`, the call `gaudi-tui jobs profile` makes (its refusals are the same).
The profile shows in Details (`InsightPanel`) once the job has written it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from gaudi_tui.core.insight.profile import DEFAULT_STEPS, MAX_STEPS
from gaudi_tui.core.jobs.profile_ask import ask
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.ui.screens.dialog import Dialog


class ProfileDialog(Dialog[int | None]):
    """How many steps to record: Enter asks, Esc cancels (None)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="profile.cancel")]
    DEFAULT_CSS = "ProfileDialog #profile-error { color: $error; }"

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(f"Profile {self.run_id}", classes="dialog-title", markup=False)
            yield Static(
                f"How many steps should torch.profiler record (1 to {MAX_STEPS})? The job goes on "
                "without a restart; the trace lands in its run folder and Details lists its top ops.",
                markup=False,
            )
            yield Input(str(DEFAULT_STEPS), type="integer", id="profile-steps", compact=True)
            yield Static("", id="profile-error", markup=False)
            yield Static("Enter asks · Esc cancels", classes="dialog-hint", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            steps = int(event.value)
        except ValueError:
            steps = 0
        if not 1 <= steps <= MAX_STEPS:
            self.query_one("#profile-error", Static).update(
                f"Give a whole number of steps, 1 to {MAX_STEPS}."
            )
            return
        self.dismiss(steps)

    def action_cancel(self) -> None:
        self.dismiss(None)


def asked(run: RunFolder, steps: int) -> str:
    """Ask for the profile; what to say (a refusal raises, as the other job actions' do)."""
    from gaudi_tui.core.jobs.control import JobControlError

    if (why := ask(run, steps)) is not None:
        raise JobControlError(f"no profile of {run.id}: {why}")
    return f"a profile of {steps} steps asked of {run.id}: Details shows it once the job has taken it"
