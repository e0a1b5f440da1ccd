"""core/ never imports Textual; the CLI's import path stays free of torch (fast headless start)."""

from __future__ import annotations

import pkgutil
import subprocess

import gaudi_tui.core
from tests.conftest import PYTHON, child_env


def _core_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(gaudi_tui.core.__path__, "gaudi_tui.core.")]


def _loaded_after(imports: list[str]) -> set[str]:
    code = "import sys\n" + "".join(f"import {name}\n" for name in imports) + "print('\\n'.join(sys.modules))"
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=child_env(), check=True)
    return set(out.stdout.split())


def test_core_never_imports_textual() -> None:
    modules = _core_modules()
    assert "gaudi_tui.core.accelerator" in modules
    loaded = _loaded_after(modules)
    assert "textual" not in loaded
    assert not any(name.startswith("gaudi_tui.ui") for name in loaded)


def test_cli_and_app_modules_do_not_import_torch() -> None:
    loaded = _loaded_after(["gaudi_tui.cli", "gaudi_tui.ui.app"])
    assert "gaudi_tui.ui.app" in loaded
    assert "torch" not in loaded
    assert "transformers" not in loaded
    assert "habana_frameworks" not in loaded


LATE = (
    "psutil",
    "gaudi_tui.core.devices.monitor",
    "gaudi_tui.core.accelerator",
    "gaudi_tui.commands",
    "gaudi_tui.core.settings",
    "gaudi_tui.core.logsetup",
    "gaudi_tui.core.chat.options",
    "logging.handlers",
    "tomllib",
    # the Devices map: its model, table, texts and dialogs load when the map is built or used
    "gaudi_tui.core.devices.model",
    "gaudi_tui.core.devices.usage",
    "gaudi_tui.core.devices.links",
    "gaudi_tui.core.devices.cardsets",
    "gaudi_tui.ui.widgets.device_table",
    "gaudi_tui.ui.widgets.confirm",
    "gaudi_tui.ui.screens.card_links",
    "gaudi_tui.ui.palette",
)


def test_the_panel_imports_no_source_parser_or_psutil_before_its_first_frame() -> None:
    """Start-up: `gaudi-tui` alone imports the app, the Devices screen and the early settings read
    (theme and keymap) only; the device sources, the hl-smi parsers, psutil, the accelerator probe's
    module, the headless commands, the full settings reader (and TOML, with no config file), the log
    file's handler and the Devices map's modules load later (in the feed threads, the probe worker,
    after the first frame, or for a subcommand)."""
    imports = [
        "gaudi_tui.cli",
        "gaudi_tui.core.appearance",
        "gaudi_tui.ui.app",
        "gaudi_tui.ui.screens.devices",
    ]
    loaded = _loaded_after(imports)
    assert "gaudi_tui.ui.screens.devices" in loaded
    early = sorted(
        name
        for name in loaded
        if name in LATE
        or name.startswith(("gaudi_tui.core.devices.sources", "gaudi_tui.core.devices.parsers"))
    )
    assert not early, early


def test_the_training_screen_loads_the_job_form_and_job_control_on_use() -> None:
    """Key 4 imports what draws the job list; the form (`n`) and the stop/kill/resume code (with the
    supervisor and its argument parser) load when first used (issue 28: the list draws sooner)."""
    loaded = _loaded_after(["gaudi_tui.ui.screens.training"])
    assert "gaudi_tui.ui.screens.training_poll" in loaded
    on_use = (
        "gaudi_tui.ui.screens.job_form",
        "gaudi_tui.core.jobs.control",
        "gaudi_tui.core.jobs.supervisor",
    )
    assert [name for name in on_use if name in loaded] == []
