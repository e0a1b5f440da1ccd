"""A user's Trainer script on the demo model, on CPU, run as a command job through the panel's
wrapper (real runs, no fakes): a dataset that sleeps in `__getitem__` shows the input-stall finding
with its fixes; the same script under torch.compile (backend "eager", automatic dynamic shapes off,
recompile_limit 2) fed a new length each step shows its recompiles, the guard and the limit, in
`jobs insight`'s lines and JSON, on a CPU run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaudi_tui.cli import main
from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.insight.stalls import STALL_SHARE
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.insight import text
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import from_mapping
from gaudi_tui.ui.widgets.insight_panel import relevant
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import log_tail, no_stray_processes, wait_done  # noqa: F401 - autouse guard

STEPS = 12
SCRIPT = '''\
import argparse, time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--compile", action="store_true")
parser.add_argument("--max_steps", type=int, default=12)
args = parser.parse_args()

tok = AutoTokenizer.from_pretrained(args.model)
model = AutoModelForCausalLM.from_pretrained(args.model)


class Lines(torch.utils.data.Dataset):
    """Row i has i + 4 tokens: a new length every step (batch size 1)."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(args.sleep)  # a slow loader: tokenizing or reading in __getitem__
        ids = tok(" ".join(["cards"] * (i + 4)))["input_ids"]
        return {"input_ids": ids, "labels": ids}


def collate(rows):
    return {k: torch.tensor([r[k] for r in rows]) for k in rows[0]}


if args.compile:
    torch._dynamo.config.automatic_dynamic_shapes = False  # every new length compiles again
    torch._dynamo.config.recompile_limit = 2
trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir="out", max_steps=args.max_steps, logging_steps=2,
                           per_device_train_batch_size=1, learning_rate=1e-3, use_cpu=True,
                           report_to="none", save_strategy="no", disable_tqdm=True, seed=1,
                           # a backend alone turns compiling on: name it only with --compile
                           **({"torch_compile_backend": "eager"} if args.compile else {})),
    train_dataset=Lines(),
    data_collator=collate,
)
trainer.train()
'''


def run_script(tmp_path: Path, *extra: str, ranks: int = 1) -> RunFolder:
    project = tmp_path / "project"
    project.mkdir()
    (project / "slow.py").write_text(SCRIPT, encoding="utf-8")
    spec = from_mapping({
        "kind": "command", "workdir": str(project), "device": "cpu",
        "command": [*([PYTHON] if ranks == 1 else []), "slow.py", "--model", str(model_dir()),
                    "--max_steps", str(STEPS), *extra],
        **({"command_launcher": "torchrun", "processes": ranks} if ranks > 1 else {}),
    })  # fmt: skip
    run = control.submit(spec, CPU, env=child_env())
    assert wait_done(run, 180) == "succeeded", log_tail(run)
    return run


def insight_of(run: RunFolder):  # noqa: ANN201 - the Insight
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    return watcher.insight()


@pytest.mark.slow
def test_a_trainer_with_a_slow_dataset_shows_the_stall_finding_and_its_fix(tmp_path: Path) -> None:
    run = run_script(tmp_path, "--sleep", "0.4")
    insight = insight_of(run)
    (stall,) = [f for f in insight.findings if f.id == "input-stall"]
    assert "waiting for data" in stall.text
    for fix in ("dataloader_num_workers", "dataloader_pin_memory", "dataloader_persistent_workers",
                "dataloader_prefetch_factor", "tokenize once ahead"):  # fmt: skip
        assert fix in stall.fix
    windows = insight.torch["input_stalls"]["ranks"]  # type: ignore[index]
    assert list(windows) == [0] and windows[0]["share"] > STALL_SHARE and windows[0]["step"] == STEPS
    lines = "\n".join(text.lines(insight))
    assert "input wait (rank 0):" in lines
    assert "Gaudi runs only" in lines  # the runtime's figures: said to be Gaudi's, on a CPU run
    assert relevant(insight)  # Details shows it for a CPU run


@pytest.mark.slow
def test_each_rank_reports_its_own_input_wait(tmp_path: Path) -> None:
    """Two ranks under torchrun: each rank's window is gathered to rank 0 at every log."""
    run = run_script(tmp_path, "--sleep", "0.4", ranks=2)
    insight = insight_of(run)
    windows = insight.torch["input_stalls"]["ranks"]  # type: ignore[index]
    assert sorted(windows) == [0, 1]
    assert all(w["share"] > STALL_SHARE and w["step"] == STEPS for w in windows.values()), windows
    lines = "\n".join(text.lines(insight))
    assert "input wait (rank 0):" in lines and "input wait (rank 1):" in lines


@pytest.mark.slow
def test_a_compiled_trainer_reports_recompiles_the_guard_and_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_script(tmp_path, "--compile")
    insight = insight_of(run)
    frames = insight.torch["torch_compile"]["frames"]  # type: ignore[index]
    limited = [f for f in frames if f["limit"] == 2]
    assert limited, frames
    frame = limited[0]
    assert frame["compiles"] == 2 and frame["recompile_count"] == 1 and frame["seconds"] > 0
    (recompile,) = frame["recompiles"]
    guard = recompile["guard"]  # Trainer's sampler shuffles: which two lengths is not fixed
    assert recompile["step"] == 2 and (guard["input"], guard["index"]) == ("kwargs['input_ids']", 1)
    assert guard["expected"] != guard["actual"]
    assert (
        recompile["words"]
        == f"kwargs['input_ids'] dimension 1 was {guard['expected']}, now {guard['actual']}"
    )
    assert frame["limit_step"] == 3
    ids = {f.id for f in insight.findings}
    assert {"compile-limit", "should-be-dynamic"} <= ids
    assert "input-stall" not in ids  # the loader keeps up here
    lines = "\n".join(text.lines(insight))
    assert "hit recompile_limit (2) at step 3: runs uncompiled since" in lines
    assert main(["jobs", "insight", run.id, "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["torch"]["torch_compile"]["frames"][0]["limit"] == 2
    assert "compile-limit" in {f["id"] for f in said["findings"]}
