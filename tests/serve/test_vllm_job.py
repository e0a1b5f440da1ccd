"""A vLLM serve job through the whole life cycle on a (fake) Gaudi 2, with the stand-in `vllm`
(tests/fakes/vllm: vllm-gaudi's published warm-up, then /health and /v1/models): the command line
and Gaudi knobs it got, the warm-up in the job list as it happens, ready once the key is accepted,
the key's value nowhere in what the panel writes, and `s` ending it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gaudi_tui.core import demo
from gaudi_tui.core.jobs import control
from gaudi_tui.core.jobs.monitor import Monitor
from gaudi_tui.core.jobs.spec import from_mapping, preset
from gaudi_tui.core.serve import ready
from tests.conftest import FAKES, child_env
from tests.jobs.conftest import GAUDI2, log_tail, wait_done, wait_for
from tests.serve.conftest import wait_ready

KEY = "sk-test-0123456789abcdef"


def note_of(run_id: str) -> str:
    return next((v.where for v in Monitor().poll() if v.id == run_id), "")


def test_a_vllm_job_warms_up_in_the_list_becomes_ready_and_stops(tmp_path: Path) -> None:
    record, hold = tmp_path / "vllm.json", tmp_path / "go"
    path = os.pathsep.join((str(FAKES / "vllm"), os.environ.get("PATH", os.defpath)))
    env = child_env(PATH=path, MY_VLLM_KEY=KEY, FAKE_VLLM_RECORD=str(record), FAKE_VLLM_HOLD=str(hold))
    spec = from_mapping(
        {
            "serve_engine": "vllm",
            "cards": "0,1",
            "serve_api_key_env": "MY_VLLM_KEY",
            "serve_args": "--max-num-seqs 4 --served-model-name llama",
        },
        base=preset("serve a model"),
    )
    run = control.submit(spec, GAUDI2, env=env)
    try:
        url = ready.url_of("127.0.0.1", run.spec().serve_port)
        wait_for(
            lambda: note_of(run.id) == "warming up Decode 3/48 · ETA 0:22 · free 55.43 GiB", 60, "the warm-up"
        )
        hold.write_text("")
        info = wait_ready(run, timeout=60)
        assert info["url"] == url and info["engine"] == "vllm" and info["api_key_env"] == "MY_VLLM_KEY"
        assert info["model"] == "llama"  # what /v1/models lists: --served-model-name
        assert info["warmup"] == "warmed up in 32 s"
        assert note_of(run.id) == f"ready: {url} (vllm)"

        seen = json.loads(record.read_text())
        assert seen["argv"] == [
            "serve", str(demo.model_dir()), "--host", "127.0.0.1", "--port", str(run.spec().serve_port),
            "--tensor-parallel-size", "2", "--max-num-seqs", "4", "--served-model-name", "llama",
        ]  # fmt: skip
        assert seen["env"]["HABANA_VISIBLE_MODULES"] == "0,1" and seen["env"]["PT_HPU_LAZY_MODE"] == "0"
        assert seen["env"]["PT_HPU_RECIPE_CACHE_CONFIG"].endswith(",false,8192")
        assert (
            seen["api_key"] and ready.probe(url, info["model"], KEY) and not ready.probe(url, info["model"])
        )

    finally:
        if run.status().state in ("queued", "running"):
            control.stop(run)
    assert wait_done(run, 60) == "stopped", log_tail(run)
    assert run.status().error == "stopped by SIGINT"
    for written in run.path.iterdir():
        if written.is_file():
            assert KEY not in written.read_text(errors="replace"), written.name
