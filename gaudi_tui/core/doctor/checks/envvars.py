"""Environment variables the Gaudi stack reads: int64 support, lazy/eager mode, visible cards."""

from __future__ import annotations

from collections.abc import Mapping

from gaudi_tui.core.devices.cardsets import check_modules, visible_modules
from gaudi_tui.core.doctor.context import CheckContext, Unavailable
from gaudi_tui.core.doctor.model import CheckVerdict, fail, ok, warn

INT64 = "PT_ENABLE_INT64_SUPPORT"
LAZY = "PT_HPU_LAZY_MODE"
MODULES = "HABANA_VISIBLE_MODULES"
DEVICES = "HABANA_VISIBLE_DEVICES"
ALL_DEVICES = ("", "all", "void")
SUPPORTED = "Intel supports partial-server jobs on the 2-card module sets {0,1} {2,3} {4,5} {6,7} and the 4-card sets {0,1,2,3} {4,5,6,7}"


def env_int64(ctx: CheckContext) -> CheckVerdict:
    raw = ctx.env.get(INT64)
    if raw == "1":
        return ok(f"{INT64}=1: int64 (Long) tensors are supported on the card")
    state = "is not set" if raw is None else f"is {raw!r}, and only '1' enables it"
    return warn(
        f"{INT64} {state}",
        "Without it the card lacks int64 (Long) support in lazy mode, and models fail with 'Error when "
        "trying to cast Long to Int, Input values range … exceeds Int range'. Transformers' Gaudi page "
        "asks for it. One report (optimum-habana#2311) saw a TRL SFT run hang with it set: if a job "
        "hangs, try without it.",
        f"export {INT64}=1",
        env_fix={INT64: "1"},
    )


def env_lazy_mode(ctx: CheckContext) -> CheckVerdict:
    raw = ctx.env.get(LAZY)
    modes = (
        "Lazy mode (1) accumulates ops into graphs and is needed for HPU graphs; eager mode (0) runs "
        "op by op and is the only mode where torch.compile (hpu_backend) works. The variable is read "
        "once, when habana_frameworks is imported."
    )
    if raw == "0":
        return ok(f"{LAZY}=0: eager mode (torch.compile with hpu_backend works)", modes)
    if raw == "1":
        return ok(
            f"{LAZY}=1: lazy mode (HPU graphs work; torch.compile needs 0)",
            f"{modes} Jobs launched with torch.compile need {LAZY}=0.",
        )
    if raw is None:
        return warn(
            f"{LAZY} is not set: Transformers and optimum-habana read that as 1 (lazy), Intel's current "
            "runtime as 0 (eager)",
            f"{modes} Intel's default changed from 1 to 0 in recent releases, but Transformers "
            f"(os.environ.get('{LAZY}', '1')) and optimum-habana still treat unset as lazy, so libraries "
            "and runtime can disagree. Transformers' upstream Gaudi support targets eager mode.",
            f"export {LAZY}=0   (eager; or 1 for lazy mode and HPU graphs) before starting Python",
            env_fix={LAZY: "0"},
        )
    why = (
        "2 meant eager in old releases and is no longer supported" if raw == "2" else "only 0 and 1 are valid"
    )
    return fail(
        f"{LAZY}={raw!r}: {why}",
        modes,
        f"export {LAZY}=0   (eager) or {LAZY}=1 (lazy)",
        env_fix={LAZY: "0"},
    )


def parse_ids(name: str, raw: str) -> tuple[int, ...]:
    """`"0, 1"` → (0, 1); ValueError saying what is wrong otherwise."""
    parts = [p.strip() for p in raw.split(",")]
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"{name}={raw!r} is not a comma-separated list of numbers")
    ids = tuple(int(p) for p in parts)
    if len(set(ids)) != len(ids):
        raise ValueError(f"{name}={raw!r} names a card twice")
    return ids


def requested_modules(env: Mapping[str, str]) -> tuple[int, ...] | None:
    """Module IDs from HABANA_VISIBLE_MODULES; None when unset."""
    raw = env.get(MODULES, "").strip()
    return parse_ids(MODULES, raw) if raw else None


def requested_devices(env: Mapping[str, str]) -> tuple[int, ...] | None:
    """Indices from HABANA_VISIBLE_DEVICES; None when unset or 'all', () for 'none'."""
    raw = env.get(DEVICES, "").strip().lower()
    if raw in ALL_DEVICES:
        return None
    return () if raw == "none" else parse_ids(DEVICES, raw)


def env_visible_modules(ctx: CheckContext) -> CheckVerdict:
    try:
        modules = requested_modules(ctx.env)
        devices = requested_devices(ctx.env)
    except ValueError as exc:
        return fail(
            str(exc),
            f"{MODULES} takes module IDs, {DEVICES} takes device indices (the N of /dev/accel/accelN) "
            "or 'all'; both are comma-separated, each card once.",
            f"export {MODULES}=0,1   (module IDs from `hl-smi -Q index,module_id -f csv`)",
        )
    try:
        module_of = {d.index: d.module_id for d in ctx.snapshot().devices if d.module_id is not None}
    except Unavailable:
        module_of = {}
    if modules is None and devices is None:
        return ok(
            f"{MODULES} and {DEVICES} are not set (or 'all'): every card is visible",
            f"The panel sets {MODULES} for each job from the cards chosen on the Devices screen.",
        )
    if devices == ():
        return warn(
            f"{DEVICES}=none: the container runtime gives this container no card",
            f"{DEVICES} is read by the Habana container runtime when a container starts.",
            f"Restart the container with -e {DEVICES}=all (or a list of indices).",
        )
    problem = _inconsistency(modules, devices, module_of)
    if problem:
        return fail(
            problem,
            f"{MODULES} takes module IDs, which stay fixed; {DEVICES} takes indices, which may change "
            "after a reboot or driver reinstall. hl-smi maps one to the other.",
            "Set only the module IDs: `unset HABANA_VISIBLE_DEVICES; export HABANA_VISIBLE_MODULES=…` "
            "(see `hl-smi -Q index,module_id -f csv`).",
        )
    chosen = modules if modules is not None else tuple(module_of[i] for i in devices or () if i in module_of)
    if not chosen:
        return ok(f"{DEVICES}={visible(devices)}; no device map to check the indices against")
    verdict = check_modules(chosen)
    if modules is not None:
        name = f"{MODULES}={visible(modules)}"
    else:
        name = f"{DEVICES}={visible(devices)} (modules {visible_modules(chosen)})"
    if not verdict.ok:
        return warn(
            f"{name}: {verdict.message}",
            f"{SUPPORTED}; other partial sets are not supported for distributed jobs.",
            f"export {MODULES}={visible_modules(verdict.nearest)}"
            if verdict.nearest
            else f"Use module IDs 0–7 from `hl-smi -Q index,module_id -f csv`: export {MODULES}=0,1",
        )
    return ok(f"{name}: {verdict.message}")


def visible(ids: tuple[int, ...] | None) -> str:
    return ",".join(str(i) for i in ids or ())


def _inconsistency(
    modules: tuple[int, ...] | None, devices: tuple[int, ...] | None, module_of: dict[int, int]
) -> str | None:
    """Why the two variables disagree with each other or with the device map; None if they don't."""
    present = set(module_of.values())
    if modules is not None and present and not set(modules) <= present:
        missing = sorted(set(modules) - present)
        return f"{MODULES}={visible(modules)} names module(s) {visible(tuple(missing))} not on this host (modules {visible(tuple(sorted(present)))})"
    if devices is not None and module_of and not set(devices) <= set(module_of):
        missing = sorted(set(devices) - set(module_of))
        return f"{DEVICES}={visible(devices)} names index(es) {visible(tuple(missing))} not on this host"
    if modules is None or devices is None:
        return None
    if module_of:
        through = sorted(module_of[i] for i in devices)
        if through != sorted(modules):
            return (
                f"{DEVICES}={visible(devices)} are modules {visible(tuple(through))}, "
                f"but {MODULES}={visible(modules)}"
            )
    elif len(devices) != len(modules):
        return f"{DEVICES} names {len(devices)} card(s) but {MODULES} names {len(modules)}"
    return None
