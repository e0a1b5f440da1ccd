"""A user's Trainer script on the demo model, on CPU, under the fake Gaudi runtime
(tests/fakes/hpu_runtime: compiles counted per new input shape, the metrics file written as
Intel's saver writes it). Variable-length batches keep compiling after warm-up and the finding
says so; the same script with every batch padded to one length settles and has no such finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaudi_tui.core.demo import model_dir
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.insight.report import InsightWatcher
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import from_mapping
from tests.conftest import CPU, PYTHON, child_env
from tests.jobs.conftest import events, log_tail, no_stray_processes, wait_done  # noqa: F401 - autouse guard

FAKE_RUNTIME = Path(__file__).resolve().parents[1] / "fakes" / "hpu_runtime"
STEPS = 20
SCRIPT = '''\
"""A Trainer script with batches of one line each: every line has its own length."""
import argparse

from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling,
                          Trainer, TrainingArguments)

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--pad_to", type=int, default=None)
parser.add_argument("--max_steps", type=int, default=20)
args = parser.parse_args()

tok = AutoTokenizer.from_pretrained(args.model)
tok.pad_token = tok.pad_token or tok.eos_token
model = AutoModelForCausalLM.from_pretrained(args.model)
lines = [" ".join(["cards"] * (n + 2)) for n in range(48)]
rows = Dataset.from_dict(dict(tok(lines, truncation=True, max_length=64)))
trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir="out", max_steps=args.max_steps, logging_steps=1,
                           per_device_train_batch_size=1, learning_rate=1e-3, use_cpu=True,
                           report_to="none", save_strategy="no", disable_tqdm=True, seed=1),
    train_dataset=rows,
    data_collator=DataCollatorForLanguageModeling(tok, mlm=False, pad_to_multiple_of=args.pad_to),
)
trainer.train()
'''


def run_under_fake_runtime(tmp_path: Path, *extra: str, ranks: int = 1, **fake_env: str) -> RunFolder:
    project = tmp_path / "project"
    project.mkdir()
    (project / "lengths.py").write_text(SCRIPT, encoding="utf-8")
    metrics = tmp_path / "hpu" / "hpu_metrics.json"
    spec = from_mapping({
        "kind": "command", "workdir": str(project), "device": "cpu",
        "command": [*([PYTHON] if ranks == 1 else []), "lengths.py", "--model", str(model_dir()), "--max_steps", str(STEPS), *extra],
        # a user's own metrics file, with Intel's recommended triggers (the panel then reads theirs)
        **({"command_launcher": "torchrun", "processes": ranks} if ranks > 1 else {}),
        "env": {"PT_HPU_METRICS_FILE": str(metrics), "PT_HPU_METRICS_DUMP_TRIGGERS": "process_exit,metric_change"},
    })  # fmt: skip
    run = control.submit(
        spec, CPU, env=child_env(PYTHONPATH=str(FAKE_RUNTIME), FAKE_HPU_RUNTIME="1", **fake_env)
    )
    assert wait_done(run, 240) == "succeeded", log_tail(run)
    return run


def compile_findings(insight) -> list:  # noqa: ANN001 - an Insight; a list of Finding
    """The findings these runs are about: the input-stall finding is left out, as it measures this
    machine's load (the demo model's step is a few ms; a busy machine stretches the gap between two
    steps past the threshold), not the fake runtime's compiles."""
    return [f for f in insight.findings if f.id != "input-stall"]


@pytest.mark.slow
def test_variable_length_batches_keep_compiling_after_warm_up(tmp_path: Path) -> None:
    run = run_under_fake_runtime(tmp_path)
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    (rank,) = insight.ranks
    assert rank.graphs == STEPS and rank.exited  # one new length per step; the array closed at exit
    assert insight.steps == list(range(1, STEPS + 1))
    assert insight.graphs_by_rank[0] == list(range(1, STEPS + 1))  # aligned to the steps by time
    assert [f.text for f in compile_findings(insight)] == [
        "still compiling after warm-up: 10 graphs in the last 10 steps"
    ]
    # the panel's callback in the script read the same file: rank 0's count is in its log events
    assert events(run, "log")[-1]["graph_compilations"] == STEPS


@pytest.mark.slow
def test_padded_batches_settle_after_warm_up_and_a_fallback_op_is_named(tmp_path: Path) -> None:
    run = run_under_fake_runtime(tmp_path, "--pad_to", "64", FAKE_HPU_FALLBACK_OP="aten::digamma")
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    (rank,) = insight.ranks
    assert rank.graphs == 1 and rank.after_warmup_graphs == 0
    assert rank.fallback_ops == {"aten::digamma": 1}
    assert [f.id for f in compile_findings(insight)] == ["cpu-fallback"]
    assert compile_findings(insight)[0].text == "ops on the CPU: aten::digamma ×1"


@pytest.mark.slow
def test_two_torchrun_ranks_each_write_their_own_file(tmp_path: Path) -> None:
    run = run_under_fake_runtime(tmp_path, ranks=2)
    metrics = tmp_path / "hpu"
    assert sorted(p.name for p in metrics.iterdir()) == ["hpu_metrics-rank0.json", "hpu_metrics-rank1.json"]
    watcher = InsightWatcher(run)
    watcher.poll(catch_up=True)
    insight = watcher.insight()
    assert [(r.rank, r.graphs, r.exited) for r in insight.ranks] == [(0, STEPS, True), (1, STEPS, True)]
    assert set(insight.graphs_by_rank) == {0, 1}
    assert [f.text for f in compile_findings(insight)] == [
        "still compiling after warm-up: 10 graphs in the last 10 steps"
    ]
