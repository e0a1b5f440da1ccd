"""Which folder a job answers from in Chat: its final model once the job has ended with one whole,
else the newest complete checkpoint it recorded.

The final model is `model/` (the built-in job), or for a command the folder its Trainer saved into
(`output_dir`, given or seen by the panel's callback) once the command succeeded. A model saved in
shards (`model.safetensors.index.json`) counts when every shard its index names is there. A final
model of a job still running is being written and is never used. Checkpoints are found as resume
finds them (the job's kind and target), and from the `save` events in metrics.jsonl (a command's
checkpoints live in its own output folder), each marked complete.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.jobs.summary import event_of
from gaudi_tui.core.untrusted.files import load_json

INDEX_LIMIT = 16 << 20
"""The most a sharded model's index may hold (a 405B model's is about 100 KiB)."""
SHARD_NAME = re.compile(r"[\w.-]+")
"""A shard's file name as an index may name it (no folder, no `..`): the index is not trusted."""


def weights_whole(folder: Path) -> bool:
    """`folder` holds a model's or an adapter's weights: one file, or an index and all its shards."""
    from gaudi_tui.core.jobs.runfolder import SHARDED_INDEX, WEIGHT_FILES

    if any((folder / name).is_file() for name in WEIGHT_FILES):
        return True
    for name in SHARDED_INDEX:
        try:
            index = load_json(folder / name, limit=INDEX_LIMIT)  # bounded, checked: untrusted.data
            shards = set(index["weight_map"].values())  # type: ignore[index]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if shards and all(
            isinstance(s, str) and SHARD_NAME.fullmatch(s) and ".." not in s and (folder / s).is_file()
            for s in shards
        ):
            return True
    return False


def _is_model(folder: Path) -> bool:
    has_config = (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file()
    return folder.is_dir() and has_config and weights_whole(folder)


_ENDED = ("succeeded", "failed", "stopped", "cancelled")
"""States in which nothing writes the job's folders any more (`lost` is not known to be one)."""


def answer_folder(run: Any) -> Path:
    """The folder job `run` answers from now; a ChatError saying why there is none."""
    status = run.status()
    state = status.state if status is not None else "unknown"
    spec = _spec(run)
    finals = [Path(run.model_dir)]
    if spec is not None and spec.kind == "command":
        from gaudi_tui.core.jobs.kinds import command

        if (folder := command.output_folder(run, spec)) is not None:
            finals.append(folder)
    final = next((f for f in finals if _is_model(f)), None)
    if final is not None and (state == "succeeded" or (final == run.model_dir and state in _ENDED)):
        return final
    checkpoint = newest_checkpoint(run, spec)
    if checkpoint is not None:
        return checkpoint
    if final is not None and state not in _ENDED:
        raise ChatError(
            "not_trained",
            f"Job {run.id} ({state}) is still writing its final model in {final}, and has no complete "
            "checkpoint to answer from meanwhile. Try again when it has finished.",
        )
    where = f" (looked in {', '.join(str(f) for f in finals)} and its checkpoints)" if spec else ""
    raise ChatError(
        "not_trained",
        f"Job {run.id} ({state}) has no final model yet and no complete checkpoint to answer from{where}. "
        "Wait for it to finish, or give it save_steps so it saves checkpoints as it goes.",
    )


def newest_checkpoint(run: Any, spec: Any) -> Path | None:
    """The newest complete checkpoint on this host: the one resume would take, or one a `save`
    event recorded (relative paths are the command's, from its working folder)."""
    from gaudi_tui.core.jobs import kinds, runfolder, targets
    from gaudi_tui.core.jobs.kinds import command

    found: list[Path] = []
    if spec is not None:
        try:
            resume = kinds.for_spec(spec).newest_checkpoint(
                run, spec, targets.for_spec(spec).newest_checkpoint(run)
            )
        except (OSError, ValueError, KeyError):
            resume = None
        if resume is not None:
            found.append(Path(resume))
        base = Path(spec.workdir) if spec.kind == "command" and spec.workdir else Path(run.path)
        found += [p if p.is_absolute() else base / p for p in _saved(Path(run.metrics_path))]
    else:
        found += [Path(c) for c in run.checkpoints()]
    own = spec is None or spec.kind != "command"  # the panel's own job marks every checkpoint it finished
    complete = runfolder.is_complete if own else command.is_complete
    usable = [c for c in found if _step(c) is not None and c.is_dir() and complete(c) and _is_model(c)]
    return max(usable, key=lambda c: _step(c) or 0) if usable else None


def _saved(metrics: Path) -> list[Path]:
    """Every checkpoint a `save` event of metrics.jsonl names."""
    out: list[Path] = []
    try:
        with metrics.open("r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if '"save"' not in line:
                    continue
                event = event_of(line)
                if event is not None and event.get("event") == "save":
                    if isinstance(where := event.get("checkpoint"), str) and where:
                        out.append(Path(where))
    except OSError:
        return []
    return out


def _step(checkpoint: Path) -> int | None:
    match = re.fullmatch(r"checkpoint-(\d+)", checkpoint.name)
    return int(match.group(1)) if match else None


def _spec(run: Any) -> Any:
    from gaudi_tui.core.jobs.spec import SpecError

    try:
        return run.spec()
    except (SpecError, OSError):
        return None


MODEL_FLAGS = ("--model_name_or_path", "--model-name-or-path")
"""How Transformers' example scripts (and most scripts after them) are told the model to start from."""


def command_base(spec: Any) -> str | None:
    """The model a command job started from, as its command names it (a relative folder is the
    command's, from its working folder); None when it names none."""
    words = list(spec.command)
    for i, word in enumerate(words):
        for flag in MODEL_FLAGS:
            value = words[i + 1] if word == flag and i + 1 < len(words) else None
            if word.startswith(flag + "="):
                value = word.split("=", 1)[1]
            if value:
                local = Path(spec.workdir or ".") / value
                return str(local) if value.startswith(".") or local.is_dir() else value
    return None
