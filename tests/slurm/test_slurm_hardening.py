"""Panel jobs on the real loopback cluster where a path, an option or the controller is hostile: a
runs folder whose path holds a space, quotes, `$(…)`, `;` and `%` still gets the time-limit
warning into the right STOP file and runs nothing it names; an extra sbatch option cannot inject a
second one; a controller frozen (SIGSTOP) around sbatch leaves the attempt unknown, and the job is
found by its name and followed, one copy only."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, from_mapping
from gaudi_tui.core.jobs.targets.slurm import checks, script
from gaudi_tui.core.jobs.targets.slurm import record as slurm_record
from gaudi_tui.core.jobs.validate import InvalidSpec
from gaudi_tui.core.slurm import model
from gaudi_tui.core.slurm.cli import Slurm, SlurmError
from tests.conftest import ROOT
from tests.jobs.conftest import log_tail, wait_done, wait_for
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_jobs import CPU

HOSTILE = 'ML Team\'s "runs" $(touch PWNED) ; touch PWNED2 %j %x %%'
"""A runs folder name: a space, both quotes, a command substitution, a `;` and Slurm's %-patterns."""

NAP = """import sys, time
print("napping", flush=True)
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    time.sleep(0.1)
print("woke", flush=True)
"""


def nap_spec(workdir: Path, seconds: float, **changes: object) -> JobSpec:
    (workdir / "nap.py").write_text(NAP)
    values: dict[str, object] = {
        "kind": "command",
        "command": [sys.executable, str(workdir / "nap.py"), str(seconds)],
        "command_launcher": "direct",
        "workdir": str(workdir),
        "device": "cpu",
        "target": "slurm",
        "slurm_nodes": 1,
        "slurm_cards_per_node": 1,
        "kill_grace_s": 3.0,
        "env": {"PYTHONPATH": str(ROOT)},
    }
    values.update(changes)
    return from_mapping(values)


def record(run: RunFolder) -> slurm_record.SlurmRecord:
    return slurm_record.read(run) or slurm_record.SlurmRecord(attempt=0, job_name="", script="")


def shown(slurm: SlurmTestCluster, job_id: int) -> model.ShownJob:
    line = Slurm(env=slurm.env).show_job(job_id)
    assert line is not None
    job = model.shown_job(line)
    assert job is not None
    return job


def test_the_time_limit_warning_reaches_the_stop_file_of_a_hostile_path(
    slurm: SlurmTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / HOSTILE
    monkeypatch.setenv("GAUDI_TUI_RUNS_DIR", str(runs))
    work = tmp_path / "work"
    work.mkdir()
    run = control.submit(nap_spec(work, 120, slurm_time_limit="10"), CPU)
    assert str(run.path).startswith(str(runs))
    rec = wait_for(
        lambda: record(run).state == "RUNNING" and record(run), 60, "the job to run\n" + log_tail(run)
    )
    job_id = rec.job_id  # type: ignore[union-attr]
    assert job_id is not None
    wait_for(lambda: "napping" in run.log_path.read_text(), 30, "the output file, tailed\n" + log_tail(run))
    # what `--signal=B:USR1@120` does near the limit: USR1 to the batch shell only
    slurm.run("scancel", "--signal=USR1", "--batch", str(job_id))
    wait_for(run.stop_path.exists, 30, "the STOP file in the run folder\n" + log_tail(run))
    wait_for(
        lambda: "the time limit is near: graceful stop" in run.log_path.read_text(), 30, "the trap's line"
    )
    assert wait_done(run, 60) == "stopped", log_tail(run)  # no callback: SIGINT to the ranks, stopped
    assert (run.path / "slurm" / f"job-{job_id}.out").exists()  # Slurm wrote where the supervisor reads
    job = shown(slurm, job_id)
    assert job.state in ("CANCELLED", "FAILED", "COMPLETED")
    injected = [p for p in (tmp_path, slurm.root) for p in p.rglob("PWNED*")]
    assert injected == [], f"the path ran as a command: {injected}"
    text = script.script_path(run, 1).read_text()
    assert "#SBATCH" not in text  # every option went on sbatch's command line


INJECTION = "--comment=\\'' --output={target} #"
"""sbatch's `#SBATCH` parser reads a backslash as an escape inside quotes: on a script line this
value ends the comment and adds a second --output (reproduced on the loopback cluster)."""


def test_an_extra_option_cannot_inject_another(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    target = tmp_path / "bashrc"
    work = tmp_path / "work"
    work.mkdir()
    option = INJECTION.format(target=target)
    spec = nap_spec(work, 60, slurm_options=(option,))
    assert checks.field_problems(checks.prepare(spec)) == []  # a comment may hold quotes and backslashes
    run = control.submit(spec, CPU)
    rec = wait_for(
        lambda: record(run).state == "RUNNING" and record(run), 60, "the job to run\n" + log_tail(run)
    )
    job_id = rec.job_id  # type: ignore[union-attr]
    assert job_id is not None
    wait_for(lambda: "napping" in run.log_path.read_text(), 30, "the output file, tailed\n" + log_tail(run))
    line = Slurm(env=slurm.env).show_job(job_id) or ""
    assert model.parse_show_line(line)["StdOut"] == str(run.path / "slurm" / f"job-{job_id}.out")
    assert f"Comment=\\'' --output={target} #" in line  # the whole value is the comment
    assert not target.exists()
    assert control.kill(run).startswith("killing")
    assert wait_done(run, 60) == "cancelled"


def test_values_that_would_break_a_line_are_refused() -> None:
    assert script.time_problem("30\n") is not None  # `$` matched before a trailing newline
    assert script.time_problem("30") is None
    assert script.name_problem("slurm_partition", "main\n") is not None
    assert script.option_problems(["--comment=a\nb"]) == [
        "--comment: the value has a line break or another control character"
    ]
    assert script.option_problems(["--comment=ends with \\"]) == []  # one argv element: harmless
    assert script.option_problems(["--comment"]) == ["--comment needs a value: --comment=VALUE"]
    assert script.option_problems(["--exclusive", "--requeue", "--nice"]) == []


def test_a_run_folder_slurm_cannot_name_is_refused(tmp_path: Path) -> None:
    assert script.path_problem(RunFolder(tmp_path / "a\\b" / "run")) is not None
    assert script.path_problem(RunFolder(tmp_path / "a\nb" / "run")) is not None
    assert script.path_problem(RunFolder(tmp_path / HOSTILE / "run")) is None
    assert script.output_pattern(RunFolder(Path("/r/50% done/run"))) == "/r/50%% done/run/slurm/job-%j.out"


FREEZE = """#!/bin/sh
# the controller stops answering just as this sbatch sends its request (once)
if [ ! -e {marker} ]; then : > {marker}; kill -STOP {pid}; fi
exec {sbatch} "$@"
"""


def test_a_frozen_controller_around_sbatch_is_unknown_then_followed(
    slurm: SlurmTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = slurm.daemons["slurmctld"].pid
    real = shutil.which("sbatch")
    assert real is not None
    bin_dir, marker = tmp_path / "bin", tmp_path / "frozen"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(FREEZE.format(marker=marker, pid=pid, sbatch=real))
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    work = tmp_path / "work"
    work.mkdir()
    try:
        run = control.submit(nap_spec(work, 2), CPU)
        wait_for(marker.exists, 30, "sbatch to freeze the controller")
        # sbatch: "Socket timed out on send/recv operation" after MessageTimeout (10 s)
        wait_for(
            lambda: "may have been queued" in run.log_path.read_text(),
            60,
            "the look by name\n" + log_tail(run),
        )
        # squeue fails too: nothing is known, nothing is decided
        wait_for(
            lambda: "is unknown until it answers" in run.log_path.read_text(), 60, "unknown\n" + log_tail(run)
        )
        assert run.status().state == "queued"  # type: ignore[union-attr]
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_done(run, 120) == "succeeded", log_tail(run)
    name = script.job_name(run, 1)
    listed = slurm.run("squeue", "-h", "-t", "all", "-n", name, "-o", "%i").stdout.split()
    assert listed == [str(record(run).job_id)]  # found by its name and followed: one copy
    assert "woke" in run.log_path.read_text()


def test_a_busy_controller_is_not_a_refusal(tmp_path: Path) -> None:
    """scontrol's own words when slurmctld was frozen past MessageTimeout (seen on the loopback
    cluster: `slurm_load_jobs error: Socket timed out on send/recv operation`, exit 1)."""
    tool = tmp_path / "scontrol"
    tool.write_text(
        "#!/bin/sh\necho 'slurm_load_jobs error: Socket timed out on send/recv operation' >&2\nexit 1\n"
    )
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    with pytest.raises(SlurmError) as caught:
        Slurm(env=env).show_job(5)
    assert caught.value.kind == "busy" and caught.value.unreachable and not caught.value.definite
    (tmp_path / "sbatch").write_text(
        "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received' >&2\nexit 1\n"
    )
    (tmp_path / "sbatch").chmod(0o755)
    with pytest.raises(SlurmError) as sbatch:
        Slurm(env=env).sbatch(tmp_path / "x.sbatch", tmp_path)
    assert not sbatch.value.definite
    (tmp_path / "sbatch").write_text(  # the reference's words of a client without slurm.conf
        "#!/bin/sh\necho 'sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host' >&2\n"
        "echo 'sbatch: fatal: Could not establish a configuration source' >&2\nexit 1\n"
    )
    with pytest.raises(SlurmError) as unconfigured:
        Slurm(env=env).sbatch(tmp_path / "x.sbatch", tmp_path)
    assert unconfigured.value.definite  # nothing can have been queued: no look by name for ever


def test_sbatch_and_srun_variables_in_the_env_are_refused(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    """sbatch reads SBATCH_ARRAY_INX as --array (seen on the loopback cluster: one submission, four
    copies 1_0..1_3): a spec's env must not pass options around the allow-list."""
    work = tmp_path / "work"
    work.mkdir()
    env = {"PYTHONPATH": str(ROOT), "SBATCH_ARRAY_INX": "0-3", "SLURM_NTASKS_PER_NODE": "4"}
    with pytest.raises(InvalidSpec) as caught:
        control.submit(nap_spec(work, 1, env=env), CPU)
    assert [p.field for p in caught.value.problems] == ["env", "env"]
    assert "SBATCH_ARRAY_INX: Slurm reads it as an option" in str(caught.value)
    assert slurm.run("squeue", "-h", "-o", "%j").stdout.count("gaudi-tui") == 0
