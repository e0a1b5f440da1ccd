"""The Training screen's words about a job: the Details pane's text (the job, where it runs, its
settings with secrets masked) and what a stop does."""

from __future__ import annotations

from gaudi_tui.core.jobs import kinds, runfolder, spec_fields
from gaudi_tui.core.jobs import spec as spec_mod
from gaudi_tui.core.jobs.monitor import JobView


def shown(spec: spec_mod.JobSpec, name: str) -> object:
    """A spec value for the details pane: secrets in `env` are masked."""
    return spec_mod.masked_env(spec.env) if name == "env" else getattr(spec, name)


def details_text(
    view: JobView, run: runfolder.RunFolder, spec: spec_mod.JobSpec | None, nodes: str = ""
) -> str:
    lines = [
        f"job      {view.id}",
        f"state    {view.state}"
        + (" (stop requested)" if view.stop_requested and view.state == "running" else ""),
        f"folder   {run.path}",
        f"attempt  {view.attempt}",
    ]
    if view.where:
        lines.append(f"where    {view.where}")
        if nodes:
            lines += ["", *nodes.splitlines()]
    if view.error:
        lines.append(f"error    {view.error}")
    if view.checkpoint:
        lines.append(f"saved    {view.checkpoint}")
    if spec is not None:
        lines.append(f"stop     {kinds.for_spec(spec).stop_words(run, spec)}")
    if view.metrics_found is False:
        lines.append(
            "metrics  none found in its output: its log is in Log (l); try metrics_source json/pattern"
        )
    if spec is not None:
        lines.append("")
        lines += [
            f"{name:<20} {spec_mod.display(name, shown(spec, name))}"
            for name in spec_mod.field_names()
            if spec_fields.applies(name, spec.kind, spec.target)
        ]
    return "\n".join(lines)


def cluster_nodes(run: runfolder.RunFolder) -> str:
    """More about where the job runs (a cluster's nodes), as its target tells it, and a served model's
    own figures (its /metrics); may ask the cluster or the server."""
    from gaudi_tui.core.jobs import targets
    from gaudi_tui.core.serve.figures import job_figure_lines

    try:
        spec = run.spec()
        said = targets.for_spec(spec).details(run)
    except (spec_mod.SpecError, targets.TargetError) as exc:
        return str(exc)
    served = job_figure_lines(run.path) if spec.kind == "serve" else []
    return "\n".join(line for line in (said, *served) if line)


def stop_words(run: runfolder.RunFolder) -> str:
    """What the stop just asked for does, for the notification (without the final full stop)."""
    try:
        spec = run.spec()
    except spec_mod.SpecError:
        return "stop requested"
    return "stop requested: " + kinds.for_spec(spec).stop_words(run, spec).removeprefix("s ")
