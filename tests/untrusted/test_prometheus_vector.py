"""`core/untrusted/vector.py`, the reader of Prometheus's instant-vector answers from their bytes: it
reads what the JSON reader reads, refuses or leaves to the JSON reader what it does not, and meets
the hostile catalogue (tests/untrusted/cases.py) through the Prometheus client, served by a raw
loopback server: each case where one result's value goes, and where one of its labels goes.

The catalogue's 100 MiB line and endless stream are the HTTP client's to bound (the client reads at
most `prometheus.MAX_ANSWER` of an answer): tests/untrusted/test_hostile_http.py sends them to the
Prometheus reader; here every answer is held whole, as the client holds it.
"""

from __future__ import annotations

import json
import math
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gaudi_tui.core.fleet.prometheus import PrometheusClient, PrometheusError
from gaudi_tui.core.untrusted import vector
from gaudi_tui.core.untrusted.data import Untrusted, loads
from tests.raw_server import RawServer
from tests.untrusted.cases import CASES, assert_bounded

HEAD = '{"status":"success","data":{"resultType":"vector","result":['


def answer(results: list[tuple[dict[str, str], str]]) -> bytes:
    """An instant vector as Prometheus writes it: compact, labels in name order."""
    items = [
        {"metric": dict(sorted(labels.items())), "value": [1796619240, value]} for labels, value in results
    ]
    document = {"status": "success", "data": {"resultType": "vector", "result": items}}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def decoded(body: bytes, one: str, other: str) -> list[tuple[str, str, float]]:
    """What the JSON reader gives of the same answer, the finite values only."""
    document = loads(body)
    assert isinstance(document, dict)
    return [
        (item["metric"][one], item["metric"][other], float(item["value"][1]))
        for item in document["data"]["result"]
        if math.isfinite(float(item["value"][1]))
    ]


LABEL = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
NUMBER = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["NaN", "+Inf", "-Inf", "1e+06", "-1.5e-07", "0.25"]),
)


@given(st.lists(st.tuples(LABEL, LABEL, NUMBER), max_size=20))
def test_pairs_read_what_the_json_reader_reads(results: list[tuple[str, str, str]]) -> None:
    """Any answer of `… by (instance, id)`: the same triples as the JSON reader's, in both label
    orders, the NaN and infinite values left out and counted; an answer with an escape (a quote, a
    backslash or a control character in a label) is left to the JSON reader."""
    body = answer([({"instance": i, "id": c}, v) for i, c, v in results])
    scanned = vector.pairs(body, "instance", "id")
    if b"\\" in body:
        assert scanned is None
        return
    assert scanned is not None
    assert scanned.values == decoded(body, "instance", "id")
    document = loads(body)
    assert isinstance(document, dict)
    assert [
        (m["instance"], m["id"], v) for m, v in vector.results(document["data"]["result"])
    ] == scanned.values
    assert [(b, a, v) for a, b, v in vector.pairs(body, "id", "instance").values] == scanned.values  # type: ignore[union-attr]
    assert scanned.skipped == sum(not math.isfinite(float(v)) for _, _, v in results)
    keyed = vector.keyed(body, "instance", "id")
    assert keyed is not None
    assert {k.decode(): vector.number(v) for k, v in keyed.items()} == {
        i: (float(v) if math.isfinite(float(v)) else None) for i, _, v in results
    }


@pytest.mark.parametrize(
    "body",
    [
        answer([({"instance": "a", "id": "0", "job": "j"}, "1")]),  # another label
        answer([({"instance": "a"}, "1")]),  # a label missing
        answer([({"instance": 'a"b', "id": "0"}, "1")]),  # an escape
        answer([({"instance": "a", "id": "0"}, "1")])[:-1] + b',"warnings":["w"]}',
        b'{"status":"error","errorType":"bad_data","error":"parse error"}',
        b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
    ],
)
def test_any_other_shape_is_left_to_the_json_reader(body: bytes) -> None:
    assert vector.pairs(body, "instance", "id") is None
    assert vector.keyed(body, "instance", "id") is None


def test_a_value_that_is_no_number_or_a_label_that_is_not_text_is_refused() -> None:
    for bad in ("1_000", "e", "+-1", "0x10", "infinity", " 1"):
        body = answer([({"instance": "a", "id": "0"}, bad)])
        try:  # refused, or not in the form it reads (then the JSON reader's `value` refuses it)
            assert vector.pairs(body, "instance", "id") is None, f"{bad!r} read as a number"
        except Untrusted:
            pass
        with pytest.raises(Untrusted):
            vector.results([{"metric": {}, "value": [1, "1"]}, {"metric": {}, "value": [1, bad]}])
        assert vector.number(bad.encode()) is None
    not_text = HEAD.encode() + b'{"metric":{"id":"0","instance":"\xff"},"value":[1,"1"]}]}}'
    with pytest.raises(Untrusted):
        vector.pairs(not_text, "instance", "id")
    with pytest.raises(Untrusted):
        vector.keyed(not_text, "instance", "id")
    values = [{"metric": {"a": "x"}, "value": [1, v]} for v in ("NaN", "-2.5e+03", "+Inf", "7")]
    assert vector.results(values) == [({"a": "x"}, -2500.0), ({"a": "x"}, 7.0)]
    for shape in (
        {"metric": {}, "value": [1, "1"]},  # not a list
        [{"metric": {"a": 7}, "value": [1, "1"]}],  # a label that is no string
        [{"metric": ["a"], "value": [1, "1"]}],
        [{"value": [1, "1"]}],
        [{"metric": {}, "value": [1]}],
        [{"metric": {}, "value": [1, 1.5]}],  # a number that is not a string
        [{"metric": {}, "value": [1, "1,2"]}],  # two numbers in one
    ):
        with pytest.raises(Untrusted):
            vector.results(shape)
    assert vector.results([]) == []
    assert vector.number(b"+Inf") is None and vector.number(b"12") == 12.0


# ---- the hostile catalogue, through the client ----------------------------------------------------------


class Answering(RawServer):
    """A loopback server answering every request with `body` (set by each test)."""

    def __init__(self) -> None:
        self.body = b""
        super().__init__(self._answer)

    def _answer(self, conn: socket.socket, stop: threading.Event) -> None:
        while b"\r\n\r\n" not in conn.recv(65536):
            pass
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        conn.sendall(head + b"Content-Length: %d\r\n\r\n" % len(self.body) + self.body)


@pytest.fixture(scope="module")
def server() -> Iterator[Answering]:
    serving = Answering()
    yield serving
    serving.close()


GOOD = ("h1", "h3")
"""The hosts of the good results around the hostile one (h2)."""
VALUE_CASES = [name for name, case in CASES.items() if isinstance(case, bytes)]
READS: dict[str, Callable[[PrometheusClient], object]] = {
    "card values": lambda client: client.card_values("q"),
    "host values": lambda client: client.pair_values("q", "instance", "job"),
    "free cards": lambda client: {
        k.decode(): vector.number(v) for k, v in client.keyed_values("q", "instance", "job").items()
    },
}


def hostile(case: bytes, where: str, second: str) -> bytes:
    """Three results, labels in name order, the middle one's value or `instance` label replaced by
    `case`."""
    items = []
    for host in (b"h1", b"h2", b"h3"):
        instance, value = b'"%s"' % host, b'"7"'
        if host == b"h2":
            instance, value = (case, value) if where == "label" else (instance, case)
        labels = sorted([(b"instance", instance), (second.encode(), b'"0"')])
        metric = b",".join(b'"%s":%s' % label for label in labels)
        items.append(b'{"metric":{%s},"value":[1,%s]}' % (metric, value))
    return HEAD.encode() + b",".join(items) + b"]}}"


@pytest.mark.parametrize("where", ["value", "label"])
@pytest.mark.parametrize("case", VALUE_CASES)
@pytest.mark.parametrize("read", list(READS))
def test_a_hostile_result_is_refused_or_skipped_and_the_others_read(
    server: Answering, read: str, case: str, where: str
) -> None:
    """Memory and time bounded, and then either the answer refused as a whole (a PrometheusError,
    which the screen shows as a problem line) or the good results read with their values and the
    hostile one left out or read as a value in range (a number written as a JSON number, a bare
    word); never a NaN, an infinity, a huge integer or a string that is not text."""
    server.body = hostile(CASES[case], where, "job" if read != "card values" else "id")  # type: ignore[arg-type]
    client = PrometheusClient(server.url, timeout=5)
    got = assert_bounded(lambda: READS[read](client), errors=(PrometheusError,))
    if isinstance(got, PrometheusError):
        assert str(got)
        return
    found = dict(got) if isinstance(got, dict) else {i: v for i, _, v in got}  # type: ignore[attr-defined]
    assert found.get("h1") == found.get("h3") == 7.0, found
    for name, value in found.items():
        assert isinstance(name, str) and name.encode()
        assert value is None or (isinstance(value, float) and math.isfinite(value)), (name, value)
