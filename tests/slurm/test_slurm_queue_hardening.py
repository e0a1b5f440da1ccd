"""The shared queue on the real loopback cluster when a stranger or a clock is hostile: a job named
with a byte that is not UTF-8 breaks neither `gaudi-tui slurm queue` nor a supervisor; a lock that
cannot be had (NFS) or is held does not stop the poll; a queue cache dated in the future is stale;
cancelling an array's pending remainder from the Slurm screen leaves its running tasks alone."""

from __future__ import annotations

import errno
import fcntl
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, OptionList, Static

from gaudi_tui.cli import main
from gaudi_tui.core.jobs import control
from gaudi_tui.core.slurm import model, poll, queue_fields, table
from gaudi_tui.core.slurm.cli import Slurm
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.slurm import SignalDialog, SlurmScreen
from tests.conftest import CPU
from tests.jobs.conftest import log_tail, wait_done, wait_for
from tests.pilot import settle
from tests.slurm.cluster import SlurmTestCluster
from tests.slurm.test_slurm_hardening import nap_spec


def queue(slurm: SlurmTestCluster) -> dict[str, model.QueueJob]:
    snap = poll.take(Slurm(env=slurm.env))
    assert snap.error is None, snap.error
    return {j.label: j for j in snap.jobs}


def stranger(slurm: SlurmTestCluster) -> int:
    """Another user's job named `r\\xe9sum\\xe9` (Latin-1 é: not UTF-8), as sbatch takes it."""
    argv = [b"sbatch", b"--parsable", b"--job-name=r\xe9sum\xe9", f"--chdir={slurm.root / 'out'}".encode()]
    done = subprocess.run([*argv, b"--wrap", b"sleep 120"], env=slurm.env, capture_output=True, check=True)
    job_id = int(done.stdout.split(b";")[0])
    wait_for(lambda: (j := queue(slurm).get(str(job_id))) and j.state == "RUNNING", 30, "the stranger's job")
    return job_id


def test_a_name_that_is_not_utf8_breaks_nobody(
    slurm: SlurmTestCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = stranger(slurm)
    assert main(["slurm", "queue", "--all", "--json"]) == 0
    listed = {j["job_id"]: j for j in json.loads(capsys.readouterr().out)}
    assert listed[job_id]["name"] == "r\ufffdsum\ufffd"
    assert main(["slurm", "queue", "--all"]) == 0 and "r\ufffdsum\ufffd" in capsys.readouterr().out
    done = subprocess.run(  # the command as a user runs it, its own process and stdout
        [sys.executable, "-m", "gaudi_tui", "slurm", "queue", "--all", "--json"],
        env=slurm.env | {"GAUDI_TUI_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    work = tmp_path / "work"
    work.mkdir()
    run = control.submit(nap_spec(work, 2), CPU)  # its supervisor polls the same queue
    assert wait_done(run, 90) == "succeeded", log_tail(run)


def test_the_poll_answers_without_a_lock(
    slurm: SlurmTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = slurm.sbatch("-J", "locks", "--wrap", "sleep 60")
    client = Slurm(env=slurm.env)
    cache = tmp_path / "queue.json"

    def no_locks(fd: object, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")  # what flock says on an NFS home without lockd

    with monkeypatch.context() as nfs:
        nfs.setattr(poll.fcntl, "flock", no_locks)
        snap = poll.QueuePoll(client, cache=cache).get()
    assert snap.error is None and snap.job(job_id) is not None

    with cache.with_suffix(".lock").open("a") as held:  # another supervisor that does not let go
        fcntl.flock(held, fcntl.LOCK_EX)
        answer: list[poll.Snapshot] = []
        waiting = threading.Thread(
            target=lambda: answer.append(poll.QueuePoll(client, cache=cache, lock_wait=0.5).get())
        )
        waiting.start()
        waiting.join(timeout=30)
        assert not waiting.is_alive(), "the poll waited for the lock without a bound"
    assert answer[0].error is None and answer[0].job(job_id) is not None


NONE = queue_fields.Answer("", "|0123456789abcdef|")
"""An answer with no job, as squeue prints an empty queue."""


def test_a_queue_cache_from_the_future_is_stale(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    job_id = slurm.sbatch("-J", "future", "--wrap", "sleep 60")
    client = Slurm(env=slurm.env)
    cache = tmp_path / "queue.json"
    empty = poll.Snapshot(
        time.time() + 3600, answer=NONE
    )  # a clock stepped back, or another host's clock ahead
    cache.write_text(json.dumps(empty.to_json()))
    reader = poll.QueuePoll(client, cache=cache)
    snap = reader.get()
    assert snap.job(job_id) is not None and reader.calls == 1
    assert json.loads(cache.read_text())["taken"] <= time.time()  # the future one was replaced

    ahead = poll.Snapshot(
        time.time(), mono=time.monotonic() + 3600, boot=poll.boot_id(), answer=NONE
    )  # same boot
    cache.write_text(json.dumps(ahead.to_json()))
    assert poll.QueuePoll(client, cache=cache).get().job(job_id) is not None

    skewed = poll.Snapshot(time.time() + 0.5, answer=NONE)  # within the skew: still served, no call
    cache.write_text(json.dumps(skewed.to_json()))
    close = poll.QueuePoll(client, cache=cache)
    assert close.get().jobs == () and close.calls == 0

    clock = [time.time()]
    stepped = poll.QueuePoll(client, clock=lambda: clock[0])  # this process's own copy
    stepped.get()
    clock[0] -= 3600
    stepped.get()
    assert stepped.calls == 2


def test_the_cancel_target_of_each_row() -> None:
    def job(job_id: int, array: int = 0, task: str = "") -> model.QueueJob:
        return model.QueueJob(job_id, "x", "u", "PENDING", "None", "main", (), 1, 0, None, 0, 0, 0, None,
                              array_job_id=array, array_task=task)  # fmt: skip

    assert table.scancel_id(job(7)) == "7"
    assert table.scancel_id(job(5, 2, "1")) == "2_1"
    assert table.scancel_id(job(2, 2, "2-3%2")) == "2_[2-3]"
    assert table.scancel_id(job(2, 2, "4,6-9")) == "2_[4,6-9]"


async def test_cancelling_a_pending_array_record_leaves_its_running_tasks(slurm: SlurmTestCluster) -> None:
    array = slurm.sbatch("-J", "arr", "--array=0-3%2", "--wrap", "sleep 300")
    record = f"{array}_[2-3%2]"
    wait_for(
        lambda: (
            {f"{array}_0", f"{array}_1", record} <= set(queue(slurm))
            and queue(slurm)[f"{array}_1"].state == "RUNNING"
        ),
        30,
        "two running tasks and the pending remainder",
    )
    client = Slurm(env=slurm.env)
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = SlurmScreen(slurm=client, interval=0.5, user="root")
        await app.push_screen(screen)
        deadline = time.monotonic() + 20
        while record not in [j.label for j in screen.rows]:
            assert time.monotonic() < deadline, "the pending record never showed"
            await pilot.pause(0.1)
        grid = screen.query_one("#slurm-queue", DataTable)
        row = [j.label for j in screen.rows].index(record)
        grid.move_cursor(row=row)
        await settle(pilot, lambda: grid.cursor_row == row, what="the cursor on the record")
        await pilot.press("c")
        await settle(pilot, lambda: isinstance(app.screen, SignalDialog), what="the signal dialog")
        app.screen.query_one(OptionList).highlighted = 0  # plain cancel
        await pilot.press("enter")
        await settle(pilot, lambda: not isinstance(app.screen, SignalDialog), what="the dialog answered")
        while record in queue(slurm) and queue(slurm)[record].state == "PENDING":
            assert time.monotonic() < deadline + 20, "the pending remainder was not cancelled"
            await pilot.pause(0.2)
    jobs = queue(slurm)
    assert jobs[f"{array}_0"].state == "RUNNING" and jobs[f"{array}_1"].state == "RUNNING"
    assert all(
        j.state == "CANCELLED" for label, j in jobs.items() if label in (f"{array}_2", f"{array}_3", record)
    )


async def test_tail_finds_an_output_file_whose_path_holds_a_percent(slurm: SlurmTestCluster) -> None:
    """`-o '50%%/…'` writes into `50%/`; 22.05's `scontrol show job` still shows `StdOut=…50%%/…`."""
    folder = slurm.root / "out" / "50%"
    folder.mkdir(exist_ok=True)
    job_id = slurm.sbatch(
        "-J", "pct", "-o", f"{slurm.root / 'out'}/50%%/pct-%j.out", "--wrap", "echo pct-line; sleep 60"
    )
    wait_for(lambda: (folder / f"pct-{job_id}.out").exists(), 30, "the output file")
    app = GaudiApp(accelerator=CPU, hostname="login-1")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = SlurmScreen(slurm=Slurm(env=slurm.env), interval=0.5, user="root")
        await app.push_screen(screen)
        deadline = time.monotonic() + 20
        while job_id not in [j.job_id for j in screen.rows]:
            assert time.monotonic() < deadline, "the job never showed"
            await pilot.pause(0.1)
        screen.query_one("#slurm-queue", DataTable).move_cursor(
            row=[j.job_id for j in screen.rows].index(job_id)
        )
        await pilot.press("t")
        pane = screen.query_one("#slurm-tail", Static)
        while "pct-line" not in str(pane.render()):
            assert time.monotonic() < deadline + 10, str(pane.render())
            await pilot.pause(0.1)
