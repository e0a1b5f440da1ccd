"""The model server's command line and environment per engine: an argument list, never a shell.

- vllm (the vllm-gaudi plugin on hpu): `vllm serve MODEL --host H --port P --tensor-parallel-size N`,
  with `--enable-lora --lora-modules NAME=PATH` for an adapter. The Gaudi knobs, from vllm-gaudi's
  docs/configuration/env_variables.md and docs/configuration/warm-up/managing_warm-up.md
  (https://github.com/vllm-project/vllm-gaudi): `PT_HPU_LAZY_MODE` (0 = eager/torch.compile, the
  plugin's default, set here unless the job's environment chooses), `PT_HPU_RECIPE_CACHE_CONFIG`
  (`PATH,DELETE,SIZE_MB`: compiled graph recipes kept between starts, so a second warm-up is short;
  set here to a folder per model under the panel's home), `VLLM_GRAPH_RESERVED_MEM` (the share of
  usable memory kept for HPU graphs, default 0.1) and `VLLM_BUCKETING_STRATEGY` (exp, lin or pad):
  these two are the user's (`env`), checked here. The API key goes in `VLLM_API_KEY` (vLLM's
  documented variable), read from the variable the spec names when the server starts: never in the
  argv, the spec or a log.
- transformers: `python -m transformers.cli.transformers serve MODEL --host H --port P --device D`
  with `--no-trust-remote-code` unless the spec trusts the model's code.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gaudi_tui.core.jobs.jobspec import ServeEngine
from gaudi_tui.core.jobs.spec import JobSpec, is_secret
from gaudi_tui.core.jobs.validate import Problem
from gaudi_tui.core.serve.address import host_problem

ENGINES = ("vllm", "transformers")
TRANSFORMERS_SERVE = ("transformers.cli.serve", "fastapi", "uvicorn")
"""What `transformers serve` imports: Transformers 5's CLI and its `serving` extra."""
API_KEY_VAR = "VLLM_API_KEY"
RECIPE_CACHE_MB = 8192
BUCKETING = ("exp", "lin", "pad")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MANAGED_FLAGS = {
    "--host": "serve_host",
    "--port": "serve_port",
    "--tensor-parallel-size": "cards",
    "-tp": "cards",
    "--device": "device",
    "--api-key": "serve_api_key_env (a key on the command line is seen by every user of the host)",
    "--trust-remote-code": "trust_remote_code",
    "--no-trust-remote-code": "trust_remote_code",
}
"""Engine flags the panel sets from the spec: typed into serve_args they are refused, naming the setting
(also as vLLM's argparse reads them: `_` for `-`, and any unambiguous prefix, `--po` for `--port`)."""
REFUSED_FLAGS = {
    "--config": "a config file can set the host, port, key and cards behind the panel's back: "
    "give its settings in serve_args",
}


def choose(spec: JobSpec, env: Mapping[str, str]) -> ServeEngine:
    """The engine `auto` means: vllm on Gaudi when its `vllm` command is installed, else transformers."""
    if spec.serve_engine != "auto":
        return spec.serve_engine
    if spec.device == "hpu" and vllm_program(env) is not None:
        return "vllm"
    return "transformers"


def vllm_program(env: Mapping[str, str]) -> str | None:
    return shutil.which("vllm", path=env.get("PATH") or None)


def argv(
    spec: JobSpec, model: str, adapter: tuple[str, Path] | None = None, python: str | None = None
) -> list[str]:
    """The server's command line for a prepared spec (engine and port resolved); `adapter` is
    (name, folder) for vLLM's LoRA."""
    host, port = spec.serve_host, str(spec.serve_port)
    if spec.serve_engine == "vllm":
        words = ["vllm", "serve", model, "--host", host, "--port", port]
        words += ["--tensor-parallel-size", str(max(1, len(spec.cards) or spec.processes))]
        if spec.trust_remote_code:
            words.append("--trust-remote-code")
        if adapter is not None:
            words += ["--enable-lora", "--lora-modules", f"{adapter[0]}={adapter[1]}"]
        return [*words, *spec.serve_args]
    words = [python or sys.executable, "-m", "transformers.cli.transformers", "serve", model]
    words += ["--host", host, "--port", port, "--device", device_arg(spec)]
    words.append("--trust-remote-code" if spec.trust_remote_code else "--no-trust-remote-code")
    return [*words, *spec.serve_args]


def served_id(spec: JobSpec, model: str, adapter: tuple[str, Path] | None = None) -> str:
    """The model id requests name (and /v1/models lists): the adapter's name under vLLM's LoRA, else
    the first of vLLM's `--served-model-name` in serve_args, else the model as given."""
    if adapter is not None:
        return adapter[0]
    args = list(spec.serve_args)
    if spec.serve_engine == "vllm":
        for i, word in enumerate(args):
            if word.startswith("--served-model-name="):
                return word.split("=", 1)[1]
            if word == "--served-model-name" and i + 1 < len(args) and not args[i + 1].startswith("-"):
                return args[i + 1]
    return model


def device_arg(spec: JobSpec) -> str:
    """transformers serve's --device: the job's (the target resolved `auto`; on CUDA the one chosen
    card is device 0 of CUDA_VISIBLE_DEVICES)."""
    return spec.device if spec.device in ("cpu", "cuda", "hpu") else "auto"


def env(spec: JobSpec, cache_root: Path, model_key: str) -> dict[str, str]:
    """The engine's own environment, under the spec's (the user's choice wins)."""
    if spec.serve_engine != "vllm":
        return {"HF_HUB_DISABLE_UPDATE_CHECK": "1", **spec.env}  # no PyPI check at every start
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_key).strip("-")[-80:] or "model"
    own = {
        "PT_HPU_LAZY_MODE": "0",
        "PT_HPU_RECIPE_CACHE_CONFIG": f"{cache_root / slug},false,{RECIPE_CACHE_MB}",
    }
    return {**own, **spec.env}


def problems(spec: JobSpec, env_now: Mapping[str, str], here: bool = True) -> list[Problem]:
    """Every problem with the serve settings themselves (the model is `model.py`'s); the vllm
    command is looked for only where the server runs on this host (`here`)."""
    out: list[Problem] = []
    if (why := host_problem(spec.serve_host)) is not None:
        out.append(Problem("serve_host", why))
    if not 0 <= spec.serve_port <= 65535 or 0 < spec.serve_port < 1024:
        out.append(
            Problem("serve_port", f"{spec.serve_port} is not a port from 1024 to 65535 (0 = a free one)")
        )
    out += _args_problems(spec.serve_args)
    out += _key_problems(spec, env_now)
    out += [
        Problem(
            "env",
            f"{name} looks like a secret, and env is written to the run folder's spec.toml: export it and "
            "name it in serve_api_key_env (vLLM's key), or leave it in your environment",
        )
        for name in spec.env
        if is_secret(name)
    ]
    if spec.serve_engine == "vllm":
        out += _vllm_problems(spec, env_now, here)
    elif missing := _missing(TRANSFORMERS_SERVE):
        out.append(
            Problem(
                "serve_engine",
                f"transformers serve needs {', '.join(missing)}: pip install 'transformers[serving]>=5' "
                "(or `pip install -e .[serve]`)",
            )
        )
    elif len(spec.cards) > 1:
        out.append(
            Problem(
                "cards",
                f"transformers serve runs on one card ({len(spec.cards)} chosen): choose one, or "
                "serve_engine=vllm for tensor parallel on several",
            )
        )
    return out


def _args_problems(args: Sequence[str]) -> list[Problem]:
    out: list[Problem] = []
    for word in args:
        flag = _flag(word)
        if flag in MANAGED_FLAGS:
            out.append(Problem("serve_args", f"{flag} is set by the panel: use {MANAGED_FLAGS[flag]}"))
        elif flag in REFUSED_FLAGS:
            out.append(Problem("serve_args", f"{flag} is refused: {REFUSED_FLAGS[flag]}"))
        elif "\0" in word or "\n" in word:
            out.append(Problem("serve_args", f"{word!r} holds a NUL or a line break"))
    return out


def _flag(word: str) -> str:
    """The flag `word` names as argparse reads it: `--api_key=…` is `--api-key`, `--po` is `--port`
    (a prefix of one managed or refused flag)."""
    flag = word.split("=", 1)[0]
    if not flag.startswith("--"):
        return flag
    flag = "--" + flag[2:].replace("_", "-")
    known = [*MANAGED_FLAGS, *REFUSED_FLAGS]
    if flag in known or len(flag) < 4:
        return flag
    return next((name for name in known if name.startswith(flag)), flag)


def _key_problems(spec: JobSpec, env_now: Mapping[str, str]) -> list[Problem]:
    name = spec.serve_api_key_env
    if not name:
        return []
    if not ENV_NAME.fullmatch(name):
        return [Problem("serve_api_key_env", f"{name!r} is not an environment variable name")]
    if spec.serve_engine == "transformers":
        return [
            Problem(
                "serve_api_key_env",
                "transformers serve takes no API key: serve on 127.0.0.1 without one, or choose vllm",
            )
        ]
    if not env_now.get(name):
        return [Problem("serve_api_key_env", f"${name} is not set: export it before starting the server")]
    return []


def _vllm_problems(spec: JobSpec, env_now: Mapping[str, str], here: bool) -> list[Problem]:
    out: list[Problem] = []
    if spec.device not in ("hpu", "cuda"):
        out.append(
            Problem(
                "serve_engine", f"vllm serves on Gaudi (hpu) here, not on {spec.device}: choose transformers"
            )
        )
    if here and vllm_program(env_now) is None:
        out.append(
            Problem(
                "serve_engine",
                "the vllm command is not installed: install vLLM with the vllm-gaudi plugin "
                "(https://github.com/vllm-project/vllm-gaudi), or choose serve_engine=transformers",
            )
        )
    reserved = spec.env.get("VLLM_GRAPH_RESERVED_MEM", env_now.get("VLLM_GRAPH_RESERVED_MEM"))
    if reserved is not None and not _fraction(reserved):
        out.append(Problem("env", f"VLLM_GRAPH_RESERVED_MEM={reserved!r} is not a fraction between 0 and 1"))
    bucketing = spec.env.get("VLLM_BUCKETING_STRATEGY", env_now.get("VLLM_BUCKETING_STRATEGY"))
    if bucketing is not None and bucketing not in BUCKETING:
        out.append(
            Problem("env", f"VLLM_BUCKETING_STRATEGY={bucketing!r} is not one of {', '.join(BUCKETING)}")
        )
    return out


def _missing(modules: Sequence[str]) -> list[str]:
    import importlib.util

    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            out.append(name)
    return out


def _fraction(text: str) -> bool:
    try:
        return 0.0 < float(text) < 1.0
    except ValueError:
        return False
