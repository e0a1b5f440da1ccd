"""The device side of a profile taken on Gaudi, read from its Chrome trace (standard library only).

On Gaudi, `import habana_frameworks.torch` replaces `torch.profiler.profile` and
`torch.profiler.ProfilerActivity` with Intel's (HabanaAI/gaudi-pytorch-bridge v1.19.0,
`python_packages/habana_frameworks/torch/activity_profiler/activity_profiler.py`): with
`ProfilerActivity.HPU` among the activities it starts Intel's activity profiler beside torch's, and
its `export_chrome_trace` lets torch write the trace, then merges the device's events into that
file (`hpu_profiler._export_logs(path)`, `backend/profiling/json_file_parser.cpp`
`JsonFileParser::merge`). torch's own `key_averages()` never sees them, so the device time is read
here, from the trace, in the shape that code writes:

- a `"ph": "M"` `process_name` event whose `args.name` is `/device:HPU:0` names the device's `pid`
  (`trace_parser.cpp` `initLanes`: `addDevice(plane_name_, device_lane_)`), one `thread_name` a
  device engine (TPC, MME, DMA ...);
- each device activity is a complete event (`"ph": "X"`) on that pid, `ts` and `dur` in µs, `cat`
  `Kernel` (TPC and MME engines), `Memcpy`, `Memset` or `Runtime`, `name` the operation;
- host-side Synapse lanes (`Synapse/...` threads) sit on other pids and are not device time.

Engines run side by side, so the device time is busy time summed over engines.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

DEVICE_PROCESS = "/device:HPU"
MAX_TRACE_BYTES = 1 << 30
"""A bigger trace is not read (its device time stays unknown)."""
TOP_OPS = 10
SOURCE = "Intel's device events in the trace (habana_frameworks' activity profiler)"


def device_figures(trace: Path) -> dict[str, object] | None:
    """The device time (µs, summed over engines) and the top device ops of a Gaudi trace; None when
    the trace cannot be read or holds no device process."""
    try:
        if trace.stat().st_size > MAX_TRACE_BYTES:
            return None
        data = json.loads(trace.read_bytes())
    except (OSError, ValueError):
        return None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        return None
    devices = {e.get("pid") for e in events if _device_process(e)}
    if not devices:
        return None
    ops: dict[str, list[float]] = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "X" and event.get("pid") in devices:
            dur = event.get("dur")
            if (
                isinstance(dur, (int, float))
                and not isinstance(dur, bool)
                and math.isfinite(dur)
                and dur >= 0
            ):
                total = ops.setdefault(str(event.get("name", "?"))[:200], [0.0, 0])
                total[0] += float(dur)
                total[1] += 1
    top = sorted(ops.items(), key=lambda kv: -kv[1][0])[:TOP_OPS]
    return {
        "device_us": sum(us for us, _ in ops.values()),
        "device_source": SOURCE,
        "top_device_ops": [{"name": name, "count": int(n), "device_us": us} for name, (us, n) in top],
    }


def _device_process(event: object) -> bool:
    if not isinstance(event, dict) or event.get("ph") != "M" or event.get("name") != "process_name":
        return False
    args = event.get("args")
    return isinstance(args, dict) and str(args.get("name", "")).startswith(DEVICE_PROCESS)
