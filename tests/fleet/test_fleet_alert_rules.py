"""The shipped Prometheus alerting rules, through the real `promtool`: the file checks, its unit
tests (tests/fleet/data/gaudi-tui-alerts.test.yml: series that fire each alert and series that must
not) pass, a wrong threshold makes them fail, and the rules use only the exporter's names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gaudi_tui.core.fleet import metrics as m
from gaudi_tui.data import ALERT_RULES

UNIT_TESTS = Path(__file__).parent / "data" / "gaudi-tui-alerts.test.yml"
ALERTS = (
    "GaudiCardIdleWithMemoryHeld",
    "GaudiHbmNearlyFull",
    "GaudiScaleOutPortDown",
    "GaudiDoubleBitEccRowsRising",
    "GaudiSingleBitEccRowsRising",
    "GaudiExporterDown",
)

pytestmark = pytest.mark.usefixtures("prometheus_installed")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERT_RULES.read_text())["groups"] for rule in group["rules"]]


def test_the_rules_ship_in_the_package_and_promtool_checks_them() -> None:
    assert ALERT_RULES.is_file() and "gaudi_tui" in ALERT_RULES.parts  # package data: in the wheel
    done = promtool("check", "rules", str(ALERT_RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in done.stdout
    assert tuple(rule["alert"] for rule in rules()) == ALERTS


def test_every_alert_fires_on_its_series_and_not_on_the_others() -> None:
    done = promtool("test", "rules", str(UNIT_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    cases = [
        case for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"] for case in test["alert_rule_test"]
    ]
    for alert in ALERTS:  # each one is seen firing, and seen not firing
        assert any(c["alertname"] == alert and c["exp_alerts"] for c in cases), alert
        assert any(c["alertname"] == alert and not c["exp_alerts"] for c in cases), alert


def test_a_rule_with_a_wrong_threshold_fails_the_unit_tests(tmp_path: Path) -> None:
    """The unit tests can fail: the HBM rule at 97% no longer fires on the 96% card."""
    broken = tmp_path / "rules.yml"
    text = ALERT_RULES.read_text()
    assert text.count("> 0.95") == 1
    broken.write_text(text.replace("> 0.95", "> 0.97"))
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    tests["rule_files"] = [str(broken)]
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests))
    done = promtool("test", "rules", str(tmp_path / "tests.yml"))
    assert done.returncode != 0
    assert "alertname: GaudiHbmNearlyFull, time: 6m" in done.stdout + done.stderr


def test_the_rules_use_only_the_exporters_names() -> None:
    known = {info.name for info in vars(m).values() if isinstance(info, m.MetricInfo)}
    used = {name for rule in rules() for name in re.findall(r"habanalabs_\w+", rule["expr"])}
    assert used and used <= known, used - known
    assert m.NIC_PORT_STATUS.name in used and m.MEMORY_TOTAL.name in used


def test_fleet_rules_prints_the_file_and_where_it_is() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gaudi_tui", "fleet", "--rules"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ALERT_RULES.read_text()
    assert str(ALERT_RULES) in done.stderr
