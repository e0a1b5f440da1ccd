"""After the source faults, no card of its last reading is shown or exported as current."""

from __future__ import annotations

from gaudi_tui.core.devices.monitor import MonitorConfig
from gaudi_tui.core.fleet.exporter import KernelFacts, families
from tests.devices.conftest import FakeHlSmi
from tests.devices.test_monitor import Run, driver_loaded  # noqa: F401 (a fixture)


def test_a_dying_hl_smi_drops_its_cards_from_the_snapshot_and_the_exporter(
    fake_hl_smi: FakeHlSmi,
    driver_loaded: str,  # noqa: F811 - the fixture imported above
) -> None:
    fake_hl_smi.set(fault="die", after="2", period="0.1")
    run = Run(MonitorConfig(backoff_start=0.1, sys_root=driver_loaded))
    try:
        run.wait_for(lambda u: len(u.snapshot.devices) == 8)
        failed = run.wait_for(lambda u: bool(u.faults), after=run.position)
    finally:
        run.stop()
    assert failed.snapshot.devices == () and failed.snapshot.processes == ()
    served = [s for family in families(failed.snapshot, KernelFacts()) for s in family.samples]
    assert served == []  # the exporter serves no card while hl-smi is down
