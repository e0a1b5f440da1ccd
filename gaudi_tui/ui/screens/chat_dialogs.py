"""Modal dialogs of the Chat screen: load (two parts: a model on this host with its load options, or
a server: the panel's served jobs first, then any URL) and rename (deleting asks with ConfirmScreen)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (
    Button,
    Checkbox,
    Input,
    Label,
    RadioButton,
    RadioSet,
    Select,
    Static,
    TabbedContent,
    TabPane,
)

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
    """Load a model, in two parts (tabs): a model on this host (the engine's load options), or a
    server to ask (a job the panel serves, or any OpenAI-compatible URL, and its key's variable;
    the model is the server's, and the load options, which it cannot take, are not shown).

    It opens on the server part when the current model is a server's or a served job is ready
    (that job chosen), else on this host's. Enter, Load, loads what the shown part describes.
    Options the accelerator cannot run are disabled, with the reason; trust_remote_code starts off
    and turns off again when the model changes."""

    DEFAULT_CSS = """
    LoadDialog VerticalScroll { height: auto; max-height: 100%; }
    LoadDialog TabbedContent { height: auto; }
    LoadDialog TabPane { padding: 0; height: auto; }
    LoadDialog Label { width: 100%; }
    LoadDialog .load-row { height: 1; }
    LoadDialog .load-row Label { width: auto; margin: 0 1 0 0; }
    LoadDialog #load-quant { layout: horizontal; width: 100%; }
    LoadDialog #load-quant RadioButton { width: auto; margin: 0 1 0 0; }
    LoadDialog #load-quant-reason { color: $warning; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="load.cancel"),
        Binding("enter", "load", "Load", id="load.load", show=False),
    ]

    def __init__(
        self, options: LoadOptions, accelerator: Accelerator | None, served: list[ServedJob] | None = None
    ) -> None:
        super().__init__()
        self.options = options
        self.accelerator = accelerator
        self.served = served_jobs() if served is None else served
        self.offered = self._offered()
        """The served job chosen at open: the current server's, else the newest ready one."""
        self._opened_with = self.offered.run_id if self.offered is not None else None
        """The select's first change may be its value at open: the fields already hold it."""

    def _offered(self) -> ServedJob | None:
        if self.options.endpoint:
            return next((job for job in self.served if job.url == self.options.endpoint), None)
        return next((job for job in self.served if job.ready), None)

    def compose(self) -> ComposeResult:
        server = bool(self.options.endpoint) or self.offered is not None
        with VerticalScroll(classes="dialog"):
            yield Static(
                "Load a model · shift+tab, then ←/→: host or server", classes="dialog-title", markup=False
            )
            with TabbedContent(initial="load-server" if server else "load-host", id="load-part"):
                with TabPane("A model on this host", id="load-host"):
                    yield from self._host_part()
                with TabPane("A server", id="load-server"):
                    yield from self._server_part()
            with Horizontal(classes="dialog-buttons"):
                yield Button("Load", id="load-ok", variant="primary", compact=True)
                yield Button("Cancel", id="load-cancel", compact=True)

    def _host_part(self) -> ComposeResult:
        accel, options = self.accelerator, self.options
        kind = accel.kind if accel else None
        auto = resolve_dtype("auto", accel.dtype) if accel else "the accelerator's dtype"
        backend = accel.compile_backend if accel else "the accelerator's"
        yield Label("Model: demo, a folder or adapter, a job id, a Hub id")
        here = "" if options.endpoint else options.model
        yield Input(here, id="load-model", compact=True, placeholder="demo")
        with Horizontal(classes="load-row"):
            yield Label("dtype")
            yield Select(
                [(f"auto ({auto})" if d == "auto" else d, d) for d in DTYPES],
                value=options.dtype,
                allow_blank=False,
                id="load-dtype",
                compact=True,
            )
        yield Label("Quantization (bitsandbytes)")
        reasons = {q: quantization_unavailable(kind, q) if kind else None for q in QUANTIZATIONS}
        with RadioSet(id="load-quant", compact=True):
            for quant, label in QUANTIZATIONS.items():
                yield RadioButton(
                    short_quantization(label),
                    value=quant == options.quantization and not reasons[quant],
                    disabled=bool(reasons[quant]),
                    name=quant,
                )
        reason = next((r for r in reasons.values() if r), "")
        yield Static(reason, id="load-quant-reason", markup=False)
        yield Checkbox(f"torch.compile (backend {backend})", options.compile, id="load-compile", compact=True)
        yield Checkbox(
            "merge an adapter into its base (for good)", options.merge, id="load-merge", compact=True
        )
        yield Checkbox(
            "QLoRA base unquantized, in the dtype above",
            options.base_in_dtype,
            id="load-base-in-dtype",
            compact=True,
        )
        yield Checkbox(
            "trust remote code: run the model's own Python",
            options.trust_remote_code,
            id="load-trust",
            compact=True,
        )
        where = f"{accel.kind}, device_map={accel.device_map!r}" if accel else "detecting…"
        yield Static(f"Accelerator: {where}", classes="dialog-hint", markup=False)

    def _server_part(self) -> ComposeResult:
        options, offered = self.options, self.offered
        url, key, model = (
            (options.endpoint, options.api_key_env, options.model) if options.endpoint else ("", "", "")
        )
        if offered is not None and not options.endpoint:
            url, key, model = offered.url, offered.api_key_env, offered.model
        if self.served:
            yield Label("Served by the panel (running jobs, newest first)")
            yield Select(
                [(served_label(job), job.run_id) for job in self.served],
                prompt="none: the URL below",
                value=offered.run_id if offered is not None else Select.BLANK,
                id="load-served",
                compact=True,
            )
        yield Label("URL (OpenAI-compatible: vLLM, transformers serve)")
        yield Input(url, id="load-endpoint", compact=True, placeholder="http://host:port")
        yield Label("API key: the NAME of its environment variable")
        yield Input(key, id="load-key-env", compact=True, placeholder="VLLM_API_KEY (empty: none)")
        yield Label("Model id on the server (empty: the server's)")
        yield Input(model, id="load-server-model", compact=True, placeholder="the server's model")

    def on_mount(self) -> None:
        reason = self.query_one("#load-quant-reason", Static)
        reason.display = bool(reason.content)
        self._focus_part(self.query_one("#load-part", TabbedContent).active)

    def _focus_part(self, part: str) -> None:
        self.query_one("#load-endpoint" if part == "load-server" else "#load-model", Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "load-served":
            return
        event.stop()
        first, self._opened_with = self._opened_with, None
        if event.value == first:
            return  # the choice at open (a model id typed for that server is kept)
        job = next((j for j in self.served if j.run_id == event.value), None)
        if job is not None:
            self.query_one("#load-endpoint", Input).value = job.url
            self.query_one("#load-key-env", Input).value = job.api_key_env
            self.query_one("#load-server-model", Input).value = job.model

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
        """Load what the shown part describes."""
        if self.query_one("#load-part", TabbedContent).active == "load-server":
            options = self._server_options()
        else:
            options = self._host_options()
        if options is not None:
            self.dismiss(options)

    def _server_options(self) -> LoadOptions | None:
        endpoint = self.query_one("#load-endpoint", Input).value.strip()
        if not endpoint:
            self.notify(
                "Give the server's URL (or pick a served job), or load a model on this host (the first tab).",
                severity="warning",
                markup=False,
            )
            return None
        return LoadOptions(
            endpoint=endpoint,
            api_key_env=self.query_one("#load-key-env", Input).value.strip(),
            model=self.query_one("#load-server-model", Input).value.strip(),
        )

    def _host_options(self) -> LoadOptions:
        pressed = self.query_one("#load-quant", RadioSet).pressed_button
        return LoadOptions.from_dict(
            {
                "model": self.query_one("#load-model", Input).value.strip() or "demo",
                "dtype": self.query_one("#load-dtype", Select).value,
                "quantization": pressed.name if pressed is not None and pressed.name else "none",
                "compile": self.query_one("#load-compile", Checkbox).value,
                "trust_remote_code": self.query_one("#load-trust", Checkbox).value,
                "merge": self.query_one("#load-merge", Checkbox).value,
                "base_in_dtype": self.query_one("#load-base-in-dtype", Checkbox).value,
            }
        )

    def action_cancel(self) -> None:
        self.dismiss(None)


def short_quantization(label: str) -> str:
    """A quantization's name in a row of four: `8-bit LLM.int8 (bitsandbytes)` → `8-bit` (the row's
    label says bitsandbytes)."""
    return label.removesuffix(" (bitsandbytes)").removesuffix(" LLM.int8")


def served_label(job: ServedJob) -> str:
    """A served job in the select: its model and state first, where a narrow select still shows them."""
    return f"{job.model} · {'ready' if job.ready else 'warming up'} · {job.engine} · {job.run_id}"


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
