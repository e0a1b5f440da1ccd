"""The Ray job's entry point, run ON the cluster: `python -m gaudi_tui.core.jobs.worker.ray_train`.

`--run-id ID --storage DIR [--resume CKPT]`: a Ray Train `TorchTrainer` whose workers build the same
Trainer as local jobs (`worker/train.build`: LoRA/QLoRA, bf16, compile). Gaudi: HPU resources and
`hccl`; CPU: CPU resources and `gloo`. The spec arrives in `GAUDI_TUI_SPEC`; checkpoints go to
`DIR/ID/checkpoints` (a folder every node reaches). Rank 0 prints metrics into the log stream
and polls the stop flag in Ray's KV store (key `GAUDI_TUI_STOP_KEY`). Each attempt (a resume, or an
automatic restart under `max_failures`) continues from the newest complete checkpoint.

`--set-stop KEY` raises that flag (the supervisor submits it as a tiny job of its own).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.outcome import ERROR_PREFIX
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.worker.logstream import RANK_PREFIX

STOP_NAMESPACE = "gaudi-tui"


def set_stop(key: str) -> int:
    import ray
    from ray.experimental import internal_kv

    ray.init(address="auto", logging_level=logging.ERROR, log_to_driver=False)
    internal_kv._internal_kv_put(key.encode(), b"1", overwrite=True, namespace=STOP_NAMESPACE)
    print(f"[gaudi-tui] stop flag raised for {key}", flush=True)
    return 0


def kv_flag(key: str) -> Callable[[], bool]:
    from ray.experimental import internal_kv

    def flag() -> bool:
        return internal_kv._internal_kv_get(key.encode(), namespace=STOP_NAMESPACE) is not None

    return flag


def resources(spec: JobSpec) -> dict[str, float]:
    return {"HPU": float(spec.hpus_per_worker)} if spec.device == "hpu" else {"CPU": 1.0}


def train_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: the local job's Trainer, with the cluster's stop flag and log sink."""
    import ray
    import ray.train

    from gaudi_tui.core.jobs.worker import data
    from gaudi_tui.core.jobs.worker.sinks import LogStreamSink
    from gaudi_tui.core.jobs.worker.train import JobError, build

    rank = ray.train.get_context().get_world_rank()
    here = {"rank": rank, "node_id": ray.get_runtime_context().get_node_id()}
    here["node_ip"] = ray.util.get_node_ip_address()
    print(RANK_PREFIX + json.dumps(here), flush=True)
    run = RunFolder(Path(config["run"]))
    spec = spec_mod.from_toml(config["spec"])
    checkpoint = run.newest_complete_checkpoint()
    if config.get("resume") and checkpoint is None:
        raise JobError(f"no complete checkpoint under {run.checkpoints_dir} on this node to resume from")
    texts = data.load_texts(spec.dataset, spec.text_field)
    built = build(
        run,
        spec,
        texts,
        resumed_from=str(checkpoint) if checkpoint else None,
        stop_flag=kv_flag(config["stop_key"]),
        sink=LogStreamSink,
    )
    built.trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    if not built.stop.stopped:
        built.trainer.save_model(str(run.model_dir))
        if built.trainer.args.should_save:
            built.tokenizer.save_pretrained(str(run.model_dir))


def run_job(run_id: str, storage: Path, resume: str | None) -> int:
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from gaudi_tui.core.jobs.validate import sources

    text = os.environ.get("GAUDI_TUI_SPEC", "")
    spec = spec_mod.from_toml(text)
    problems = sources(spec)  # here, where the job runs, not on the panel's host
    if problems:
        for problem in problems:
            print(
                f"{ERROR_PREFIX}{problem} (checked on the cluster's node {socket.gethostname()})", flush=True
            )
        return 2
    run = RunFolder(storage.expanduser() / run_id)
    run.path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not run.spec_path.exists():
        run.spec_path.write_text(text, encoding="utf-8")
    hpu = spec.device == "hpu"
    multi_host = spec.workers * spec.hpus_per_worker > 8
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={
            "run": str(run.path),
            "spec": text,
            "resume": resume,
            "stop_key": os.environ.get("GAUDI_TUI_STOP_KEY", run_id),
        },
        scaling_config=ScalingConfig(
            num_workers=spec.workers,
            resources_per_worker=resources(spec),
            # Gaudi: one host's cards together (supported sets) or whole hosts; CPU: spread out.
            placement_strategy=("PACK" if multi_host else "STRICT_PACK") if hpu else "SPREAD",
        ),
        torch_config=TorchConfig(backend="hccl" if hpu else "gloo"),
        run_config=RunConfig(
            name=run_id,
            storage_path=str(run.path / "ray-train"),
            failure_config=FailureConfig(max_failures=spec.max_failures),
        ),
    )
    trainer.fit()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.worker.ray_train")
    parser.add_argument("--run-id")
    parser.add_argument("--storage", type=Path)
    parser.add_argument("--resume", default=None, help="continue from the newest complete checkpoint")
    parser.add_argument("--set-stop", metavar="KEY", help="raise the graceful-stop flag of job KEY")
    args = parser.parse_args(argv)
    if args.set_stop:
        return set_stop(args.set_stop)
    try:
        return run_job(args.run_id, args.storage, args.resume)
    except SpecError as exc:
        print(f"{ERROR_PREFIX}{exc}", flush=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line for status.json, the traceback above it
        from gaudi_tui.core.jobs.worker.train import explain

        traceback.print_exc()
        cause = exc.__cause__ or exc
        print(f"{ERROR_PREFIX}{explain(cause)}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
