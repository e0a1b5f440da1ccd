"""Chat's model dialog in two parts (issue 42 item 2): a model on this host (its load options) and a
server (a served job or a URL, its key's variable). A ready served job is offered first, chosen
without opening the select; Enter loads what the shown part describes; a server's part shows no
load option; every label fits at 80 columns; all by keyboard. The served jobs are `ServedJob`
values as `core/chat/served.py` reads them from serve.json (test_endpoint_screen.py covers that
reading, and chatting with a real server)."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import Checkbox, Input, Label, RadioButton, Select, TabbedContent, Tabs

from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.chat.served import ServedJob
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat_dialogs import LoadDialog
from tests.chat.test_screen import GAUDI
from tests.conftest import CPU
from tests.pilot import settle

WARMING = ServedJob("20261206-1200-serve-b", "http://127.0.0.1:8001", "big", "vllm", "", False, 200.0)
READY = ServedJob(
    "20261206-1100-serve-a", "http://127.0.0.1:8000", "demo", "transformers", "KEY", True, 100.0
)
HOST_OPTIONS = ("#load-model", "#load-dtype", "#load-quant", "#load-compile", "#load-merge",
                "#load-base-in-dtype", "#load-trust")  # fmt: skip


async def opened(
    app: GaudiApp, pilot, options: LoadOptions, served: list[ServedJob], chosen: list
) -> LoadDialog:  # noqa: ANN001
    await pilot.press("3")
    app.push_screen(LoadDialog(options, app.accelerator, served=served), chosen.append)
    await settle(pilot, lambda: isinstance(app.screen, LoadDialog) and app.screen.query("#load-ok"))
    dialog = app.screen
    assert isinstance(dialog, LoadDialog)
    return dialog


def shown(dialog: LoadDialog, selector: str) -> bool:
    return dialog.query_one(selector).region.height > 0


async def test_a_ready_served_job_is_offered_first_and_enter_loads_it() -> None:
    app = GaudiApp(accelerator=CPU, hostname="h")
    chosen: list[LoadOptions | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await opened(app, pilot, LoadOptions(), [WARMING, READY], chosen)
        assert dialog.query_one("#load-part", TabbedContent).active == "load-server"
        assert dialog.query_one("#load-served", Select).value == READY.run_id  # shown without opening it
        assert dialog.query_one("#load-endpoint", Input).value == READY.url
        assert not any(shown(dialog, s) for s in HOST_OPTIONS)  # a server takes none of them
        await pilot.press("enter")
        await settle(pilot, lambda: chosen, what="the dialog's answer")
    assert chosen == [LoadOptions(endpoint=READY.url, api_key_env="KEY", model="demo")]


async def test_the_current_server_keeps_its_model_id_and_another_job_fills_the_fields() -> None:
    app = GaudiApp(accelerator=CPU, hostname="h")
    chosen: list[LoadOptions | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        current = LoadOptions(endpoint=READY.url, api_key_env="KEY", model="custom")
        dialog = await opened(app, pilot, current, [WARMING, READY], chosen)
        await pilot.pause(0.2)
        assert dialog.query_one("#load-served", Select).value == READY.run_id
        assert dialog.query_one("#load-server-model", Input).value == "custom"
        dialog.query_one("#load-served", Select).value = WARMING.run_id
        await settle(pilot, lambda: dialog.query_one("#load-endpoint", Input).value == WARMING.url)
        assert dialog.query_one("#load-server-model", Input).value == "big"
        dialog.query_one("#load-served", Select).value = READY.run_id
        await settle(pilot, lambda: dialog.query_one("#load-endpoint", Input).value == READY.url)
        assert dialog.query_one("#load-server-model", Input).value == "demo"


async def test_the_keys_switch_to_this_hosts_part_and_enter_loads_its_model() -> None:
    app = GaudiApp(accelerator=CPU, hostname="h")
    chosen: list[LoadOptions | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await opened(app, pilot, LoadOptions(), [READY], chosen)
        await pilot.press("shift+tab", "shift+tab")  # past the served select, to the parts' tabs
        assert isinstance(app.focused, Tabs)
        await pilot.press("left")
        await settle(pilot, lambda: all(shown(dialog, s) for s in HOST_OPTIONS), what="this host's part")
        assert not shown(dialog, "#load-endpoint")
        await pilot.press("tab", *"/models/mine", "enter")
        await settle(pilot, lambda: chosen, what="the dialog's answer")
    assert chosen == [LoadOptions(model="/models/mine")]


async def test_with_no_served_job_it_opens_on_this_host_and_a_server_needs_a_url() -> None:
    app = GaudiApp(accelerator=CPU, hostname="h")
    chosen: list[LoadOptions | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await opened(app, pilot, LoadOptions(), [], chosen)
        assert dialog.query_one("#load-part", TabbedContent).active == "load-host"
        assert app.focused is dialog.query_one("#load-model", Input)
        await pilot.press("shift+tab", "right", "tab")
        assert app.focused is dialog.query_one("#load-endpoint", Input)
        await pilot.press("enter")  # no URL: said, and the dialog stays
        await settle(pilot, lambda: any("server's URL" in n.message for n in app._notifications))  # noqa: SLF001
        assert chosen == [] and app.screen is dialog
        await pilot.press(*"http://127.0.0.1:1", "enter")
        await settle(pilot, lambda: chosen, what="the dialog's answer")
    assert chosen == [LoadOptions(endpoint="http://127.0.0.1:1", model="")]


async def test_every_label_fits_at_80_columns() -> None:
    app = GaudiApp(accelerator=GAUDI, hostname="h")  # Gaudi: the longest compile and quantization texts
    chosen: list[LoadOptions | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await opened(app, pilot, LoadOptions(), [READY], chosen)
        for part in ("load-server", "load-host"):
            dialog.query_one("#load-part", TabbedContent).active = part
            await pilot.pause()
            for label in dialog.query(Label).results():
                if label.region.height:
                    text = str(label.render())
                    assert cell_len(text) <= label.content_region.width and label.region.height == 1, text
            for box in [*dialog.query(Checkbox).results(), *dialog.query(RadioButton).results()]:
                if box.region.height:
                    assert box.region.width >= cell_len(str(box.label)) + 2, str(box.label)
                    assert box.region.right <= dialog.query_one(".dialog").content_region.right


def _snapshot_app(served: list[ServedJob]) -> tuple[GaudiApp, object]:
    app = GaudiApp(accelerator=CPU, hostname="gaudi-host")

    async def open_dialog(pilot) -> None:  # noqa: ANN001
        await opened(app, pilot, LoadOptions(), served, [])
        await pilot.pause(0.3)

    return app, open_dialog


def test_snapshot_of_this_hosts_part_at_80_by_24(snap_compare) -> None:  # noqa: ANN001 - pytest-textual-snapshot fixture
    app, open_dialog = _snapshot_app([])
    assert snap_compare(app, terminal_size=(80, 24), run_before=open_dialog)


def test_snapshot_of_the_server_part_at_80_by_24(snap_compare) -> None:  # noqa: ANN001 - pytest-textual-snapshot fixture
    app, open_dialog = _snapshot_app([READY, WARMING])
    assert snap_compare(app, terminal_size=(80, 24), run_before=open_dialog)
