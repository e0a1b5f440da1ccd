"""The `command` kind's entry in the registry (`kinds.KINDS`): the user's own command, as
`command.py` describes it, supervised on this host by `command_supervise.py`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.kinds.command_supervise import CommandSupervision
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.targets import Attempt
from gaudi_tui.core.jobs.validate import Problem


class CommandKind:
    name = "command"
    metrics_from_output = True

    def prepare(self, spec: JobSpec) -> JobSpec:
        return command.prepare(spec)

    def validate(
        self, spec: JobSpec, own: list[Problem], env: Mapping[str, str], device_name: str | None, here: bool
    ) -> list[Problem]:
        out = [*own, *command.check(spec, {**env, **spec.env})]
        if not here:
            out.append(Problem("target", f"your own command runs on this host for now, not on {spec.target}"))
        return out

    def supervise_here(self, attempt: Attempt) -> int:
        return CommandSupervision().supervise(attempt)

    def rank_argv(self, run: RunFolder, spec: JobSpec, resume: Path | None) -> list[str]:
        return command.rank_argv(spec, resume)

    def rank_env(self, run: RunFolder, spec: JobSpec, base: Mapping[str, str]) -> dict[str, str]:
        return command.job_env(run, spec, base)

    def newest_checkpoint(self, run: RunFolder, spec: JobSpec, target_says: Path | None) -> Path | None:
        return command.newest_checkpoint(run, spec)

    def resume_refusal(self, run: RunFolder, spec: JobSpec) -> str | None:
        return command.resume_problem(run, spec)

    def stop_words(self, run: RunFolder, spec: JobSpec) -> str:
        return command.stop_mode(run, spec)

    def finished_words(self, run: RunFolder) -> str:
        return ""  # its results are wherever the command wrote them

    def launcher_words(self, spec: JobSpec) -> str:
        return "started by hand" if command.is_attach(spec) else spec.command_launcher


KIND = CommandKind()
