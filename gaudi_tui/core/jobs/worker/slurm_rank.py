"""One rank of a Slurm job: `python -m gaudi_tui.core.jobs.worker.slurm_rank --run RUN --gres gpu -- ARGV`.

srun starts it once per rank (one task per card). It turns Slurm's task variables into the
ones torch.distributed and the Habana runtime read, prints one `GAUDI_TUI_RANK {json}` line (the
supervisor records where each rank runs and which cards it got), then execs ARGV.

Which cards: Slurm never sets HABANA_VISIBLE_MODULES. For a `gpu` GRES it sets SLURM_STEP_GPUS /
SLURM_JOB_GPUS (the allocated device indices; CUDA_VISIBLE_DEVICES too, renumbered from 0 where
devices are constrained by cgroups, so the SLURM_* lists come first). A device index is not a
module ID (Intel: indices may change after a reboot, module IDs do not), so each index is looked
up in `hl-smi -Q index,module_id -f csv,noheader` on the node; without hl-smi (a CPU node, the
test cluster) the indices are passed on as they are, and the rank line says so. A site that sets
HABANA_VISIBLE_DEVICES or HABANA_VISIBLE_MODULES itself (Intel's fork does the former) wins. For
an `hpu` GRES Slurm exports no index at all: HABANA_VISIBLE_MODULES stays unset and the Habana
runtime opens free cards of the node, which is only safe when the job has the whole node; the
panel's check says so for fewer than 8 cards per node.

On a requeue by Slurm (SLURM_RESTART_COUNT > 0), a rank continues from the checkpoint its kind
names (`Kind.requeue_checkpoint`: the built-in job's newest complete one; a command's only with the
Trainer callback, passed with its `resume_flag`) instead of starting over.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from gaudi_tui.core.jobs import kinds
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import SpecError
from gaudi_tui.core.jobs.worker.logstream import RANK_PREFIX

HL_SMI_TIMEOUT_S = 10.0
MASTER_PORT_BASE = 20000
MASTER_PORT_SPAN = 9500
"""A job's rendezvous port is MASTER_PORT_BASE + its id modulo MASTER_PORT_SPAN: 20000-29499. Every
rank derives it from SLURM_JOB_ID alone, so all agree without talking. Any id fits (federated ids
reach 2**32); consecutive ids (array tasks, jobs submitted in turn) get distinct ports, so two jobs
sharing a first node meet only 9,500 ids apart; a requeue keeps its id and so its port (Slurm ends
the old attempt's steps first). The range lies below Linux's default ephemeral range (32768-60999,
where outgoing connections take their local ports), above Ray's worker ports (10002-19999) and
short of 29500 (the default of torchrun, DeepSpeed and gaudi_spawn.py: a run started by hand)."""


def tasks_per_node(text: str) -> list[int]:
    """Slurm's `2(x3),1` → [2, 2, 2, 1]."""
    out: list[int] = []
    for part in text.split(","):
        count, _, times = part.partition("(x")
        if count.strip().isdigit():
            out += [int(count)] * (int(times.rstrip(")")) if times.rstrip(")").isdigit() else 1)
    return out or [1]


def allocated_indices(env: Mapping[str, str]) -> tuple[tuple[int, ...], str]:
    """The device indices Slurm gave this step, and which variable said so."""
    for name in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"):
        text = env.get(name, "").strip()
        if text and all(part.strip().isdigit() for part in text.split(",")):
            return tuple(int(part) for part in text.split(",")), name
    return (), ""


def module_ids(indices: tuple[int, ...], hl_smi: str | None) -> tuple[tuple[int, ...], str]:
    """Map device indices to module IDs with hl-smi; the indices themselves without it."""
    if hl_smi is None:
        return indices, "no hl-smi on this node: module IDs taken equal to the device indices"
    try:
        out = subprocess.run(
            [hl_smi, "-Q", "index,module_id", "-f", "csv,noheader"],
            capture_output=True, text=True, timeout=HL_SMI_TIMEOUT_S, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return indices, f"hl-smi failed ({exc}): module IDs taken equal to the device indices"
    table: dict[int, int] = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            table[int(parts[0])] = int(parts[1])
    missing = [i for i in indices if i not in table]
    if missing:
        return indices, f"hl-smi lists no device index {missing}: module IDs taken equal to the indices"
    return tuple(table[i] for i in indices), "mapped with hl-smi -Q index,module_id"


def master_port(job_id: int) -> int:
    """The rendezvous port of Slurm job `job_id` (see MASTER_PORT_BASE)."""
    return MASTER_PORT_BASE + job_id % MASTER_PORT_SPAN


def rank_env(
    env: Mapping[str, str], gres: str, hl_smi: str | None
) -> tuple[dict[str, str], dict[str, object]]:
    """The rank's environment and what its rank line reports."""
    out = dict(env)
    job = int(env.get("SLURM_JOB_ID", "0") or 0)
    out["RANK"] = env.get("SLURM_PROCID", "0")
    out["WORLD_SIZE"] = env.get("SLURM_NTASKS", "1")
    out["LOCAL_RANK"] = env.get("SLURM_LOCALID", "0")
    node = int(env.get("SLURM_NODEID", "0") or 0)
    per_node = tasks_per_node(env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or "1")
    out["LOCAL_WORLD_SIZE"] = str(per_node[node] if node < len(per_node) else per_node[-1])
    out["NODE_RANK"] = env.get("SLURM_NODEID", "0")
    out["MASTER_ADDR"] = env.get("SLURM_LAUNCH_NODE_IPADDR") or env.get("SLURMD_NODENAME", "127.0.0.1")
    out["MASTER_PORT"] = str(master_port(job))
    # As torchrun does: one thread per CPU Slurm gave the task, not one per core of the host (ranks
    # sharing a host would otherwise oversubscribe it many times over).
    out.setdefault("OMP_NUM_THREADS", env.get("SLURM_CPUS_PER_TASK") or "1")
    info: dict[str, object] = {
        "rank": int(out["RANK"]),
        "node": env.get("SLURMD_NODENAME", ""),
        "node_rank": int(out["NODE_RANK"]),
        "local_rank": int(out["LOCAL_RANK"]),
        "job_id": job,
        "master": f"{out['MASTER_ADDR']}:{out['MASTER_PORT']}",
    }
    indices, source = allocated_indices(env)
    info["cards"] = list(indices)
    if env.get("HABANA_VISIBLE_MODULES") or env.get("HABANA_VISIBLE_DEVICES"):
        info["modules_from"] = "set by the site"
    elif gres == "hpu" or not indices:
        info["modules_from"] = (
            "GRES hpu: Slurm names no cards; the Habana runtime opens free cards of the node"
            if gres == "hpu"
            else "Slurm allocated no cards to this step"
        )
    else:
        modules, how = module_ids(indices, hl_smi)
        out["HABANA_VISIBLE_MODULES"] = ",".join(str(m) for m in modules)
        info["modules_from"] = f"{source}; {how}"
    info["habana_visible_modules"] = out.get("HABANA_VISIBLE_MODULES", "")
    return out, info


def requeue_resume(argv: list[str], run: RunFolder, env: Mapping[str, str]) -> list[str]:
    """After a requeue by Slurm, the rank's command continuing where the kind says it can (the
    newest complete checkpoint with its resume flag: `Kind.requeue_checkpoint`); else as it was."""
    if int(env.get("SLURM_RESTART_COUNT", "0") or 0) <= 0:
        return argv
    try:
        spec = run.spec()
    except SpecError:
        return argv
    kind = kinds.for_spec(spec)
    newest = kind.requeue_checkpoint(run, spec)
    return argv if newest is None else kind.rank_argv(run, spec, newest)


def main(args_in: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaudi_tui.core.jobs.worker.slurm_rank")
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--gres", default="gpu")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(args_in)
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        parser.error("no command after --")
    env, info = rank_env(os.environ, args.gres, shutil.which("hl-smi"))
    argv = requeue_resume(list(argv), RunFolder(args.run), env)
    print(RANK_PREFIX + json.dumps(info, separators=(",", ":")), flush=True)
    os.execvpe(argv[0], argv, env)
    return 127  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main())
