"""Two models answering the same question side by side: base and tuned, or two checkpoints of a run.

When the two differ only by an adapter on one base, ONE engine serves both (the base is loaded
once; each answer is a row of one batch with its own adapter, the base's with the adapter off).
Otherwise each model gets its own engine and both answer at the same time; so does an
OpenAI-compatible server on either side (core/chat/endpoint.py: a URL names one). Textual-free: the
Chat screen's side-by-side view and `gaudi-tui chat --compare` both use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gaudi_tui.core.chat import served, trained
from gaudi_tui.core.chat.backend import open_client
from gaudi_tui.core.chat.client import Answer, EngineClient
from gaudi_tui.core.chat.errors import ChatError
from gaudi_tui.core.chat.metrics import LoadReport
from gaudi_tui.core.chat.openai_api import parse_url
from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
from gaudi_tui.core.chat.trained import Provenance

SIDES = 2


@dataclass(frozen=True)
class Plan:
    """The engines to start (their load options), and which engine and row answers for each side."""

    engines: tuple[LoadOptions, ...]
    sides: tuple[tuple[int, int], ...]

    @property
    def shared(self) -> bool:
        return len(self.engines) == 1


def plan(first: LoadOptions, second: str) -> Plan:
    """One engine when the two differ only by an adapter (and nothing is merged), else two; a
    server (`first.endpoint`, or a URL as `second`) answers on its side."""
    if first.endpoint or is_url(second):
        return Plan((first, second_options(first, second)), ((0, 0), (1, 0)))
    a, b = trained.resolve_pair(first.model, second)
    if a.adapter is None and b.adapter is None and a.base_ref == b.base_ref:
        raise ChatError("compare", f"Both sides name the same model ({a.label}): choose two different ones.")
    one_base = a.base_ref == b.base_ref and a.quantized_base == b.quantized_base
    if one_base and not first.merge:
        return Plan((replace(first, compare=second),), ((0, 0), (0, 1)))
    other = str(b.adapter) if b.adapter is not None else b.base_ref
    return Plan((first, replace(first, model=other, compare="")), ((0, 0), (1, 0)))


def is_url(text: str) -> bool:
    return text.strip().startswith(("http://", "https://"))


def key_env_for(url: str, known: LoadOptions) -> str:
    """The key variable of the server at `url`: `known`'s when it names a server of the same origin,
    else that of the panel's served job there, else none (a key goes only where it was named for)."""
    origin = _origin(url)
    if origin is None:
        return ""
    if known.endpoint and _origin(known.endpoint) == origin:
        return known.api_key_env
    return next((job.api_key_env for job in served.served_jobs() if _origin(job.url) == origin), "")


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        endpoint = parse_url(url)
    except ChatError:
        return None
    return endpoint.scheme, endpoint.host.lower(), endpoint.port


def first_options(text: str, current: LoadOptions) -> LoadOptions:
    """The first side as typed in the dialog: a server's URL (the model chosen for it if it is the
    current server, else its only one) or a model of the panel's, loaded as `current` says."""
    if is_url(text):
        url = text.strip()
        model = current.model if current.endpoint == url else ""
        return LoadOptions(endpoint=url, api_key_env=key_env_for(url, current), model=model)
    return replace(current, model=text, endpoint="", api_key_env="")


def second_options(first: LoadOptions, second: str) -> LoadOptions:
    """The other side beside a server: a second server's only model (with its own key: `key_env_for`),
    or a model of the panel's loaded as `first` says (an endpoint has no base model to compare with)."""
    if is_url(second):
        if second.strip() == first.endpoint:
            raise ChatError("compare", f"Both sides name the same server ({second.strip()}): choose two.")
        url = second.strip()
        return LoadOptions(endpoint=url, api_key_env=key_env_for(url, first), model="")
    if second.strip() == "base":
        raise ChatError(
            "compare", "A server's model has no base here: name a local model, a job id or a URL."
        )
    return replace(first, model=second, endpoint="", api_key_env="", compare="")


class Comparison:
    """The engines of one comparison; `load` then `ask` (from worker threads), `close` at the end."""

    def __init__(
        self,
        first: LoadOptions,
        second: str,
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        on_exit: Callable[[str], None] | None = None,
    ) -> None:
        self.plan = plan(first, second)
        self.clients = [
            open_client(o, env=env, on_exit=on_exit, log_path=log_path) for o in self.plan.engines
        ]
        self.reports: list[LoadReport] = []

    @property
    def provenances(self) -> list[Provenance]:
        """Who answers on each side (after `load`)."""
        return [self.reports[engine].rows[row] for engine, row in self.plan.sides]

    def load(
        self, on_progress: Callable[[int, str], None] | None = None, cancel: threading.Event | None = None
    ) -> list[LoadReport]:
        """Start and load every engine at once; the first failure ends them all and is raised."""
        results: list[LoadReport | ChatError | None] = [None] * len(self.clients)

        def load_one(i: int) -> None:
            client = self.clients[i]
            try:
                client.start()
                progress = None if on_progress is None else (lambda stage: on_progress(i, stage))
                results[i] = client.load(self.plan.engines[i], on_progress=progress, cancel=cancel)
            except ChatError as exc:
                results[i] = exc

        _each(load_one, len(self.clients))
        failed = [r for r in results if isinstance(r, ChatError)]
        if failed:
            self.close()
            raise failed[0]
        self.reports = [r for r in results if isinstance(r, LoadReport)]
        return self.reports

    def ask(
        self,
        messages: Sequence[Mapping[str, str]],
        params: GenerationParams,
        on_text: Callable[[int, str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> list[Answer]:
        """Both answers to `messages`, streamed at the same time; `on_text(side, text)`."""
        if self.plan.shared:
            rows = [row for _, row in self.plan.sides]
            engine = self.clients[0]
            assert isinstance(engine, EngineClient)  # only an engine serves two models
            return engine.generate_rows(messages, params, rows, on_text, cancel)
        results: list[Answer | ChatError | None] = [None] * SIDES

        def ask_one(side: int) -> None:
            text = None if on_text is None else (lambda chunk: on_text(side, chunk))
            try:
                results[side] = self.clients[side].generate(messages, params, on_text=text, cancel=cancel)
            except ChatError as exc:
                results[side] = exc

        _each(ask_one, SIDES)
        failed = [r for r in results if isinstance(r, ChatError)]
        if failed:
            raise failed[0]
        return [r for r in results if isinstance(r, Answer)]

    def stop(self) -> None:
        for client in self.clients:
            client.stop()

    def close(self) -> None:
        for client in self.clients:
            client.shutdown()


def _each(job: Callable[[int], None], count: int) -> None:
    """Run `job(0..count-1)` at once, each in its own thread (the last in this one), and wait. Each
    job is an engine call, which returns on its result, its error or its engine's exit."""
    threads = [threading.Thread(target=job, args=(i,), daemon=True) for i in range(count - 1)]
    for thread in threads:
        thread.start()
    job(count - 1)
    for thread in threads:
        thread.join()
