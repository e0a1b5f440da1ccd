"""The training entry point: `python -m gaudi_tui.core.jobs.worker.train RUN [--resume CHECKPOINT]`.

Runs in each of the job's processes (one per card, started by the launcher). It reads the spec
from the run folder, loads the text first (a bad dataset fails before the heavy imports), builds a
real `Trainer` with the accelerator's settings, and trains. Errors end with one line starting
`gaudi-tui job error:` that the supervisor puts into status.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.jobs.outcome import ERROR_PREFIX, cause_line
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec, SpecError
from gaudi_tui.core.jobs.worker import data

if TYPE_CHECKING:
    from gaudi_tui.core.jobs.worker.sinks import Sink


class JobError(RuntimeError):
    """A failure with a message that already says what to do."""


@dataclass
class Built:
    trainer: Any
    tokenizer: Any
    stop: Any


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def build(
    run: RunFolder,
    spec: JobSpec,
    texts: list[str],
    *,
    resumed_from: str | None = None,
    monitor: bool = True,
    stop_flag: Callable[[], bool] | None = None,
    sink: Callable[[], Sink] | None = None,
) -> Built:
    """The Trainer for this spec. `monitor=False` leaves out our callbacks (the benchmark's bare run).

    Local jobs read the STOP file and write metrics.jsonl; a Ray job passes its own stop flag
    (the cluster's KV store) and sink (its log stream).
    """
    import torch
    from transformers import (
        AutoTokenizer,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainingArguments,
    )

    from gaudi_tui.core.demo import resolve_model
    from gaudi_tui.core.jobs.worker.callbacks import (
        CountingCollator,
        MetricsCallback,
        StopCallback,
        stop_file_flag,
    )

    accel = Accelerator(spec.device if spec.device != "auto" else "cpu", "job spec")
    model_path = resolve_model(spec.model)
    tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=spec.trust_remote_code)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = _load_model(spec, accel, model_path, torch)

    encoded = tokenizer(texts, truncation=True, max_length=spec.max_seq_len)
    from datasets import Dataset

    rows = Dataset.from_dict({"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]})
    train_rows, eval_rows = rows, None
    if spec.eval_split > 0:
        split = rows.train_test_split(test_size=spec.eval_split, seed=spec.seed)
        train_rows, eval_rows = split["train"], split["test"]
    if len(train_rows) == 0:
        raise JobError(f"dataset {spec.dataset}: no training rows left after the eval split")

    # Static shapes on Gaudi (every batch padded to max_seq_len) avoid graph recompilation.
    pad_to = spec.max_seq_len if accel.kind == "hpu" else None
    collator = CountingCollator(
        DataCollatorForLanguageModeling(tokenizer, mlm=False, pad_to_multiple_of=pad_to)
    )
    args = TrainingArguments(**training_arguments(run, spec, accel))
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=train_rows,
        eval_dataset=eval_rows,
        data_collator=collator,
        processing_class=tokenizer,
    )
    stop = StopCallback(stop_flag or stop_file_flag(run))
    if monitor:
        trainer.add_callback(stop)
        samples_per_step = spec.batch_size * spec.grad_accum * world_size()
        trainer.add_callback(
            MetricsCallback(run, accel.kind, collator, samples_per_step, resumed_from, stop, sink)
        )
    return Built(trainer, tokenizer, stop)


def training_arguments(run: RunFolder, spec: JobSpec, accel: Accelerator) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "output_dir": str(run.checkpoints_dir),
        "max_steps": spec.max_steps if spec.max_steps > 0 else -1,
        "num_train_epochs": spec.epochs,
        "per_device_train_batch_size": spec.batch_size,
        "per_device_eval_batch_size": spec.batch_size,
        "gradient_accumulation_steps": spec.grad_accum,
        "learning_rate": spec.learning_rate,
        "lr_scheduler_type": spec.lr_scheduler,
        "warmup_steps": spec.warmup_steps,
        "bf16": spec.bf16,
        "use_cpu": accel.kind == "cpu",
        "torch_compile": spec.torch_compile,
        "eval_strategy": "steps" if spec.eval_steps else "no",
        "save_strategy": "steps" if spec.save_steps else "no",
        "logging_strategy": "steps",
        "logging_steps": spec.logging_steps,
        "logging_first_step": True,
        "seed": spec.seed,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_drop_last": accel.kind == "hpu",
    }
    if spec.torch_compile:
        kwargs["torch_compile_backend"] = accel.compile_backend
    if spec.eval_steps:
        kwargs["eval_steps"] = spec.eval_steps
    if spec.save_steps:
        kwargs["save_steps"] = spec.save_steps
    if world_size() > 1:
        kwargs["ddp_backend"] = accel.ddp_backend
        kwargs["ddp_find_unused_parameters"] = False
    return kwargs


def _load_model(spec: JobSpec, accel: Accelerator, model_path: str, torch: Any) -> Any:
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"trust_remote_code": spec.trust_remote_code, "dtype": torch.float32}
    if spec.quantization != "none":
        from transformers import BitsAndBytesConfig

        compute = torch.bfloat16 if spec.bf16 else torch.float32
        if spec.quantization == "nf4":
            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_use_double_quant=True,
                bnb_4bit_compute_dtype=compute,
            )
        else:
            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        local = int(os.environ.get("LOCAL_RANK", "0"))
        kwargs["device_map"] = {"": f"cuda:{local}" if accel.kind == "cuda" else accel.kind}
    model: Any = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)  # or the PeftModel around it
    model.config.use_cache = False
    if spec.quantization != "none":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    if spec.uses_lora:
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(
            task_type="CAUSAL_LM",
            r=spec.lora_r,
            lora_alpha=spec.lora_alpha,
            lora_dropout=spec.lora_dropout,
            target_modules=list(spec.lora_target_modules),
        )
        try:
            model = get_peft_model(model, config)
        except ValueError as exc:
            raise JobError(f"LoRA: {exc} (check lora_target_modules)") from None
    return model


def explain(exc: BaseException) -> str:
    """One line for status.json: what happened and, where known, what to do."""
    text = cause_line(f"{type(exc).__name__}: {exc}")[:400]
    if "PT_DEVMEM" in str(exc) or type(exc).__name__ == "OutOfMemoryError":
        text += " — out of device memory: lower batch_size or max_seq_len, or use LoRA/QLoRA"
    return text


def run_job(run: RunFolder, resume: Path | None) -> int:
    spec = run.spec()
    texts = data.load_texts(spec.dataset, spec.text_field)
    built = build(run, spec, texts, resumed_from=str(resume) if resume else None)
    built.trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    if not built.stop.stopped:
        built.trainer.save_model(str(run.model_dir))
        if built.trainer.args.should_save:
            built.tokenizer.save_pretrained(str(run.model_dir))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.worker.train")
    parser.add_argument("run", type=Path)
    parser.add_argument("--resume", type=Path, default=None, help="checkpoint folder to continue from")
    args = parser.parse_args(argv)
    code = 1
    try:
        code = run_job(RunFolder(args.run), args.resume)
    except (data.DatasetError, JobError, SpecError) as exc:
        print(f"{ERROR_PREFIX}{exc}", flush=True)
        code = 2
    except Exception as exc:  # noqa: BLE001 - report any failure as one line, with the traceback above it
        traceback.print_exc()
        print(f"{ERROR_PREFIX}{explain(exc)}", flush=True)
        code = 1
    finally:
        _end_process_group()
    return code


def _end_process_group() -> None:
    if "torch" not in sys.modules:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
