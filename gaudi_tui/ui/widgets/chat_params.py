"""The Chat screen's side panel: system prompt and generation parameters of the conversation."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Checkbox, Input, Label, Static

from gaudi_tui.core.chat.options import GenerationParams

FIELDS = (
    ("max_new_tokens", "max tokens"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("top_k", "top_k"),
    ("repetition_penalty", "rep. penalty"),
    ("seed", "seed"),
)


class ParamsPanel(VerticalScroll):
    """Edits are validated as typed; valid ones are posted as `Changed`, problems shown in red."""

    DEFAULT_CSS = """
    ParamsPanel { width: 32; border-left: solid $primary; padding: 0 1; }
    ParamsPanel > .params-title { text-style: bold; }
    ParamsPanel Horizontal { height: 1; margin: 0 0 1 0; }
    ParamsPanel Horizontal > Label { width: 13; }
    ParamsPanel Horizontal > Input { width: 1fr; }
    ParamsPanel #param-system { margin: 0 0 1 0; }
    ParamsPanel #params-error { color: $error; }
    ParamsPanel .params-hint { color: $text-muted; }
    """

    @dataclass
    class Changed(Message):
        params: GenerationParams
        system_prompt: str

    def __init__(self, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._filling = False
        self.error = ""

    def compose(self) -> ComposeResult:
        yield Static("Parameters", classes="params-title", markup=False)
        yield Label("system prompt")
        yield Input(id="param-system", compact=True, placeholder="(none)")
        for name, label in FIELDS:
            with Horizontal():
                yield Label(label)
                yield Input(id=f"param-{name}", compact=True, placeholder="random" if name == "seed" else "")
        yield Checkbox("sample (off = greedy)", id="param-do_sample", compact=True)
        yield Static("temperature, top_p and top_k apply when sampling.", classes="params-hint", markup=False)
        yield Static("", id="params-error", markup=False)

    def fill(self, params: GenerationParams, system_prompt: str) -> None:
        """Show a conversation's values (without posting Changed)."""
        self._filling = True
        try:
            self.query_one("#param-system", Input).value = system_prompt
            for name, _ in FIELDS:
                value = getattr(params, name)
                self.query_one(f"#param-{name}", Input).value = "" if value is None else str(value)
            self.query_one("#param-do_sample", Checkbox).value = params.do_sample
            self._show_error("")
        finally:
            self._filling = False

    def read(self) -> GenerationParams:
        """The panel's values; ValueError names every bad field."""
        texts = {name: self.query_one(f"#param-{name}", Input).value for name, _ in FIELDS}
        return GenerationParams.parse(texts, do_sample=self.query_one("#param-do_sample", Checkbox).value)

    def system_prompt(self) -> str:
        return self.query_one("#param-system", Input).value

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._changed()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        self._changed()

    def _changed(self) -> None:
        if self._filling:
            return
        try:
            params = self.read()
        except ValueError as exc:
            self._show_error(f"Not saved: {exc}")
            return
        self._show_error("")
        self.post_message(self.Changed(params, self.system_prompt()))

    def _show_error(self, text: str) -> None:
        self.error = text
        self.query_one("#params-error", Static).update(text)
