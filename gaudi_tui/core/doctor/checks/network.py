"""`nic.external_up`: are every card's scale-out (external) NIC ports up?

Multi-node training goes over the RoCE ports built into each card: 3 scale-out ports per Gaudi 2
or Gaudi 3 card (the other 21 connect the cards of the host). One that is down breaks HCCL
collectives between hosts. The links come from the device map (one-shot `hl-smi -n link -i <bus>`
and `hl-smi -n ports -i <bus>` per card, `core.devices.details`).
"""

from __future__ import annotations

from gaudi_tui.core.devices import links
from gaudi_tui.core.doctor.context import CheckContext, Unavailable
from gaudi_tui.core.doctor.model import CheckVerdict, fail, ok, skip, warn

WHY = (
    "Multi-node jobs send HCCL collectives between hosts over each card's scale-out (external) RoCE ports "
    "(3 per Gaudi 2 or Gaudi 3 card); one port down makes every multi-node job using that card fail "
    "(e.g. 'Collective call returned error', 'NIC 8 is down'). Jobs inside one host use the 21 scale-up "
    "ports and still run. Intel's health screen (IGHS) flags any DOWN line of `hl-smi -n link`."
)


def external_ports_up(ctx: CheckContext) -> CheckVerdict:
    try:
        snapshot = ctx.snapshot()
    except Unavailable as exc:
        return skip(f"no device map: {exc}", WHY)
    if not snapshot.devices:
        return skip("no Gaudi card in the device map", WHY)
    if not snapshot.links:
        why = "; ".join(snapshot.link_errors[:2]) or "hl-smi printed no `-n link` output"
        return skip(f"hl-smi cannot tell the link states: {why}", WHY)
    typed = [c for c in snapshot.links if c.types_known]
    if not typed:
        return skip(f"hl-smi cannot tell which ports are external: {links.NO_TYPES}", WHY)
    down = links.down_lines(snapshot.devices, snapshot.links)
    if down:
        first = next(c for c in snapshot.links if c.external_down)
        device = next((d for d in snapshot.devices if d.index == first.index), None)
        return fail(
            "; ".join(down),
            WHY,
            f"Bring the ports up: `sudo {links.script_for(device)} --up`, then check with "
            f"`hl-smi -n link -i {first.bus_id or '<bus id>'}` (or `--status` of the same script); a port "
            "that stays DOWN: check its cable, transceiver and switch port. Until then run multi-node jobs "
            "on other hosts.",
        )
    external = sum(p.type == "external" for c in typed for p in c.ports)
    unread = len(snapshot.devices) - len(typed)
    if unread:
        return warn(
            f"{external} external port(s) of {len(typed)} card(s) up; {unread} card(s) not read "
            f"({'; '.join(snapshot.link_errors[:1]) or 'no -n link/-n ports answer'})",
            WHY,
            "Run `hl-smi -n link -i <bus id>` and `hl-smi -n ports -i <bus id>` for the cards not read.",
        )
    if not external:
        return ok(
            f"{len(typed)} card(s), no external (scale-out) port: multi-node traffic goes through the host NIC",
            WHY,
        )
    return ok(f"all {external} external port(s) of {len(typed)} card(s) are up", WHY)
