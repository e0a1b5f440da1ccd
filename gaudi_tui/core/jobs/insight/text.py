"""An `Insight` as plain lines: `gaudi-tui jobs insight ID` and the Training screen's details."""

from __future__ import annotations

from gaudi_tui.core.jobs.insight.report import TIME_UNIT_S, Insight, RankView

SERIES_POINTS = 12


def _compiles(view: RankView, insight: Insight) -> str:
    if view.graphs is None:
        return "no graph_compilation dump yet"
    parts = [f"{view.graphs} graphs"]
    if view.warmup_graphs is not None:
        parts.append(f"{view.warmup_graphs} in warm-up (to step {insight.warmup_end})")
    if view.after_warmup_graphs is not None:
        parts.append(f"{view.after_warmup_graphs} after")
    if view.recent_graphs is not None and insight.recent_steps:
        parts.append(f"{view.recent_graphs} in the last {insight.recent_steps} steps")
    return ", ".join(parts)


def lines(insight: Insight) -> list[str]:
    """The findings with their fix first, then the figures they come from."""
    out: list[str] = []
    for finding in insight.findings:
        out.append(f"{'✗' if finding.status == 'fail' else '!'} {finding.text}")
        out.append(f"    fix: {finding.fix}")
    out += insight.torch_lines  # torch's own figures, on every accelerator
    if insight.device != "hpu" and not insight.files_found and not insight.graphs_by_rank:
        out.append("runtime metrics (graph compiles, CPU fallbacks, HBM): Gaudi runs only")
        return out
    if not insight.files_found and not insight.graphs_by_rank:
        out.append(f"runtime metrics: no file yet ({insight.metrics_file})")
    elif insight.files_found:
        out.append(f"runtime metrics: {insight.metrics_file} ({len(insight.ranks)} rank file(s))")
    else:
        out.append("runtime metrics: rank 0's counts from the job's log stream")
    views = insight.ranks
    summaries = {(_compiles(v, insight), tuple(sorted(v.fallback_ops.items()))) for v in views}
    if len(summaries) == 1 and len(views) > 1:
        out.append(f"compiles (each of {len(views)} ranks): {_compiles(views[0], insight)}")
    else:
        out += [f"compiles (rank {v.rank}): {_compiles(v, insight)}" for v in views]
    series = insight.graphs_by_rank.get(0)
    if series and insight.steps:
        pairs = list(zip(insight.steps, series, strict=False))[-SERIES_POINTS:]
        out.append("  by step: " + "  ".join(f"{s}:{g if g is not None else '?'}" for s, g in pairs))
    times = [v.compile_time for v in views if v.compile_time is not None]
    if times:
        share = f" ≈ {insight.compile_share:.0%} of wall time" if insight.compile_share is not None else ""
        out.append(
            f"compile time: {max(times) * TIME_UNIT_S:.1f} s{share} (TotalTime read as µs: unit unconfirmed)"
        )
    for view in views:
        if view.top_recipes:
            top = ", ".join(f"{name} ×{count}" for name, count, _ in view.top_recipes[:5])
            out.append(f"recipes compiled most (rank {view.rank}): {top}")
        if view.fallback_ops:
            ops = ", ".join(
                f"{op} ×{n}" for op, n in sorted(view.fallback_ops.items(), key=lambda kv: -kv[1])
            )
            out.append(f"CPU fallbacks (rank {view.rank}): {ops}")
        if view.defragmentations:
            out.append(
                f"defragmentations (rank {view.rank}): {view.defragmentations} ({view.defragmentations_ok or 0} successful)"
            )
    if insight.max_memory_mib is not None:
        total = f" of {insight.total_memory_mib / 1024:.2f}" if insight.total_memory_mib else ""
        what = (
            "HBM peak (rank 0, from its log)"
            if insight.memory_source == "log"
            else "HBM in use (hl-smi, fullest card)"
        )
        out.append(f"{what}: {insight.max_memory_mib / 1024:.2f}{total} GB")
    if insight.lazy_banner is not None:
        asked = f" (the job asked {insight.lazy_asked})" if insight.lazy_asked is not None else ""
        out.append(f"bridge banner: PT_HPU_LAZY_MODE = {insight.lazy_banner}{asked}")
    return out
