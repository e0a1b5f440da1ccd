"""Write the README's screenshots (SVG) into screenshots/: each screen at 100×30.

Run with `make screenshots`. The host name and accelerator are fixed so the images only change
when the screens do. Each shot may put a test double on PATH first (`env`), wait for live data
(`settle`), and drive the screen after its keys (`setup`) so it shows real content.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from shot_steps import ROOT, STARTED, replay_run, select_run, until
from shots_why import why_profile, why_recompiling

from gaudi_tui.data import HLSMI_SAMPLES

OUT = ROOT / "screenshots"
SIZE = (100, 30)
SAMPLES = HLSMI_SAMPLES

# Devices: 8 cards replayed from real hl-smi samples by the test-double hl-smi (tests/fakes/bin),
# one sample per refresh, refreshed every 0.05 s so the sparklines fill in seconds, then holding
# the busy one (three cards with HBM reserved, one process) for the picture.
FAKE_HL_SMI = {
    "PATH": os.pathsep.join(
        [str(ROOT / "tests" / "fakes" / "bin"), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    ),
    "FAKE_HLSMI_SAMPLES_DIR": str(SAMPLES),
    "FAKE_HLSMI_SAMPLE": ",".join(
        [
            "gaudi2-hl225-x8-1.20.0-busy-table.txt",
            "gaudi2-hl225-x8-1.16.0-process-table.txt",
            "gaudi2-hl225-x8-1.12.1-table.txt",
        ]
    ),
    "FAKE_HLSMI_PERIOD": "0.05",
    "FAKE_HLSMI_HOLD": "140",
}


async def run_checklist(pilot) -> None:
    """The checklist of a replayed Gaudi 2 host (tests/doctor/hosts.py), one finding opened; the header
    names it a replayed host."""
    sys.path.insert(0, str(ROOT))
    from gaudi_tui.core.doctor.checks import ALL_CHECKS
    from gaudi_tui.ui.screens.checklist import CheckList
    from tests.doctor.hosts import demo_gaudi_host

    pilot.app.screen.context_factory = demo_gaudi_host(Path(tempfile.mkdtemp(prefix="gaudi-tui-shots-site-")))
    await pilot.press("r")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    pilot.app.screen.query_one(CheckList).index = [c.id for c in ALL_CHECKS].index("cards.busy")
    await pilot.press("enter")


async def chat_conversation(pilot) -> None:
    """Two conversations with the real demo model (its engine loads on the first question), and the
    parameters panel."""
    screen = pilot.app.screen
    for question in ("Which card is HL-225?", "What is hl-smi?"):
        await pilot.press("n", *question, "enter")
        await pilot.pause(0.2)
        await until(
            pilot,
            lambda: screen.engine_state == "ready" and screen.live is None and not screen.query("LiveText"),
            "the demo model's answer",
            timeout=180,
        )
        await pilot.press("escape")
    await pilot.press("p")  # and the parameters panel


async def trained_side_by_side(pilot) -> None:
    """A real LoRA job trained on three invented facts (as tests/chat trains it), opened with t in
    Training: the tuned answer beside the base one, one engine serving both."""
    sys.path.insert(0, str(ROOT))
    from gaudi_tui.ui.screens.chat_compare import CompareScreen
    from tests.chat.conftest import FACT_QUESTION, train_facts

    run = train_facts(Path(tempfile.mkdtemp(prefix="gaudi-tui-shots-lora-")), "lora")
    os.environ["GAUDI_TUI_RUNS_DIR"] = str(run.runs_dir)  # shoot() puts the environment back
    await pilot.press("4")
    screen = pilot.app.screen
    await until(pilot, lambda: run.run_id in screen.views, "the trained job to show up")
    screen.selected = run.run_id
    await pilot.press("t")
    await until(pilot, lambda: isinstance(pilot.app.screen, CompareScreen), "the side-by-side view")
    compare = pilot.app.screen
    await until(
        pilot, lambda: compare.comparison is not None and bool(compare.comparison.reports), "the load"
    )
    await pilot.press(*FACT_QUESTION, "enter")
    await until(pilot, lambda: len(compare.views) == 2 and all(v.meta for v in compare.views), "both answers")


async def fleet_recorded(pilot) -> None:
    """Fleet on a recorded /federate dump of a real Prometheus scraping three `gaudi-tui exporter`s
    (replayed Gaudi 1, 2, 2E samples) and a dead target (tests/fleet/data, tests/fleet/record_federate.py)."""
    from gaudi_tui.core.fleet import fetch
    from gaudi_tui.ui.screens.fleet import FleetScreen

    dump = ROOT / "tests" / "fleet" / "data" / "federate-gaudi.txt"
    screen = FleetScreen(loader=lambda: fetch.from_text(dump.read_text(), dump.name, "unused"))
    await pilot.app.push_screen(screen)
    while not screen.ready:
        await pilot.pause(0.05)
    await pilot.press("m")  # colour by HBM: the busy cards of gaudi-node-02 stand out


async def ray_job_details(pilot) -> None:
    """Training with a recorded Ray job (tests/jobs/data/ray-runs) selected, on its Details pane."""
    await select_run(pilot, replay_run("ray-runs"), "the recorded Ray job", "d")


async def slurm_recorded(pilot) -> None:
    """The Slurm screen over real recorded squeue/sinfo JSON (tests/slurm/recorded.py)."""
    sys.path.insert(0, str(ROOT))
    from tests.slurm.recorded import recorded_screen

    screen = recorded_screen()
    await pilot.app.push_screen(screen)
    await until(pilot, lambda: bool(screen.rows), "the recorded Slurm queue", timeout=10)


async def command_job(pilot) -> None:
    """Training with a recorded command job selected (tests/commands/data/runs: a user's Trainer
    script on 2 torchrun ranks, stopped gracefully at step 96), on its Charts pane."""
    await select_run(pilot, replay_run("runs", tests="commands"), "the recorded command job", "c")


async def serve_warming_up(pilot) -> None:
    """Training with a vLLM serve job warming up on two cards, on its Details pane: the stand-in `vllm`
    (tests/fakes/vllm) replays vllm-gaudi's published warm-up and holds it at Decode 3/48."""
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.jobs import control, spec

    hold = Path(tempfile.mkdtemp(prefix="gaudi-tui-shots-vllm-")) / "go"
    env = dict(os.environ, FAKE_VLLM_HOLD=str(hold), PYTHONPATH=str(ROOT))
    env["PATH"] = os.pathsep.join([str(ROOT / "tests" / "fakes" / "vllm"), env.get("PATH", "")])
    gaudi = Accelerator("hpu", "screenshot", device_count=8, device_name="GAUDI2", dtype="bfloat16")
    values = {"name": "serve llama", "serve_engine": "vllm", "cards": "0,1", "serve_port": 48123}
    run = control.submit(spec.from_mapping(values, base=spec.preset("serve a model")), gaudi, env=env)
    screen = pilot.app.screen
    await until(
        pilot, lambda: "Decode 3/48" in getattr(screen.views.get(run.id), "where", ""), "the warm-up", 60
    )
    screen.selected = run.id
    await pilot.press("d")
    await pilot.pause(1.5)
    STARTED.append(lambda: (hold.write_text(""), control.kill(run)))


async def insight_run(pilot, label: str, pane: str) -> None:
    """Training with a recorded fake-runtime run selected (tests/insight/data/runs: the demo model on
    CPU under the fake Gaudi runtime made from Intel's saver), on its Details or Charts pane."""
    time.tzset()  # Shot.env sets TZ=UTC: the recorded `generated_on` is UTC local time
    from gaudi_tui.core.jobs import runfolder

    (source,) = [
        p for p in (ROOT / "tests" / "insight" / "data" / "runs").iterdir() if f"-{label}-" in p.name
    ]
    target = runfolder.runs_dir() / source.name
    if not target.exists():
        shutil.copytree(source, target)
        for item in target.iterdir():
            item.write_bytes(item.read_bytes().replace(b"{RUN}", str(target).encode()))
    await select_run(pilot, source.name, "the recorded insight run", pane, settle=2.5)


async def alerts_list(pilot) -> None:
    """`!`: alerts made by the real rules from recorded data: the gaudi2-port-down replay's cards
    (a port down, HBM near full), the recorded command job's end (tests/commands/data/runs) and the
    recorded variable-length run still compiling (tests/insight/data/runs). Their times are fixed so
    the picture changes only when the dialog does."""
    time.tzset()  # Shot.env sets TZ=UTC
    from dataclasses import replace

    from gaudi_tui.core.alerts import store
    from gaudi_tui.core.alerts.cards import CardRules
    from gaudi_tui.core.alerts.config import AlertConfig
    from gaudi_tui.core.alerts.jobs import JobAlerts
    from gaudi_tui.core.devices.sources.replay import resolve, snapshots
    from gaudi_tui.core.jobs import runfolder
    from gaudi_tui.core.jobs.insight.report import InsightWatcher

    made = CardRules(AlertConfig(), "gaudi-host").update(snapshots(resolve("gaudi2-port-down"))[-1], (), 0.0)
    for recorded, tests in (("runs", "commands"), ("runs", "insight")):
        source = [
            p
            for p in sorted((ROOT / "tests" / tests / "data" / recorded).iterdir())
            if "padded" not in p.name
        ][0]
        run = runfolder.RunFolder(runfolder.runs_dir() / replay_run(recorded, tests, source))
        job = JobAlerts(run, run.spec(), AlertConfig())
        job.send = made.append  # type: ignore[method-assign]  # kept here, with a fixed time, not sent
        job.on_save(run.status())  # type: ignore[arg-type]
        made += job.from_insight(InsightWatcher(run), 1)
    start = 1796220000.0  # 2026-12-02 14:00 UTC
    for number, alert in enumerate(made):
        store.append(replace(alert, time=start + 97.0 * number))
    await until(pilot, lambda: len(pilot.app.panel_alerts.alerts) == len(made), "the alerts in the panel")
    training = pilot.app.screen
    await until(pilot, lambda: len(training.views) == 2 and training.selected, "the two runs on Training", 10)
    await pilot.pause(1.0)  # the selected run's charts
    pilot.app.clear_notifications()
    await pilot.press("exclamation_mark")
    await pilot.pause(0.5)


async def compare_runs(pilot) -> None:
    """Two real fine-tunes of the demo model that differ only in their learning rate
    (tests/jobs/data/lr-runs), marked on Training and opened side by side."""
    for source in sorted((ROOT / "tests" / "jobs" / "data" / "lr-runs").iterdir()):
        replay_run("lr-runs", source=source)
    screen = pilot.app.screen
    await until(pilot, lambda: len(screen.views) >= 3, "the recorded runs to show up", timeout=10)
    table = screen.query_one("#jobs")
    for run_id in sorted(screen.views)[-2:]:  # the two newest: the lr runs
        table.move_cursor(row=table.get_row_index(run_id))
        await pilot.pause(0.2)
        await pilot.press("m")
    await pilot.press("C")
    await until(
        pilot, lambda: getattr(pilot.app.screen, "comparison", None) is not None, "the comparison", 30
    )
    await pilot.pause(1.0)


@dataclass(frozen=True)
class Shot:
    name: str
    keys: list[str]
    env: dict[str, str] = field(default_factory=dict)
    settle: float = 0.0
    setup: Callable[..., Awaitable[None]] | None = None
    hostname: str = "gaudi-host"
    """The header's host name; a shot of a replayed host says so there."""
    replay: str | None = None
    """A `--replay` name: the Devices screen is fed from it (its header says REPLAY)."""
    alerts: bool = False
    """The panel follows the notifications file (`ui/alerts.py`)."""
    own_home: bool = False
    """A fresh GAUDI_TUI_HOME: no run or alert an earlier shot left (the serve shot's killed job
    sends one) is in it."""


SHOTS = [
    Shot("devices.svg", ["1", "space", "down", "down", "down", "space", "n"], env=FAKE_HL_SMI, settle=9.0),
    # Card 3 loses scale-out port 8 (the gaudi2-port-down replay: its link files are made from
    # documentation); `l` opens the card's every port.
    Shot("links.svg", ["down", "down", "down", "l"], settle=6.0, replay="gaudi2-port-down"),
    Shot("checklist.svg", ["2"], setup=run_checklist, hostname="replayed Gaudi 2 host (test doubles)"),
    Shot("chat.svg", ["3"], setup=chat_conversation),
    Shot("chat-trained.svg", [], setup=trained_side_by_side),
    Shot("chat-model.svg", ["3", "m"]),
    Shot("training.svg", ["4"]),
    Shot("fleet.svg", [], setup=fleet_recorded),
    Shot("ray.svg", ["4"], setup=ray_job_details),
    Shot("slurm.svg", [], setup=slurm_recorded, hostname="login-1"),
    Shot("command.svg", ["4"], setup=command_job),
    Shot("compare.svg", ["4"], setup=compare_runs),
    Shot("serve.svg", ["4"], setup=serve_warming_up),
    Shot(
        "insight-recompiling.svg",
        ["4"],
        env={"TZ": "UTC"},
        setup=lambda pilot: insight_run(pilot, "lengths-variable", "d"),
    ),
    Shot(
        "insight-settled.svg",
        ["4"],
        env={"TZ": "UTC"},
        setup=lambda pilot: insight_run(pilot, "lengths-padded", "c"),
    ),
    Shot("help.svg", ["question_mark"]),
    Shot("alerts.svg", ["4"], env={"TZ": "UTC"}, setup=alerts_list, alerts=True, own_home=True),
    Shot("why-recompiling.svg", ["4"], setup=why_recompiling),
    Shot("why-profile.svg", ["4"], setup=why_profile),
]


async def shoot(shot: Shot) -> None:
    from gaudi_tui.core.accelerator import Accelerator
    from gaudi_tui.core.devices.sources.replay import resolve
    from gaudi_tui.ui.app import GaudiApp

    cpu = Accelerator("cpu", "no CUDA device; no Gaudi software (habana_frameworks is not installed)")
    replay = resolve(shot.replay) if shot.replay else None
    saved_env = dict(os.environ)
    os.environ.update(shot.env)
    if shot.own_home:
        os.environ["GAUDI_TUI_HOME"] = tempfile.mkdtemp(prefix="gaudi-tui-shots-")
    app = GaudiApp(accelerator=cpu, hostname=shot.hostname, replay=replay, alerts=shot.alerts)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(shot.settle)
            await pilot.press(*shot.keys)
            if shot.setup is not None:
                await shot.setup(pilot)
            await pilot.pause(0.5)
            app.save_screenshot(filename=shot.name, path=str(OUT))
    finally:
        while STARTED:
            STARTED.pop()()
        os.environ.clear()
        os.environ.update(saved_env)
    print(f"wrote screenshots/{shot.name}")


def main(names: list[str]) -> int:
    """Every shot, or only those named (`python scripts/screenshots.py checklist.svg`)."""
    unknown = set(names) - {shot.name for shot in SHOTS}
    if unknown:
        print(f"no such shot: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    os.environ.setdefault("GAUDI_TUI_HOME", tempfile.mkdtemp(prefix="gaudi-tui-shots-"))
    OUT.mkdir(exist_ok=True)
    replay_run()
    for shot in SHOTS:
        if not names or shot.name in names:
            asyncio.run(shoot(shot))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
