"""The panel's own fine-tune (`worker/train.py` on every rank): the form's model, data and LoRA
settings, metrics from its callback, the graceful stop, resume from the run folder's checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from gaudi_tui.core.jobs import launch
from gaudi_tui.core.jobs.kinds import ClusterEntry
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.validate import Problem, shared


class TrainerKind:
    name = "trainer"
    metrics_from_output = False
    one_task = False

    def prepare(self, spec: JobSpec) -> JobSpec:
        return spec

    def validate(
        self,
        spec: JobSpec,
        own: list[Problem],
        env: Mapping[str, str],
        device_name: str | None,
        here: bool,
        starts_ranks: bool = False,
    ) -> list[Problem]:
        return shared(spec, own, env, device_name, sources_here=here)

    def supervise_here(self, attempt: Attempt) -> int:
        from gaudi_tui.core.jobs.targets.local import Supervision

        return Supervision().supervise(attempt)

    def rank_argv(self, run: RunFolder, spec: JobSpec, resume: Path | None) -> list[str]:
        return launch.command(run, replace(spec, launcher="single"), resume)

    def rank_env(self, run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
        return launch.job_env(run, spec, base)

    def rank_cwd(self, run: RunFolder, spec: JobSpec) -> Path:
        return run.path

    def output_follower(self, run: RunFolder, spec: JobSpec, resume: Path | None, attach: bool) -> None:
        return None  # rank 0 writes metrics.jsonl itself

    def cluster_entry(self, spec: JobSpec) -> ClusterEntry:
        return ClusterEntry(
            "gaudi_tui.core.jobs.worker.ray_train"
        )  # a TorchTrainer: its workers ask for cards

    def stops_by_file(self, run: RunFolder, spec: JobSpec) -> bool:
        return True

    def newest_checkpoint(self, run: RunFolder, spec: JobSpec, target_says: Path | None) -> Path | None:
        return target_says

    def requeue_checkpoint(self, run: RunFolder, spec: JobSpec) -> Path | None:
        return run.newest_complete_checkpoint()

    def resume_refusal(self, run: RunFolder, spec: JobSpec) -> str | None:
        return None

    def stop_words(self, run: RunFolder, spec: JobSpec) -> str:
        return "s stops gracefully: every rank stops at the same step and saves one checkpoint"

    def finished_words(self, run: RunFolder) -> str:
        return f"; its weights are in {run.model_dir}"

    def failure_words(self, run: RunFolder) -> str | None:
        return None

    def launcher_words(self, spec: JobSpec) -> str:
        return spec.launcher

    def note(self, run: RunFolder) -> str:
        return ""


KIND = TrainerKind()
