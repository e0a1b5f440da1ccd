"""What a command job runs: the launcher in front, the resume flag, one rank's command."""

from __future__ import annotations

from pathlib import Path

from gaudi_tui.core.jobs import kinds
from gaudi_tui.core.jobs.kinds import command
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import from_mapping


def spec(**changes: object):  # noqa: ANN201 - JobSpec
    return from_mapping({"kind": "command", "command": "train.py --lr 1e-4 --output_dir out", **changes})


def test_launchers_start_one_process_per_card_and_never_a_shell() -> None:
    s = spec(command_launcher="torchrun", cards=[0, 1], processes=2)
    assert command.argv(s, python="py") == [
        "py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
        "train.py", "--lr", "1e-4", "--output_dir", "out",
    ]  # fmt: skip
    deepspeed = command.argv(spec(command_launcher="deepspeed", processes=8), python="py")
    assert deepspeed[:4] == ["py", "-m", "deepspeed.launcher.runner", "--num_gpus=8"]
    assert command.argv(spec(command="python 'my script.py'")) == ["python", "my script.py"]


def test_resume_replaces_a_checkpoint_the_user_gave() -> None:
    words = ["train.py", "--resume_from_checkpoint", "old", "--x=1", "--resume_from_checkpoint=older"]
    assert command.resume_args(words, "--resume_from_checkpoint", "new") == [
        "train.py", "--x=1", "--resume_from_checkpoint", "new",
    ]  # fmt: skip
    s = spec(command_launcher="accelerate", resume_flag="--resume")
    assert command.rank_argv(s, Path("/ckpt/checkpoint-4"), python="py")[-2:] == [
        "--resume",
        "/ckpt/checkpoint-4",
    ]
    assert command.rank_argv(s, None, python="py")[:2] == ["py", "train.py"]


def test_each_kind_gives_one_ranks_command(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    s = spec(command_launcher="torchrun", workdir=str(tmp_path))
    assert kinds.for_spec(s).rank_argv(run, s, None)[1:] == [
        "train.py",
        "--lr",
        "1e-4",
        "--output_dir",
        "out",
    ]
    env = kinds.for_spec(s).rank_env(run, s, {"PYTHONPATH": "mine"})
    assert env["PYTHONPATH"] == f"{command.SITE_DIR}:mine" and env["GAUDI_TUI_RUN"] == str(tmp_path)
    assert command.output_folder(run, s) == tmp_path / "out"
    trainer = from_mapping({"device": "cpu"})
    assert kinds.for_spec(trainer).rank_argv(run, trainer, None)[1:] == [
        "-m",
        "gaudi_tui.core.jobs.worker.train",
        str(tmp_path),
    ]
