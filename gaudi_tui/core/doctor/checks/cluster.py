"""`ray.hpu_visible`: does Ray count this host's Gaudi cards?

Ray detects HPUs only by importing `habana_frameworks` in the raylet's Python and asking
`habana_frameworks.torch.hpu.device_count()` (no hl-smi fallback), and some Ray releases lost
them (vllm-gaudi pinned `ray<2.49.0` for that). The check runs Ray's own detection in a throwaway
child (importing habana_frameworks can acquire a card).
"""

from __future__ import annotations

import importlib.util

from gaudi_tui.core.childprobe import ProbeFailed, ProbeTimedOut, run_json_child
from gaudi_tui.core.doctor.context import CheckContext, Unavailable
from gaudi_tui.core.doctor.model import CheckVerdict, fail, ok, skip, warn

CHILD = "import json; from gaudi_tui.core.doctor.checks.cluster import probe; print(json.dumps(probe()))"


def ray_hpu_visible(ctx: CheckContext) -> CheckVerdict:
    try:
        facts = run_json_child(
            [ctx.python, "-c", CHILD],
            timeout=ctx.timeout,
            env=ctx.env,
            cancel=ctx.cancel,
            on_start=ctx.track_child,
        )
    except (ProbeFailed, ProbeTimedOut) as exc:
        return fail(f"Ray's HPU detection did not finish: {exc}", "It ran in a throwaway child process.")
    if not facts.get("ray"):
        return skip("Ray is not installed (cluster jobs need `pip install 'gaudi-tui[cluster]'`)")
    version = f"Ray {facts['ray']}"
    if facts.get("error"):
        return fail(
            f"{version}: HPU detection failed: {facts['error']}",
            "Ray imports habana_frameworks to count the cards; that import failed in a child process.",
            "See plugin.importable; a raylet started from this Python would advertise 0 HPUs.",
        )
    hpus = facts.get("hpus")
    count = hpus if isinstance(hpus, int) else 0
    try:
        cards = len(ctx.snapshot().devices)
    except Unavailable:
        cards = 0
    if count == 0 and not facts.get("habana_frameworks"):
        if cards == 0:
            return skip(f"{version} counts no HPU: this host has no Gaudi card and no habana_frameworks")
        return fail(
            f"{version} sees 0 HPUs but the device map has {cards} card(s)",
            "Ray counts HPUs only through habana_frameworks, which this Python cannot import.",
            "Run Ray from Intel's Gaudi container or venv, or give the count by hand: "
            f"`ray start --resources='{{\"HPU\": {cards}}}'`.",
        )
    if cards and count != cards:
        return warn(
            f"{version} counts {count} HPU(s) but the device map has {cards} card(s)",
            "Some Ray releases lost HPUs (vllm-gaudi pinned ray<2.49.0); HABANA_VISIBLE_MODULES also narrows the count.",
            f"Check `ray status` after `ray start`; if it shows fewer, start with `--resources='{{\"HPU\": {cards}}}'`.",
        )
    kind = f" ({facts['type']})" if facts.get("type") else ""
    return ok(
        f"{version} counts {count} HPU(s){kind}",
        "Ray's own detection (habana_frameworks.torch.hpu.device_count), run in a throwaway child process.",
    )


def probe() -> dict[str, object]:
    """Ray's HPU count and accelerator type on this host, as a raylet started here would see them."""
    if importlib.util.find_spec("ray") is None:
        return {"ray": None}
    import ray
    from ray._private.accelerators.hpu import HPUAcceleratorManager

    facts: dict[str, object] = {
        "ray": ray.__version__,
        "habana_frameworks": importlib.util.find_spec("habana_frameworks") is not None,
    }
    try:
        facts["hpus"] = HPUAcceleratorManager.get_current_node_num_accelerators()
        facts["type"] = HPUAcceleratorManager.get_current_node_accelerator_type()
    except Exception as exc:  # noqa: BLE001 - the failure is the finding
        facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts
