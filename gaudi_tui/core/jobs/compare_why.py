"""Why each compared run was slow, side by side: torch.compile's recompiles (and the frames that hit
`recompile_limit`), the input wait of its slowest-fed rank, the last profile's top op, and Gaudi's
graph compiles from Intel's runtime (a CPU or CUDA run's row says it is Gaudi's only; a run is a
Gaudi run when its spec's device is `hpu` or the runtime counted its graphs, as Details decides).

`WhyFigures` is gathered on compare's one read of metrics.jsonl (`compare._RunSeries`) from the same
`compile`, `stall` and `profile` events Details reads, each checked by the reader Details uses
(`insight.compiles.CompileFrames`, `insight.stalls.Stalls`), and is saved with compare's series, so
a long run's next compare reads only what was appended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gaudi_tui.core.insight import compiles, profile, stalls
from gaudi_tui.core.untrusted.data import integer, number, text

MISSING = "—"
ROWS = ("recompiles", "input wait", "top op (last profile)", "Gaudi graph compiles")
"""The figures' names, in the order they are shown."""
MAX_FRAMES = 256


@dataclass
class WhyFigures:
    compiles: int = 0
    recompiles: int = 0
    limits: dict[str, int] = field(default_factory=dict)
    """Frame → the recompile limit it hit (it runs uncompiled since)."""
    unavailable: str | None = None
    stalls: dict[str, float] = field(default_factory=dict)
    """Rank (as text) → the share of step time its newest log window spent waiting for data."""
    profile: dict[str, Any] | None = None
    """The newest `profile` event's gist: what, first_step, step, op, self_host_us, reason."""

    def apply(self, event: dict) -> None:
        kind = event.get("event")
        if kind == compiles.EVENT:
            frames = compiles.CompileFrames()
            frames.apply(event)
            self.unavailable = frames.unavailable or self.unavailable
            for name, frame in frames.frames.items():
                if frame.limit is not None and (name in self.limits or len(self.limits) < MAX_FRAMES):
                    self.limits[name] = frame.limit
                self.compiles += frame.compiles
                self.recompiles += frame.recompile_count
        elif kind == stalls.EVENT:
            read = stalls.Stalls()
            read.apply(event)
            for rank, window in read.ranks.items():
                if str(rank) in self.stalls or len(self.stalls) < 4096:
                    self.stalls[str(rank)] = window.share
        elif kind == profile.EVENT:
            self.profile = _profile_gist(event)

    def state(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def restore(cls, saved: dict[str, Any]) -> WhyFigures:
        """From `state()` as saved (ValueError, KeyError or TypeError when it is not one)."""
        counts = [integer(saved[k], lo=0) for k in ("compiles", "recompiles")]
        limits = {str(k): integer(v) for k, v in saved["limits"].items()}
        shares = {str(k): number(v, lo=0.0) for k, v in saved["stalls"].items()}
        gist = saved["profile"]
        unavailable = saved["unavailable"]
        if None in counts or None in limits.values() or None in shares.values():
            raise ValueError("not a figure")
        if not (gist is None or isinstance(gist, dict)) or not (
            unavailable is None or isinstance(unavailable, str)
        ):
            raise ValueError("not a profile")
        gist = None if gist is None else _checked(gist)
        return cls(counts[0], counts[1], limits, unavailable, shares, gist)  # type: ignore[arg-type]

    def rows(self, gaudi: bool, gaudi_graphs: float | None) -> dict[str, str]:
        """Each figure in words, for one run (`gaudi`: a Gaudi run); `gaudi_graphs`: its newest graph
        count from Intel's runtime (the compare's compiles line), None where it has none."""
        return {
            ROWS[0]: self._recompiles(),
            ROWS[1]: self._stall(),
            ROWS[2]: self._top_op(),
            ROWS[3]: (
                (f"{gaudi_graphs:.0f}" if gaudi_graphs is not None else MISSING)
                if gaudi
                else "Gaudi runs only"
            ),
        }

    def _recompiles(self) -> str:
        if self.unavailable is not None:
            return f"not available ({self.unavailable})"
        if not self.compiles and not self.limits:
            return "none (not compiled)"
        out = f"{self.recompiles} ({self.compiles} compiles)"
        for frame, limit in sorted(self.limits.items()):
            out += f"; frame {frame} hit recompile_limit ({limit}), runs eager"
        return out

    def _stall(self) -> str:
        if not self.stalls:
            return MISSING
        rank, share = max(self.stalls.items(), key=lambda rs: rs[1])
        where = f" (rank {rank})" if len(self.stalls) > 1 else ""
        return f"{share:.0%} of step time{where}"

    def _top_op(self) -> str:
        gist = self.profile
        if gist is None:
            return "none taken"
        if gist.get("what") != "taken":
            return f"{gist.get('what')}: {gist.get('reason') or '?'}"
        if gist.get("op") is None:
            return f"no op recorded (steps {gist.get('first_step')}–{gist.get('step')})"
        spent = gist.get("self_host_us")
        ms = f" {spent / 1000:.1f} ms" if isinstance(spent, float) else ""
        return f"{gist['op']}{ms} (steps {gist.get('first_step')}–{gist.get('step')})"


def _profile_gist(event: dict) -> dict[str, Any]:
    ops = event.get("top_ops")
    top = ops[0] if isinstance(ops, list) and ops and isinstance(ops[0], dict) else {}
    return _checked({**event, "op": top.get("name"), "self_host_us": top.get("self_host_us")})


def _checked(gist: dict) -> dict[str, Any]:
    """A profile's gist with every value checked (an event's, or as saved)."""
    return {
        "what": text(gist.get("what")) or "?",
        "first_step": integer(gist.get("first_step")),
        "step": integer(gist.get("step")),
        "op": text(gist.get("op")),
        "self_host_us": number(gist.get("self_host_us")),
        "reason": text(gist.get("reason")),
    }
