"""End to end on CPU: real Trainer jobs under the detached supervisor (demo model, tiny settings)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gaudi_tui.core.jobs import control, runfolder, series_cache
from gaudi_tui.core.jobs.runfolder import is_complete
from gaudi_tui.core.jobs.series import METRICS
from gaudi_tui.core.jobs.status import effective_state
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import events, last_step, log_tail, tiny, wait_done, wait_for

pytestmark = pytest.mark.slow

METRIC_KEYS = {
    "loss",
    "learning_rate",
    "grad_norm",
    "epoch",
    "step",
    "samples_per_s",
    "tokens_per_s",
    "memory_mib",
}


def gaudi_tui(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "gaudi_tui", *args], capture_output=True, text=True, env=child_env(), timeout=timeout
    )


def test_demo_fine_tune_from_the_command_line_lowers_the_loss() -> None:
    done = gaudi_tui(
        "train", "demo", "--set", "device=cpu", "--set", "max_steps=40", "--set", "max_seq_len=64",
        "--set", "batch_size=8", "--set", "logging_steps=5", "--follow",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    run = runfolder.all_runs()[0]
    assert f"started job {run.id} on cpu (1 process(es), single)" in done.stdout
    assert run.status().state == "succeeded" and run.status().exit_code == 0
    logs = events(run, "log")
    assert METRIC_KEYS <= set(logs[-1])
    assert logs[-1]["step"] == 40 and logs[-1]["tokens_per_s"] > logs[-1]["samples_per_s"] > 0
    first, last = logs[0]["loss"], logs[-1]["loss"]
    assert last < 0.5 * first, [round(e["loss"], 3) for e in logs]
    assert (run.model_dir / "model.safetensors").is_file() and (run.model_dir / "tokenizer.json").is_file()
    # the supervisor kept the charts' series in the run folder, to the file's end (its last save)
    size = run.metrics_path.stat().st_size
    kept = wait_for(lambda: series_cache.load(run.metrics_path, METRICS, kept=True), 30, "the kept series")
    assert kept["offset"] == size  # type: ignore[index]
    listed = gaudi_tui("jobs", "--json")
    (view,) = json.loads(listed.stdout)
    assert (view["id"], view["state"], view["step"], view["max_steps"]) == (run.id, "succeeded", 40, 40)


def test_two_processes_stop_together_and_resume_from_that_step() -> None:
    run = control.submit(tiny(processes=2, max_steps=60), CPU)
    wait_for(lambda: last_step(run) >= 5, 120, "the first steps")
    control.stop(run)
    assert wait_done(run) == "stopped", log_tail(run)
    stops = re.findall(r"rank (\d) stopping at step (\d+)", run.log_path.read_text())
    assert sorted(r for r, _ in stops) == ["0", "1"], log_tail(run)
    (step,) = {int(s) for _, s in stops}
    assert [c.name for c in run.checkpoints()] == [f"checkpoint-{step}"]
    checkpoint = run.checkpoints()[0]
    assert is_complete(checkpoint)
    assert {"rng_state_0.pth", "rng_state_1.pth", "optimizer.pt"} <= {p.name for p in checkpoint.iterdir()}
    assert json.loads((checkpoint / "trainer_state.json").read_text())["global_step"] == step
    assert events(run, "end")[-1] == {**events(run, "end")[-1], "stopped": True, "step": step}

    assert control.resume(run) == f"resuming from {checkpoint.name}"
    assert wait_done(run) == "succeeded", log_tail(run)
    begin = events(run, "begin")[-1]
    assert begin["step"] == step and begin["resumed_from"] == str(checkpoint) and begin["world_size"] == 2
    after = [e["step"] for e in events(run, "log") if e["time"] > begin["time"]]
    assert after[0] == step + 1 and after[-1] == 60
    assert run.status().attempt == 2


def test_kill_ends_every_process_even_when_the_supervisor_and_torchrun_were_sigkilled() -> None:
    run = control.submit(tiny(processes=2, max_steps=10_000, kill_grace_s=3.0), CPU)
    wait_for(lambda: last_step(run) >= 2, 120, "training to start")
    status = run.status()
    workers = [w for w in status.workers if "gaudi_tui.core.jobs.worker.train" in w.cmd]
    assert len(workers) == 2, status.workers
    assert os.getsid(status.supervisor.pid) == status.supervisor.pid != os.getsid(0)  # own session: no SIGHUP
    # The trap from the research notes: SIGKILL of torchrun leaves its workers running.
    os.kill(status.supervisor.pid, signal.SIGKILL)
    os.kill(status.launcher.pid, signal.SIGKILL)
    wait_for(lambda: not (status.launcher.alive() or status.supervisor.alive()), 10, "both to die")
    assert all(w.alive() for w in workers), "workers should have been orphaned"
    assert effective_state(run.status(), time.time()) == "lost"
    control.kill(run)
    assert not any(w.alive() for w in workers)
    assert run.status().state == "cancelled"


def test_kill_through_the_supervisor_sends_sigterm_then_cancels() -> None:
    run = control.submit(tiny(max_steps=10_000, kill_grace_s=5.0), CPU)
    wait_for(lambda: last_step(run) >= 2, 120, "training to start")
    launcher = run.status().launcher
    control.kill(run)
    assert wait_done(run, timeout=30) == "cancelled"
    status = run.status()
    assert status.kill_requested and status.error.startswith("killed")
    assert not launcher.alive()
    wait_for(lambda: not status.supervisor.alive(), 10, "the supervisor to exit")


def test_a_bad_dataset_fails_with_its_error(tmp_path: Path) -> None:
    data = tmp_path / "chat.jsonl"
    rows = [json.dumps({"text": f"question {i} answer {i}"}) for i in range(120)]
    rows[99] = '{"text": "cut off'  # beyond the rows validation peeks at
    data.write_text("\n".join(rows))
    run = control.submit(tiny(dataset=str(data)), CPU)
    assert wait_done(run) == "failed"
    status = run.status()
    assert status.exit_code == 2
    assert status.error.startswith("dataset chat.jsonl line 100 is not valid JSON (")
    assert status.error.endswith("): each line must be one JSON object")
    listed = gaudi_tui("jobs")
    assert "failed" in listed.stdout and "line 100 is not valid JSON" in listed.stdout


def test_lora_in_bf16_through_accelerate_launch_evaluates_checkpoints_and_saves_an_adapter() -> None:
    spec = tiny(lora=True, learning_rate=5e-3, max_steps=12, launcher="accelerate", eval_split=0.2, eval_steps=6, bf16=True,
                save_steps=6)  # fmt: skip
    run = control.submit(spec, CPU)
    assert wait_done(run) == "succeeded", log_tail(run)
    assert "accelerate.commands.launch" in " ".join(run.status().command)
    assert (run.model_dir / "adapter_model.safetensors").is_file()
    logs = events(run, "log")
    assert logs[-1]["loss"] < logs[0]["loss"]
    assert [e["step"] for e in events(run, "eval")] == [6, 12]
    assert all(e["eval_loss"] > 0 for e in events(run, "eval"))
    assert [c.name for c in run.checkpoints()] == ["checkpoint-6", "checkpoint-12"]
    assert all(is_complete(c) for c in run.checkpoints())


def test_qlora_trains_nf4_with_lora() -> None:
    run = control.submit(
        tiny(lora=True, quantization="nf4", learning_rate=5e-3, max_steps=4, batch_size=4), CPU
    )
    assert wait_done(run, timeout=180) == "succeeded", log_tail(run)
    config = json.loads((run.model_dir / "adapter_config.json").read_text())
    assert config["r"] == 8 and set(config["target_modules"]) == {"q_proj", "v_proj"}
    assert len(events(run, "log")) >= 2


def test_deleting_a_running_jobs_folder_ends_the_job() -> None:
    run = control.submit(tiny(max_steps=10_000, kill_grace_s=3.0), CPU)
    wait_for(lambda: last_step(run) >= 1, 120, "training to start")
    status = run.status()
    shutil.rmtree(run.path)
    wait_for(lambda: not (status.launcher.alive() or status.supervisor.alive()), 30, "the job to end")
