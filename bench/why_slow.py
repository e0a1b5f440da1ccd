"""Why slow: the cost of the compile hook and the stall timer per step, and the pace after a profile.

1. The hooks: a compiled training step (a small MLP under `torch.compile(backend="eager")`, CPU,
   a fixed shape, so nothing compiles after warm-up) with the callbacks' probe calls
   (`JobProbe.step_begin`/`step_end` every step, `logged` every `LOG_EVERY` steps, the profile
   request's stat included) against the same step without them. Both sides run the same compiled
   function in the same process with the compile callbacks registered (they fire only on a
   compile); `ROUNDS` rounds of `STEPS` steps each, alternated, the side going first swapped each
   round. The headline is the hooks' own time a step (timed around the calls alone) as a share of
   the median step; the per-step medians of both sides are printed beside (on a shared machine
   their difference is within noise), and the median hook time over the fastest round's step (the
   load stretches the median step, which flatters the share). The same again on the demo model's
   training step (the embedded model the built-in job trains without a hub: AdamW, batch 8 × 64
   tokens, CPU), the smallest step of a real job the panel runs; the MLP's sub-millisecond step is
   the worst case. Target: ≤ 0.5 % of a step.
2. The profile, on the demo model's step: `TRIALS` times, steps/s in `PACE_ROUNDS` rounds before a 5-step profile window (a
   real request file answered by `ProfileTaker`, its trace written to a temporary folder) and in as
   many rounds after it; each window's ratio is its own (after ÷ before, medians), so a load that
   drifts over the run moves both sides of it alike. Target: after within 1 % of before.
Medians with min–max, and the load average.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
sys.path.insert(0, str(ROOT))
from common.figures import load, spread  # noqa: E402

ROUNDS = 15
STEPS = 200
DEMO_ROUNDS = 9
DEMO_STEPS = 20
TRIALS = 7
PACE_ROUNDS = 3
LOG_EVERY = 10


def demo_training_step() -> Callable[[], None]:
    """One optimizer step of the embedded demo model (what the built-in job trains without a hub)."""
    import torch
    from transformers import AutoModelForCausalLM

    from gaudi_tui.core import demo

    model = AutoModelForCausalLM.from_pretrained(demo.resolve_model(demo.DEMO_MODEL_ID))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, model.config.vocab_size, (8, 64))

    def step() -> None:
        optimizer.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()

    return step


def main() -> int:
    import statistics

    import torch

    from gaudi_tui.core.insight import profile
    from gaudi_tui.core.insight.probe import JobProbe

    started = time.monotonic()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    step_fn = torch.compile(model, backend="eager")
    batch = torch.randn(32, 256)
    folder = Path(tempfile.mkdtemp(prefix="why-slow-bench-"))
    probe = JobProbe()
    probe.begin(0, folder, "cpu")

    def step() -> None:
        optimizer.zero_grad()
        step_fn(batch).sum().backward()
        optimizer.step()

    def measure(step: Callable[[], None], steps: int, rounds: int, at: int) -> tuple[list, list, list]:
        """Rounds of `steps` steps, plain and hooked alternated (the side going first swapped each
        round): the step times of each side, and the hooks' own time a step (timed around the calls)."""

        def plain() -> float:
            began = time.perf_counter()
            for _ in range(steps):
                step()
            return (time.perf_counter() - began) / steps

        def hooked(start: int) -> float:
            spent = 0.0
            began = time.perf_counter()
            for i in range(start, start + steps):
                t0 = time.perf_counter()
                probe.step_begin(i)
                spent += time.perf_counter() - t0
                step()
                t0 = time.perf_counter()
                probe.step_end(i + 1)
                if (i + 1) % LOG_EVERY == 0:
                    probe.logged(i + 1)
                spent += time.perf_counter() - t0
            hook_s.append(spent / steps)
            return (time.perf_counter() - began) / steps

        plain_s: list[float] = []
        with_s: list[float] = []
        hook_s: list[float] = []
        for r in range(rounds):
            for side in ("plain", "hooked") if r % 2 == 0 else ("hooked", "plain"):
                if side == "plain":
                    plain_s.append(plain())
                else:
                    with_s.append(hooked(at))
                    at += steps
        return plain_s, with_s, hook_s

    def report(what: str, plain_s: list, with_s: list, hook_s: list) -> None:
        share = [h / statistics.median(plain_s) * 100 for h in hook_s]
        print(f"== the compile hook and the stall timer: {what}")
        print(f"step without hooks  {spread([s * 1e3 for s in plain_s], '{:.3f}')} ms")
        print(f"step with hooks     {spread([s * 1e3 for s in with_s], '{:.3f}')} ms")
        print(f"hooks' own time     {spread([h * 1e6 for h in hook_s], '{:.1f}')} µs a step")
        print(f"hooks / step        {spread(share, '{:.3f}')} %  (target ≤ 0.5 %)")
        fastest = statistics.median(hook_s) / min(plain_s) * 100  # a loaded machine stretches the median step
        print(f"hooks / fastest step {fastest:.3f} %  (the median hook time over the fastest round's step)")

    for _ in range(20):  # compile and warm up
        step()
    report(
        "a compiled 32×256 MLP step (far below any real job's: the worst case)",
        *measure(step, STEPS, ROUNDS, 0),
    )
    demo_step = demo_training_step()
    for _ in range(3):
        demo_step()
    report(
        "the demo model's training step (batch 8 × 64 tokens, CPU)",
        *measure(demo_step, DEMO_STEPS, DEMO_ROUNDS, 0),
    )
    at = 10 * ROUNDS * STEPS

    def rate(start: int) -> float:
        began = time.perf_counter()
        for i in range(start, start + DEMO_STEPS):
            probe.step_begin(i)
            demo_step()
            probe.step_end(i + 1)
        return DEMO_STEPS / (time.perf_counter() - began)

    def window(at: int) -> tuple[int, str]:
        """One 5-step profile window, asked through a real request file; the step after it, the trace."""
        assert profile.request(folder, 5) is None
        taken = None
        while taken is None:
            probe.step_begin(at)
            demo_step()
            events = probe.step_end(at + 1)
            taken = next((e for e in events if e.get("event") == profile.EVENT), None)
            at += 1
        return at, Path(str(taken["trace"])).name

    ratios, before, after = [], [], []
    for _ in range(TRIALS):  # before, a window, after: each trial its own ratio (a drifting load moves both)
        ahead = [rate(at + r * DEMO_STEPS) for r in range(PACE_ROUNDS)]
        at, trace = window(at + PACE_ROUNDS * DEMO_STEPS)
        behind = [rate(at + r * DEMO_STEPS) for r in range(PACE_ROUNDS)]
        at += PACE_ROUNDS * DEMO_STEPS
        before.append(statistics.median(ahead))
        after.append(statistics.median(behind))
        ratios.append(after[-1] / before[-1])
    print(f"== the demo model's steps/s before and after a 5-step profile window ({TRIALS} windows)")
    print(f"before  {spread(before, '{:.0f}')} steps/s")
    print(f"after   {spread(after, '{:.0f}')} steps/s  (last trace {trace})")
    print(f"after / before  {spread(ratios, '{:.3f}')}  (each window's own; target within 1 %)")
    probe.end(at)
    print(load())
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
