"""The Gaudi environment doctor: checks with stable ids, a runner, and a knowledge base of real errors.

Checks that import `habana_frameworks` or call `is_torch_hpu_available()` run in throwaway child
processes (`probe.py`); every other check reads metadata, the environment and the filesystem.
"""
