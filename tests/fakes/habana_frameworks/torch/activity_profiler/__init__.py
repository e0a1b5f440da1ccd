"""Fake `habana_frameworks.torch.activity_profiler` (tests only): what Intel's does on import
(HabanaAI/gaudi-pytorch-bridge v1.19.0, `python_packages/habana_frameworks/torch/activity_profiler/
activity_profiler.py`, imported by `habana_frameworks/torch/__init__.py`), written anew:

- `torch.profiler.ProfilerActivity` becomes an enum of CPU, CUDA and HPU;
- `torch.profiler.profile` becomes a subclass that takes those members, marks HPU profiling active
  when `ProfilerActivity.HPU` is among them (CPU and HPU when none are given), hands torch only the
  members torch knows (Intel's `_exchange_activity`: CPU and CUDA become torch's own, anything else
  None), sets up, starts and stops Intel's activity profiler around torch's trace;
- `torch.autograd.profiler.profile` becomes a subclass whose `export_chrome_trace` lets torch write
  the file, then merges the device's events into it (`_export_logs`).

Two changes for the torch here (2.13; Intel's 1.19.0 pairs with torch 2.5): torch 2.13 refuses None
among the activities, so the ones `_exchange_activity` maps to None are left out, and torch 2.13
passes `export_chrome_trace` the trace metadata as a second argument, which is passed on.
"""

from enum import Enum

import torch
import torch.autograd.profiler
import torch.profiler

from habana_frameworks.torch.utils import _activity_profiler_C as hpu_profiler

TORCH_ACTIVITY = torch.profiler.ProfilerActivity
MANDATORY_EVENTS = ["LaunchRecipeTask", "add_new_recipe", "launch_recipe", "launch"]
"""Intel's `_get_mandatory_events` outside lazy mode."""

seen: list[dict] = []
"""What each profile was asked for (tests read it)."""


class HabanaProfilerActivity(Enum):
    CPU = 1
    CUDA = 2
    HPU = 3


class _AutogradProfile(torch.autograd.profiler.profile):
    def export_chrome_trace(self, path, *metadata):  # noqa: ANN001, ANN201 - torch's signature
        super().export_chrome_trace(path, *metadata)
        hpu_profiler._export_logs(path)


class _Profile(torch.profiler.profile):
    def __init__(self, *, activities=None, **kwargs) -> None:  # noqa: ANN001, ANN003
        asked = (
            (HabanaProfilerActivity.CPU, HabanaProfilerActivity.HPU)
            if activities is None
            else tuple(activities)
        )
        self.hpu_profiling_active = HabanaProfilerActivity.HPU in asked
        exchanged = [_exchange(a) for a in asked]
        seen.append({"asked": [str(a) for a in asked], "exchanged": [str(a) for a in exchanged],
                     "hpu": self.hpu_profiling_active})  # fmt: skip
        hpu_profiler._setup_activity_profiler_sources(
            False, bool(kwargs.get("profile_memory")), MANDATORY_EVENTS
        )
        super().__init__(activities=[a for a in exchanged if a is not None], **kwargs)

    def start_trace(self) -> None:
        if self.hpu_profiling_active:
            hpu_profiler._start_activity_profiler()
        super().start_trace()

    def stop_trace(self) -> None:
        super().stop_trace()
        if self.hpu_profiling_active:
            hpu_profiler._stop_activity_profiler()


def _exchange(activity):  # noqa: ANN001, ANN202
    if activity == HabanaProfilerActivity.CPU:
        return TORCH_ACTIVITY.CPU
    if activity == HabanaProfilerActivity.CUDA:
        return TORCH_ACTIVITY.CUDA
    return None


torch.profiler.profile = _Profile
torch.profiler.ProfilerActivity = HabanaProfilerActivity
torch.autograd.profiler.profile = _AutogradProfile
