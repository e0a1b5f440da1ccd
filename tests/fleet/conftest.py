"""Fixtures of the fleet tests (see stack.py)."""

from tests.fleet.stack import fleet_stack

__all__ = ["fleet_stack"]
