"""torch.compile's compiles and recompiles as the panel reads them from metrics.jsonl, with findings.

The job writes one `compile` event per compile of a frame (`what: "compile"`, from dynamo's compile
callbacks, with the guard that failed when it is a recompile) and one `what: "limit"` event when a
frame hits `recompile_limit` and dynamo runs it uncompiled from then on (`compile_watch.py`).
`CompileFrames` gathers them per frame; `findings` says what to do. These are torch's counts: on
Gaudi, Intel's runtime file counts the graphs its backend compiles (another view of the same cost),
so the two are shown side by side with their sources and never added up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gaudi_tui.core.insight.finding import Finding

EVENT = "compile"
SOURCE = "torch.compile (dynamo's compile callbacks and its recompiles log)"
MAX_FRAMES = 256
MAX_RECOMPILES = 64
"""Per frame, only the newest recompiles are kept (the count stays whole)."""

_SIZE = re.compile(
    r"tensor '(?P<input>.+?)' (?P<what>size|stride) mismatch at index (?P<index>\d+)\. "
    r"expected (?P<expected>-?\d+), actual (?P<actual>-?\d+)"
)
_FAILURE = re.compile(r"^\s*-\s*(?P<frame>\d+)/(?P<attempt>\d+):\s*(?P<reason>.+)$", re.M)
_FUNCTION = re.compile(r"Recompiling function (?P<name>\S+) in (?P<where>\S+)")
_LIMIT = re.compile(r"hit config\.(?P<name>\w+) \((?P<limit>\d+)\)")
_LIMIT_FUNCTION = re.compile(r"function: '(?P<name>[^']+)' \((?P<where>[^)]+)\)")
_LAST_REASON = re.compile(r"last reason: (?P<frame>\d+)/(?P<attempt>\d+): (?P<reason>.+)")


def guard(reason: str) -> dict[str, object] | None:
    """A size or stride guard's parts: which input, which dimension, expected and actual."""
    match = _SIZE.search(reason)
    if match is None:
        return None
    return {
        "input": match["input"],
        "kind": match["what"],
        "index": int(match["index"]),
        "expected": int(match["expected"]),
        "actual": int(match["actual"]),
    }


def guard_words(reason: str) -> str:
    """A failed guard in words ("args[0] dimension 1 was 14, now 15"), else torch's own words."""
    parts = guard(reason)
    if parts is None:
        return reason.strip()
    what = "dimension" if parts["kind"] == "size" else "stride of dimension"
    return f"{parts['input']} {what} {parts['index']} was {parts['expected']}, now {parts['actual']}"


def recompile_reason(message: str) -> tuple[str, str, str] | None:
    """(frame, function, first failed guard) of one record of torch's `recompiles` log: the first
    failure line is the newest graph's; the lines after it list older graphs' guards."""
    failure = _FAILURE.search(message)
    if failure is None:
        return None
    function = _FUNCTION.search(message)
    return failure["frame"], function["name"] if function else "?", failure["reason"].strip()


def limit_hit(message: str) -> dict[str, object] | None:
    """The parts of dynamo's warning that a frame hit its recompile limit, or None."""
    match = _LIMIT.search(message)
    if match is None:
        return None
    function = _LIMIT_FUNCTION.search(message)
    last = _LAST_REASON.search(message)
    return {
        "setting": match["name"],
        "limit": int(match["limit"]),
        "function": function["name"] if function else "?",
        "frame": last["frame"] if last else None,
        "reason": last["reason"].strip() if last else None,
    }


@dataclass
class Frame:
    frame: str
    function: str = "?"
    compiles: int = 0
    seconds: float = 0.0
    recompiles: list[tuple[int | None, str]] = field(default_factory=list)
    """(step, reason) of the newest MAX_RECOMPILES recompiles."""
    recompile_count: int = 0
    first_step: int | None = None
    limit: int | None = None
    """The recompile limit it hit (it runs uncompiled since), or None."""
    limit_step: int | None = None
    limit_reason: str | None = None
    """The guard whose failure reached the limit."""

    def recompiles_after(self, step: int) -> int:
        return sum(1 for s, _ in self.recompiles if s is not None and s > step)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["recompiles"] = [
            {"step": s, "reason": r, "words": guard_words(r), "guard": guard(r)} for s, r in self.recompiles
        ]
        return out


class CompileFrames:
    """torch.compile's frames of one run, from its `compile` events (applied oldest first)."""

    def __init__(self) -> None:
        self.frames: dict[str, Frame] = {}
        self.seen = False
        self.unavailable: str | None = None
        """Why the job's torch could not report compiles, or None."""

    def apply(self, event: dict) -> None:
        if event.get("event") != EVENT:
            return
        if event.get("what") == "unavailable":
            self.unavailable = str(event.get("reason") or "not available")
            return
        name = event.get("frame")
        if not isinstance(name, str) or (name not in self.frames and len(self.frames) >= MAX_FRAMES):
            return
        self.seen = True
        frame = self.frames.setdefault(name, Frame(name))
        step = event.get("step") if isinstance(event.get("step"), int) else None
        if isinstance(function := event.get("function"), str) and function != "?":
            frame.function = function
        if event.get("what") == "limit":
            limit = event.get("limit")
            frame.limit = limit if isinstance(limit, int) else 0
            frame.limit_step = step
            if isinstance(reason := event.get("reason"), str):
                frame.limit_reason = reason
            return
        frame.compiles += 1
        if frame.first_step is None:
            frame.first_step = step
        seconds = event.get("seconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 <= seconds < 1e7:
            frame.seconds += float(seconds)
        reason = event.get("reason")
        if isinstance(reason, str):
            frame.recompile_count += 1
            frame.recompiles.append((step, reason))
            del frame.recompiles[:-MAX_RECOMPILES]

    def to_dict(self) -> dict[str, object]:
        return {
            "source": SOURCE,
            "unavailable": self.unavailable,
            "frames": [f.to_dict() for f in self.frames.values()],
        }

    def lines(self) -> list[str]:
        out = [f"torch.compile: not available ({self.unavailable})"] if self.unavailable else []
        for f in self.frames.values():
            head = (
                f"torch.compile frame {f.frame} ({f.function}): {f.compiles} compiles, "
                f"{f.recompile_count} recompiles, {f.seconds:.2f} s compiling"
            )
            if f.limit is not None:
                head += (
                    f"; hit recompile_limit ({f.limit}) at step {_step(f.limit_step)}: runs uncompiled since"
                )
                if f.limit_reason:
                    head += f" (last guard: {guard_words(f.limit_reason)})"
            out.append(head)
            if f.recompiles:
                shown = "  ".join(f"{_step(s)}: {guard_words(r)}" for s, r in f.recompiles[-4:])
                out.append(f"  recompiles by step: {shown}")
        return out


def _step(step: int | None) -> str:
    return "?" if step is None else str(step)


GAUDI_BUCKETS = (
    "; on Gaudi, hpu_backend compiles a recipe per concrete shape even for a dynamic dimension: "
    "Intel's advice (its 'Handling Dynamic Shapes' page, docs.habana.ai: \"data padding and/or data "
    "bucketing\") is to pad to a few fixed lengths, as optimum-habana's --bucket_size and "
    "--pad_to_max_length do, with dataloader_drop_last=True, and PT_HPU_RECIPE_CACHE_CONFIG to keep "
    "compiled recipes across runs"
)
"""Added to each torch.compile finding's fix on Gaudi. Sources: Intel's "Handling Dynamic Shapes"
(https://docs.habana.ai/en/latest/PyTorch/Model_Optimization_PyTorch/Dynamic_Shapes.html: "If there
is a large amount of variability in the input data, data padding and/or data bucketing can be
used") and its runtime flags page for PT_HPU_RECIPE_CACHE_CONFIG."""


def findings(frames: CompileFrames, warmup_end: int, hpu: bool) -> list[Finding]:
    """Still recompiling after warm-up, a dimension that should be dynamic, the limit reached."""
    out: list[Finding] = []
    gaudi = GAUDI_BUCKETS if hpu else ""
    for f in frames.frames.values():
        late = f.recompiles_after(warmup_end)
        where = f"frame {f.frame} ({f.function})"
        if f.limit is not None:
            out.append(
                Finding(
                    "compile-limit",
                    "a frame hit torch._dynamo.config.recompile_limit",
                    f"{where} hit recompile_limit ({f.limit}) at step {_step(f.limit_step)} and now runs "
                    "eager (uncompiled) for the rest of the run",
                    "remove the cause of the recompiles (below); raising recompile_limit only hides it "
                    "and pays another compile for every new shape" + gaudi,
                    status="fail",
                )
            )
        if late:
            last = guard_words(f.recompiles[-1][1])
            out.append(
                Finding(
                    "torch-recompiling",
                    f"a torch.compile recompile after the {warmup_end}-step warm-up",
                    f"{where} still recompiles after warm-up: {late} since step {warmup_end} (last: {last})",
                    "every new input shape compiles again: pad to a fixed length (padding='max_length') "
                    "or to a few buckets (pad_to_multiple_of=…), and drop the short last batch "
                    "(dataloader_drop_last=True)" + gaudi,
                )
            )
        changing = _changing_dims(f)
        if changing:
            dims = ", ".join(f"{name} dimension {index}" for name, index in changing)
            out.append(
                Finding(
                    "should-be-dynamic",
                    "one dimension's size guard failed twice or more",
                    f"{where}: {dims} keeps changing and each value compiles a new graph",
                    f"mark it dynamic: torch._dynamo.mark_dynamic(tensor, {changing[0][1]}) before the call, "
                    "or compile with dynamic=None (the default: the second shape compiles a dynamic graph) "
                    "or dynamic=True" + gaudi,
                )
            )
    return out


def _changing_dims(frame: Frame) -> list[tuple[str, int]]:
    counts: dict[tuple[str, int], int] = {}
    reasons = [reason for _, reason in frame.recompiles]
    for reason in reasons + ([frame.limit_reason] if frame.limit_reason else []):
        parts = guard(reason)
        if parts is not None and parts["kind"] == "size":
            key = (str(parts["input"]), int(parts["index"]))  # type: ignore[call-overload]
            counts[key] = counts.get(key, 0) + 1
    return [key for key, n in counts.items() if n >= 2]
