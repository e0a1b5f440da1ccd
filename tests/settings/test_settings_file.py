"""core/settings.py: defaults, the file, the environment over the file, bad files and the theme
written back with the user's comments kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core import paths, settings
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.settings import ChatDefaults, Settings

GOOD = """\
# my panel
theme = "nord"            # dark, like my terminal
refresh_interval = 2
checklist_on_open = false
runs_dir = "~/gaudi-runs"

[chat]
model = "Qwen/Qwen2.5-0.5B-Instruct"
dtype = "bfloat16"
quantization = "nf4"
compile = true

[keys]
"devices.choose" = "enter"
"app.help" = "f1, h"

[cluster]
ray_address = "127.0.0.1:6379"
prometheus_url = "http://127.0.0.1:9090"
"""


def write(text: str) -> Path:
    path = settings.config_path()
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_means_defaults_from_nowhere_but_the_code() -> None:
    loaded = settings.load(environ={})
    assert loaded.settings == Settings()
    assert set(loaded.origins.values()) == {"default"}
    assert loaded.problems == () and loaded.parsed
    assert loaded.path == paths.config_dir() / "config.toml"


def test_every_value_is_read_from_the_file_into_typed_settings() -> None:
    write(GOOD)
    loaded = settings.load(environ={})
    s = loaded.settings
    assert loaded.problems == ()
    assert s.theme == "nord" and s.refresh_interval == 2.0 and s.checklist_on_open is False
    assert s.runs_dir == Path("~/gaudi-runs").expanduser()
    assert s.chat == ChatDefaults("Qwen/Qwen2.5-0.5B-Instruct", "bfloat16", "nf4", True)
    assert s.chat.load_options().trust_remote_code is False  # never a setting
    assert dict(s.keys) == {"devices.choose": "enter", "app.help": "f1,h"}
    assert s.ray_address == "127.0.0.1:6379" and s.prometheus_url == "http://127.0.0.1:9090"
    assert set(loaded.origins.values()) == {"file"}


def test_environment_overrides_the_file_and_says_so() -> None:
    write(GOOD)
    env = {
        "GAUDI_TUI_THEME": "gruvbox",
        "GAUDI_TUI_REFRESH": "5",
        "RAY_ADDRESS": "10.0.0.2:6379",
        "GAUDI_TUI_PROMETHEUS": "http://10.0.0.3:9090",
        "GAUDI_TUI_CHAT_COMPILE": "0",
        "GAUDI_TUI_CHECKLIST_ON_OPEN": "yes",
    }
    loaded = settings.load(environ=env)
    s = loaded.settings
    assert (s.theme, s.refresh_interval, s.ray_address) == ("gruvbox", 5.0, "10.0.0.2:6379")
    assert s.prometheus_url == "http://10.0.0.3:9090" and s.chat.compile is False and s.checklist_on_open
    assert loaded.origins["theme"] == "environment" and loaded.origins["chat.model"] == "file"


def test_bad_values_keep_their_default_and_name_their_line() -> None:
    text = 'theme = "nord"\nrefresh_interval = 0.1\ncolour = "red"\n\n[chat]\ndtype = "fp8"\nwat = 1\n'
    path = write(text)
    loaded = settings.load(environ={"GAUDI_TUI_REFRESH": "soon"})
    s = loaded.settings
    assert s.theme == "nord"  # the good value still applies
    assert s.refresh_interval == 1.0 and s.chat.dtype == "auto"
    shown = [str(p) for p in loaded.problems]
    assert "config.toml line 3: unknown key 'colour' (ignored)" in shown
    assert "config.toml line 7: unknown key 'wat' in [chat] (ignored)" in shown
    assert any(
        p.startswith("config.toml line 2: refresh_interval must be a number of seconds") for p in shown
    )
    assert any(p.startswith("config.toml line 6: chat.dtype must be one of auto,") for p in shown)
    assert any(p.startswith("$GAUDI_TUI_REFRESH must be") for p in shown)
    assert path.read_text() == text  # never rewritten


def test_a_syntax_error_gives_all_defaults_and_the_line() -> None:
    text = 'theme = "nord"\n[chat\nmodel = "x"\n'
    path = write(text)
    loaded = settings.load(environ={"RAY_ADDRESS": "auto"})
    assert not loaded.parsed
    assert loaded.settings.theme == settings.DEFAULT_THEME and loaded.settings.ray_address == "auto"
    (problem,) = loaded.problems
    assert problem.line == 2 and "is not valid TOML" in str(problem)
    assert settings.save_theme("gruvbox", path) is not None
    assert path.read_text() == text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("checklist_on_open = 1", "checklist_on_open must be true or false"),
        ('runs_dir = "relative/runs"', "runs_dir must be an absolute path"),
        ("theme = 3", "theme must be a non-empty string"),
        ("chat = 3", "[chat] must be a table"),
        ('[keys]\n"app.help" = 3', "[keys] 'app.help' must be a key string"),
    ],
)
def test_wrong_types_are_named(line: str, message: str) -> None:
    write(line + "\n")
    (problem,) = settings.load(environ={}).problems
    assert message in str(problem) and problem.line == line.count("\n") + 1


def test_the_theme_is_written_back_keeping_comments_and_other_keys() -> None:
    path = write(GOOD)
    assert settings.save_theme("gruvbox", path) is None
    text = path.read_text()
    assert text == GOOD.replace('theme = "nord"', 'theme = "gruvbox"')
    assert settings.load(environ={}).settings.theme == "gruvbox"


def test_the_theme_creates_the_file_when_there_is_none() -> None:
    path = settings.config_path()
    assert settings.save_theme("textual-light", path) is None
    assert settings.load(environ={}).settings.theme == "textual-light"
    write("[chat]\nmodel = 'demo'\n")
    assert settings.save_theme("nord", path) is None
    assert settings.load(environ={}).settings.theme == "nord" and "[chat]" in path.read_text()


def test_runs_dir_setting_moves_the_run_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert runfolder.runs_dir() == paths.state_dir() / "runs"
    write(f'runs_dir = "{tmp_path / "runs-from-file"}"\n')
    assert runfolder.runs_dir() == tmp_path / "runs-from-file"
    monkeypatch.setenv("GAUDI_TUI_RUNS_DIR", str(tmp_path / "runs-from-env"))
    folder = runfolder.runs_dir()
    assert folder == tmp_path / "runs-from-env" and folder.is_dir()
    assert folder.stat().st_mode & 0o777 == 0o700
