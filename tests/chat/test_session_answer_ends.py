"""A chat session on an endpoint whose answer fails in a way nobody planned for still ends that
answer, so the next question is answered (issue 38, H2: the session's half). On 73fabd2 the answer's
thread died with the exception, `session.live` stayed set, and every later question said "An answer
is still streaming" until the panel restarted. The server is a real OpenAI-compatible one on an
ephemeral loopback port (http.server: /v1/models, then SSE streams as vLLM frames them); the session,
its store and its client are the product's."""

from __future__ import annotations

import http.server
import json
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.session import AnswerEnd, ChatSession, LiveAnswer
from gaudi_tui.core.chat.store import ChatStore
from tests.chat.test_session import Inbox, Threads, deliver, make_session


def sse(chunk: object) -> bytes:
    return b"data: " + (chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()) + b"\n\n"


def text_chunk(text: str, finish: str | None = None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


class Endpoint:
    """Answers /v1/models with one model, and each chat request with the next of `answers`:
    "huge integer" (a chunk holding a 5000-digit integer), "slow" (a chunk every 50 ms until the
    client goes, at most 10 s) or "good" (two chunks, then [DONE])."""

    def __init__(self) -> None:
        self.answers: queue.Queue[str] = queue.Queue()
        self.stop = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                outer.stream(self.wfile, outer.answers.get_nowait())

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stream(self, out: object, answer: str) -> None:
        write = out.write  # type: ignore[attr-defined]
        try:
            if answer == "huge integer":
                write(
                    sse(text_chunk("Hello"))
                    + sse(b'{"choices": [], "usage": {"completion_tokens": ' + b"7" * 5000 + b"}}")
                )
            elif answer == "slow":
                for _ in range(200):
                    write(sse(text_chunk("tok ")))
                    out.flush()  # type: ignore[attr-defined]
                    if self.stop.wait(0.05):
                        return
            else:
                write(sse(text_chunk("Gaudi ")) + sse(text_chunk("answers.", "stop")) + b"data: [DONE]\n\n")
        except OSError:
            pass  # the client ended the stream

    def close(self) -> None:
        self.stop.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint()
    yield served
    served.close()


def first_answer(endpoint: Endpoint, tmp_path: Path) -> tuple[ChatSession, Inbox, Threads, ChatStore, int]:
    """A session on `endpoint` whose first question's answer has begun."""
    store = ChatStore(tmp_path / "chat.sqlite3")
    session, inbox, threads = make_session(store, tmp_path)
    session.options = LoadOptions(endpoint=endpoint.url, model="")
    conversation = store.create().id
    store.set_params(conversation, GenerationParams(max_new_tokens=64))
    session.ask(conversation, "What is HL-225?")
    assert isinstance(deliver(session, inbox, lambda event, result: event == "loaded"), LiveAnswer)
    return session, inbox, threads, store, conversation


def ended(session: ChatSession, inbox: Inbox, threads: Threads) -> AnswerEnd:
    """Once the answer's thread is over: how the session ended the answer (the events it left)."""
    threads.join()
    while True:
        try:
            event, args = inbox.events.get_nowait()
        except queue.Empty:
            raise AssertionError(
                "the answer's thread ended and the answer did not: the session still streams"
            ) from None
        result = getattr(session, event)(*args)
        if event == "finish":
            assert isinstance(result, AnswerEnd)
            return result


def answers_again(session: ChatSession, inbox: Inbox, store: ChatStore, conversation: int) -> None:
    _, live = session.ask(conversation, "And HL-325L?")
    assert isinstance(live, LiveAnswer)
    end = deliver(session, inbox, lambda event, result: event == "finish", timeout=30)
    assert isinstance(end, AnswerEnd) and end.status == "complete" and end.text == "Gaudi answers."
    stored = store.messages(conversation)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].status == "partial" and stored[3].status == "complete"


def test_h2_a_chunk_holding_a_5000_digit_integer_ends_the_answer_and_the_next_is_asked(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    """73fabd2: json's ValueError (more than 4300 digits) left the client and killed the answer's thread."""
    endpoint.answers.put("huge integer")
    endpoint.answers.put("good")
    session, inbox, threads, store, conversation = first_answer(endpoint, tmp_path)
    end = ended(session, inbox, threads)
    assert end.status == "partial" and end.error is not None and end.text == "Hello"
    assert session.live is None
    answers_again(session, inbox, store, conversation)


def test_h2_an_unexpected_failure_mid_answer_still_ends_it(endpoint: Endpoint, tmp_path: Path) -> None:
    """The store refuses the answer's periodic save mid-stream (a disk that filled): an exception
    that is no ChatError leaves the client through its text callback. The session ends the answer
    saying so, and once the store can be written again the next question is answered."""
    endpoint.answers.put("slow")
    endpoint.answers.put("good")
    session, inbox, threads, store, conversation = first_answer(endpoint, tmp_path)
    with store._lock:
        store._db.execute("PRAGMA query_only = ON")  # every write fails from now on, as on a full disk
    threads.join()  # the answer's thread is over: its first save (after 1 s of text) failed
    with store._lock:
        store._db.execute("PRAGMA query_only = OFF")
    end = ended(session, inbox, threads)
    assert end.status == "partial" and end.error is not None and "ask again" in end.error.message
    assert "attempt to write a readonly database" in end.error.message
    assert session.live is None
    answers_again(session, inbox, store, conversation)
