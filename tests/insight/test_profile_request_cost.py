"""The profile request's cost on a step with nothing asked (bench/why_slow.py measures the hooks):
rank 0 looks for the request file once per `profile.CHECK_EVERY_S` of training, not every step, and
still answers a request within that time. A real `ProfileTaker` and a real torch.profiler (CPU)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gaudi_tui.core.insight import profile


def counting_stats(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Every `os.stat` of a path ending in `name` (`Path.exists` and `os.path.exists` both stat)."""
    seen: list[str] = []
    real = os.stat

    def stat(path, *args, **kwargs):  # noqa: ANN001, ANN202 - os.stat's signature
        if os.fspath(path).endswith(name):
            seen.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    return seen


def test_a_step_with_nothing_asked_stats_the_request_once_per_half_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taker = profile.ProfileTaker(tmp_path, "cpu")
    stats = counting_stats(monkeypatch, profile.REQUEST)
    began = time.perf_counter()
    for step in range(1, 2001):  # 2000 fast steps, well inside one half second on any machine
        assert taker.step_end(step) is None
    elapsed = time.perf_counter() - began
    assert len(stats) <= 1 + int(elapsed / profile.CHECK_EVERY_S), (len(stats), elapsed)


def test_a_request_is_still_answered_within_the_check_interval(tmp_path: Path) -> None:
    taker = profile.ProfileTaker(tmp_path, "cpu")
    assert taker.step_end(1) is None  # the first step looks (nothing asked yet)
    assert profile.request(tmp_path, 1) is None
    asked = time.perf_counter()
    step = 1
    while not taker.busy():
        assert time.perf_counter() - asked < profile.CHECK_EVERY_S + 1.0, "the request was not seen"
        time.sleep(0.01)
        step += 1
        assert taker.step_end(step) is None  # the step that sees it starts the profiler (slow once)
    assert (tmp_path / profile.TAKING).exists() and not (tmp_path / profile.REQUEST).exists()
    taken = taker.step_end(step + 1)
    assert taken is not None and taken["what"] == "taken" and taken["steps"] == 1
    assert Path(str(taken["trace"])).is_file()
