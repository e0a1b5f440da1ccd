"""Chat with an OpenAI-compatible endpoint (core/chat/endpoint.py) against a real server:
`transformers serve` with the demo model on CPU (tests/chat/serving.py), started once per module."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from gaudi_tui.core.chat.endpoint import EndpointClient
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.openai_api import parse_url
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.session import AnswerEnd, EngineState, LiveAnswer
from gaudi_tui.core.chat.store import ChatStore
from tests.chat.serving import Server, free_port, serving_installed, start_server
from tests.chat.test_session import deliver, make_session

LONG = GenerationParams(max_new_tokens=120)
QUESTION = [{"role": "user", "content": "What is hl-smi?"}]


def connected(server: Server) -> EndpointClient:
    client = EndpointClient(server.url + "/v1")
    client.load(LoadOptions(endpoint=server.url, model=""))
    return client


def test_load_finds_the_only_model_and_an_answer_streams_with_its_metrics(server: Server) -> None:
    client = EndpointClient(server.url + "/v1/")
    report = client.load(LoadOptions(endpoint=server.url, model=""))
    assert client.model == server.model and report.label == f"{server.model} @ {server.url}"
    assert report.provenance.base == server.model and report.summary().startswith(report.label)
    chunks: list[str] = []
    answer = client.generate(QUESTION, LONG, on_text=chunks.append)
    assert not answer.stopped and answer.text == "".join(chunks) and len(chunks) > 10
    metrics = answer.metrics
    assert metrics.tokens_out == LONG.max_new_tokens, "the server's usage counts the tokens"
    assert metrics.tokens_in > 5 and metrics.ttft_s is not None and 0 < metrics.ttft_s < metrics.total_s
    assert metrics.decode_tps is not None and metrics.decode_tps > 0


def test_stop_closes_the_stream_and_the_server_answers_the_next_question(server: Server) -> None:
    client = connected(server)
    stop = threading.Event()
    answer = client.generate(
        QUESTION, GenerationParams(max_new_tokens=200), on_text=lambda _: stop.set(), cancel=stop
    )
    assert answer.stopped and answer.metrics.stopped and answer.text
    assert answer.metrics.tokens_out < 200
    again = client.generate(QUESTION, GenerationParams(max_new_tokens=20))
    assert not again.stopped and again.metrics.tokens_out == 20 and again.text


def test_a_model_the_server_does_not_serve_is_refused_naming_what_it_serves(server: Server) -> None:
    with pytest.raises(ChatError, match="does not serve 'no-such-model'; it serves: /") as caught:
        EndpointClient(server.url).load(LoadOptions(endpoint=server.url, model="no-such-model"))
    assert caught.value.kind == "model" and server.model in caught.value.message


def test_unreachable_and_bad_urls_say_what_to_do() -> None:
    port = free_port()  # bound then released: nothing listens there
    with pytest.raises(ChatError, match=r"Cannot reach http://127.0.0.1:\d+: connection refused") as caught:
        EndpointClient(f"http://127.0.0.1:{port}").load(LoadOptions(endpoint="x"))
    assert caught.value.kind == "unreachable" and "gaudi-tui jobs" in caught.value.message
    for url, why in [
        ("ftp://host", "not an http"),
        ("127.0.0.1:8000", "not an http"),
        ("http://user:secret@host", "environment variable"),
        ("http://host:99999", "not a URL"),
    ]:
        with pytest.raises(ChatError, match=why) as caught:
            EndpointClient(url).load(LoadOptions(endpoint=url))
        assert "secret" not in caught.value.message
    assert parse_url("https://example.org/proxy/v1/").url == "https://example.org:443/proxy"


def test_an_api_key_comes_from_the_named_variable_and_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    client = EndpointClient("http://127.0.0.1:1", api_key_env="GAUDI_TEST_KEY")
    with pytest.raises(ChatError, match="GAUDI_TEST_KEY .* is not set"):
        client.load(LoadOptions(endpoint="x"))
    monkeypatch.setenv("GAUDI_TEST_KEY", "sk-very-secret")
    credential = client._credential()
    assert credential is not None and credential.value == "Bearer sk-very-secret"
    assert credential.origin.netloc == "127.0.0.1:1" and "sk-very" not in repr(credential)
    refused = client._refused(401, {"detail": "bad key sk-very-secret"}, "the model list")
    assert "sk-very-secret" not in refused.message and "check the key in GAUDI_TEST_KEY" in refused.message
    with pytest.raises(ChatError, match="not an environment variable name"):
        EndpointClient("http://h", api_key_env="A;rm").load(LoadOptions(endpoint="x"))


def test_the_server_killed_mid_answer_is_a_clear_error_and_the_partial_answer_is_kept(
    long_model: Path, tmp_path: Path
) -> None:
    serving_installed()
    doomed = start_server(long_model, tmp_path / "serve.log")
    try:
        client = connected(doomed)
        with pytest.raises(ChatError) as caught:
            client.generate(QUESTION, GenerationParams(max_new_tokens=200), on_text=lambda _: doomed.kill())
    finally:
        doomed.stop()
    error = caught.value
    assert error.kind == "endpoint_lost" and error.partial, error.message
    assert "ended mid-answer" in error.message and "partial answer is kept" in error.message
    with pytest.raises(ChatError, match="connection refused"):
        client.generate(QUESTION, LONG)


def test_a_chat_session_on_the_endpoint_answers_stops_and_answers_again(
    server: Server, tmp_path: Path
) -> None:
    store = ChatStore(tmp_path / "chat.sqlite3")
    session, inbox, threads = make_session(store, tmp_path)
    session.options = LoadOptions(endpoint=server.url, model="")
    conversation = store.create()
    store.set_params(conversation.id, GenerationParams(max_new_tokens=200))
    _, live = session.ask(conversation.id, "What is hl-smi?")
    assert live is None and session.state is EngineState.LOADING
    started = deliver(session, inbox, lambda event, result: event == "loaded")
    assert isinstance(started, LiveAnswer) and session.state is EngineState.GENERATING
    deliver(session, inbox, lambda event, result: event == "add_text")
    assert session.stop()
    end = deliver(session, inbox, lambda event, result: event == "finish")
    assert (
        isinstance(end, AnswerEnd)
        and end.status == "partial"
        and end.metrics is not None
        and end.metrics.stopped
    )
    label = f"{server.model} @ {server.url}"
    stored = store.messages(conversation.id)[-1]
    assert stored.model == label and stored.status == "partial" and stored.content == end.text
    assert session.state is EngineState.READY and server.url in session.status_text().card

    store.set_params(conversation.id, GenerationParams(max_new_tokens=20))
    _, live = session.ask(conversation.id, "And gaudi-tui?")
    assert isinstance(live, LiveAnswer)
    end = deliver(session, inbox, lambda event, result: event == "finish")
    assert isinstance(end, AnswerEnd) and end.status == "complete" and end.metrics is not None
    assert end.metrics.tokens_out == 20 and store.messages(conversation.id)[-1].model == label
    threads.join()


def test_stop_ends_an_answer_at_once_while_the_server_is_silent() -> None:
    """A server that accepted the request but sends nothing yet (a long prefill, a queue): the stop
    shuts the socket down instead of waiting for the next chunk (up to READ_TIMEOUT_S)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    client = EndpointClient(f"http://127.0.0.1:{listener.getsockname()[1]}")
    client.model = "m"  # as `load` leaves it
    answers = []
    worker = threading.Thread(target=lambda: answers.append(client.generate(QUESTION, LONG)), daemon=True)
    worker.start()
    deadline = time.monotonic() + 10
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.01)  # polling for the state: the request's connection accepted
    client.stop()
    worker.join(timeout=5)
    try:
        assert not worker.is_alive(), "the stop did not end the silent stream"
        assert answers[0].stopped and answers[0].text == ""
    finally:
        for sock in (*accepted, listener):
            sock.close()


def test_a_session_keeps_the_partial_answer_when_the_server_dies_mid_answer(
    long_model: Path, tmp_path: Path
) -> None:
    serving_installed()
    doomed = start_server(long_model, tmp_path / "serve.log")
    try:
        store = ChatStore(tmp_path / "chat.sqlite3")
        session, inbox, threads = make_session(store, tmp_path)
        session.options = LoadOptions(endpoint=doomed.url, model="")
        conversation = store.create()
        store.set_params(conversation.id, GenerationParams(max_new_tokens=200))
        session.ask(conversation.id, "What is hl-smi?")
        deliver(session, inbox, lambda event, result: event == "add_text")
        doomed.kill()
        end = deliver(session, inbox, lambda event, result: event == "finish")
    finally:
        doomed.stop()
    assert isinstance(end, AnswerEnd) and end.error is not None and end.error.kind == "endpoint_lost"
    stored = store.messages(conversation.id)[-1]
    assert stored.status == "partial" and stored.content and stored.content == end.text
    assert stored.note is not None and "ended mid-answer" in stored.note
    assert session.state is EngineState.READY  # the next question says the server is gone
    _, live = session.ask(conversation.id, "Still there?")
    assert live is not None
    end = deliver(session, inbox, lambda event, result: event == "finish")
    assert isinstance(end, AnswerEnd) and end.status == "error" and "connection refused" in (end.note or "")
    assert [m.role for m in store.messages(conversation.id)] == ["user", "assistant", "user", "assistant"]
    threads.join()
