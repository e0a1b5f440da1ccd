"""Like the real plugin, importing this attaches `torch.hpu` and puts Intel's profiler in place of
torch's (`activity_profiler`)."""

import torch

import habana_frameworks.torch.activity_profiler  # noqa: F401 - replaces torch.profiler's profile, as Intel's does
from habana_frameworks.torch import core, hpu  # noqa: F401

torch.hpu = hpu
