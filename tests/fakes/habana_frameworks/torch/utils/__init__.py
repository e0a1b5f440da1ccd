"""Fake `habana_frameworks.torch.utils` (tests only)."""
