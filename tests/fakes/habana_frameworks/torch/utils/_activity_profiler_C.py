"""Stand-in for Intel's C extension `habana_frameworks.torch.utils._activity_profiler_C` (tests only).

Its four calls, as `activity_profiler.py` uses them (HabanaAI/gaudi-pytorch-bridge v1.19.0), with
no device: `_export_logs(path)` merges device events into the Chrome trace torch wrote, in the shape
`backend/profiling/json_file_parser.cpp` and `trace_sources/trace_parser.cpp` write them:

- the device process: `process_name` / `process_labels` / `process_sort_index` metadata (`"ph": "M"`)
  with pid 0 (`device_lane_`) and the name `/device:HPU:0` (`plane_name_`); one `thread_name` per
  engine (here `MME 0` and `TPC 0`);
- one complete event (`"ph": "X"`, `ts`/`dur` in µs) per device activity on pid 0, `cat` `Kernel`;
  here one per `aten::` op torch recorded (MME for the matrix products, TPC otherwise), named after
  the op, lasting half its host time (a made-up device: the shape is Intel's, the numbers are not);
- one host-side `Runtime` event on a `Synapse/...` lane of another pid, which is not device time;
- `deviceProperties` with the card's name (`SynapseProfilerSource::initHpuDetails`).

`calls` records what was asked, for the tests.
"""

import json
import os

calls: list[tuple[str, object]] = []

DEVICE_PID = 0
HOST_ENGINE_PID = 7
MME_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear")


def _setup_activity_profiler_sources(bridge: bool, memory: bool, mandatory_events: list[str]) -> None:
    calls.append(("setup", {"bridge": bridge, "memory": memory, "mandatory_events": list(mandatory_events)}))


def _start_activity_profiler() -> None:
    calls.append(("start", None))


def _stop_activity_profiler() -> None:
    calls.append(("stop", None))


def _meta(name: str, pid: int, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "M", "ts": 0.0, "pid": pid, "tid": tid, "args": args}


def device_events(host_events: list[dict]) -> list[dict]:
    out = [
        _meta("process_name", DEVICE_PID, 0, {"name": "/device:HPU:0"}),
        _meta("process_labels", DEVICE_PID, 0, {"labels": "/device:HPU:0"}),
        _meta("process_sort_index", DEVICE_PID, 0, {"sort_index": DEVICE_PID + 0x1000000}),
        _meta("thread_name", DEVICE_PID, 1, {"name": "MME 0"}),
        _meta("thread_name", DEVICE_PID, 2, {"name": "TPC 0"}),
        _meta("thread_name", HOST_ENGINE_PID, 1, {"name": "Synapse/synLaunch"}),
    ]
    for event in host_events:
        name = str(event.get("name", ""))
        if event.get("ph") != "X" or event.get("cat") != "cpu_op" or not name.startswith("aten::"):
            continue
        out.append({
            "cat": "Kernel", "name": name.removeprefix("aten::"), "pid": DEVICE_PID,
            "tid": 1 if name in MME_OPS else 2, "ts": event["ts"], "ph": "X",
            "dur": float(event.get("dur", 0)) / 2, "args": {"device": DEVICE_PID, "recipeName": "fake_recipe"},
        })  # fmt: skip
        out.append({"cat": "Runtime", "name": "synLaunch", "pid": HOST_ENGINE_PID, "tid": 1,
                    "ts": event["ts"], "ph": "X", "dur": 1000.0})  # fmt: skip
    return out


def _export_logs(path: str) -> None:
    calls.append(("export", path))
    with open(path, encoding="utf-8") as fh:
        trace = json.load(fh)
    trace.setdefault("traceEvents", []).extend(device_events(trace.get("traceEvents", [])))
    trace.setdefault("deviceProperties", []).append({"name": os.environ.get("FAKE_HPU_NAME", "GAUDI2")})
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(trace, fh)
