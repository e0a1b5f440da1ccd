"""bench/common/timeslice.py: the turns the training bench takes, with real child processes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import psutil
import pytest


def _timeslice():  # noqa: ANN202 - the module, loaded from its file
    """bench/common/timeslice.py by its path: bench/ on sys.path would put bench/ray.py in the place
    of the real `ray` for every later test in this process."""
    path = Path(__file__).resolve().parents[2] / "bench" / "common" / "timeslice.py"
    spec = importlib.util.spec_from_file_location("bench_common_timeslice", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


_ts = _timeslice()
Side, Tail, cpu_seconds, stop = _ts.Side, _ts.Tail, _ts.cpu_seconds, _ts.stop
take_turns, tick_seconds, warm_up = _ts.take_turns, _ts.tick_seconds, _ts.warm_up

STAMPER = r"""
import sys, time
out = open(sys.argv[1], "a", buffering=1)
step = 0
while True:
    end = time.thread_time() + 0.004  # a step: 4 ms on the CPU
    while time.thread_time() < end:
        pass
    step += 1
    if step % 5 == 0:
        out.write(f"{step} {time.time()}\n")
"""

BURNER = r"""
import threading, time
def burn():
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
threads = [threading.Thread(target=burn) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("burnt", flush=True)
time.sleep(600)
"""


@pytest.fixture
def children():
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait()


def test_tail_parses_each_whole_line_once(tmp_path: Path) -> None:
    path = tmp_path / "stamps.txt"
    tail = Tail(path, str.split)
    assert tail.read() == []
    path.write_text("5 1.0\n10 2")
    assert tail.read() == [["5", "1.0"]]
    with path.open("a") as fh:
        fh.write(".0\n")
    assert tail.read() == [["5", "1.0"], ["10", "2.0"]]


def test_cpu_seconds_counts_every_thread_to_the_nanosecond(children: list) -> None:
    child = subprocess.Popen([sys.executable, "-c", BURNER], stdout=subprocess.PIPE)
    children.append(child)
    assert child.stdout is not None and child.stdout.readline() == b"burnt\n"
    proc = psutil.Process(child.pid)
    stop(proc)
    cpu = cpu_seconds(proc)
    assert cpu >= 0.6  # both threads' 0.3 s, though they have ended
    assert abs(cpu - tick_seconds(proc)) < 0.05
    assert abs(cpu * 100 - round(cpu * 100)) > 1e-6  # not whole 10 ms ticks


def test_turns_of_a_pair_run_to_the_same_step(tmp_path: Path, children: list) -> None:
    sides = []
    for name in ("a", "b"):
        stamps = tmp_path / f"{name}.txt"
        child = subprocess.Popen([sys.executable, "-c", STAMPER, str(stamps)])
        children.append(child)
        tail = Tail(stamps, str.split)
        side = Side(psutil.Process(child.pid), lambda tail=tail: [(int(s), float(t)) for s, t in tail.read()])
        warm_up(10, side)
        sides.append(side)
    a, b = sides
    base = max(a.last_step(), b.last_step())
    take_turns(a, b, pairs=4, slice_s=3.0, steps_per_turn=20)
    for side in (a, b):
        marks = side.marks()
        for i, (start, end) in enumerate(side.slices):
            target = base + (i + 1) * 20
            assert any(s == target and start <= t <= end for s, t in marks), (i, target, side.slices)
        assert len(side.steps) == 4 and len(side.cpu) == 4 and all(c > 0 for c in side.cpu)
