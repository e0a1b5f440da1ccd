"""The wrapper in another Python than the panel's (a venv of the user's own): the callback is
installed, and what the wrapper put on `sys.path` to import it is gone again, so the user's script
imports what it would without the wrapper."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from gaudi_tui.core.jobs.kinds import command
from tests.conftest import ROOT

PROBE = """import importlib.util, json, sys
import transformers.trainer as t
print(json.dumps({
    "path": sys.path,
    "callbacks": [c.__name__ for c in t.DEFAULT_CALLBACKS],
    "tests": importlib.util.find_spec("tests") is not None,
    "prefix": sys.prefix,
}))
"""


def test_a_foreign_python_keeps_no_panel_path_but_gets_the_callback(tmp_path: Path) -> None:
    venv = tmp_path / "user-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    # The user's venv has Transformers and torch (the panel's copies stand in), not gaudi-tui: the
    # panel's site-packages holds only a pointer (an editable install) to this checkout, which a
    # path given by a .pth file does not follow.
    (Path(site) / "user-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update({"GAUDI_TUI_RUN": str(tmp_path / "run"), "PYTHONPATH": str(command.SITE_DIR)})
    done = subprocess.run(
        [python, "-c", PROBE], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["prefix"] == str(venv)  # it ran in the other Python
    assert "PanelCallback" in seen["callbacks"], done.stderr[-2000:]
    assert str(ROOT) not in seen["path"] and not seen["tests"]  # nothing of the panel's stays
