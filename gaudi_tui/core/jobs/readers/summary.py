"""The metrics block `Trainer.log_metrics` prints at the end (GaudiTrainer's too):

    ***** train metrics *****
      epoch                       =        3.0
      max_memory_allocated (GB)   =      94.41
      train_runtime               = 0:12:34.56
      train_samples_per_second    =      7.392

Each line is `print(f"  {key: <{w}} = {value:>{w}}")` (transformers' `trainer_pt_utils.log_metrics`;
published copies often lose the indent); the header goes through `logging` and may be missing, so a
line counts only when its key is one
Trainer or GaudiTrainer writes there (`train_…`, `eval_…`, `epoch`, `total_flos`, the memory keys).
`*_runtime` is printed as `h:mm:ss.ff`. The block becomes one `summary` (or `eval`) event when a
line that is not part of it follows.
"""

from __future__ import annotations

import re

from gaudi_tui.core.jobs.readers.figures import GB_KEYS, event_of, number

_LINE = re.compile(r"^\s*(\S[^=]*?)\s*=\s*(\S+)\s*$")
_RUNTIME = re.compile(r"^(\d+):(\d\d):(\d\d(?:\.\d+)?)$")
_PREFIXES = ("train_", "eval_", "test_", "predict_")
_KEYS = {"epoch", "total_flos", *GB_KEYS}
Event = dict[str, object]


def figure(key: str, raw: str) -> float | None:
    if key.endswith("_runtime") and (hms := _RUNTIME.match(raw)) is not None:
        hours, minutes, seconds = hms.groups()
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    return number(raw)


class SummaryReader:
    def __init__(self) -> None:
        self.block: dict[str, float] = {}

    def segment(self, text: str) -> list[Event]:
        match = _LINE.match(text)
        if match is not None and (match.group(1) in _KEYS or match.group(1).startswith(_PREFIXES)):
            value = figure(match.group(1), match.group(2))
            if value is not None:
                self.block[match.group(1)] = value
            return []
        return self.pending()

    def pending(self) -> list[Event]:
        if not self.block:
            return []
        block, self.block = self.block, {}
        event = event_of(block)
        if event is None or event["event"] == "log":  # no runtime line: still the end summary
            event = event_of(block, kind="summary")
        return [event] if event is not None else []
