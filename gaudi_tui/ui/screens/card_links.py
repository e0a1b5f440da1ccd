"""The link view of one card: every NIC port, scale-up (internal) or scale-out (external), up or down."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from gaudi_tui.core.devices.links import banner
from gaudi_tui.core.devices.model import CardLinks, Device
from gaudi_tui.ui.palette import palette
from gaudi_tui.ui.screens.dialog import Dialog

PER_ROW = 3
KINDS = {"external": "external", "internal": "internal", None: "type ?"}


class CardLinksScreen(Dialog[None]):
    """`l` on Devices: the card under the cursor, one cell per port, three to a row."""

    DEFAULT_CSS = """
    CardLinksScreen > .dialog { width: 72; }
    """
    BINDINGS = [Binding("escape,l,enter", "dismiss", "Close", id="links.close")]

    def __init__(self, device: Device, links: CardLinks | None, why: str = "") -> None:
        super().__init__()
        self.device, self.links, self.why = device, links, why

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self._title(), classes="dialog-title", markup=False)
            yield Static(self._ports(), id="links-ports", markup=False)
            yield Static("l, Enter or Esc closes", classes="dialog-hint", markup=False)

    def _title(self) -> str:
        d, links = self.device, self.links
        module = f" · module {d.module_id}" if d.module_id is not None else ""
        head = f"Card {d.index}{module} · {d.bus_id or 'bus ?'} · NIC ports"
        if links is None or not links.ports:
            return head
        return f"{head}: {links.up} of {len(links.ports)} up"

    def _ports(self) -> Text:
        colours = palette(self.app)
        text = Text()
        links = self.links
        if links is None or not links.ports:
            text.append(f"No link state for this card: {self.why or 'hl-smi -n link has not answered yet'}.")
            return text
        for at, port in enumerate(links.ports):
            if at and at % PER_ROW == 0:
                text.append("\n")
            state = "UP" if port.up else "DOWN"
            style = colours.success if port.up else colours.error
            if not port.up and port.type != "external":
                style = "bold " + colours.warning
            text.append(" " if at % PER_ROW else "")
            text.append(f"port {port.number:2d} {KINDS[port.type]:<8} ")
            text.append(f"{state:<4}", style=style)
        text.append(
            "\n\nexternal = scale-out (to other hosts, RoCE); internal = scale-up (the other cards of this host)."
        )
        if not links.types_known:
            text.append("\nhl-smi -n ports did not answer: which ports are external is unknown.")
        if warning := banner([self.device], [links]):
            text.append("\n\n" + warning, style=colours.error)
        return text
