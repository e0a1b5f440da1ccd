"""Fake `habana_frameworks` (tests only): see tests/fakes/README.md."""

import os
import time

__version__ = "1.22.0.740"

# A real import can hang (a card that cannot be acquired, a driver that does not answer).
time.sleep(float(os.environ.get("FAKE_HPU_IMPORT_SLEEP", "0")))
