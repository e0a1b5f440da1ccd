"""The chat bench's figures, printed: each part's decode ratio to the bare side (its headline),
time to first token, CPU per answer, frames and stops, as medians (min–max) of the pairs."""

from __future__ import annotations

import statistics


def spread(values: list[float], fmt: str = ".1f") -> str:
    """median (min–max)"""
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def report(
    name: str, r: dict[str, list[float]], stop_what: str | None, target: float, cpu_what: str = ""
) -> bool:
    """Prints one part's figures; True when its decode ratio met `target`."""
    # Comparing within pairs cancels the load other processes put on the machine, which drifts.
    ratios = [p / b for p, b in zip(r["tps"], r["bare_tps"], strict=True)]
    overheads = [(p - b) * 1000 for p, b in zip(r["ttft"], r["bare_ttft"], strict=True)]
    met = statistics.median(ratios) >= target
    print(f"{name}:")
    print(
        f"  decode {spread(r['tps'])} tok/s, bare model.generate {spread(r['bare_tps'])} tok/s: "
        f"ratio {spread(ratios, '.3f')} (target ≥ {target:.2f}{'' if met else ', NOT met'})"
    )
    if r["engine_tps"]:  # the headline is the screen's: the engine's own pace beside it
        paces = [e / b for e, b in zip(r["engine_tps"], r["bare_tps"], strict=True)]
        print(
            f"  the engine's own pace meanwhile {spread(r['engine_tps'])} tok/s: ratio {spread(paces, '.3f')}"
        )
    print(
        f"  time to first token {spread([t * 1000 for t in r['ttft']])} ms, "
        f"bare {spread([t * 1000 for t in r['bare_ttft']])} ms: overhead {spread(overheads)} ms (target ≤ 50 ms)"
    )
    cpu_ratios = [b / e for e, b in zip(r["engine_cpu"], r["bare_cpu"], strict=True) if e > 0]
    if cpu_ratios:
        print(
            f"  CPU per answer: engine {spread([c * 1000 for c in r['engine_cpu']], '.0f')} ms, "
            f"bare {spread([c * 1000 for c in r['bare_cpu']], '.0f')} ms; bare / engine {spread(cpu_ratios, '.3f')}"
        )
    if r["ui_cpu"]:
        print(f"  {cpu_what} {spread([c * 1000 for c in r['ui_cpu']])} ms per answer")
    if r["frames"]:
        print(
            f"  frames drawn while it decoded {spread(r['frames'], '.0f')}, of them laid out {spread(r['layouts'], '.0f')}"
        )
    stops, early = r["stop"], len(r["finished_before_stop"])
    note = f"; {early} answer(s) finished before the stop arrived, not counted" if early else ""
    if stop_what is None:
        return met
    if stops:
        print(
            f"  {stop_what}: median {statistics.median(stops) * 1000:.0f} ms, min {min(stops) * 1000:.0f} ms, "
            f"max {max(stops) * 1000:.0f} ms over {len(stops)} stops (target ≤ 200 ms){note}"
        )
    else:
        print(f"  {stop_what}: not measured{note}")
    return met
