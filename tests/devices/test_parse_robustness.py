"""Forms the samples imply but do not all show, built from the real samples by the documented
transformations; and hypothesis: parsers never raise, whatever the text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaudi_tui.core.devices.csv_query import QUERY_FIELDS
from gaudi_tui.core.devices.parsers.detect import parse_any
from gaudi_tui.core.devices.parsers.parse_csv import parse_csv, parse_row
from gaudi_tui.core.devices.parsers.parse_detail import parse_detail
from gaudi_tui.core.devices.parsers.parse_table import parse_table
from tests.conftest import SAMPLES

CSV = (SAMPLES / "gaudi1-hl205-x8-1.18.0-query.csv").read_text()
TABLE_116 = (SAMPLES / "gaudi2-hl225-x8-1.16.0-process-table.txt").read_text()
ALL_SAMPLES = sorted(p.read_text(encoding="utf-8") for p in SAMPLES.iterdir() if p.name != "SOURCES.md")


def test_csv_with_units_in_the_values_reads_the_same_numbers() -> None:
    # Without `nounits` hl-smi prints `103 W, 36 C, 15 %, 512 MiB` (docs/hl-smi-facts.md).
    header, *rows = CSV.splitlines()
    units = ["", "", " W", " C", " %", " MiB", " MiB"]
    with_units = [", ".join(c.strip() + u for c, u in zip(r.split(","), units, strict=True)) for r in rows]
    assert parse_csv("\n".join([header, *with_units])).devices == parse_csv(CSV).devices


def test_looped_csv_without_header_splits_refreshes_where_the_index_comes_round() -> None:
    fields = ["index", "module_id", "utilization.aip", "memory.used"]
    tick = lambda util: [f"{i}, {7 - i}, {util}, 768" for i in range(8)]  # noqa: E731
    text = "\n".join([*tick(1), *tick(2), *tick(3)])
    reading = parse_csv(text, fields)
    assert reading.samples == 3
    assert {d.utilization_pct for d in reading.devices} == {3}
    assert {d.index: d.module_id for d in reading.devices}[0] == 7


def test_header_less_csv_of_gaudi_tuis_own_query_is_recognised() -> None:
    row = "0, 5, 0000:43:00.0, HL-325L, N/A, 1.22.1-97ec1a4, 0, 672, 131072, 226, 850, 36, 0"
    assert len(row.split(",")) == len(QUERY_FIELDS)
    reading = parse_any(row)
    (d,) = reading.devices
    assert (d.product, d.module_id, d.memory_total_mib, d.power_cap_w, d.uuid) == (
        "Gaudi 3",
        5,
        131072,
        850,
        None,
    )
    assert reading.driver_version == "1.22.1-97ec1a4"


def test_wrapped_process_row_of_older_hl_smi_is_joined() -> None:
    # hl-smi 1.6/1.8 wrapped long process rows onto a second line (docs/hl-smi-facts.md).
    row = "|   6       618796     C   ray::ServeRepli                         26330MiB"
    wrapped = TABLE_116.replace(
        row, "|   6       618796     C   ray::ServeRepli\n|                                   26330MiB |"
    )
    assert wrapped != TABLE_116
    (process,) = parse_table(wrapped).processes
    assert (process.index, process.pid, process.name, process.memory_mib) == (
        6,
        618796,
        "ray::ServeRepli",
        26330,
    )


def test_table_cut_short_keeps_the_cards_read_and_says_so() -> None:
    lines = TABLE_116.splitlines()
    cut = "\n".join(lines[:17])  # header, cards 0-2 and the first line of card 3
    reading = parse_table(cut)
    assert [d.index for d in reading.devices] == [0, 1, 2, 3]
    assert reading.devices[3].memory_used_mib is None
    assert any("second line missing" in e for e in reading.errors)


def test_unknown_text_is_an_error_not_an_exception() -> None:
    reading = parse_any("Segmentation fault (core dumped)")
    assert reading.devices == ()
    assert "not an hl-smi output" in reading.errors[0]


def test_na_values_become_unknown() -> None:
    (d,) = parse_csv("index, temperature.aip [C], power.draw [W]\n0, N/A, [Not Supported]").devices
    assert (d.temperature_c, d.power_draw_w) == (None, None)


def test_detail_block_of_a_failing_module_is_reported() -> None:
    text = "[3] AIP (accel3) 0000:1a:00.0\n  Product Name : HL-205\n  Module status : Not operational\n"
    reading = parse_detail(text)
    assert reading.devices[0].index == 3
    assert "module status is 'Not operational'" in reading.errors[0]


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.text())
def test_parse_any_never_raises_on_random_text(text: str) -> None:
    reading = parse_any(text)
    assert isinstance(reading.errors, tuple)


@FAST
@given(st.sampled_from(ALL_SAMPLES), st.integers(min_value=0), st.integers(min_value=0))
def test_parse_any_never_raises_on_truncated_samples(sample: str, start: int, length: int) -> None:
    start %= len(sample) + 1
    reading = parse_any(sample[start : start + length % (len(sample) + 1)])
    assert all(d.index >= 0 for d in reading.devices)


@FAST
@given(
    st.sampled_from(ALL_SAMPLES),
    st.lists(st.tuples(st.integers(min_value=0), st.text(max_size=12)), max_size=6),
)
def test_parse_any_never_raises_on_mangled_lines(sample: str, edits: list[tuple[int, str]]) -> None:
    lines = sample.splitlines()
    for position, junk in edits:
        lines[position % len(lines)] = junk
    parse_any("\n".join(lines))


@FAST
@given(st.lists(st.sampled_from(QUERY_FIELDS), min_size=1, max_size=6), st.text(max_size=80))
def test_parse_row_never_raises(fields: list[str], line: str) -> None:
    row = parse_row(fields, line, 0)
    assert (row.device is None) == (row.error is not None)
