"""Like the real plugin, importing this attaches `torch.hpu`."""

import torch

from habana_frameworks.torch import core, hpu  # noqa: F401

torch.hpu = hpu
