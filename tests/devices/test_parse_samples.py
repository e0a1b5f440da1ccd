"""Every real hl-smi sample in gaudi_tui/data/hl-smi/ parses to the values it shows (one test each)."""

from __future__ import annotations

import pytest

from gaudi_tui.core.devices.model import Device
from gaudi_tui.core.devices.parsers.detect import parse_any
from gaudi_tui.core.devices.reading import Reading
from tests.conftest import SAMPLES


def read(name: str) -> Reading:
    reading = parse_any((SAMPLES / name).read_text(encoding="utf-8"))
    assert reading.errors == (), reading.errors
    return reading


def card(reading: Reading, index: int) -> Device:
    return next(d for d in reading.devices if d.index == index)


def test_every_sample_file_has_a_test() -> None:
    names = {p.name for p in SAMPLES.iterdir() if p.name != "SOURCES.md"}
    tested = {name for name in SAMPLE_TESTS}
    assert names == tested


def test_gaudi1_hl205_x8_1_4_1_table() -> None:
    r = read("gaudi1-hl205-x8-1.4.1-table.txt")
    assert (r.kind, r.hl_smi_version, r.driver_version) == (
        "table",
        "hl-1.4.1-rc-fw-35.0.2.0",
        "1.4.0-d8f95f4",
    )
    assert [d.index for d in r.devices] == list(range(8))
    first, six = card(r, 0), card(r, 6)
    assert (first.name, first.product, first.bus_id) == ("HL-205", "Gaudi", "0000:20:1d.0")
    assert (first.memory_used_mib, first.memory_total_mib) == (512, 32768)  # `Mib`, lower-case b
    assert (first.power_draw_w, first.power_cap_w, first.temperature_c, first.utilization_pct) == (
        102,
        350,
        35,
        2,
    )
    assert (six.power_draw_w, six.utilization_pct, six.uncorrected_errors) == (108, 4, 0)
    assert r.processes == ()


def test_gaudi2_hl225_x8_1_12_1_table() -> None:
    r = read("gaudi2-hl225-x8-1.12.1-table.txt")
    assert (r.hl_smi_version, r.driver_version) == ("hl-1.12.1-fw-46.0.5.0", "1.12.1-cb7a7bc")
    assert len(r.devices) == 8
    d2 = card(r, 2)
    assert (d2.product, d2.bus_id, d2.power_draw_w, d2.power_cap_w, d2.utilization_pct) == (
        "Gaudi 2",
        "0000:1a:00.0",
        93,
        600,
        1,
    )
    assert (card(r, 7).bus_id, card(r, 7).power_draw_w, card(r, 7).temperature_c) == ("0000:cd:00.0", 85, 27)
    assert all(d.memory_used_mib == 768 and d.memory_total_mib == 98304 for d in r.devices)


def test_gaudi2_hl225_x1_1_15_1_table() -> None:
    r = read("gaudi2-hl225-x1-1.15.1-table.txt")
    assert (r.hl_smi_version, r.driver_version) == ("hl-1.15.1-fw-49.0.0.0", "1.15.1-62f612b")
    (only,) = r.devices
    assert (only.index, only.bus_id, only.temperature_c, only.power_draw_w, only.memory_used_mib) == (
        0,
        "0000:19:00.0",
        29,
        93,
        768,
    )


def test_gaudi2_hl225_x8_1_16_0_process_table() -> None:
    r = read("gaudi2-hl225-x8-1.16.0-process-table.txt")
    assert r.driver_version == "1.16.0-94aac46"
    assert (card(r, 6).memory_used_mib, card(r, 6).bus_id, card(r, 5).power_draw_w) == (
        27098,
        "0000:43:00.0",
        100,
    )
    (process,) = r.processes  # the row has no closing `|`
    assert (process.index, process.pid, process.name, process.memory_mib) == (
        6,
        618796,
        "ray::ServeRepli",
        26330,
    )


def test_gaudi2_hl225_x8_1_20_0_busy_table() -> None:
    r = read("gaudi2-hl225-x8-1.20.0-busy-table.txt")
    # tool 1.20.0, driver 1.19.1 — and the NIC driver line must not be taken for the driver
    assert (r.hl_smi_version, r.driver_version) == ("hl-1.20.0-fw-58.1.1.1", "1.19.1-6f47ddd")
    busy = {d.index: d.memory_used_mib for d in r.devices if d.memory_used_mib > 768}
    assert busy == {3: 96565, 5: 96564, 7: 17538}
    assert (card(r, 7).power_draw_w, card(r, 7).power_cap_w, card(r, 7).temperature_c) == (100, 600, 30)
    assert card(r, 3).uncorrected_errors == 0  # `Volatile Uncor-Events` column
    (process,) = r.processes  # trailing spaces, no closing `|`
    assert (process.index, process.pid, process.name, process.memory_mib) == (
        7,
        107684,
        "ray::_RayTrainW",
        16770,
    )


def test_gaudi2e_hl288e_x8_1_24_0_table() -> None:
    r = read("gaudi2e-hl288e-x8-1.24.0-table.txt")  # indented by 4 spaces in the source, Perf P0
    assert (r.hl_smi_version, r.driver_version) == ("hl-1.24.0-fw-62.6.2.0", "1.24.0-bb94c81")
    assert {d.product for d in r.devices} == {"Gaudi 2E"}
    assert [d.power_draw_w for d in r.devices] == [75, 86, 61, 75, 80, 85, 72, 77]
    assert {d.power_cap_w for d in r.devices} == {450}
    assert card(r, 1).bus_id == "0000:aa:00.0"


def test_gaudi2_hl225_1_12_1_list_detail() -> None:
    r = read("gaudi2-hl225-1.12.1-list-detail.txt")
    assert (r.kind, r.hl_smi_version, r.driver_version) == (
        "detail",
        "hl-1.12.1-fw-46.0.5.0",
        "1.12.1-cb7a7bc",
    )
    (d,) = r.devices
    assert (d.index, d.module_id, d.name, d.product, d.bus_id) == (0, 0, "HL-225", "Gaudi 2", "0000:43:00.0")
    assert d.uuid == "01P0-HL2080A0-15-TF8A81-09-07-06"
    assert (d.memory_total_mib, d.memory_used_mib) == (98304, 768)
    assert d.temperature_c == 30  # hottest "On Chip" sensor
    assert (d.power_draw_w, d.power_cap_w) == (81, 600)  # 54 V + 12 V rails: 50 + 31 W, 550 + 50 W


def test_gaudi1_hl205_x8_1_18_0_query_csv() -> None:
    r = read("gaudi1-hl205-x8-1.18.0-query.csv")  # header with units, values without
    assert r.kind == "csv" and len(r.devices) == 8
    first, last = card(r, 0), card(r, 7)
    assert (first.name, first.product, first.uuid) == ("HL-205", "Gaudi", "00P1-HL2000A1-14-P64W99-13-05-03")
    assert (first.power_draw_w, first.temperature_c, first.utilization_pct) == (103, 36, 15)
    assert (first.memory_used_mib, first.memory_total_mib) == (512, 32768)
    assert (last.uuid, last.temperature_c) == ("00P1-HL2000A1-14-P64X00-08-05-09", 38)


def test_gaudi2e_index_module_1_24_0_csv() -> None:
    r = read("gaudi2e-index-module-1.24.0.csv")
    assert r.kind == "index-module"
    assert {d.index: d.module_id for d in r.devices} == {0: 2, 1: 6, 2: 3, 3: 7, 4: 0, 5: 4, 6: 5, 7: 1}


def test_docs_index_module_csv() -> None:
    r = read("docs-index-module.csv")
    assert {d.index: d.module_id for d in r.devices} == {3: 6, 1: 4, 2: 7, 0: 5, 4: 2, 6: 0}


def test_gaudi2_topo_cpu_numa() -> None:
    r = read("gaudi2-topo-cpu-numa.txt")
    assert r.kind == "topo"
    assert dict(r.numa_by_module) == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
    assert r.cpus_by_module[0] == "0-39, 80-119"
    assert r.cpus_by_module[7] == "40-79, 120-159"


def test_gaudi2e_nic_link_1_24_0() -> None:
    r = read("gaudi2e-nic-link-1.24.0.txt")
    assert r.kind == "nic-link"
    ports = r.nic_ports["0000:bb:00.0"]
    assert sorted(ports) == [0, 1, 2, 3, 4, 5, *range(10, 22)]
    assert set(ports.values()) == {"UP"}


def test_gaudi1_hl205_x8_1_8_0_process_wrapped_table() -> None:
    """The process row wraps onto a second line, the unit is `Mib`, and there is no closing `|`."""
    r = read("gaudi1-hl205-x8-1.8.0-process-wrapped-table.txt")
    assert (r.hl_smi_version, len(r.devices)) == ("hl-1.8.0-fw-40.0.0.2", 8)
    assert (card(r, 0).memory_used_mib, card(r, 1).memory_used_mib) == (32454, 32254)  # `Mib`; card 0: no row
    assert [(p.index, p.pid, p.name, p.memory_mib) for p in r.processes] == [(1, 2006754, "python", 31742)]


def test_made_gaudi2_x8_nic_link_up() -> None:
    r = read("made-gaudi2-x8-nic-link-up.txt")
    assert r.kind == "nic-link" and len(r.nic_ports) == 8
    assert all(sorted(p) == list(range(24)) and set(p.values()) == {"UP"} for p in r.nic_ports.values())


def test_made_gaudi2_x8_nic_link_card3_port8_down() -> None:
    r = read("made-gaudi2-x8-nic-link-card3-port8-down.txt")
    down = [(bus, n) for bus, ports in r.nic_ports.items() for n, state in ports.items() if state != "UP"]
    assert down == [("0000:b4:00.0", 8)]


def test_made_gaudi2_x8_nic_ports() -> None:
    r = read("made-gaudi2-x8-nic-ports.txt")
    assert r.kind == "nic-ports" and r.nic_ports == {}
    external = {
        bus: sorted(n for n, t in types.items() if t == "external") for bus, types in r.nic_port_types.items()
    }
    assert set(map(tuple, external.values())) == {(8, 22, 23)} and len(external) == 8


SAMPLE_TESTS = {
    "gaudi1-hl205-x8-1.8.0-process-wrapped-table.txt": test_gaudi1_hl205_x8_1_8_0_process_wrapped_table,
    "made-gaudi2-x8-nic-link-up.txt": test_made_gaudi2_x8_nic_link_up,
    "made-gaudi2-x8-nic-link-card3-port8-down.txt": test_made_gaudi2_x8_nic_link_card3_port8_down,
    "made-gaudi2-x8-nic-ports.txt": test_made_gaudi2_x8_nic_ports,
    "gaudi1-hl205-x8-1.4.1-table.txt": test_gaudi1_hl205_x8_1_4_1_table,
    "gaudi2-hl225-x8-1.12.1-table.txt": test_gaudi2_hl225_x8_1_12_1_table,
    "gaudi2-hl225-x1-1.15.1-table.txt": test_gaudi2_hl225_x1_1_15_1_table,
    "gaudi2-hl225-x8-1.16.0-process-table.txt": test_gaudi2_hl225_x8_1_16_0_process_table,
    "gaudi2-hl225-x8-1.20.0-busy-table.txt": test_gaudi2_hl225_x8_1_20_0_busy_table,
    "gaudi2e-hl288e-x8-1.24.0-table.txt": test_gaudi2e_hl288e_x8_1_24_0_table,
    "gaudi2-hl225-1.12.1-list-detail.txt": test_gaudi2_hl225_1_12_1_list_detail,
    "gaudi1-hl205-x8-1.18.0-query.csv": test_gaudi1_hl205_x8_1_18_0_query_csv,
    "gaudi2e-index-module-1.24.0.csv": test_gaudi2e_index_module_1_24_0_csv,
    "docs-index-module.csv": test_docs_index_module_csv,
    "gaudi2-topo-cpu-numa.txt": test_gaudi2_topo_cpu_numa,
    "gaudi2e-nic-link-1.24.0.txt": test_gaudi2e_nic_link_1_24_0,
}


@pytest.mark.parametrize("name", sorted(SAMPLE_TESTS))
def test_sample_parses_the_same_after_crlf_and_paste_indentation(name: str) -> None:
    text = (SAMPLES / name).read_text(encoding="utf-8")
    pasted = "\r\n".join("    " + line for line in text.splitlines())
    assert parse_any(pasted) == parse_any(text)
