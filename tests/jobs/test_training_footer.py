"""The Training screen's keys all fit its footer at 100 columns (a terminal over SSH is often that
narrow): the footer is compact, so `P Profile` did not push `C Compare` off the edge."""

from __future__ import annotations

from textual.widgets import Footer

from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.training import TrainingScreen
from tests.conftest import CPU
from tests.pilot import settle


async def test_every_training_key_is_in_the_footer_at_100_columns() -> None:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        own = {b.key for b in TrainingScreen.BINDINGS if b.show}  # type: ignore[union-attr]

        def keys() -> dict[str, int]:
            if not isinstance(app.screen, TrainingScreen):
                return {}
            return {k.key: k.region.right for k in app.screen.query_one(Footer).query("FooterKey")}  # type: ignore[attr-defined]

        await settle(pilot, lambda: own <= set(keys()) and all(keys().values()), what="the footer's keys")
        assert {key for key, right in keys().items() if right <= 100} >= own, keys()
