"""`habana_frameworks.torch.distributed`: the HCCL backend lives in `hccl`."""
