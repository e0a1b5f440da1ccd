"""The user's settings: `<config>/config.toml`, overridden by environment variables.

One reader for the panel and every command. `load()` never raises: a value the file gets wrong
(unknown key, wrong type, out of range) keeps its default and becomes a `Problem` naming the line;
a file TOML cannot parse is ignored as a whole (every value from defaults or the environment) with
the parser's line. The file is never rewritten on a problem; `save_theme()` edits it in place
(comments and other keys kept) only when it parses.

Precedence, highest first: environment variable, file, default.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from gaudi_tui.core.appearance import DEFAULT_THEME, FILE_NAME, config_path, key_list
from gaudi_tui.core.chat.options import DTYPES, QUANTIZATIONS, Dtype, LoadOptions, Quantization

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Origin = Literal["default", "file", "environment"]
REFRESH_RANGE = (1.0, 60.0)
"""Seconds between device refreshes; whole seconds only matter to hl-smi (`-l` takes an integer)."""


@dataclass(frozen=True)
class ChatDefaults:
    """What the Chat screen and `gaudi-tui chat` load when the user chose nothing else."""

    model: str = "demo"
    dtype: Dtype = "auto"
    quantization: Quantization = "none"
    compile: bool = False

    def load_options(self) -> LoadOptions:
        """Remote code stays off: it is never a setting, only a per-load choice."""
        return LoadOptions(self.model, self.dtype, self.quantization, self.compile)


@dataclass(frozen=True)
class Settings:
    theme: str = DEFAULT_THEME
    keys: Mapping[str, str] = field(default_factory=dict)
    """Binding id → keys (Textual's key names, comma-separated), e.g. `"devices.choose" = "enter"`."""
    refresh_interval: float = 1.0
    checklist_on_open: bool = True
    runs_dir: Path | None = None
    """None: `<state>/runs`."""
    chat: ChatDefaults = field(default_factory=ChatDefaults)
    ray_address: str | None = None
    prometheus_url: str | None = None


@dataclass(frozen=True)
class Problem:
    message: str
    line: int | None = None
    in_file: bool = True
    """False for a bad environment variable."""

    def __str__(self) -> str:
        if not self.in_file:
            return self.message
        where = f" line {self.line}" if self.line else ""
        return f"{FILE_NAME}{where}: {self.message}"


@dataclass(frozen=True)
class Loaded:
    settings: Settings
    path: Path
    origins: Mapping[str, Origin]
    """Setting name (as in `SPECS`, plus `keys`) → where its effective value came from."""
    problems: tuple[Problem, ...] = ()
    parsed: bool = True
    """False when the file exists but TOML cannot parse it (then nothing may write to it)."""

    def values(self) -> dict[str, object]:
        """Setting name → effective value, as plain JSON-able values."""
        out: dict[str, object] = {}
        for spec in SPECS:
            value = spec.get(self.settings)
            out[spec.name] = str(value) if isinstance(value, Path) else value
        out["keys"] = dict(self.settings.keys)
        return out


# -- value conversion ----------------------------------------------------------------------------
def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _seconds(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError("must be a number of seconds")
    try:
        number = float(value) if isinstance(value, int | float | str) else math.nan
    except ValueError:
        number = math.nan
    low, high = REFRESH_RANGE
    if not low <= number <= high:  # also refuses nan
        raise ValueError(f"must be a number of seconds from {low:g} to {high:g}")
    return number


def _folder(value: object) -> Path:
    path = Path(_text(value)).expanduser()
    if not path.is_absolute():
        raise ValueError("must be an absolute path (~ allowed)")
    return path


def _one_of(choices: tuple[str, ...]) -> Callable[[object], str]:
    def convert(value: object) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return str(value)

    return convert


@dataclass(frozen=True)
class Spec:
    """One setting: its name (`table.key` in the file), its environment variable, and the
    converter that checks a file or environment value (raises ValueError saying what it must be)."""

    name: str
    env: str | None
    convert: Callable[[object], Any]

    @property
    def table(self) -> str | None:
        return self.name.split(".")[0] if "." in self.name else None

    @property
    def key(self) -> str:
        return self.name.split(".")[-1]

    def get(self, settings: Settings) -> object:
        target: object = settings.chat if self.table == "chat" else settings
        return getattr(target, self.key)


SPECS: tuple[Spec, ...] = (
    Spec("theme", "GAUDI_TUI_THEME", _text),
    Spec("refresh_interval", "GAUDI_TUI_REFRESH", _seconds),
    Spec("checklist_on_open", "GAUDI_TUI_CHECKLIST_ON_OPEN", _flag),
    Spec("runs_dir", "GAUDI_TUI_RUNS_DIR", _folder),
    Spec("chat.model", "GAUDI_TUI_CHAT_MODEL", _text),
    Spec("chat.dtype", "GAUDI_TUI_CHAT_DTYPE", _one_of(DTYPES)),
    Spec("chat.quantization", "GAUDI_TUI_CHAT_QUANTIZATION", _one_of(tuple(QUANTIZATIONS))),
    Spec("chat.compile", "GAUDI_TUI_CHAT_COMPILE", _flag),
    Spec("cluster.ray_address", "RAY_ADDRESS", _text),
    Spec("cluster.prometheus_url", "GAUDI_TUI_PROMETHEUS", _text),
)
TABLES = ("chat", "cluster", "keys", "alerts")
OWN_READERS = ("keys", "alerts")
"""Tables read elsewhere: `_keys` below, `core/alerts/config.py`."""


# -- reading -------------------------------------------------------------------------------------
def _line_of(text: str, table: str | None, key: str) -> int | None:
    """The line where `key` is set inside `[table]` (top level when None); None if not found."""
    current: str | None = None
    pattern = re.compile(r'\s*(?:"([^"]*)"|\'([^\']*)\'|([A-Za-z0-9_.-]+))\s*=')
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            current = header.group(1).strip('"')
            if current == key and table is None:
                return number
            continue
        match = pattern.match(line)
        if match and current == table and key in match.groups():
            return number
    return None


def _syntax_line(error: Exception) -> int | None:
    line = getattr(error, "lineno", None)
    if isinstance(line, int):
        return line
    found = re.search(r"line (\d+)", str(error))
    return int(found.group(1)) if found else None


def _read_file(path: Path) -> tuple[dict[str, Any], str, list[Problem], bool]:
    """(data, text, problems, parsed). A missing file is empty and fine."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, "", [], True
    except (OSError, UnicodeDecodeError) as error:
        return {}, "", [Problem(f"cannot be read ({error}); using defaults")], False
    try:
        return tomllib.loads(text), text, [], True
    except tomllib.TOMLDecodeError as error:
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        return (
            {},
            text,
            [Problem(f"is not valid TOML ({message}); using defaults", _syntax_line(error))],
            False,
        )


def _file_values(data: dict[str, Any], text: str, problems: list[Problem]) -> dict[str, object]:
    """Spec name → raw file value, reporting unknown keys and tables that are not tables."""
    known = {spec.name for spec in SPECS}
    found: dict[str, object] = {}
    for key, value in data.items():
        if key in TABLES:
            if not isinstance(value, dict):
                problems.append(Problem(f"[{key}] must be a table", _line_of(text, None, key)))
                continue
            if key in OWN_READERS:
                continue
            for sub, subvalue in value.items():
                name = f"{key}.{sub}"
                if name in known:
                    found[name] = subvalue
                else:
                    problems.append(
                        Problem(f"unknown key {sub!r} in [{key}] (ignored)", _line_of(text, key, sub))
                    )
        elif key in known:
            found[key] = value
        else:
            problems.append(Problem(f"unknown key {key!r} (ignored)", _line_of(text, None, key)))
    return found


def _keys(data: dict[str, Any], text: str, problems: list[Problem]) -> dict[str, str]:
    table = data.get("keys", {})
    keys: dict[str, str] = {}
    if not isinstance(table, dict):
        return keys
    for binding_id, value in table.items():
        if (found := key_list(value)) is not None:
            keys[binding_id] = found
        else:
            line = _line_of(text, "keys", binding_id)
            problems.append(Problem(f'[keys] {binding_id!r} must be a key string like "ctrl+r"', line))
    return keys


def load(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Loaded:
    """The effective settings: defaults, then the file, then the environment. Never raises."""
    path = path or config_path()
    environ = os.environ if environ is None else environ
    data, text, problems, parsed = _read_file(path)
    raw = _file_values(data, text, problems)
    values: dict[str, Any] = {}  # each checked by its spec's converter
    origins: dict[str, Origin] = {}
    for spec in SPECS:
        origins[spec.name] = "default"
        if spec.name in raw:
            try:
                values[spec.name] = spec.convert(raw[spec.name])
                origins[spec.name] = "file"
            except ValueError as error:
                line = _line_of(text, spec.table, spec.key)
                problems.append(Problem(f"{spec.name} {error}; using the default", line))
        env_value = environ.get(spec.env) if spec.env else None
        if env_value:
            try:
                values[spec.name] = spec.convert(env_value)
                origins[spec.name] = "environment"
            except ValueError as error:
                problems.append(Problem(f"${spec.env} {error}; ignored", in_file=False))
    keys = _keys(data, text, problems)
    origins["keys"] = "file" if keys else "default"
    chat = replace(ChatDefaults(), **{k[5:]: v for k, v in values.items() if k.startswith("chat.")})
    settings = replace(
        Settings(),
        **{k: v for k, v in values.items() if "." not in k},
        keys=keys,
        chat=chat,
        ray_address=values.get("cluster.ray_address"),
        prometheus_url=values.get("cluster.prometheus_url"),
    )
    return Loaded(settings, path, origins, tuple(problems), parsed)


def runs_dir_setting() -> Path | None:
    """The runs folder the user set (file or $GAUDI_TUI_RUNS_DIR), None for the default."""
    return load().settings.runs_dir


# -- writing -------------------------------------------------------------------------------------
def save_theme(theme: str, path: Path | None = None) -> str | None:
    """Set `theme = "…"` in the file, keeping its comments and other keys; creates the file if
    missing. Returns why it did not save (the file does not parse, or cannot be written), else None."""
    import tomlkit

    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        document = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError) as error:
        return f"{path} cannot be read: {error}"
    except tomlkit.exceptions.ParseError as error:
        return f"{path} is not valid TOML ({error}); fix it, then pick the theme again"
    if document.get("theme") == theme:
        return None
    document["theme"] = theme
    try:
        tmp = path.with_suffix(".toml.tmp")
        tmp.write_text(tomlkit.dumps(document), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as error:
        return f"{path} cannot be written: {error}"
    return None
