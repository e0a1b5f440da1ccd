"""Fake `habana_frameworks` (tests only): see tests/fakes/README.md."""

__version__ = "1.22.0.740"
