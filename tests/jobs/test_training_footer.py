"""The Training screen's keys all show at 100 columns (a terminal over SSH is often that narrow):
the footer is compact, and the pane keys (c, l, d) are on their tabs, not in the footer, so
`C Compare` is not hidden under the command palette's key, docked at the footer's right end."""

from __future__ import annotations

from textual.widgets import Footer, Tab

from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.conftest import CPU
from tests.pilot import settle


async def test_every_training_key_shows_at_100_columns() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        own = {b.key for b in TrainingScreen.BINDINGS if b.show}  # type: ignore[union-attr]

        def keys() -> dict[str, tuple[int, int]]:
            if not isinstance(app.screen, TrainingScreen):
                return {}
            found = app.screen.query_one(Footer).query("FooterKey")
            return {k.key: (k.region.x, k.region.right) for k in found}  # type: ignore[attr-defined]

        await settle(pilot, lambda: own | {"ctrl+p"} <= set(keys()) and all(r for _, r in keys().values()))
        palette_at = keys()["ctrl+p"][0]
        visible = {key for key, (_, right) in keys().items() if right <= palette_at}
        assert own <= visible, keys()
        await settle(pilot, lambda: len(app.screen.query(Tab)) == 3, what="the job's panes")
        tabs = [str(tab.label) for tab in app.screen.query(Tab)]
        assert tabs == ["c Charts", "l Log", "d Details"]  # the pane keys, on their tabs
