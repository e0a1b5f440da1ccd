"""The cards' NIC ports (RoCE, built into each Gaudi): which are up, which carry scale-out traffic.

Facts (Intel's "Network Configuration" page, docs.habana.ai Management_and_Monitoring): a Gaudi 2 has
24 × 100 GbE ports, 21 scale-up (to the other cards of the host) and 3 scale-out (to other hosts);
a Gaudi 3 21 + 3 at 200 Gb. A scale-out (external) port that is down breaks HCCL collectives
between hosts: a multi-node job using that card fails, a job inside the host does not.
`hl-smi -n link -i <bus>` gives each port's state, `hl-smi -n ports -i <bus>` which are external.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gaudi_tui.core.devices.model import CardLinks, Device, Port, PortType

NO_TYPES = (
    "hl-smi -n ports did not say which ports are external (scale-out), so a port that is down cannot "
    "be told apart as scale-up or scale-out"
)
QUAL_SCRIPT = "/opt/habanalabs/qual/{gen}/bin/manage_network_ifs.sh"
"""Intel's script that brings the card interfaces up (habanalabs-qual; HabanaAI/Setup_and_Install
utils/README.md: "Moved to habanalabs-qual … gaudi2/bin/manage_network_ifs.sh or gaudi3/bin/…")."""


def _type(value: str | None) -> PortType | None:
    return "external" if value == "external" else "internal" if value == "internal" else None


def card_links(
    states: Mapping[str, Mapping[int, str]],
    types: Mapping[str, Mapping[int, str]],
    devices: Iterable[Device],
) -> tuple[tuple[CardLinks, ...], tuple[str, ...]]:
    """Per-card links from `-n link` states and `-n ports` types (both keyed by bus ID), with the
    card index found by bus ID; and why anything is unknown."""
    index_of = {d.bus_id.lower(): d.index for d in devices if d.bus_id}
    links: list[CardLinks] = []
    errors: list[str] = []
    for bus, ports in states.items():
        kinds = types.get(bus, {})
        links.append(
            CardLinks(
                index_of.get(bus.lower()),
                None if bus == "?" else bus,
                tuple(Port(n, state == "UP", _type(kinds.get(n))) for n, state in sorted(ports.items())),
            )
        )
        if not kinds:
            errors.append(f"{bus}: {NO_TYPES}")
    if errors and len(errors) == len(links):
        errors = [NO_TYPES]
    links.sort(key=lambda c: (c.index is None, c.index if c.index is not None else 0, c.bus_id or ""))
    return tuple(links), tuple(errors)


def column(links: CardLinks | None) -> str:
    """The Devices table cell: ports up / total (`–` when unknown)."""
    return "–" if links is None or not links.ports else f"{links.up}/{len(links.ports)}"


def script_for(device: Device | None) -> str:
    gen = "gaudi3" if device is not None and device.product == "Gaudi 3" else "gaudi2"
    return QUAL_SCRIPT.format(gen=gen)


def _card(device: Device | None, links: CardLinks) -> str:
    index = links.index if links.index is not None else "?"
    module = f" (module {device.module_id})" if device is not None and device.module_id is not None else ""
    return f"card {index}{module}"


def down_lines(devices: Iterable[Device], all_links: Iterable[CardLinks]) -> list[str]:
    """`card 3 (module 6): external port 8 DOWN` for every card with a scale-out port down."""
    by_index = {d.index: d for d in devices}
    lines = []
    for links in all_links:
        if links.external_down:
            ports = ", ".join(str(p) for p in links.external_down)
            plural = "s" if len(links.external_down) > 1 else ""
            lines.append(
                f"{_card(by_index.get(links.index or -1), links)}: external port{plural} {ports} DOWN"
            )
    return lines


def banner(devices: Iterable[Device], all_links: Iterable[CardLinks]) -> str | None:
    """What is down, what breaks and what to run; None when every external port is up."""
    devices = list(devices)
    all_links = list(all_links)
    lines = down_lines(devices, all_links)
    if not lines:
        return None
    first = next(c for c in all_links if c.external_down)
    device = next((d for d in devices if d.index == first.index), None)
    script = script_for(device)
    folder, name = script.rsplit("/", 1)
    return (
        "; ".join(lines)
        + f": multi-node jobs using this card will fail (HCCL between hosts). Run `sudo {name} --up` (in "
        f"{folder}), then `hl-smi -n link -i {first.bus_id or '<bus id>'}`; still DOWN: check the cable "
        "and switch port."
    )
