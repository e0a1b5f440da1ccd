"""Command output readers: what output without a line end costs (a binary dump, a bar drawn with \\b).

`OutputMetrics` searches only the new text for line ends and keeps the open line to 64 KiB
(`readers/lines.py`). Fed 64 KiB chunks of output with no `\\r` nor `\\n`, the second 32 MiB must
cost what the first did (linear); the former splitter (the open line re-split with every chunk,
reproduced here, on 4 MiB: it is quadratic) is timed beside it, its first 2 MiB against its next
2 MiB. Also: real Trainer output (the 5.24 tqdm recording, repeated to 4 MiB) in MiB/s. All in
process CPU time (a shared machine's load moves wall-clock time): medians of 5 runs with min and
max, and the load average.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/common
from common.figures import load, spread  # noqa: E402

RUNS = 5
CHUNK = "#\b" * 32 * 1024
"""64 KiB of a bar drawn with backspaces."""
MIB = 1024 * 1024


def halves(feed: Callable[[str], object], total: int) -> tuple[float, float]:
    """CPU seconds for the first and the second half of `total` bytes fed in CHUNK pieces."""
    marks = [time.process_time()]
    for _half in (0, 1):
        for _ in range(total // 2 // len(CHUNK)):
            feed(CHUNK)
        marks.append(time.process_time())
    return marks[1] - marks[0], marks[2] - marks[1]


def former() -> Callable[[str], object]:
    """The splitter before: the open line joined to every chunk and split again."""
    split = re.compile(r"[\r\n]")
    state = {"partial": ""}

    def feed(text: str) -> list[str]:
        parts = split.split(state["partial"] + text)
        state["partial"] = parts.pop()
        return parts

    return feed


def main() -> int:
    from gaudi_tui.core.jobs.readers import OutputMetrics

    now = [halves(OutputMetrics("json").feed, 64 * MIB) for _ in range(RUNS)]
    before = [halves(former(), 4 * MIB) for _ in range(RUNS)]
    recording = (
        Path(__file__).resolve().parent.parent / "tests" / "commands" / "data" / "trainer-5.24-tqdm.log"
    )
    text = recording.read_bytes().decode()
    text = text * (4 * MIB // len(text))
    rates = []
    for _ in range(RUNS):
        reader, start = OutputMetrics(), time.process_time()
        for i in range(0, len(text), 64 * 1024):
            reader.feed(text[i : i + 64 * 1024])
        rates.append(len(text) / MIB / (time.process_time() - start))
    print("no line end, 64 KiB chunks:")
    print(f"  now, first 32 MiB   {spread([a for a, _ in now], '{:.3f}')} s CPU")
    print(f"  now, next 32 MiB    {spread([b for _, b in now], '{:.3f}')} s CPU")
    print(f"  before, first 2 MiB {spread([a for a, _ in before], '{:.3f}')} s CPU")
    print(f"  before, next 2 MiB  {spread([b for _, b in before], '{:.3f}')} s CPU")
    print(f"Trainer 5.24 output through OutputMetrics: {spread(rates, '{:.1f}')} MiB/s")
    print(load())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
