"""A fake Gaudi runtime inside a CPU training run: counts graph compiles as the bridge would and
writes them with `hpu_metrics_saver.Saver` (made from Intel's saver.py, see there).

Put this folder on the job's PYTHONPATH and set `FAKE_HPU_RUNTIME=1` with `PT_HPU_METRICS_FILE`.
Once `torch.nn.modules.module` is imported, a global forward pre-hook watches the first
`nn.Embedding` the process calls (the token embedding): every input shape it has not seen counts
as one graph compile (`graph_compilation`: TotalNumber, TotalTime in µs, AvgTime; `recipe` with
`PT_HPU_METRICS_GC_DETAILS=1`), dumped at once under the `metric_change` trigger. This is a
simplification of what the bridge does (it compiles forward, backward and optimizer graphs per
shape); Intel's own test asserts the same rule, 3 input shapes → TotalNumber == 3.
`FAKE_HPU_FALLBACK_OP=<op>` records that op in `cpu_fallback.FallbackOps` once per compile.
`FAKE_HPU_COMPILE_US` is the time each compile adds (default 250000). At exit (`process_exit`)
every metric is dumped and the JSON array closed; a killed process leaves it open, as the real one.
Standard library only at start-up; torch is used only once the job imports it.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import os
import sys

_WATCHED = "torch.nn.modules.module"


class _Runtime:
    def __init__(self) -> None:
        from hpu_metrics_saver import Saver

        self.saver = Saver()
        self.shapes: set[tuple[int, ...]] = set()
        self.embedding: int | None = None
        self.compile_us = int(os.environ.get("FAKE_HPU_COMPILE_US", "250000"))
        self.details = os.environ.get("PT_HPU_METRICS_GC_DETAILS") == "1"
        self.recipes: list[list[object]] = []
        self.fallback = os.environ.get("FAKE_HPU_FALLBACK_OP", "")
        self.fallbacks = 0

    def stats(self, metric: str) -> list[tuple[str, object]]:
        if metric == "graph_compilation":
            n = len(self.shapes)
            out: list[tuple[str, object]] = [
                ("TotalNumber", n), ("TotalTime", n * self.compile_us), ("AvgTime", self.compile_us if n else 0)
            ]  # fmt: skip
            return out + ([("recipe", list(self.recipes))] if self.details else [])
        if metric == "cpu_fallback":
            ops = {self.fallback: self.fallbacks} if self.fallbacks else {}
            return [("TotalNumber", self.fallbacks), ("FallbackOps", ops)]
        return [("TotalNumber", 0), ("TotalSuccessful", 0), ("AvgTime", 0), ("MaxTime", 0)]

    def dump(self, metric: str, trigger: str) -> None:
        if trigger in self.saver.triggers:
            self.saver.write(metric, self.stats(metric), trigger)

    def pre_hook(self, module, args) -> None:  # noqa: ANN001 - torch's hook signature
        import torch

        if not isinstance(module, torch.nn.Embedding) or not args or not hasattr(args[0], "shape"):
            return
        if self.embedding is None:
            self.embedding = id(module)
        shape = tuple(args[0].shape)
        if id(module) != self.embedding or shape in self.shapes:
            return
        self.shapes.add(shape)
        self.recipes.append([f"graph_{'x'.join(map(str, shape))}", self.compile_us])
        self.dump("graph_compilation", "metric_change")
        if self.fallback:
            self.fallbacks += 1
            self.dump("cpu_fallback", "metric_change")

    def exit(self) -> None:
        if self.saver.handle is not None:  # the device was acquired (something was written)
            for metric in ("graph_compilation", "cpu_fallback", "memory_defragmentation"):
                self.dump(metric, "process_exit")
        self.saver.close()


def _install(module: object) -> None:
    runtime = _Runtime()
    module.register_module_forward_pre_hook(runtime.pre_hook)  # type: ignore[attr-defined]
    atexit.register(runtime.exit)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec):  # noqa: ANN001, ANN201
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001
        self.inner.exec_module(module)
        _install(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


if os.environ.get("FAKE_HPU_RUNTIME") == "1" and os.environ.get("PT_HPU_METRICS_FILE"):
    sys.meta_path.insert(0, _Finder())
