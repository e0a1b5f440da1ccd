"""The panel's alerts (issue 30 item 3): while it runs it sends the Devices feed's card alerts
(a port going down, in the frames of a recording handed to it as a live source would), toasts
every new alert (a job's, appended by another process, too) and lists them all with their time
under `!`. A replay in the panel sends none: its cards are not this host's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from textual.widgets import Static

from gaudi_tui.core import settings
from gaudi_tui.core.alerts import store
from gaudi_tui.core.alerts.model import Alert
from gaudi_tui.core.devices.feed import MonitorUpdate
from gaudi_tui.core.devices.sources.replay import resolve, snapshots
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.notifications import NotificationsScreen
from tests.alerts.conftest import configure, kept
from tests.conftest import CPU


async def test_the_panel_sends_card_alerts_toasts_each_and_lists_them() -> None:
    configure(off=["hbm_full"], retries=99)
    app = GaudiApp(accelerator=CPU, hostname="h", settings=settings.load(environ={}),
                   replay=resolve("gaudi2-port-down"), alerts=True)  # fmt: skip

    async with app.run_test(size=(120, 30)) as pilot:

        async def until(what: str, condition: Callable[[], object]) -> None:
            deadline = time.monotonic() + 20
            while not condition():
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                await pilot.pause(0.1)

        def port_down_shown() -> bool:
            latest = getattr(app.screen, "latest", None)
            card = latest.snapshot.links_of(3) if latest is not None else None
            return card is not None and 8 in card.down

        await until("the watcher", lambda: app.panel_alerts.watcher is not None)
        await until(
            "the settings' toast",
            lambda: any("alerts.retries must be" in n.message for n in app._notifications),
        )
        await until("the replay's port going down on the Devices screen", port_down_shown)
        assert kept() == []  # a replay's cards are not this host's: the panel sent nothing
        live = [replace(frame, source="hl-smi") for frame in snapshots(resolve("gaudi2-port-down"))]
        feed = threading.Thread(
            target=lambda: [app.card_update(MonitorUpdate(f, None, ())) for f in live * 3]
        )
        feed.start()  # as the Devices feed calls it: in its own thread
        feed.join(10)
        await until(
            "the port-down alert", lambda: any(a.kind == "port_down" for a in app.panel_alerts.alerts)
        )
        assert len(kept("port_down")) == 1
        await until("its toast", lambda: any(n.title == "Scale-out port down" for n in app._notifications))
        store.append(
            Alert(
                "job_ended", "critical", "run-9", "Job failed", "tiny (run-9) — exit code 3", "run-9:ended:1"
            )
        )
        await until("the job's toast", lambda: any(n.title == "Job failed" for n in app._notifications))
        await pilot.press("exclamation_mark")
        assert isinstance(app.screen, NotificationsScreen)
        listed = str(app.screen.query_one("#notifications-list", Static).render())
        assert listed.index("Job failed") < listed.index("Scale-out port down")  # newest first
        assert time.strftime("%Y-%m-%d") in listed and "tiny (run-9) — exit code 3" in listed
        await pilot.press("escape")
        assert not isinstance(app.screen, NotificationsScreen)
