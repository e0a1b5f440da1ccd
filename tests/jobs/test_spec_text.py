"""The quick reader of spec.toml (core/jobs/spec_text.py): the same values as tomllib for the form
`to_toml` writes, None (tomllib's turn) for anything else, and the job list reads a run folder's
spec without tomllib (issue 28: it was half of the first `gaudi-tui jobs` over 1,000 runs)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import runfolder, spec, spec_text
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.spec import JobSpec, SpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DATA = Path(__file__).resolve().parent / "data"
ODD = replace(
    JobSpec(),
    name='a "quoted" \\ name, [with] = signs ☃ 𝄞',
    env={"X Y": "1=2", "HF_TOKEN": "é#not a comment"},
    learning_rate=1e-20,
    epochs=float("inf"),
    kind="command",
    command=("python", "train.py", "--lr", "1e-3", "a, b"),
    cards=(0, 3),
)


def _texts() -> list[str]:
    recorded = [p.read_text(encoding="utf-8") for p in sorted(DATA.glob("**/spec.toml"))]
    assert len(recorded) >= 3  # the recorded runs of older versions (fewer fields) are among them
    return recorded + [spec.to_toml(s) for s in (*spec.PRESETS.values(), ODD)]


@pytest.mark.parametrize("text", _texts())
def test_the_form_to_toml_writes_reads_as_tomllib_reads_it(text: str) -> None:
    quick = spec_text.loads(text)
    assert quick is not None
    assert repr(quick) == repr(tomllib.loads(text))  # types too: 1 is not 1.0
    assert spec.from_toml(text) == spec.from_mapping(tomllib.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        "max_steps = [\n",
        "max_steps = 1\nmax_steps = 2\n",
        "max_steps = 01\n",
        "max_steps = 1 # a comment\n",
        "max_steps = 1.\n",
        "name = 'literal'\n",
        'name = "\\u00e9"\n',
        'name = """two\nlines"""\n',
        "[env]\nA = 1\n",
        "[other]\nA = 1\n",
        "a.b = 1\n",
        "cards = [\n  1,\n]\n",
    ],
)
def test_any_other_toml_is_left_to_tomllib(text: str) -> None:
    assert spec_text.loads(text) is None


def test_a_broken_spec_still_gives_tomllibs_error() -> None:
    with pytest.raises(SpecError, match="not valid TOML"):
        spec.from_toml("max_steps = [\n")
    with pytest.raises(SpecError, match="unknown setting 'max_step'"):
        spec.from_toml("max_step = 3\n")  # the quick form, checked as every spec is


def test_the_job_list_reads_a_run_folders_spec_without_tomllib(monkeypatch: pytest.MonkeyPatch) -> None:
    run = runfolder.create(ODD, accelerator="cpu")
    calls: list[str] = []
    parse = tomllib.loads
    monkeypatch.setattr(spec.tomllib, "loads", lambda text: calls.append(text) or parse(text))
    (view,) = Monitor().poll()
    assert (view.id, view.name, view.kind, view.error) == (run.id, ODD.name, "command", None)
    assert calls == []


def test_the_job_list_coerces_only_the_fields_its_row_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    runfolder.create(ODD, accelerator="cpu")
    coerced: list[str] = []
    coerce = spec.coerce
    monkeypatch.setattr(spec, "coerce", lambda name, value: coerced.append(name) or coerce(name, value))
    monitor = Monitor()
    (view,) = monitor.poll()
    assert coerced and set(coerced) <= set(spec.ROW_FIELDS)
    assert (view.name, view.kind, view.processes, view.device) == (
        ODD.name,
        ODD.kind,
        ODD.processes,
        ODD.device,
    )
    (watcher,) = monitor.watchers.values()
    assert watcher.load_spec() == ODD  # a run opened reads the whole spec


@pytest.mark.parametrize("path", sorted(DATA.glob("**/spec.toml")), ids=lambda p: p.parent.name)
def test_a_row_spec_has_the_whole_specs_row_fields(path: Path) -> None:
    row, whole = spec.load_row(path), spec.load(path)
    assert [getattr(row, n) for n in spec.ROW_FIELDS] == [getattr(whole, n) for n in spec.ROW_FIELDS]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("max_steps = [\n", "spec.toml: not valid TOML"),
        ('name = "x"\nmax_step = 3\n', "spec.toml: unknown setting 'max_step' (did you mean 'max_steps'?)"),
        ('max_steps = "many"\n', "spec.toml: max_steps:"),
        ('kind = "nope"\n', "spec.toml: kind:"),
    ],
)
def test_a_broken_spec_is_listed_with_its_error(text: str, error: str) -> None:
    run = runfolder.create(JobSpec(), accelerator="cpu")
    run.spec_path.write_text(text)
    (view,) = Monitor().poll()
    assert view.name == "(unreadable spec.toml)" and error in (view.error or "")


class _Counting:
    """spec_text's line pattern, counting the lines it is asked to match."""

    def __init__(self, pattern: object) -> None:
        self.pattern, self.lines = pattern, 0

    def fullmatch(self, line: str) -> object:
        self.lines += 1
        return self.pattern.fullmatch(line)  # type: ignore[attr-defined]


def test_a_line_many_specs_share_is_matched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A year of runs repeats most spec lines: each distinct line meets the pattern once."""
    counting = _Counting(spec_text._LINE)
    monkeypatch.setattr(spec_text, "_LINE", counting)
    monkeypatch.setattr(spec_text, "_SEEN", {})
    texts = [spec.to_toml(replace(JobSpec(), name=f"run {i}")) for i in range(100)]
    tables = [spec_text.loads(text) for text in texts]
    distinct = {line for text in texts for line in text.splitlines() if " = " in line}
    assert counting.lines == len(distinct) < 2 * len(texts)
    assert [t["name"] for t in tables if t] == [f"run {i}" for i in range(100)]
    assert all(repr(t) == repr(tomllib.loads(text)) for t, text in zip(tables, texts, strict=True))


def test_a_list_read_from_a_remembered_line_is_each_callers_own() -> None:
    text = spec.to_toml(JobSpec())
    first, second = spec_text.loads(text), spec_text.loads(text)
    assert first is not None and second is not None
    first["lora_target_modules"].append("o_proj")  # type: ignore[attr-defined]
    assert second["lora_target_modules"] == list(JobSpec().lora_target_modules)
    assert spec_text.loads(text) == second
