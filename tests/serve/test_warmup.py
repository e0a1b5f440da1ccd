"""vLLM's published warm-up and failure lines (tests/serve/data, each with its source in SOURCES.md)
read into the job list's words: bucket i of N, the time left from vLLM's own stamps, the free memory,
the end; and a failed server's output explained with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaudi_tui.core.serve import ready, warmup
from tests.jobs.conftest import wait_for
from tests.serve.conftest import DATA


def read(name: str) -> tuple[warmup.WarmupReader, list[str]]:
    reader, said = warmup.WarmupReader(), []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if reader.feed(line, now=0.0):
            said.append(reader.state.words())
    return reader, said


def test_the_docs_warmup_log_reads_bucket_by_bucket_to_its_end() -> None:
    reader, said = read("vllm-gaudi-docs-warmup.log")
    assert said[0] == "warming up Prompt 1/24 · free 55.43 GiB"
    assert said[1] == "warming up Decode 48/48 · free 55.43 GiB"  # the docs elide the buckets between
    # Graph/Prompt 1/24 at 17:38:22, 11/24 at 17:38:26: 0.4 s a bucket, 13 to go
    assert said[3] == "warming up Graph/Prompt 11/24 · ETA 0:05 · free 48.77 GiB"
    assert said[-1] == "warmed up in 49 s"
    assert reader.state.finished_s == 49.0


def test_the_bucket_example_gives_an_eta_from_vllms_own_stamps() -> None:
    _, said = read("vllm-gaudi-docs-buckets.log")
    # Prompt 1/24 at 22:26:47 … 24/24 at 22:26:59; Decode 1/48 at 22:27:00, 3/48 at 22:27:01: 0.5 s a bucket
    assert said[:3] == [
        "warming up Prompt 1/24 · free 79.16 GiB",
        "warming up Prompt 2/24 · free 55.43 GiB",
        "warming up Prompt 3/24 · ETA 0:10 · free 55.43 GiB",
    ]
    assert "warming up Decode 3/48 · ETA 0:22 · free 55.43 GiB" in said
    assert said[-1] == "warming up Decode 48/48 · ETA 0:00 · free 55.43 GiB"


def test_the_v1_runners_lines_without_a_stamp_are_paced_by_when_they_are_seen() -> None:
    reader = warmup.WarmupReader()
    lines = (DATA / "vllm-gaudi-v1-warmup.log").read_text().splitlines()
    assert (
        reader.feed(lines[0], now=100.0) and reader.state.words() == "warming up Prompt 1/56 · free 82.5 GiB"
    )
    assert reader.feed(lines[1], now=122.0)  # 11 buckets in 22 s: 2 s each, 44 to go
    assert reader.state.words() == "warming up Prompt 12/56 · ETA 1:28 · free 81.9 GiB"
    assert not reader.feed("INFO 08-02 17:37:54 hpu_executor.py:85] # HPU blocks: 1519", now=123.0)


def failures() -> list[tuple[str, str]]:
    rows = (DATA / "failures.txt").read_text(encoding="utf-8").splitlines()
    return [tuple(r.split("\t", 1)) for r in rows if r and not r.startswith("#")]  # type: ignore[misc]


@pytest.mark.parametrize(("kind", "line"), failures())
def test_published_failure_lines_are_explained_with_their_fix(kind: str, line: str) -> None:
    log = f"INFO 08-02 17:37:54 hpu_worker.py:158] Free device memory: 79.16 GiB\n{line}\nTraceback ...\n"
    found = warmup.explain(log)
    assert found is not None and found.kind == kind and found.line == line.strip()
    assert found.words().startswith(line.strip() + " — fix: ")


def test_the_fixes_name_what_to_change() -> None:
    fixes = {kind: fix for _, kind, fix in warmup.FAILURES}
    assert "VLLM_GRAPH_RESERVED_MEM" in fixes["out_of_memory"] and "--max-model-len" in fixes["out_of_memory"]
    assert "LlamaForCausalLM" in fixes["gaudi_architecture"]
    assert "port 0" in fixes["port_in_use"]
    assert warmup.explain("INFO: Started server process\nAborted!\n") is None


def test_the_watch_follows_only_this_attempts_output_and_writes_the_warmup(tmp_path: Path) -> None:
    """`start()` skips an earlier attempt's output; its thread follows what is appended (a line cut
    by a read included) into serve.json's `warmup`."""
    log = tmp_path / "stdout.log"
    log.write_text("[Warmup][Prompt][9/9] batch_size:1 seq_len:1 free_mem:1 GiB\n")  # an earlier attempt's
    watch = ready.ReadyWatch(tmp_path, log, {"url": "http://127.0.0.1:9", "model": "m", "engine": "vllm",
                                             "api_key_env": ""}, None)  # fmt: skip
    watch.start()
    try:
        assert watch.reader.offset == log.stat().st_size  # this attempt's output only
        assert json.loads((tmp_path / ready.SERVE_FILE).read_text())["warmup"] == ""
        with log.open("a") as out:
            out.write(
                "INFO 08-02 17:38:22 hpu_model_runner.py:1066] [Warmup][Graph/Prompt][1/24] batch_size:1 seq_len:128 free_mem:55.43 GiB\n[Warmup][Graph/Pro"
            )
        wait_for(lambda: ready.note(tmp_path) == "warming up Graph/Prompt 1/24 · free 55.43 GiB", 10, "1/24")
        with log.open("a") as out:
            out.write(
                "mpt][2/24] batch_size:1 seq_len:256 free_mem:55.4 GiB\n"
            )  # the rest of a line cut by a read
        wait_for(lambda: ready.note(tmp_path).startswith("warming up Graph/Prompt 2/24"), 10, "2/24")
    finally:
        watch.close()
    assert "9/9" not in json.dumps(watch.info)


def test_a_stamped_line_then_an_unstamped_one_gives_no_eta_from_two_clocks() -> None:
    """L2: vLLM's stamps count from the year's start, a line seen without one from the epoch: the
    pace is never read across the two (that gave an ETA of decades, or none ever again)."""
    reader = warmup.WarmupReader()
    stamped = "INFO 08-02 17:37:54 hpu_model_runner.py:1] [Warmup][Prompt][1/24] batch_size:1 seq_len:128 free_mem:55 GiB"
    assert reader.feed(stamped, now=1.7e9)
    assert reader.feed("[Warmup][Prompt][2/24] batch_size:1 seq_len:256 free_mem:55 GiB", now=1.7e9 + 1)
    assert reader.state.eta_s is None  # one bucket on the new clock: no pace yet
    assert reader.feed("[Warmup][Prompt][4/24] batch_size:1 seq_len:512 free_mem:55 GiB", now=1.7e9 + 3)
    assert reader.state.eta_s == 20.0  # 1 s a bucket, on the seen clock alone
