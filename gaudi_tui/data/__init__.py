"""Data files shipped in the package: real recorded `hl-smi` outputs (see hl-smi/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

HLSMI_SAMPLES = Path(__file__).resolve().parent / "hl-smi"
