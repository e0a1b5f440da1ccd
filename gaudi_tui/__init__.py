"""gaudi-tui: a keyboard-driven control panel for Intel Gaudi hosts."""

__version__ = "0.1.0"
