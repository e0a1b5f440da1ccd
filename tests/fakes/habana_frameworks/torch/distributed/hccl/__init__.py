"""Importing the real module registers the `hccl` backend of torch.distributed.

`FAKE_HCCL_ERROR` makes the import fail with that message, as a plugin whose HCCL library is
missing does.
"""

import os

if os.environ.get("FAKE_HCCL_ERROR"):
    raise ImportError(os.environ["FAKE_HCCL_ERROR"])


def initialize_distributed_hpu(
    world_size: int = -1, rank: int = -1, local_rank: int = -1
) -> tuple[int, int, int]:
    """(world size, rank, local rank) from the launcher's environment, like the real helper."""
    return (
        int(os.environ.get("WORLD_SIZE", world_size if world_size > 0 else 1)),
        int(os.environ.get("RANK", max(rank, 0))),
        int(os.environ.get("LOCAL_RANK", max(local_rank, 0))),
    )
