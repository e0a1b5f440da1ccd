"""A stand-in for the Gaudi runtime's metrics writer, made from Intel's source (not a recording).

Source: HabanaAI/gaudi-pytorch-bridge, tag v1.19.0,
`python_packages/habana_frameworks/torch/hpu/metrics/saver.py` (`MetricJsonWriter`,
`MetricTextWriter`, `MetricSaver._determine_file_name_for_multinode`, `_create_unique_file`) and
`metrics.py`. What it copies from there: `[` on open, objects joined by `",\\n"`, `]\\n` on close
(JSON); `Metric name:` … blocks (text); `-rank<N>` before the last extension when `RANK` or
`OMPI_COMM_WORLD_RANK` is set; an existing name becomes `<name>.1`, `<name>.2`; triggers and format
from `PT_HPU_METRICS_DUMP_TRIGGERS` / `PT_HPU_METRICS_FILE_FORMAT` (and their `HABANA_PT_` aliases);
the file is made only when the device is acquired. No real dump has been published, so the file
this writes has not been compared with one. Standard library only.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

METRICS = ("graph_compilation", "cpu_fallback", "memory_defragmentation")


def _env(name: str, default: str | None = None) -> str | None:
    if name in os.environ:
        return os.environ[name]
    return os.environ.get(name.replace("PT_HPU_", "HABANA_PT_", 1), default)


def rank_file_name(name: str) -> str:
    try:
        base, ext = name.rsplit(".", maxsplit=1)
        ext = f".{ext}"
    except ValueError:
        base, ext = name, ""
    for var in ("RANK", "OMPI_COMM_WORLD_RANK"):
        if var in os.environ:
            return f"{base}-rank{os.environ[var]}{ext}"
    return f"{base}{ext}"


class Saver:
    """One process's writer: `write` per dump, `close` at exit (writes the JSON `]`)."""

    def __init__(self) -> None:
        base = _env("PT_HPU_METRICS_FILE")
        self.enabled = bool(base)
        self.triggers = set((_env("PT_HPU_METRICS_DUMP_TRIGGERS", "process_exit") or "").split(","))
        self.format = _env("PT_HPU_METRICS_FILE_FORMAT", "json")
        self.name = rank_file_name(base) if base else ""
        self.handle = None
        self.first = True

    def _open(self) -> None:
        name, index = self.name, 0
        os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
        while self.handle is None:
            try:
                self.handle = open(name, "x")  # noqa: SIM115 - kept open for the process's life
            except FileExistsError:
                index += 1
                name = f"{self.name}.{index}"
        self.name = name
        if self.format == "json":
            self.handle.write("[")
            self.handle.flush()

    def write(self, metric: str, stats: list[tuple[str, object]], trigger: str) -> None:
        if not self.enabled:
            return
        if self.handle is None:
            self._open()
        assert self.handle is not None
        now = datetime.now()
        if self.format == "json":
            obj = {"metric_name": metric, "triggered_by": trigger, "generated_on": now.isoformat(),
                   "statistics": dict(stats)}  # fmt: skip
            if not self.first:
                self.handle.write(",\n")
            self.handle.write(json.dumps(obj))
        else:
            lines = [f"Metric name: {metric}\n", f"Triggered by: {trigger}\n", f"Generated on: {now}\n",
                     "Statistics:\n", *[f"\t{k}: {v}\n" for k, v in stats], "\n"]  # fmt: skip
            self.handle.writelines(lines)
        self.handle.flush()
        self.first = False

    def close(self) -> None:
        if self.handle is not None:
            if self.format == "json":
                self.handle.write("]\n")
            self.handle.close()
            self.handle = None
