"""Modal dialogs of the Chat screen: load options (a model here, or a server's: the panel's served
jobs first, then any URL) and rename (deleting asks with ConfirmScreen)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, Input, Label, RadioButton, RadioSet, Select, Static

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.options import (
    DTYPES,
    QUANTIZATIONS,
    LoadOptions,
    quantization_unavailable,
    resolve_dtype,
)
from gaudi_tui.core.chat.served import ServedJob, served_jobs
from gaudi_tui.ui.screens.dialog import Dialog


class LoadDialog(Dialog[LoadOptions | None]):
    """Choose the model and how to load it, or a server to ask (then the model is the server's, and
    the load options do not apply). Options the accelerator cannot run are disabled, with the
    reason; trust_remote_code starts off and turns off again when the model changes."""

    DEFAULT_CSS = """
    LoadDialog VerticalScroll { height: auto; max-height: 100%; }
    LoadDialog Label { margin: 1 0 0 0; }
    LoadDialog #load-quant-reason { color: $warning; }
    LoadDialog Checkbox { margin: 1 0 0 0; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="load.cancel")]

    def __init__(
        self, options: LoadOptions, accelerator: Accelerator | None, served: list[ServedJob] | None = None
    ) -> None:
        super().__init__()
        self.options = options
        self.accelerator = accelerator
        self.served = served_jobs() if served is None else served

    def compose(self) -> ComposeResult:
        accel = self.accelerator
        kind = accel.kind if accel else None
        auto = resolve_dtype("auto", accel.dtype) if accel else "the accelerator's dtype"
        backend = accel.compile_backend if accel else "the accelerator's backend"
        with VerticalScroll(classes="dialog"):
            yield Static("Load a model", classes="dialog-title", markup=False)
            if self.served:
                yield Label("Served by the panel (running jobs, newest first)")
                yield Select(
                    [(job.summary(), job.run_id) for job in self.served],
                    prompt="none: a model here, or the URL below",
                    id="load-served",
                    compact=True,
                )
            yield Label(
                "Server URL (OpenAI-compatible: vLLM, transformers serve…); empty = load a model here"
            )
            yield Input(
                self.options.endpoint, id="load-endpoint", compact=True, placeholder="http://host:port"
            )
            yield Label("Its API key: the NAME of the environment variable holding it (empty: none)")
            yield Input(self.options.api_key_env, id="load-key-env", compact=True, placeholder="VLLM_API_KEY")
            yield Label(
                "Model: demo, a folder, an adapter or checkpoint folder, a job id, or a Hub id; a server's model id"
            )
            yield Input(self.options.model, id="load-model", compact=True, placeholder="demo")
            yield Label("dtype")
            yield Select(
                [(f"auto ({auto})" if d == "auto" else d, d) for d in DTYPES],
                value=self.options.dtype,
                allow_blank=False,
                id="load-dtype",
                compact=True,
            )
            yield Label("Quantization (bitsandbytes)")
            reasons = {q: quantization_unavailable(kind, q) if kind else None for q in QUANTIZATIONS}
            with RadioSet(id="load-quant", compact=True):
                for quant, label in QUANTIZATIONS.items():
                    yield RadioButton(
                        label + (" — unavailable" if reasons[quant] else ""),
                        value=quant == self.options.quantization and not reasons[quant],
                        disabled=bool(reasons[quant]),
                        name=quant,
                    )
            reason = next((r for r in reasons.values() if r), "")
            yield Static(reason, id="load-quant-reason", markup=False)
            yield Checkbox(
                f"torch.compile (backend {backend})", self.options.compile, id="load-compile", compact=True
            )
            yield Checkbox(
                "merge an adapter into its base (faster; it cannot be switched off)",
                self.options.merge,
                id="load-merge",
                compact=True,
            )
            yield Checkbox(
                "QLoRA base unquantized (in the dtype above, not 4-bit NF4)",
                self.options.base_in_dtype,
                id="load-base-in-dtype",
                compact=True,
            )
            yield Checkbox(
                "trust remote code: run this model's own Python code",
                self.options.trust_remote_code,
                id="load-trust",
                compact=True,
            )
            yield Static(
                "Accelerator: "
                + (f"{accel.kind}, device_map={accel.device_map!r}" if accel else "detecting…"),
                classes="dialog-hint",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Load", id="load-ok", variant="primary", compact=True)
                yield Button("Cancel", id="load-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#load-quant-reason").display = bool(
            self.query_one("#load-quant-reason", Static).content
        )
        self.query_one("#load-model", Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "load-served":
            return
        event.stop()
        job = next((j for j in self.served if j.run_id == event.value), None)
        if job is not None:
            self.query_one("#load-endpoint", Input).value = job.url
            self.query_one("#load-key-env", Input).value = job.api_key_env
            self.query_one("#load-model", Input).value = job.model

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "load-model" and event.value.strip() != self.options.model:
            self.query_one("#load-trust", Checkbox).value = False

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_load()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "load-ok":
            self.action_load()
        else:
            self.action_cancel()

    def action_load(self) -> None:
        pressed = self.query_one("#load-quant", RadioSet).pressed_button
        quant = pressed.name if pressed is not None and pressed.name else "none"
        endpoint = self.query_one("#load-endpoint", Input).value.strip()
        model = self.query_one("#load-model", Input).value.strip()
        if bool(endpoint) != bool(self.options.endpoint) and model == self.options.model:
            model = ""  # the other side's model still shown: this side's default
        options = LoadOptions.from_dict(
            {
                "model": model or ("" if endpoint else "demo"),
                "endpoint": endpoint,
                "api_key_env": self.query_one("#load-key-env", Input).value.strip(),
                "dtype": self.query_one("#load-dtype", Select).value,
                "quantization": quant,
                "compile": self.query_one("#load-compile", Checkbox).value,
                "trust_remote_code": self.query_one("#load-trust", Checkbox).value,
                "merge": self.query_one("#load-merge", Checkbox).value,
                "base_in_dtype": self.query_one("#load-base-in-dtype", Checkbox).value,
            }
        )
        self.dismiss(options)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RenameDialog(Dialog[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="rename.cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.current = title

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(
                "Rename the conversation (Enter saves, Esc cancels)", classes="dialog-title", markup=False
            )
            yield Input(self.current, id="rename-title", compact=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
