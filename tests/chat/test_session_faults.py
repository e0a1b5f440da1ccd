"""The chat session when things go wrong mid-answer: `m` loads another engine, an engine that
never answers a stop, a store that cannot be written. Real engines with the demo model."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from gaudi_tui.core.chat import client as client_mod
from gaudi_tui.core.chat.errors import ChatError, EngineDied
from gaudi_tui.core.chat.options import LoadOptions
from gaudi_tui.core.chat.session import EngineState, LiveAnswer
from gaudi_tui.core.chat.store import ChatStore
from tests.chat.conftest import start_engine
from tests.chat.test_session import LONG, deliver, make_session

QUESTION = [{"role": "user", "content": "What is hl-smi?"}]


def test_m_during_an_answer_keeps_the_new_engine_and_its_state(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chat.sqlite3")
    session, inbox, threads = make_session(store, tmp_path)
    conversation = store.create()
    store.set_params(conversation.id, LONG)
    session.ask(conversation.id, "What is HL-225?")
    assert isinstance(deliver(session, inbox, lambda event, result: event == "loaded"), LiveAnswer)
    deliver(session, inbox, lambda event, result: event == "add_text" and bool(result.text))
    old = session.client
    session.load(LoadOptions())  # m: another model while the answer streams; the old engine ends
    new = session.client
    assert new is not None and new is not old
    seen: set[str] = set()
    deliver(session, inbox, lambda event, result: seen.add(event) or {"finish", "loaded"} <= seen)
    assert session.client is new and new.alive  # owned, not orphaned
    assert session.state is EngineState.READY and session.status_text().banner == ""
    assert old is not None and not old.alive
    assert store.messages(conversation.id)[-1].status in ("partial", "error")
    session.unload()
    threads.join()
    assert not new.alive


def test_an_engine_that_never_answers_a_stop_is_ended_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_mod, "STOP_WAIT_S", 2.0)
    engine = start_engine(tmp_path, LoadOptions())
    try:
        got: list[object] = []
        first = threading.Event()

        def answer() -> None:
            try:
                got.append(engine.generate(QUESTION, LONG, on_text=lambda _: first.set()))
            except ChatError as exc:
                got.append(exc)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        assert first.wait(60)
        assert engine.pid is not None
        os.kill(engine.pid, signal.SIGSTOP)  # frozen: it will send nothing more
        start = time.monotonic()
        engine.stop()
        thread.join(30)
        assert not thread.is_alive() and time.monotonic() - start < 2.0 + 10
        assert isinstance(got[0], EngineDied) and "did not stop within 2 s" in got[0].message
        assert not engine.alive  # ended: the card is free
    finally:
        engine.kill()


def test_a_store_that_cannot_be_written_is_a_chat_error(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chat.sqlite3")
    session, _, _ = make_session(store, tmp_path)
    conversation = store.create()
    store._db.execute("PRAGMA query_only = ON")  # every write now fails, as on a read-only file
    with pytest.raises(ChatError, match="Cannot save the message in .*chat.sqlite3: attempt to write"):
        session.ask(conversation.id, "Hello?")
    assert session.state is EngineState.NONE and session.live is None


async def test_an_export_that_cannot_be_written_is_a_message_not_a_crash(gaudi_home: Path) -> None:
    from gaudi_tui.ui.app import GaudiApp
    from gaudi_tui.ui.screens.chat import ChatScreen
    from tests.chat.seed import seed_conversations
    from tests.conftest import CPU

    seed_conversations()
    (gaudi_home / "data").mkdir(parents=True, exist_ok=True)
    (gaudi_home / "data" / "exports").write_text("a file where the exports folder should be")
    app = GaudiApp(accelerator=CPU, hostname="h")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.press("3")
        assert isinstance(app.screen, ChatScreen)
        await pilot.press("e")
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, ChatScreen)
        assert any(n.message.startswith("Cannot export: ") for n in app._notifications)  # noqa: SLF001
