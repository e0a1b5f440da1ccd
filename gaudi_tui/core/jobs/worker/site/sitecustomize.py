"""gaudi-tui's wrapper for a user's training command, on PYTHONPATH of every process the command
starts (torchrun, accelerate launch, deepspeed and mpirun ranks included).

It imports nothing but the standard library. In another Python than the panel's, the folder holding
gaudi-tui is on `sys.path` only while the panel's modules are imported. It waits for two imports
(a script that makes neither runs exactly as without the wrapper):

- `transformers.trainer`: it appends the panel's callback
  (`gaudi_tui.core.jobs.worker.wrapped.PanelCallback`) to `DEFAULT_CALLBACKS`, the list every
  `Trainer.__init__` copies, so every Trainer the script builds (GaudiTrainer, TRL's trainers and
  other subclasses too) reports metrics with their step and honours the graceful stop;
- `torch._dynamo` (torch.compile's first call, or transformers' import): a plain loop's compiles and
  recompiles are watched (`worker/loop_watch.py`) until a Trainer's callback takes over.

It only acts when `GAUDI_TUI_RUN` names the run folder. Then it runs the `sitecustomize` it hides
(Debian ships one).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))))


def _add_callback(module: object) -> None:
    try:
        _panel_module("wrapped").install(module)
    except Exception as exc:  # noqa: BLE001 - the user's script must run on whatever happens here
        print(f"[gaudi-tui] wrapper not active ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)


def _watch_compiles(module: object) -> None:
    try:
        _panel_module("loop_watch").start(os.environ["GAUDI_TUI_RUN"])
    except Exception as exc:  # noqa: BLE001 - the user's script must run on whatever happens here
        print(
            f"[gaudi-tui] compile watch not active ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True
        )


_WATCHED = {"transformers.trainer": _add_callback, "torch._dynamo": _watch_compiles}
"""A module's name → what runs once it is imported."""


def _panel_module(name: str):  # noqa: ANN202 - the module
    """`gaudi_tui.core.jobs.worker.<name>`: the panel's own, else from the folder holding this
    gaudi-tui, which is on `sys.path` only while it is imported: the user's later imports find what
    they would without the wrapper (not the panel's site-packages, nor a checkout's tests/). Its own
    later imports need no path: they are submodules of the package, found through `gaudi_tui.__path__`."""
    import importlib

    qualified = f"gaudi_tui.core.jobs.worker.{name}"
    try:
        return importlib.import_module(qualified)
    except ImportError:  # another Python than the panel's: find gaudi-tui where this file is
        pass
    added = _PACKAGE_ROOT not in sys.path
    if added:
        sys.path.append(_PACKAGE_ROOT)
    try:
        return importlib.import_module(qualified)
    finally:
        if added and _PACKAGE_ROOT in sys.path:
            sys.path.remove(_PACKAGE_ROOT)
            sys.path_importer_cache.pop(_PACKAGE_ROOT, None)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, then) -> None:  # noqa: ANN001 - one of _WATCHED's
        self.inner = inner
        self.then = then

    def create_module(self, spec):  # noqa: ANN001, ANN201 - importlib's signature
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001
        self.inner.exec_module(module)
        self.then(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.waiting = dict(_WATCHED)

    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
        then = self.waiting.pop(name, None)
        if then is None:
            return None
        if not self.waiting:
            sys.meta_path.remove(self)  # each name once: later imports find the module loaded
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, then)
        return spec


def _chain() -> None:
    """Run the next `sitecustomize` on the path, as Python would have without this one."""
    mine = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401 - the hidden one runs on import
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001 - as Python itself reports a failing sitecustomize
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{exc!r}", file=sys.stderr)
    finally:
        sys.path[:] = saved
        if mine is not None:
            sys.modules["sitecustomize"] = mine


if os.environ.get("GAUDI_TUI_RUN"):
    sys.meta_path.insert(0, _Finder())
_chain()
