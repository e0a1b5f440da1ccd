"""`n` on Training: a keyboard form for a new job, with presets; validates, then launches detached."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select, Static

from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.spec import PRESETS, JobSpec, SpecError
from gaudi_tui.ui.screens.base import gaudi_app
from gaudi_tui.ui.screens.dialog import Dialog


class JobFormScreen(Dialog[str | None]):
    """Dismissed with the new run's id, or None when cancelled."""

    DEFAULT_CSS = """
    JobFormScreen > .dialog { width: 90; height: 100%; max-height: 40; }
    JobFormScreen #preset { width: 100%; }
    JobFormScreen VerticalScroll { height: 1fr; }
    JobFormScreen Grid { grid-size: 2; grid-columns: 20 1fr; grid-rows: auto; height: auto; }
    JobFormScreen Grid > Label { padding: 0 1 0 0; height: 1; }
    JobFormScreen Grid > Input, JobFormScreen Grid > Checkbox { height: 1; border: none; padding: 0; }
    JobFormScreen Grid > Select { height: 1; }
    JobFormScreen Grid > Select > SelectCurrent { border: none; height: 1; padding: 0 1; }
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

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("New training job", classes="dialog-title", markup=False)
            yield Select(
                [(name, name) for name in PRESETS], value="demo fine-tune", allow_blank=False, id="preset"
            )
            with VerticalScroll():
                with Grid():
                    for name in spec_mod.field_names():
                        yield Label(name, markup=False, id=f"l-{name}")
                        yield self._editor(name)
            yield Static("", id="form-cluster", markup=False)
            yield Static("", id="form-problems", markup=False)
            yield Static(
                "tab/shift+tab move · space toggles · enter or ctrl+s launches · ctrl+r cluster nodes · "
                "esc cancels",
                id="form-hint",
                markup=False,
            )

    def _editor(self, name: str) -> Widget:
        help_text = spec_mod.field_help(name)
        hint = spec_mod.field_type(name)
        allowed = spec_mod.choices(name)
        widget: Widget
        if hint is bool:
            widget = Checkbox(help_text, id=f"f-{name}")
        elif allowed:
            widget = Select([(c, c) for c in allowed], allow_blank=False, id=f"f-{name}")
        else:
            widget = Input(id=f"f-{name}", placeholder=help_text)
        widget.tooltip = help_text
        return widget

    def on_mount(self) -> None:
        self.fill(PRESETS["demo fine-tune"])
        self.query_one("#preset", Select).focus()

    def fill(self, spec: JobSpec) -> None:
        if self.selected_cards and not spec.cards:
            spec = spec_mod.from_mapping({"cards": list(self.selected_cards)}, base=spec)
        for name in spec_mod.field_names():
            value = getattr(spec, name)
            widget = self.query_one(f"#f-{name}")
            if isinstance(widget, Checkbox):
                widget.value = bool(value)
            elif isinstance(widget, Select):
                widget.value = value
            elif isinstance(widget, Input):
                widget.value = spec_mod.display(name, value)
        self.show_kind(spec.kind)

    @on(Select.Changed, "#f-kind")
    def kind_chosen(self, event: Select.Changed) -> None:
        """Only the settings of this kind of job are shown (your command: its arguments, launcher,
        metrics source, resume flag; the built-in job: model, data, LoRA...)."""
        self.show_kind(str(event.value))

    def show_kind(self, kind: str) -> None:
        for name in spec_mod.field_names():
            shown = spec_mod.applies(name, kind)
            self.query_one(f"#l-{name}").display = shown
            self.query_one(f"#f-{name}").display = shown

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

    def read_spec(self) -> tuple[JobSpec | None, list[str]]:
        """The spec typed in, or the problems of fields that cannot be read."""
        values: dict[str, object] = {}
        problems: list[str] = []
        for name in spec_mod.field_names():
            widget = self.query_one(f"#f-{name}")
            raw: object = widget.value if isinstance(widget, (Checkbox, Select, Input)) else None
            try:
                values[name] = spec_mod.coerce(name, raw)
            except SpecError as exc:
                problems.append(str(exc))
        if problems:
            return None, problems
        return spec_mod.from_mapping(values), []

    def show_problems(self, problems: list[str]) -> None:
        self.query_one("#form-problems", Static).update("\n".join(problems))

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.action_launch()

    def action_launch(self) -> None:
        if self.launching:
            return
        accel = gaudi_app(self).accelerator
        if accel is None:
            self.show_problems(["the accelerator is still being detected: try again in a moment"])
            return
        spec, problems = self.read_spec()
        if spec is None:
            self.show_problems(problems)
            return
        self.launching = True
        self.show_problems(["checking and launching…"])
        self.submit(spec, accel, dict(gaudi_app(self).env_fixes))

    @work(thread=True, exclusive=True, exit_on_error=False, group="job-submit", description="launch job")
    def submit(self, spec: JobSpec, accel, env_fixes: dict[str, str]) -> None:  # noqa: ANN001
        from gaudi_tui.core.jobs import control
        from gaudi_tui.core.jobs.validate import InvalidSpec

        try:
            run = control.submit(spec, accel, self.selected_cards, env_fixes)
        except InvalidSpec as exc:
            self.app.call_from_thread(self._failed, [str(p) for p in exc.problems])
            return
        except OSError as exc:
            self.app.call_from_thread(self._failed, [f"cannot create the run folder or start the job: {exc}"])
            return
        self.app.call_from_thread(self.dismiss, run.id)

    def _failed(self, problems: list[str]) -> None:
        self.launching = False
        self.show_problems(problems)

    def action_cancel(self) -> None:
        self.dismiss(None)
