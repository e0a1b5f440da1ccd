"""The Chat screen on an endpoint: the model dialog lists the panel's served jobs, an answer
streams, Esc stops it mid-answer and the server answers the next question.

The served jobs' run folders are written by the product's own writers, not by a served job: the
module's one real `transformers serve` (tests/chat/serving.py) stands behind them, and a serve job
would start a second server. The spec and status come from `runfolder`, serve.json from the serve
supervisor's first values (`serve_supervise.info`) and its readiness watch (`ready.ReadyWatch`),
which probes that server until it answers, as the job's supervisor does; the server's process
stands for the supervisor in status.json. Only the hostile files are edited by hand (a shared runs
folder may hold anything the product would never write)."""

from __future__ import annotations

import time

from textual.widgets import Input, Select, Static

from gaudi_tui.core.accelerator import Accelerator
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.served import served_jobs
from gaudi_tui.core.chat.store import StoredMessage
from gaudi_tui.core.jobs import runfolder
from gaudi_tui.core.jobs.kinds import serve_supervise
from gaudi_tui.core.jobs.runfolder import RunFolder
from gaudi_tui.core.jobs.spec import JobSpec
from gaudi_tui.core.jobs.status import JobStatus, ProcRef, State
from gaudi_tui.core.serve import ready
from gaudi_tui.ui.app import GaudiApp
from gaudi_tui.ui.screens.chat import ChatScreen
from gaudi_tui.ui.screens.chat_compare import CompareDialog, CompareScreen
from gaudi_tui.ui.screens.chat_dialogs import LoadDialog
from tests.chat.serving import Server
from tests.chat.test_screen import send, wait_until


def served_run(
    server: Server, name: str, state: State = "running", api_key_env: str = "", answers: bool = True
) -> RunFolder:
    """A serve job's run folder for `server`: serve.json ready once the readiness watch saw the
    server answer (with `answers`), else the supervisor's first values, not ready yet."""
    spec = JobSpec(
        name=name, kind="serve", serve_engine="transformers", serve_model=server.model,
        serve_api_key_env=api_key_env,
    )  # fmt: skip
    run = runfolder.create(spec, accelerator="cpu")
    now = time.time()
    supervisor = ProcRef.of(server.proc.pid)
    run.write_status(JobStatus(state=state, created=now, queued=now, started=now, supervisor=supervisor))
    watch = ready.ReadyWatch(
        run.path, run.log_path, serve_supervise.info(spec, server.url, server.model), api_key=None
    )
    if not answers:
        ready.write(run.path, watch.info)  # what start() writes first, before any probe
        return run
    watch.start()
    deadline = time.monotonic() + 30
    while not (ready.read(run.path) or {}).get("ready"):
        assert time.monotonic() < deadline, f"{name}: serve.json never said ready: {ready.read(run.path)}"
        time.sleep(0.05)
    return run


def edited(run: RunFolder, **fields: object) -> RunFolder:
    """The run's serve.json with `fields` changed by hand."""
    info = ready.read(run.path)
    assert info is not None
    ready.write(run.path, {**info, **fields})
    return run


def test_served_jobs_are_the_running_ones_newest_first_and_bad_files_are_dropped(server: Server) -> None:
    older = served_run(server, "older", api_key_env="VLLM_API_KEY")
    served_run(server, "ended", state="succeeded")
    edited(served_run(server, "bad url"), url="file:///etc/passwd")
    edited(served_run(server, "bad key"), api_key_env="$(reboot)")
    newer = served_run(server, "newer", answers=False)
    jobs = served_jobs()
    assert [j.run_id for j in jobs][0] == newer.id and {older.id, newer.id} <= {j.run_id for j in jobs}
    assert all("ended" not in j.run_id and "bad-url" not in j.run_id for j in jobs)
    by_id = {j.run_id: j for j in jobs}
    assert by_id[older.id].api_key_env == "VLLM_API_KEY" and "warming up" in by_id[newer.id].summary()
    assert next(j for j in jobs if "bad-key" in j.run_id).api_key_env == ""


async def test_chat_on_a_served_job_streams_stops_with_esc_and_answers_again(
    server: Server, cpu_accelerator: Accelerator
) -> None:
    run = served_run(server, "serve demo")
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "m")
        dialog = app.screen
        assert isinstance(dialog, LoadDialog)
        assert dialog.query_one("#load-served", Select).value == run.id  # the ready served job, offered first
        assert dialog.query_one("#load-endpoint", Input).value == server.url
        assert dialog.query_one("#load-server-model", Input).value == server.model
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.session is not None
        assert screen.session.options.endpoint == server.url
        await wait_until(pilot, lambda: screen.engine_state == "ready", timeout=30)
        label = f"{server.model} @ {server.url}"
        assert server.url in str(screen.query_one("#chat-model", Static).render())

        store = screen.store
        assert store is not None
        conversation = store.conversations()[0]  # the screen's, made at its mount
        store.set_params(conversation.id, GenerationParams(max_new_tokens=200))  # before the question
        await pilot.press("i")
        await send(pilot, "What is hl-smi?")
        await wait_until(pilot, lambda: screen.live is not None and bool(screen.live.text))
        await pilot.press("escape")
        await wait_until(pilot, lambda: screen.live is None)
        stopped = store.messages(conversation.id)[-1]
        assert stopped.status == "partial" and stopped.content and stopped.model == label
        assert stopped.metrics is not None and stopped.metrics.stopped and stopped.metrics.tokens_out < 200
        assert screen.engine_state == "ready"

        store.set_params(conversation.id, GenerationParams(max_new_tokens=16))
        await pilot.press("i")
        await send(pilot, "What is Intel Gaudi?")
        await wait_until(pilot, lambda: screen.live is None and len(store.messages(conversation.id)) == 4)
        answer = store.messages(conversation.id)[-1]
        assert answer.status == "complete" and answer.model == label
        assert answer.metrics is not None and answer.metrics.tokens_out == 16
        assert "TTFT" in str(screen.query_one("#chat-status", Static).render())


async def test_side_by_side_a_server_beside_the_panels_own_engine(
    server: Server, cpu_accelerator: Accelerator
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "c")
        dialog = app.screen
        assert isinstance(dialog, CompareDialog)
        dialog.query_one("#compare-first", Input).value = server.url
        dialog.query_one("#compare-second", Input).value = "demo"
        dialog.query_one("#compare-second", Input).focus()
        await pilot.press("enter")
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        await wait_until(pilot, lambda: compare.comparison is not None and bool(compare.comparison.reports))
        assert compare.comparison is not None and not compare.comparison.plan.shared
        who = [p.label for p in compare.comparison.provenances]
        assert who == [f"{server.model} @ {server.url}", "demo model"]
        compare.params = GenerationParams(max_new_tokens=12)
        compare.query_one("#compare-input", Input).focus()
        await pilot.press(*"What is hl-smi?")
        await pilot.press("enter")
        store = compare.store
        assert store is not None

        def answers() -> list[StoredMessage]:
            if compare.conversation_id is None:
                return []
            return [m for m in store.messages(compare.conversation_id) if m.role == "assistant"]

        await wait_until(pilot, lambda: len(answers()) == 2 and all(m.status != "partial" for m in answers()))
        stored = answers()
        assert [m.model for m in stored] == who
        assert all(m.status == "complete" and m.content for m in stored), stored


async def test_trying_a_trained_model_leaves_the_server_for_the_panels_engine(
    cpu_accelerator: Accelerator,
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, ChatScreen) and screen.session is not None
        screen.session.options = LoadOptions(endpoint="http://127.0.0.1:1", api_key_env="KEY", model="served")
        screen.try_trained("demo")  # Training's `t`: the model is the job's, loaded here
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert screen.session.options == LoadOptions(model="demo")


async def test_the_load_dialog_switches_between_a_server_and_a_model_here(
    cpu_accelerator: Accelerator,
) -> None:
    app = GaudiApp(accelerator=cpu_accelerator, hostname="h")
    chosen: list[LoadOptions | None] = []
    async with app.run_test(size=(100, 30)) as pilot:
        for before, key, field, value, expected in [
            (LoadOptions(), "right", "#load-endpoint", "http://127.0.0.1:1",
             LoadOptions(endpoint="http://127.0.0.1:1", model="")),
            (LoadOptions(endpoint="http://127.0.0.1:1", model="served"), "left", "#load-model", "", LoadOptions()),
        ]:  # fmt: skip
            app.push_screen(LoadDialog(before, cpu_accelerator, served=[]), chosen.append)
            await pilot.pause()
            dialog = app.screen
            assert isinstance(dialog, LoadDialog) and not dialog.query("#load-served")  # no served job
            await pilot.press("shift+tab", key)  # to the parts' tabs, then the other part
            await pilot.pause()
            dialog.query_one(field, Input).value = value
            dialog.query_one(field, Input).focus()
            await pilot.press("enter")  # the other part's model field is its own: this part's default
            await wait_until(pilot, lambda: len(chosen) == 1)
            assert chosen.pop() == expected
