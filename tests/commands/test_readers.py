"""Output readers on real recorded Trainer output, JSON lines and user patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.jobs.readers import OutputMetrics, PatternError, check_pattern

DATA = Path(__file__).parent / "data"


def events_of(text: str, chunk: int = 0, **kwargs: object) -> list[dict]:
    out = OutputMetrics(clock=lambda: 100.0, **kwargs)  # type: ignore[arg-type]
    events: list[dict] = []
    if chunk:
        for i in range(0, len(text), chunk):
            events += out.feed(text[i : i + chunk])
    else:
        events += out.feed(text)
    return events + out.flush() + [out.end(stopped=False)]


def logs(events: list[dict]) -> list[tuple[int, float]]:
    return [(e["step"], e["loss"]) for e in events if e["event"] == "log"]


@pytest.mark.parametrize("name", ["trainer-5.24-tqdm.log", "trainer-4.x-tqdm.log"])
@pytest.mark.parametrize("chunk", [0, 7])
def test_trainer_dicts_get_their_step_from_the_progress_bar(name: str, chunk: int) -> None:
    text = (DATA / name).read_bytes().decode()  # \r kept
    assert text.count("\r") == 35  # tqdm's redraws, as recorded: the reader meets every one
    events = events_of(text, chunk=chunk)
    assert events[0]["event"] == "begin" and events[0]["step"] == 0
    # logging_steps=3 over 12 steps: the dicts belong to steps 3, 6, 9, 12 (not 1..4, not the weight bar)
    assert logs(events) == [(3, 5.392), (6, 2.3), (9, 1.729), (12, 1.549)]
    first = next(e for e in events if e["event"] == "log")
    assert first["learning_rate"] == pytest.approx(0.0008333) and first["grad_norm"] == 11.14
    assert first["max_steps"] == 12
    summary = next(e for e in events if e["event"] == "summary")
    assert summary["train_loss"] == 2.742 and summary["step"] == 12
    assert events[-1] == {"event": "end", "time": 100.0, "step": 12, "max_steps": 12, "stopped": False}


def test_without_a_bar_the_logs_are_counted() -> None:
    events = events_of((DATA / "trainer-5.24-printer.log").read_text(encoding="utf-8"))
    assert logs(events) == [(1, 5.401), (2, 2.419)]


def test_evaluation_bar_and_optimum_habana_memory_figures() -> None:
    text = (
        "\r 50%|#####     | 10/20 [00:01<00:01, 9.1it/s]"
        "\r 100%|##########| 4/4 [00:00<00:00, 40.1it/s]\r     \r"
        "{'eval_loss': 1.5, 'eval_runtime': 0.1, 'epoch': 0.5}\n"
        "\r 50%|#####     | 10/20 [00:01<00:01, 9.1it/s]\r      \r"
        "{'loss': 1.7, 'learning_rate': 1e-05, 'memory_allocated (GB)': 2.5, "
        "'max_memory_allocated (GB)': 3.0, 'total_memory_available (GB)': 94.62}\n"
        "\r 55%|#####     | 11/20 [00:01<00:01, 9.1it/s]"
    )
    events = events_of(text)
    ev = next(e for e in events if e["event"] == "eval")
    assert ev["step"] == 10 and ev["eval_loss"] == 1.5
    log = next(e for e in events if e["event"] == "log")
    assert log["step"] == 11 and log["memory_mib"] == 2560 and log["max_memory_mib"] == 3072
    assert log["max_steps"] == 20


def test_a_quiet_output_settles_on_the_bar_being_drawn() -> None:
    out = OutputMetrics(clock=lambda: 1.0)
    out.feed(
        "\r 10%|#   | 2/20 [00:01<00:09, 2it/s]\r   \r{'loss': '3.1'}\n\r 10%|#   | 2/20 [00:01<00:09, 2it/s]"
    )
    assert [(e["event"], e["step"]) for e in out.settle() if e["event"] == "log"] == [("log", 2)]


def test_json_lines_keep_their_own_step_and_names() -> None:
    text = 'starting\n{"step": 5, "loss": 2.5, "lr": 0.001}\n{"config": "x"}\n{"step": 10, "val_loss": 2.0}\n'
    events = events_of(text, source="json")
    assert logs(events) == [(5, 2.5)]
    assert next(e for e in events if e["event"] == "log")["learning_rate"] == 0.001
    assert [(e["step"], e["eval_loss"]) for e in events if e["event"] == "eval"] == [(10, 2.0)]


def test_pattern_with_named_groups() -> None:
    text = "epoch 1 iter 10/100 loss=2.50 lr 3e-4\nnoise\nepoch 1 iter 20/100 loss=2.25 lr 2e-4\n"
    events = events_of(
        text,
        source="pattern",
        user_pattern=r"iter (?P<step>\d+)/(?P<max_steps>\d+) loss=(?P<loss>\S+) lr (?P<lr>\S+)",
    )
    assert logs(events) == [(10, 2.5), (20, 2.25)]
    assert events[-1]["max_steps"] == 100


def test_output_without_metrics_finds_none() -> None:
    out = OutputMetrics()
    assert out.feed("hello\nworld 1/2\n{not a dict}\n") == [] and out.flush() == [] and out.found == 0


def test_bad_patterns_are_refused_with_the_reason() -> None:
    assert "named group" in (check_pattern(r"loss (\d+)") or "")
    assert check_pattern("(?P<loss>[") is not None
    with pytest.raises(PatternError, match="metrics_pattern"):
        OutputMetrics("pattern", "")
