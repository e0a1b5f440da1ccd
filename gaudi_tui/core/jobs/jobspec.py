"""JobSpec: every setting of a job, with its default and the help the form and
`gaudi-tui train --fields` show. Presets, coercion and the text forms are in `spec`; which settings
belong to which kind and target, and the form's order, in `spec_fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Scheduler = Literal[
    "linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup"
]
Quantization = Literal["none", "nf4", "int8"]
Launcher = Literal["auto", "single", "torchrun", "accelerate"]
Device = Literal["auto", "hpu", "cuda", "cpu"]
Target = Literal["local", "ray", "slurm"]
SlurmGres = Literal["gpu", "hpu", "none"]
Kind = Literal["trainer", "command", "serve"]
ServeEngine = Literal["auto", "vllm", "transformers"]
CommandLauncher = Literal["direct", "torchrun", "accelerate", "deepspeed"]
MetricsSource = Literal["auto", "trainer", "json", "pattern"]


@dataclass(frozen=True)
class JobSpec:
    """A training job. `help` metadata is shown in the form and by `gaudi-tui train --fields`."""

    name: str = field(default="demo fine-tune", metadata={"help": "label shown in the job list"})
    model: str = field(default="demo", metadata={"help": "'demo', a local model folder or a Hub id"})
    dataset: str = field(
        default="demo", metadata={"help": "'demo', a .txt/.jsonl/.csv/.parquet file or a Hub dataset id"}
    )
    text_field: str = field(default="text", metadata={"help": "column that holds the training text"})
    max_seq_len: int = field(default=128, metadata={"help": "tokens per example (longer ones are cut)"})
    epochs: float = field(default=1.0, metadata={"help": "passes over the data (when max_steps is 0)"})
    max_steps: int = field(default=200, metadata={"help": "optimizer steps; 0 = train for `epochs`"})
    batch_size: int = field(default=16, metadata={"help": "examples per process per micro-batch"})
    grad_accum: int = field(default=1, metadata={"help": "micro-batches per optimizer step"})
    learning_rate: float = field(default=2e-3, metadata={"help": "peak learning rate"})
    lr_scheduler: Scheduler = field(default="linear", metadata={"help": "learning-rate schedule"})
    warmup_steps: int = field(default=10, metadata={"help": "steps of linear warm-up"})
    bf16: bool = field(default=False, metadata={"help": "bfloat16 mixed precision"})
    torch_compile: bool = field(
        default=False, metadata={"help": "torch.compile (hpu_backend on Gaudi, needs eager mode)"}
    )
    lora: bool = field(default=False, metadata={"help": "train LoRA adapters instead of all weights"})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling (alpha)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "LoRA dropout"})
    lora_target_modules: tuple[str, ...] = field(
        default=("q_proj", "v_proj"), metadata={"help": "modules that get adapters (comma-separated)"}
    )
    quantization: Quantization = field(
        default="none", metadata={"help": "base weights: none, nf4 (QLoRA, with LoRA) or int8"}
    )
    eval_split: float = field(default=0.0, metadata={"help": "fraction held out for evaluation (0 = none)"})
    eval_steps: int = field(default=0, metadata={"help": "evaluate every N steps (0 = never)"})
    save_steps: int = field(default=0, metadata={"help": "checkpoint every N steps (0 = only on stop)"})
    logging_steps: int = field(default=5, metadata={"help": "metrics every N steps"})
    seed: int = field(default=42, metadata={"help": "random seed"})
    processes: int = field(default=1, metadata={"help": "processes (one per card) when no cards are chosen"})
    cards: tuple[int, ...] = field(default=(), metadata={"help": "Gaudi module IDs (from Devices)"})
    launcher: Launcher = field(default="auto", metadata={"help": "auto, single, torchrun or accelerate"})
    device: Device = field(
        default="auto", metadata={"help": "auto (the detected accelerator), hpu, cuda or cpu"}
    )
    target: Target = field(
        default="local", metadata={"help": "local (this host), ray (a Ray cluster) or slurm (sbatch)"}
    )
    ray_address: str = field(
        default="", metadata={"help": "Ray dashboard URL, e.g. http://127.0.0.1:8265 ('' = $RAY_ADDRESS)"}
    )
    workers: int = field(
        default=1,
        metadata={"help": "Ray: training processes (Ray Train workers; your command: processes on one node)"},
    )
    hpus_per_worker: int = field(default=1, metadata={"help": "Ray: Gaudi cards per worker"})
    storage_path: str = field(
        default="",
        metadata={"help": "Ray: checkpoint folder every node reaches ('' = this host's runs folder)"},
    )
    max_failures: int = field(
        default=0, metadata={"help": "Ray: automatic restarts from the last checkpoint after a failure"}
    )
    ray_python: str = field(
        default="", metadata={"help": "Ray: Python on the cluster's nodes ('' = this panel's Python)"}
    )
    slurm_partition: str = field(default="", metadata={"help": "Slurm: partition ('' = the default one)"})
    slurm_nodes: int = field(default=1, metadata={"help": "Slurm: nodes (hosts)"})
    slurm_cards_per_node: int = field(
        default=8, metadata={"help": "Slurm: cards per node, one rank each (1, 2, 4 or 8; 8 across nodes)"}
    )
    slurm_time_limit: str = field(
        default="",
        metadata={"help": "Slurm: time limit, e.g. 30, 2:00:00, 1-00:00:00 ('' = the partition's)"},
    )
    slurm_account: str = field(default="", metadata={"help": "Slurm: account to charge ('' = yours)"})
    slurm_qos: str = field(default="", metadata={"help": "Slurm: quality of service ('' = the default)"})
    slurm_gres: SlurmGres = field(
        default="gpu", metadata={"help": "Slurm: GRES the site names cards by: gpu, hpu (e.g. ALCF) or none"}
    )
    slurm_gres_type: str = field(default="", metadata={"help": "Slurm: GRES type, e.g. gaudi2 ('' = any)"})
    slurm_options: tuple[str, ...] = field(
        default=(), metadata={"help": "Slurm: extra sbatch options, e.g. --constraint=ib,--exclude=n3"}
    )
    kill_grace_s: float = field(
        default=10.0, metadata={"help": "seconds between SIGTERM and SIGKILL on kill"}
    )
    trust_remote_code: bool = field(default=False, metadata={"help": "run the model repo's own code"})
    kind: Kind = field(
        default="trainer",
        metadata={
            "help": "trainer (the panel's fine-tune), command (your own command) or serve (a model server)"
        },
    )
    command: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "command: its arguments, typed as in a shell (run without one), e.g. train.py --lr 1e-4"
        },
    )
    workdir: str = field(
        default="", metadata={"help": "command: its working folder ('' = where it was started)"}
    )
    ray_workdir: str = field(
        default="",
        metadata={
            "help": "command on Ray: its folder on the cluster's nodes ('' = workdir, shipped with the job)"
        },
    )
    command_launcher: CommandLauncher = field(
        default="direct",
        metadata={
            "help": "command: direct (as given), or torchrun/accelerate/deepspeed, one process per card"
        },
    )
    wrap_trainer: bool = field(
        default=True,
        metadata={
            "help": "command: add the panel's callback to every Trainer it builds (metrics, graceful stop)"
        },
    )
    metrics_source: MetricsSource = field(
        default="auto",
        metadata={"help": "command: read metrics from its output: auto, trainer, json, pattern"},
    )
    metrics_pattern: str = field(
        default="", metadata={"help": "command: a regex with named groups, e.g. loss=(?P<loss>[0-9.]+)"}
    )
    resume_flag: str = field(
        default="--resume_from_checkpoint", metadata={"help": "command: the flag that passes the checkpoint"}
    )
    output_dir: str = field(
        default="",
        metadata={"help": "command: where its checkpoint-N folders appear ('' = its --output_dir)"},
    )
    log_file: str = field(
        default="", metadata={"help": "attach: the log of a run started by hand (kind=command, no command)"}
    )
    pid: int = field(default=0, metadata={"help": "attach: that run's process ID (0 = only follow its log)"})
    pid_started: float = field(
        default=0.0, metadata={"help": "attach: that process's start time (filled in when attaching)"}
    )
    env: Mapping[str, str] = field(default_factory=dict, metadata={"help": "extra environment variables"})
    serve_engine: ServeEngine = field(
        default="auto",
        metadata={"help": "serve: auto (vllm on hpu when installed, else transformers), vllm, transformers"},
    )
    serve_model: str = field(
        default="demo", metadata={"help": "serve: 'demo', a model or adapter folder, a Hub id, or a job id"}
    )
    serve_host: str = field(default="127.0.0.1", metadata={"help": "serve: the address it listens on"})
    serve_port: int = field(default=0, metadata={"help": "serve: its port (0 = a free one)"})
    serve_args: tuple[str, ...] = field(
        default=(),
        metadata={"help": "serve: extra engine arguments, typed as in a shell, e.g. --max-model-len 4096"},
    )
    serve_api_key_env: str = field(
        default="", metadata={"help": "serve: the environment variable holding its API key ('' = none)"}
    )

    @property
    def uses_lora(self) -> bool:
        return self.lora or self.quantization != "none"
