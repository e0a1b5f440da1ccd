"""The `command` kind's entry in the registry (`kinds.KINDS`): the user's own command, as
`command.py` describes it, supervised on this host by `command_supervise.py`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gaudi_tui.core.jobs import targets
from gaudi_tui.core.jobs.kinds import ClusterEntry, OutputWatch, command, command_cluster
from gaudi_tui.core.jobs.kinds.command_follow import OutputFollower
from gaudi_tui.core.jobs.kinds.command_supervise import CommandSupervision
from gaudi_tui.core.jobs.runfolder import RunFolder, checkpoint_step
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.validate import Problem


class CommandKind:
    name = "command"
    metrics_from_output = True
    one_task = False

    def prepare(self, spec: JobSpec) -> JobSpec:
        return command.prepare(spec)

    def validate(
        self,
        spec: JobSpec,
        own: list[Problem],
        env: Mapping[str, str],
        device_name: str | None,
        here: bool,
        starts_ranks: bool = False,
    ) -> list[Problem]:
        if not here and not starts_ranks:  # the entry driver on a cluster node (Ray)
            if command.is_attach(spec):
                return [
                    *own,
                    Problem(
                        "log_file", "a run started by hand is followed on this host: choose target local"
                    ),
                ]
            return [*own, *command.check(spec, env, files=False), *command_cluster.problems(spec)]
        out = [*own, *command.check(spec, {**env, **spec.env}, ranks_started_by_target=starts_ranks)]
        if starts_ranks:
            out += command.rank_problems(spec)
        return out

    def supervise_here(self, attempt: Attempt) -> int:
        return CommandSupervision().supervise(attempt)

    def rank_argv(self, run: RunFolder, spec: JobSpec, resume: Path | None) -> list[str]:
        return command.rank_argv(spec, resume)

    def rank_env(self, run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
        return command.job_env(run, spec, base)

    def rank_cwd(self, run: RunFolder, spec: JobSpec) -> Path:
        return Path(spec.workdir)

    def output_follower(
        self, run: RunFolder, spec: JobSpec, resume: Path | None, attach: bool
    ) -> OutputWatch:
        if not attach:
            (run.path / command.WRAPPER_MARKER).unlink(missing_ok=True)  # set again by this attempt's Trainer
        return OutputFollower(
            run,
            spec,
            run.log_path,
            begin_step=checkpoint_step(resume) if resume else 0,
            resumed_from=str(resume) if resume else None,
        )

    def cluster_entry(self, spec: JobSpec) -> ClusterEntry:
        return command_cluster.entry(spec)

    def stops_by_file(self, run: RunFolder, spec: JobSpec) -> bool:
        return command.wrapper_active(run)

    def newest_checkpoint(self, run: RunFolder, spec: JobSpec, target_says: Path | None) -> Path | None:
        if targets.for_spec(spec).remote_files:  # the wrapper's `save` events, mirrored from the cluster
            return target_says
        return command.newest_checkpoint(run, spec)

    def requeue_checkpoint(self, run: RunFolder, spec: JobSpec) -> Path | None:
        """Only with the Trainer callback: it marks which checkpoint-N every rank finished, and a
        Trainer script takes `resume_flag`; any other command runs again from its beginning."""
        if not spec.wrap_trainer or command.is_attach(spec):
            return None
        return command.newest_checkpoint(run, spec, marked=True)

    def resume_refusal(self, run: RunFolder, spec: JobSpec) -> str | None:
        if targets.for_spec(spec).remote_files:
            return command.remote_resume_problem(run, spec)
        return command.resume_problem(run, spec)

    def stop_words(self, run: RunFolder, spec: JobSpec) -> str:
        return command.stop_mode(run, spec)

    def finished_words(self, run: RunFolder) -> str:
        return ""  # its results are wherever the command wrote them

    def failure_words(self, run: RunFolder) -> str | None:
        return None

    def launcher_words(self, spec: JobSpec) -> str:
        return "started by hand" if command.is_attach(spec) else spec.command_launcher

    def note(self, run: RunFolder) -> str:
        return ""


KIND = CommandKind()
