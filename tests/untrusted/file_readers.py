"""The readers of the hostile-file catalogue (tests/untrusted/test_hostile_files.py): each reader of
a file another process writes, as its caller reads it, with a good item to put the hostile cases
in. `Reader.open(path)` gives a poll that returns `Seen`: the values of the items read and what the
reader said of what it passed over."""

from __future__ import annotations

from tests.untrusted.reader_model import Reader
from tests.untrusted.readers_appended import APPENDED
from tests.untrusted.readers_whole import DOCUMENT_READERS

READERS: dict[str, Reader] = {**APPENDED, **DOCUMENT_READERS}
DOCUMENTS = frozenset(name for name, r in READERS.items() if not r.before)
EVENTS = ["shrinks", "vanishes"]
ANSWERS = frozenset({"squeue --json", "sinfo --json"})
"""A command's answer, read whole once: it cannot shrink or vanish while read."""
STREAMS = frozenset({"Ray log mirror: metrics", "Ray log mirror: ranks"})
"""What an offset into Ray's log delivers: a stream, not a file that can shrink."""
