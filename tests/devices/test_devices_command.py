"""`gaudi-tui devices`: table, --json schema, --input of every form (auto-detected), --watch, exit codes."""

from __future__ import annotations

import io
import json

import pytest

from gaudi_tui.cli import main
from tests.conftest import SAMPLES
from tests.devices.conftest import FakeHlSmi

DEVICE_KEYS = {
    "index", "module_id", "name", "product", "bus_id", "uuid", "memory_used_mib", "memory_total_mib",
    "power_draw_w", "power_cap_w", "temperature_c", "utilization_pct", "uncorrected_errors", "numa_node",
}  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["devices", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_from_the_fake_hl_smi(fake_hl_smi: FakeHlSmi, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, err) == (0, "")
    assert "source: hl-smi · hl-smi hl-1.20.0-fw-58.1.1.1 · driver 1.19.1-6f47ddd" in out
    row3 = next(line for line in out.splitlines() if line.startswith("3 "))
    assert row3.split()[:4] == ["3", "7", "Gaudi", "2"]
    assert "96565 / 98304" in row3 and "busy, holder not visible" in row3
    assert "card 7: PID 107684 ray::_RayTrainW 16770 MiB" in out
    assert out.splitlines()[1].startswith("host: CPU ")


def test_json_follows_the_design_schema(fake_hl_smi: FakeHlSmi, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--json")
    data = json.loads(out)
    assert code == 0
    assert set(data) == {
        "source",
        "hl_smi_version",
        "driver_version",
        "devices",
        "processes",
        "links",
        "link_errors",
        "errors",
        "recordings",
    }
    assert (data["source"], data["driver_version"]) == ("hl-smi", "1.19.1-6f47ddd")
    assert all(set(d) == DEVICE_KEYS for d in data["devices"])
    assert data["devices"][3]["memory_used_mib"] == 96565
    # hl-smi's row, with what /proc says of PID 107684 on this machine (nothing: no such process)
    assert data["processes"] == [
        {
            "index": 7,
            "pid": 107684,
            "name": "ray::_RayTrainW",
            "memory_mib": 16770,
            "user": None,
            "command": None,
            "started": None,
            "seen_by": "hl-smi",
        }
    ]
    links = data["links"]  # one-shot `-n link -i <bus>` and `-n ports -i <bus>` per card
    assert [c["index"] for c in links] == list(range(8)) and data["link_errors"] == []
    assert links[3]["bus_id"] == "0000:b4:00.0" and len(links[3]["ports"]) == 24
    assert links[3]["ports"][8] == {"port": 8, "type": "external", "up": True}


def test_no_source_exits_2_with_one_line(no_hl_smi: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--json")
    assert code == 2
    assert json.loads(out)["source"] == "none"
    assert err.count("\n") == 1 and err.startswith("gaudi-tui devices: `hl-smi` is not on PATH")


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("gaudi1-hl205-x8-1.4.1-table.txt", "0000:20:1d.0"),
        ("gaudi2e-hl288e-x8-1.24.0-table.txt", "Gaudi 2E"),
        ("gaudi2-hl225-1.12.1-list-detail.txt", "01P0-HL2080A0"),
        ("gaudi1-hl205-x8-1.18.0-query.csv", "00P1-HL2000A1-14-P64X00-08-05-09"),
        ("gaudi2e-index-module-1.24.0.csv", '"module_id": 6'),
    ],
)
def test_input_of_any_form_as_json(name: str, expect: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--input", str(SAMPLES / name), "--json")
    assert code == 0
    assert json.loads(out)["source"] == "file"
    assert expect in out


def test_inputs_combine_table_modules_and_topo(capsys: pytest.CaptureFixture[str]) -> None:
    files = [
        "gaudi2-hl225-x8-1.20.0-busy-table.txt",
        "gaudi2e-index-module-1.24.0.csv",
        "gaudi2-topo-cpu-numa.txt",
    ]
    code, out, _ = run(capsys, *[arg for name in files for arg in ("--input", str(SAMPLES / name))], "--json")
    devices = {d["index"]: d for d in json.loads(out)["devices"]}
    assert code == 0
    assert (devices[3]["module_id"], devices[3]["numa_node"]) == (7, 1)
    assert (devices[4]["module_id"], devices[4]["numa_node"]) == (0, 0)


def test_input_from_stdin_and_nic_links(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO((SAMPLES / "gaudi2e-nic-link-1.24.0.txt").read_text()))
    code, out, _ = run(capsys, "--input", "-")
    assert code == 0
    assert "0000:bb:00.0: 18 of 18 NIC ports UP" in out


@pytest.mark.parametrize(
    ("text", "reason"),
    [("", "the input is empty"), ("Segmentation fault\n", "not an hl-smi output gaudi-tui knows")],
)
def test_unreadable_input_exits_2(
    text: str, reason: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, err = run(capsys, "--input", "-")
    assert (code, out) == (2, "")
    assert reason in err and err.count("\n") == 1


def test_missing_input_file_exits_2(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--input", str(tmp_path / "nope.txt"))
    assert code == 2
    assert "cannot read" in err and "No such file" in err


def test_header_less_csv_needs_or_takes_fields(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "q.csv"
    saved.write_text("0, HL-225, 42\n1, HL-225, 43\n")
    code, _, err = run(capsys, "--input", str(saved))
    assert code == 2 and "--fields" in err
    code, out, _ = run(capsys, "--input", str(saved), "--fields", "index,name,temperature.aip", "--json")
    assert code == 0
    assert [d["temperature_c"] for d in json.loads(out)["devices"]] == [42, 43]


def test_watch_prints_refreshes_from_one_child(
    fake_hl_smi: FakeHlSmi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_hl_smi.set(
        sample="gaudi2-hl225-x8-1.20.0-busy-table.txt,gaudi2-hl225-x8-1.12.1-table.txt", period="0.2"
    )
    code, out, _ = run(capsys, "--watch", "1", "--count", "3", "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 3
    # the one-shot query first (the busy sample), then the loop: busy, idle
    assert [snapshot["devices"][3]["memory_used_mib"] for snapshot in lines] == [96565, 96565, 768]
    assert len(fake_hl_smi.loop_pids()) == 1


def test_watch_and_input_do_not_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--watch", "1", "--input", "-")
    assert code == 2 and "do not go together" in err
