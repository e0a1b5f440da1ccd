"""Findings about a Gaudi job, with the fix, as the Checklist gives them: plain values.

Thresholds (chosen here, not Intel's; docs/runtime-metrics.md explains them):

- `WARMUP_STEPS`: the first 5 training steps of an attempt are its warm-up. Every input shape
  compiles its graphs once there (forward, backward, optimizer), so compiles then are expected.
- `recompiling`: at least `STORM_GRAPHS` (3) new graphs in the last `RECENT_STEPS` (10) steps
  after the warm-up, on any rank. One or two (an evaluation's batch, a short last batch) do not fire.
- `hbm-full`: peak HBM at or above `HBM_FULL` (95 %) of the card's total.
- `cpu-fallback`: any op counted in `cpu_fallback.FallbackOps`.
- `no-card`: an hpu job running `NO_METRICS_AFTER_S` (120 s) with no metrics file although its
  triggers include `metric_change` (the saver writes only once a device is acquired: Intel's test
  `test_metric_no_dump_when_dev_not_acquired`).
- `lazy-mismatch`: the bridge's banner says `PT_HPU_LAZY_MODE = x` and the job asked for the other.
"""

from __future__ import annotations

from gaudi_tui.core.insight.finding import Finding

WARMUP_STEPS = 5
RECENT_STEPS = 10
STORM_GRAPHS = 3
HBM_FULL = 0.95
NO_METRICS_AFTER_S = 120.0


def recompiling(graphs: int | None, steps: int, rank: int | None = None) -> Finding | None:
    """`graphs` compiled in the last `steps` steps after the warm-up (None: not known)."""
    if graphs is None or graphs < STORM_GRAPHS:
        return None
    where = f" on rank {rank}" if rank is not None else ""
    return Finding(
        "recompiling",
        f">= {STORM_GRAPHS} graphs in the last {RECENT_STEPS} steps after {WARMUP_STEPS} warm-up steps",
        f"still compiling after warm-up: {graphs} graphs in the last {steps} steps{where}",
        "dynamic shapes: every new input shape compiles new graphs. Pad to a fixed length "
        "(padding='max_length' with a static max_seq_len) or to a few buckets "
        "(pad_to_multiple_of=…), and drop the short last batch (dataloader_drop_last=True)",
    )


def cpu_fallback(ops: dict[str, int]) -> Finding | None:
    if not ops:
        return None
    listed = ", ".join(f"{op} ×{count}" for op, count in sorted(ops.items(), key=lambda kv: -kv[1])[:5])
    more = f" and {len(ops) - 5} more" if len(ops) > 5 else ""
    return Finding(
        "cpu-fallback",
        "any op in cpu_fallback.FallbackOps",
        f"ops on the CPU: {listed}{more}",
        "these ops have no Gaudi kernel for their dtype or arguments and run on the host, with a copy "
        "each way: cast the input to a supported dtype or replace the op; "
        "PT_HPU_LOG_MOD_MASK=0x80 PT_HPU_LOG_TYPE_MASK=0x8 logs each fallback with its arguments",
    )


def hbm_full(peak_mib: float | None, total_mib: float | None, rank: int | None = None) -> Finding | None:
    if peak_mib is None or not total_mib or peak_mib / total_mib < HBM_FULL:
        return None
    share = 100 * peak_mib / total_mib
    where = f" (rank {rank})" if rank is not None else ""
    return Finding(
        "hbm-full",
        f"peak HBM >= {HBM_FULL:.0%} of the card",
        f"HBM at {share:.0f} % of the card{where}: {peak_mib / 1024:.2f} of {total_mib / 1024:.2f} GB; "
        "the next longer batch may run out of memory",
        "lower per_device_train_batch_size (and raise gradient_accumulation_steps to keep the "
        "effective batch), turn on gradient_checkpointing, or cap max_seq_len",
    )


def no_card(seconds: float) -> Finding:
    return Finding(
        "no-card",
        f"no runtime metrics file {NO_METRICS_AFTER_S:.0f} s after start (hpu, metric_change)",
        f"no runtime metrics {seconds:.0f} s after start: this process never acquired a card",
        "the job runs without a Gaudi: check HABANA_VISIBLE_MODULES, that no other process holds the "
        "cards (Devices screen) and that the script moves the model to 'hpu'",
        status="fail",
    )


def lazy_mismatch(banner: str, asked: str) -> Finding | None:
    if banner == asked:
        return None
    mode = {"1": "lazy", "0": "eager"}
    return Finding(
        "lazy-mismatch",
        "the bridge banner's PT_HPU_LAZY_MODE differs from the job's",
        f"the bridge runs {mode.get(banner, banner)} mode (PT_HPU_LAZY_MODE = {banner}) but the job asked "
        f"for {mode.get(asked, asked)} (PT_HPU_LAZY_MODE={asked})",
        "the bridge reads PT_HPU_LAZY_MODE once, when habana_frameworks is first imported: set it in the "
        "job's env, not in the script after the import; torch.compile needs eager (0)",
    )
