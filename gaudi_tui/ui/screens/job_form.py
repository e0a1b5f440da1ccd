"""`n` on Training: a keyboard form for a new job, with presets; validates, then launches detached.

It shows the settings of the chosen kind and target only (`spec_fields`), what a user must fill
first at the top and the advanced ones folded away; each setting's problem is shown under it as it
is typed (the value cannot be read, or `validate.numbers` refuses it) and after a launch is refused
(every check), and a refused launch puts the cursor on the first setting with a problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Checkbox, Collapsible, Input, Label, Select, Static

from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs import spec_fields
from gaudi_tui.core.jobs.spec import PRESETS, JobSpec, SpecError
from gaudi_tui.core.jobs.validate import Problem, numbers
from gaudi_tui.ui.screens.base import gaudi_app
from gaudi_tui.ui.screens.dialog import Dialog

Editor = Checkbox | Select[Any] | Input


class JobFormScreen(Dialog[str | None]):
    """Dismissed with the new run's id, or None when cancelled."""

    DEFAULT_CSS = """
    JobFormScreen > .dialog { width: 90; height: 100%; max-height: 40; }
    JobFormScreen #preset { width: 100%; }
    JobFormScreen VerticalScroll { height: 1fr; }
    JobFormScreen Grid { grid-size: 2; grid-columns: 22 1fr; grid-rows: auto; height: auto; }
    JobFormScreen Grid > Label { padding: 0 1 0 0; height: 1; }
    JobFormScreen Grid > Input, JobFormScreen Grid > Checkbox { height: 1; border: none; padding: 0; }
    JobFormScreen Grid > Select { height: 1; }
    JobFormScreen Grid > Select > SelectCurrent { border: none; height: 1; padding: 0 1; }
    JobFormScreen Grid > .field-problem { column-span: 2; padding: 0 0 0 22; color: $error; height: auto; }
    JobFormScreen #form-advanced { padding: 0; border-top: none; background: $surface; }
    JobFormScreen #form-advanced > Contents { padding: 0; }
    JobFormScreen #form-problems { color: $error; height: auto; max-height: 8; }
    JobFormScreen #form-hint { color: $text-muted; height: 1; }
    JobFormScreen #form-cluster { height: auto; max-height: 8; display: none; }
    """
    BINDINGS = [
        Binding("ctrl+s", "launch", "Launch", id="jobform.launch", priority=True),
        Binding("escape", "cancel", "Cancel", id="jobform.cancel"),
        Binding("ctrl+r", "cluster_nodes", "Cluster nodes", id="jobform.nodes"),
    ]

    def __init__(self, selected_cards: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.selected_cards = selected_cards
        self.launching = False
        self.main, self.advanced = spec_fields.form_order(spec_mod.field_names())
        self.refused: dict[str, str] = {}
        """The problems of the last refused launch, by setting, each kept until that setting changes."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("New training job", classes="dialog-title", markup=False)
            yield Select(
                [(name, name) for name in PRESETS], value="demo fine-tune", allow_blank=False, id="preset"
            )
            with VerticalScroll(can_focus=False):
                with Grid(id="form-main"):
                    yield from self._rows(self.main)
                with Collapsible(title="Advanced", collapsed=True, id="form-advanced"):
                    with Grid():
                        yield from self._rows(self.advanced)
            yield Static("", id="form-cluster", markup=False)
            yield Static("", id="form-problems", markup=False)
            yield Static(
                "tab/shift+tab move · space toggles · enter or ctrl+s launches · ctrl+r cluster nodes · "
                "esc cancels",
                id="form-hint",
                markup=False,
            )

    def _rows(self, names: Iterable[str]) -> ComposeResult:
        for name in names:
            yield Label(name, markup=False, id=f"l-{name}")
            yield self._editor(name)
            yield Static("", classes="field-problem", markup=False, id=f"p-{name}")

    def _editor(self, name: str) -> Widget:
        help_text = spec_mod.field_help(name)
        hint = spec_mod.field_type(name)
        allowed = spec_mod.choices(name)
        widget: Widget
        if hint is bool:
            widget = Checkbox(help_text, id=f"f-{name}")
        elif allowed:
            widget = Select([(c, c) for c in allowed], allow_blank=False, id=f"f-{name}")
        else:  # not select_on_focus: a key typed after tab would replace the whole value
            widget = Input(id=f"f-{name}", placeholder=help_text, select_on_focus=False)
        widget.tooltip = help_text
        return widget

    def on_mount(self) -> None:
        self.fill(PRESETS["demo fine-tune"])
        self.query_one("#preset", Select).focus()

    def editor(self, name: str) -> Editor:
        return cast(Editor, self.query_one(f"#f-{name}"))  # every setting's editor is one of these

    def fill(self, spec: JobSpec) -> None:
        if self.selected_cards and not spec.cards:
            spec = spec_mod.from_mapping({"cards": list(self.selected_cards)}, base=spec)
        for name in spec_mod.field_names():
            value = getattr(spec, name)
            widget = self.editor(name)
            if isinstance(widget, Checkbox):
                widget.value = bool(value)
            elif isinstance(widget, Select):
                widget.value = value
            else:
                widget.value = spec_mod.display(name, value)
        self.refused = {}
        self.show_fields(spec.kind, spec.target)

    def chosen(self) -> tuple[str, str]:
        return str(self.editor("kind").value), str(self.editor("target").value)

    def show_fields(self, kind: str, target: str) -> None:
        """Only the settings of this kind of job on this target are shown (your command: its
        arguments, launcher, metrics source; the built-in job: model, data, LoRA; Ray's and Slurm's
        settings on their target only). What was typed in a hidden one is kept."""
        for name in spec_mod.field_names():
            shown = spec_fields.applies(name, kind, target)
            self.query_one(f"#l-{name}").display = shown
            self.editor(name).display = shown
        self.check()

    @on(Select.Changed, "#f-kind")
    @on(Select.Changed, "#f-target")
    def kind_or_target_chosen(self) -> None:
        self.show_fields(*self.chosen())

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def edited(self, event: Input.Changed | Select.Changed | Checkbox.Changed) -> None:
        widget_id = event.control.id or ""
        if widget_id.startswith("f-"):
            self.refused.pop(widget_id.removeprefix("f-"), None)
            self.check()

    def check(self) -> dict[str, str]:
        """Show each shown setting's problem under it; the problems by setting."""
        problems = {**self.read()[1], **self.refused}
        kind, target = self.chosen()
        for name in spec_mod.field_names():
            message = problems.get(name, "")
            box = self.query_one(f"#p-{name}", Static)
            box.update(message)
            box.display = bool(message) and spec_fields.applies(name, kind, target)
        return problems

    @on(Select.Changed, "#preset")
    def preset_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value in PRESETS:
            self.fill(PRESETS[event.value])

    @on(Select.Changed, "#f-target")
    def target_chosen(self, event: Select.Changed) -> None:
        if event.value == "ray":
            self.action_cluster_nodes()
        else:
            self.query_one("#form-cluster", Static).display = False

    def action_cluster_nodes(self) -> None:
        """Show the nodes of the cluster at the typed address (or $RAY_ADDRESS)."""
        address = self.query_one("#f-ray_address", Input).value.strip() or spec_mod.default_ray_address()
        shown = self.query_one("#form-cluster", Static)
        shown.display = True
        if not address:
            shown.update("Ray: type the dashboard URL in ray_address (e.g. http://127.0.0.1:8265)")
            return
        shown.update(f"asking {address} for its nodes…")
        self.fetch_nodes(address)

    @work(thread=True, exclusive=True, exit_on_error=False, group="job-nodes", description="cluster nodes")
    def fetch_nodes(self, address: str) -> None:
        from gaudi_tui.core.jobs.targets.ray import nodes

        try:
            text = nodes.format_nodes(nodes.list_nodes(address))
        except nodes.ClusterError as exc:
            text = str(exc)
        self.app.call_from_thread(self.query_one("#form-cluster", Static).update, text)

    def read(self) -> tuple[JobSpec | None, dict[str, str]]:
        """The spec typed in, or None; and the problems by setting: values that cannot be read,
        else the numbers `validate` refuses (quick checks; the launch runs every check)."""
        values: dict[str, object] = {}
        problems: dict[str, str] = {}
        for name in spec_mod.field_names():
            try:
                values[name] = spec_mod.coerce(name, self.editor(name).value)
            except SpecError as exc:
                problems[name] = str(exc).removeprefix(f"{name}: ")
        if problems:
            return None, problems
        spec = spec_mod.from_mapping(values)
        return spec, {p.field: p.message for p in reversed(numbers(spec))}  # the first one per setting

    def show_problems(self, problems: list[Problem]) -> None:
        """The problems listed under the form, each also under its setting; the cursor to the first."""
        said = (str(p) if p.field else p.message for p in problems)
        self.query_one("#form-problems", Static).update("\n".join(said))
        names = spec_mod.field_names()
        self.refused = {p.field: p.message for p in reversed(problems) if p.field in names}
        self.check()
        kind, target = self.chosen()
        bad = [
            n
            for n in (*self.main, *self.advanced)
            if n in self.refused and spec_fields.applies(n, kind, target)
        ]
        if bad:
            if bad[0] in self.advanced:
                self.query_one("#form-advanced", Collapsible).collapsed = False
            self.call_after_refresh(self.editor(bad[0]).focus)

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.action_launch()

    def action_launch(self) -> None:
        if self.launching:
            return
        accel = gaudi_app(self).accelerator
        if accel is None:
            self.show_problems(
                [Problem("", "the accelerator is still being detected: try again in a moment")]
            )
            return
        spec, problems = self.read()
        if spec is None:
            self.show_problems([Problem(name, message) for name, message in problems.items()])
            return
        self.launching = True
        self.query_one("#form-problems", Static).update("checking and launching…")
        self.submit(spec, accel, dict(gaudi_app(self).env_fixes))

    @work(thread=True, exclusive=True, exit_on_error=False, group="job-submit", description="launch job")
    def submit(self, spec: JobSpec, accel, env_fixes: dict[str, str]) -> None:  # noqa: ANN001
        from gaudi_tui.core.jobs import control
        from gaudi_tui.core.jobs.validate import InvalidSpec

        try:
            run = control.submit(spec, accel, self.selected_cards, env_fixes)
        except InvalidSpec as exc:
            self.app.call_from_thread(self._failed, list(exc.problems))
            return
        except OSError as exc:
            problem = Problem("", f"cannot create the run folder or start the job: {exc}")
            self.app.call_from_thread(self._failed, [problem])
            return
        self.app.call_from_thread(self.dismiss, run.id)

    def _failed(self, problems: list[Problem]) -> None:
        self.launching = False
        self.show_problems(problems)

    def action_cancel(self) -> None:
        self.dismiss(None)
