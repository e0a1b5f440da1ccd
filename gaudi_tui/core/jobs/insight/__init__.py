"""A job's insight: Intel's runtime file (`core/insight/runtime.py`) and torch's own events aligned to
the steps of its `metrics.jsonl` (`report.py`, `points.py`, `zone.py`), and the lines shown for it
(`text.py`). Nothing here imports torch or the UI."""
