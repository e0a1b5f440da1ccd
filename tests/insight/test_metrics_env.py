"""launch.job_env and the Gaudi runtime's metrics variables: set for every hpu job, never over
the user's own choice (nor its older `HABANA_PT_` alias, which the saver also reads)."""

from __future__ import annotations

from pathlib import Path

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs.launch import job_env, prepare
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec

RUN = RunFolder(Path("/runs/r1"))
GAUDI2 = Accelerator("hpu", "fake", device_count=8, device_name="GAUDI2", dtype="bfloat16")


def env_for(
    spec_env: dict[str, str], base: dict[str, str] | None = None, device: str = "hpu"
) -> dict[str, str]:
    spec = prepare(JobSpec(env=spec_env, device=device), GAUDI2)  # type: ignore[arg-type]
    return job_env(RUN, spec, base or {})


def test_an_hpu_job_gets_the_metrics_file_dumped_at_every_change() -> None:
    env = env_for({})
    assert env["PT_HPU_METRICS_FILE"] == "/runs/r1/hpu_metrics.json"
    assert env["PT_HPU_METRICS_DUMP_TRIGGERS"] == "process_exit,metric_change"
    assert env["PT_HPU_METRICS_FILE_FORMAT"] == "json"


def test_the_users_own_file_triggers_and_format_are_kept() -> None:
    env = env_for({"PT_HPU_METRICS_FILE": "/data/mine.txt", "PT_HPU_METRICS_FILE_FORMAT": "text"})
    assert env["PT_HPU_METRICS_FILE"] == "/data/mine.txt"
    assert env["PT_HPU_METRICS_FILE_FORMAT"] == "text"
    assert env["PT_HPU_METRICS_DUMP_TRIGGERS"] == "process_exit,metric_change"  # not chosen: set
    shell = env_for({}, base={"PT_HPU_METRICS_DUMP_TRIGGERS": "mark_step"})
    assert shell["PT_HPU_METRICS_DUMP_TRIGGERS"] == "mark_step"


def test_the_older_alias_counts_as_the_users_choice() -> None:
    env = env_for({"HABANA_PT_METRICS_FILE": "/data/old.json"})
    assert "PT_HPU_METRICS_FILE" not in env  # it would win over the user's alias in the saver
    assert env["HABANA_PT_METRICS_FILE"] == "/data/old.json"


def test_a_cpu_job_gets_none_of_them() -> None:
    assert not any(k.startswith("PT_HPU_METRICS") for k in env_for({}, device="cpu"))
