"""Child side of the isolated checks: `python -m gaudi_tui.core.doctor.probe NAME` prints one JSON line.

Only ever run in a throwaway child: importing `habana_frameworks` can acquire a card, and
`transformers.is_torch_hpu_available()` monkey-patches torch.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
from collections.abc import Callable


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _has_habana() -> bool:
    return importlib.util.find_spec("habana_frameworks") is not None


def plugin() -> dict[str, object]:
    """Does `habana_frameworks.torch` import, and from where?"""
    if not _has_habana():
        return {"found": False}
    try:
        import habana_frameworks
        import habana_frameworks.torch  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - the failure is the finding
        return {"found": True, "imported": False, "error": _error(exc)}
    return {
        "found": True,
        "imported": True,
        "location": getattr(habana_frameworks, "__file__", None),
        "version": getattr(habana_frameworks, "__version__", None),
    }


def hpu() -> dict[str, object]:
    """What `transformers.is_torch_hpu_available()` says, and the facts that explain it."""
    facts: dict[str, object] = {"habana_frameworks": _has_habana()}
    try:
        facts["accelerate"] = importlib.metadata.version("accelerate")
    except importlib.metadata.PackageNotFoundError:
        facts["accelerate"] = None
    if not facts["habana_frameworks"]:
        # is_torch_hpu_available() starts with this same find_spec and returns False; importing
        # transformers only to hear that would cost about a second.
        facts["available"] = False
        return facts
    try:
        from transformers.utils import is_torch_hpu_available
    except Exception as exc:  # noqa: BLE001
        facts["transformers_error"] = _error(exc)
        return facts
    try:
        facts["available"] = bool(is_torch_hpu_available())
    except Exception as exc:  # noqa: BLE001
        facts["available"] = False
        facts["error"] = _error(exc)
    if facts["available"]:
        import torch

        hpu = torch.hpu  # type: ignore[attr-defined]  # habana_frameworks adds torch.hpu on import
        facts["count"] = int(hpu.device_count())
        facts["name"] = str(hpu.get_device_name())
    return facts


def hccl() -> dict[str, object]:
    """Does the HCCL backend for torch.distributed import?"""
    if not _has_habana():
        return {"found": False}
    try:
        import habana_frameworks.torch.distributed.hccl  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return {"found": True, "imported": False, "error": _error(exc)}
    return {"found": True, "imported": True}


PROBES: dict[str, Callable[[], dict[str, object]]] = {"plugin": plugin, "hpu": hpu, "hccl": hccl}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in PROBES:
        print(f"usage: python -m gaudi_tui.core.doctor.probe {{{','.join(PROBES)}}}", file=sys.stderr)
        return 2
    print(json.dumps(PROBES[argv[0]]()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
