"""Stopping the process that holds a card (`k` on Devices): confirm, SIGTERM, wait, then offer SIGKILL."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message
from textual.worker import get_current_worker

from gaudi_tui.ui.screens.devices_feeds import FeedScreen

if TYPE_CHECKING:
    from gaudi_tui.core.devices.holders import CardHolder
    from gaudi_tui.core.devices.model import Device

TERM_GRACE_S = 5.0


class HolderSignalled(Message):
    """A TERM or KILL was sent (or refused); `gone` says whether the process has exited."""

    def __init__(self, holder: CardHolder, sig: signal.Signals, gone: bool, refusal: str | None) -> None:
        super().__init__()
        self.holder, self.sig, self.gone, self.refusal = holder, sig, gone, refusal


class HolderStopScreen(FeedScreen):
    """A feed screen whose `k` stops the first visible holder of the card under the cursor."""

    def _current_device(self) -> Device | None:
        """The card under the cursor (the Devices screen's map)."""
        raise NotImplementedError

    def action_stop_holder(self) -> None:
        device = self._current_device()
        use = self.uses.get(device.index) if device else None
        if device is None or use is None or not use.holders:
            why = use.explanation() if use else None
            self.notify(why or "No visible process holds this card.", severity="warning")
            return
        from gaudi_tui.core.devices import holders
        from gaudi_tui.ui.widgets.confirm import ConfirmScreen

        holder = use.holders[0]
        refusal = holders.can_signal(holder, self.config.proc_root)
        if refusal:
            self.notify(refusal, severity="error", title="Cannot stop it")
            return
        question = (
            f"Stop PID {holder.pid} ({holder.user or '?'}), holding card {holder.index}?\n{holder.command}\n\n"
            f"Sends SIGTERM; if it is still running after {TERM_GRACE_S:.0f} s you are asked about SIGKILL."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._signal(holder, signal.SIGTERM)

        self.app.push_screen(ConfirmScreen(question), answered)

    @work(thread=True, exclusive=True, exit_on_error=False, group="stop-holder", description="stop holder")
    def _signal(self, holder: CardHolder, sig: signal.Signals) -> None:
        from gaudi_tui.core.devices import holders

        refusal = holders.send(holder, sig, self.config.proc_root)
        grace = TERM_GRACE_S if sig == signal.SIGTERM else 2.0
        gone = refusal is None and holders.wait_gone(
            holder, grace, get_current_worker().cancelled_event, self.config.proc_root
        )
        self.post_message(HolderSignalled(holder, sig, gone, refusal))

    def on_holder_signalled(self, message: HolderSignalled) -> None:
        holder = message.holder
        for reader, method in ((self._feed, "request_holder_scan"), (self._details_reader, "request")):
            request = getattr(reader, method, None)
            if request is not None:
                request()
        if message.refusal:
            self.notify(message.refusal, severity="error", title="Not stopped")
        elif message.gone:
            self.notify(f"PID {holder.pid} has exited; card {holder.index} is free once the map refreshes.")
        elif message.sig == signal.SIGTERM:
            question = (
                f"PID {holder.pid} is still running {TERM_GRACE_S:.0f} s after SIGTERM.\n{holder.command}\n\n"
                "Send SIGKILL? It cannot clean up: unsaved work is lost."
            )

            from gaudi_tui.ui.widgets.confirm import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self._signal(holder, signal.SIGKILL)

            self.app.push_screen(ConfirmScreen(question), answered)
        else:
            self.notify(
                f"PID {holder.pid} did not exit after SIGKILL (stuck in the driver?).", severity="error"
            )
