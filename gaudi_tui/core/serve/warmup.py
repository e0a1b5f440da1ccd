"""vLLM's warm-up read from the server's output: which bucket of how many, the time left, the free
device memory, and why a server that ended failed (with its fix).

The lines (vllm-gaudi `hpu_model_runner.log_warmup`, and vllm-fork's before it; golden copies with
their sources in tests/serve/data):
  [Warmup][Prompt][12/24] batch_size:4 seq_len:896 free_mem:55.43 GiB          (vllm-fork, docs)
  [Warmup][Decode][3/48] batch_size:4 query_len:1 num_blocks:64 free_mem:55.43 GiB   (vllm-gaudi v1)
  Warmup finished in 38 secs, allocated 1.2 GiB of device memory
Fed line by line by the readiness watch as the log grows (bounded reads, never from the start again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

BUCKET = re.compile(r"\[Warmup\]\[(?P<phase>[A-Za-z/]+)\]\[(?P<done>\d{1,9})/(?P<total>\d{1,9})\]")
"""A warm-up bucket; a count of ten digits or more (no server has a billion buckets; 5000 digits
raised ValueError out of the readiness watch's poll) is no bucket."""
FREE_MEM = re.compile(r"free_mem:\s*(?P<mem>[0-9.]+\s*[KMGTP]?i?B)")
FINISHED = re.compile(r"Warmup finished in (?P<secs>\d{1,9}(?:\.\d{1,9})?) secs")
"""`[0-9.]+` took `1.2.3` (ValueError) and 400 digits (infinity) for a time."""
LOG_TIME = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
"""vLLM's logger stamp, `INFO 08-02 17:37:54`: the pace is read from it where a line has one."""

FAILURES = (
    (
        re.compile(r"address already in use|\[Errno 98\]", re.IGNORECASE),
        "port_in_use",
        "the port is in use (another server holds it): serve again with another port, or port 0 for a free one",
    ),
    (
        re.compile(r"Model architectures \['Gaudi\w+'\] are not supported", re.IGNORECASE),
        "gaudi_architecture",
        "config.json names a Gaudi* training class (optimum-habana's GaudiTrainer): set architectures to "
        "the class without 'Gaudi', e.g. LlamaForCausalLM (HabanaAI/vllm-fork issue 511)",
    ),
    (
        re.compile(r"PT_DEVMEM Allocation failed|out of memory|OutOfMemoryError", re.IGNORECASE),
        "out_of_memory",
        "out of device memory: lower --max-model-len or --max-num-seqs, raise VLLM_GRAPH_RESERVED_MEM "
        "(memory kept for HPU graphs, default 0.1) or lower --gpu-memory-utilization, or use more cards "
        "(vllm-gaudi issue 1736)",
    ),
)
"""What a failed server's output says, its kind, and the fix; the first that matches wins."""


@dataclass(frozen=True)
class Warmup:
    phase: str = ""
    done: int = 0
    total: int = 0
    free_mem: str = ""
    eta_s: float | None = None
    finished_s: float | None = None
    """Set by 'Warmup finished in N secs'."""

    def words(self) -> str:
        """`warming up Prompt 12/24 · ETA 0:31 · free 55.43 GiB`, or `warmed up in 38 s`."""
        if self.finished_s is not None:
            return f"warmed up in {self.finished_s:g} s"
        if not self.total:
            return ""
        parts = [f"warming up {self.phase} {self.done}/{self.total}"]
        if self.eta_s is not None:
            minutes, seconds = divmod(int(self.eta_s), 60)
            parts.append(f"ETA {minutes}:{seconds:02d}")
        if self.free_mem:
            parts.append(f"free {self.free_mem}")
        return " · ".join(parts)


class WarmupReader:
    """The warm-up so far, from lines fed with the time they were seen."""

    def __init__(self) -> None:
        self.state = Warmup()
        self._phase_began: tuple[str, int, float, bool] | None = None
        """(phase, first bucket seen, when, by vLLM's stamp): the pace of this phase, on one clock
        (vLLM's stamps count from the year's start, the time a line was seen from the epoch)."""

    def feed(self, line: str, now: float) -> bool:
        """Read one line (seen at `now`, unless it carries vLLM's own time); True when the warm-up
        state changed."""
        if (match := FINISHED.search(line)) is not None:
            self.state = replace(self.state, finished_s=float(match.group("secs")), eta_s=0.0)
            return True
        match = BUCKET.search(line)
        if match is None:
            return False
        phase, done, total = match.group("phase"), int(match.group("done")), int(match.group("total"))
        stamped = LOG_TIME.search(line) is not None
        now = _stamp(line, now)
        began_at = self._phase_began
        if began_at is None or began_at[0] != phase or done < began_at[1] or began_at[3] != stamped:
            began_at = self._phase_began = (phase, done, now, stamped)  # another clock: a new pace
        _, first, began, _ = began_at
        eta = None
        if done > first and now > began:
            eta = (now - began) / (done - first) * (total - done)
        mem = FREE_MEM.search(line)
        self.state = Warmup(phase, done, total, mem.group("mem") if mem else self.state.free_mem, eta)
        return True


def _stamp(line: str, seen: float) -> float:
    """The line's own time in seconds (month and day count, the year does not), else `seen`."""
    match = LOG_TIME.search(line)
    if match is None:
        return seen
    month, day, hours, minutes, seconds = (int(g) for g in match.groups())
    return ((month * 31 + day) * 24 + hours) * 3600.0 + minutes * 60 + seconds


@dataclass(frozen=True)
class Failure:
    kind: str
    line: str
    """The output's line that tells it."""
    fix: str

    def words(self) -> str:
        return f"{self.line} — fix: {self.fix}"


def explain(text: str) -> Failure | None:
    """The failure `text` (a log tail) shows, the last line telling it, and the fix; or None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for pattern, kind, fix in FAILURES:
        told = [line for line in lines if pattern.search(line)]
        if told:
            return Failure(kind, told[-1][:300], fix)
    return None
