"""gaudi-tui's wrapper for a user's training command, on PYTHONPATH of every process the command
starts (torchrun, accelerate launch, deepspeed and mpirun ranks included).

It imports nothing but the standard library. In another Python than the panel's, the folder holding
gaudi-tui is on `sys.path` only while the callback is imported. It waits for `transformers.trainer` to be imported
(most scripts never do: they run exactly as without the wrapper) and then appends the panel's
callback (`gaudi_tui.core.jobs.worker.wrapped.PanelCallback`) to `DEFAULT_CALLBACKS`, the list
every `Trainer.__init__` copies, so every Trainer the script builds (GaudiTrainer, TRL's trainers
and other subclasses too) reports metrics with their step and honours the graceful stop. It only
acts when `GAUDI_TUI_RUN` names the run folder. Then it runs the `sitecustomize` it hides (Debian
ships one).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))))
_WATCHED = "transformers.trainer"


def _add_callback(module: object) -> None:
    try:
        try:
            from gaudi_tui.core.jobs.worker import wrapped
        except ImportError:  # another Python than the panel's: find gaudi-tui where this file is
            wrapped = _import_from_here()
        wrapped.install(module)
    except Exception as exc:  # noqa: BLE001 - the user's script must run on whatever happens here
        print(f"[gaudi-tui] wrapper not active ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)


def _import_from_here():  # noqa: ANN202 - the module
    """The callback's module from the folder holding this gaudi-tui, which is on `sys.path` only
    while it is imported: the user's later imports find what they would without the wrapper (not
    the panel's site-packages, nor a checkout's tests/). Its own later imports need no path: they
    are submodules of the package, found through `gaudi_tui.__path__`."""
    added = _PACKAGE_ROOT not in sys.path
    if added:
        sys.path.append(_PACKAGE_ROOT)
    try:
        from gaudi_tui.core.jobs.worker import wrapped

        return wrapped
    finally:
        if added and _PACKAGE_ROOT in sys.path:
            sys.path.remove(_PACKAGE_ROOT)
            sys.path_importer_cache.pop(_PACKAGE_ROOT, None)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec):  # noqa: ANN001, ANN201 - importlib's signature
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001
        self.inner.exec_module(module)
        _add_callback(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)  # once: later imports of the name find the module loaded
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
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
