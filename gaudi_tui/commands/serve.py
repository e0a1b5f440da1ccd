"""`gaudi-tui serve MODEL|RUN_ID [--cards 0,1] [--engine vllm|transformers] [--port P] [--host H]
[-- extra engine args]`: a model server as a detached job."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
examples:
  gaudi-tui serve demo                                  # the demo model, transformers serve, a free port
  gaudi-tui serve 5f21                                  # what job 5f21 trained (its model, or base + adapter)
  gaudi-tui serve meta-llama/Llama-3.1-8B-Instruct --cards 0,1 --engine vllm -- --max-model-len 4096
  VLLM_KEY=... gaudi-tui serve ./my-model --engine vllm --host 0.0.0.0 --api-key-env VLLM_KEY

It listens on 127.0.0.1 unless --host says otherwise; --port 0 (the default) takes a free port. The
server's address and readiness are in the run folder's serve.json and in `gaudi-tui jobs`. It survives
this shell and the panel; `s` in Training (or `gaudi-tui jobs stop ID`) drains and stops it, `k k` kills.
vllm (vllm-gaudi on Gaudi): tensor parallel over the chosen cards; the Gaudi knobs
(VLLM_GRAPH_RESERVED_MEM, VLLM_BUCKETING_STRATEGY, PT_HPU_LAZY_MODE) go with --env NAME=VALUE.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    options = _options()
    parser = subparsers.add_parser(
        "serve",
        parents=[options],
        help="serve a model (or a trained job) with vllm or transformers, as a job",
        description="Serve a model, an adapter or what a job trained on an OpenAI-compatible endpoint, "
        "detached, on the chosen cards.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "model", metavar="MODEL|RUN_ID", help="'demo', a model or adapter folder, a job id, a Hub id"
    )
    parser.add_argument(
        "rest", nargs=argparse.REMAINDER, metavar="[OPTIONS] -- ARGS", help="extra engine arguments, after --"
    )
    parser.set_defaults(func=run, options=options)


def _options() -> argparse.ArgumentParser:
    """The options, before or after MODEL (what follows MODEL is read again by this parser)."""
    options = argparse.ArgumentParser(prog="gaudi-tui serve", add_help=False)
    options.add_argument(
        "--cards", default="", help="Gaudi module IDs, e.g. 0,1 (vllm: tensor parallel over them)"
    )
    options.add_argument(
        "--engine", default="auto", metavar="auto|vllm|transformers", help="the server (default auto)"
    )
    options.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    options.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    options.add_argument(
        "--api-key-env", default="", metavar="NAME", help="vllm: the variable holding the API key"
    )
    options.add_argument("--device", default="auto", metavar="auto|hpu|cuda|cpu", help="where it runs")
    options.add_argument("--name", default="", help="label in the job list (default: serve MODEL)")
    options.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment")
    options.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                         help="any other setting (see `gaudi-tui train --fields`)")  # fmt: skip
    options.add_argument("--dry-run", action="store_true", help="check and print the spec; start nothing")
    return options


def split_rest(args: argparse.Namespace) -> list[str]:
    """The options after MODEL read into `args`; the engine's own arguments (after --) returned."""
    words = list(args.rest)
    cut = words.index("--") if "--" in words else len(words)
    head, extra = words[:cut], words[cut + 1 :]
    if head:
        args.options.parse_args(
            head, namespace=args
        )  # an unknown option exits with its usage, as argparse does
    return extra


def build_spec(args: argparse.Namespace):  # noqa: ANN201 - JobSpec, imported lazily
    from gaudi_tui.core.jobs import spec as spec_mod

    extra = split_rest(args)
    values: dict[str, object] = {
        "serve_model": args.model,
        "serve_engine": args.engine,
        "serve_host": args.host,
        "serve_port": args.port,
        "serve_args": extra,
        "serve_api_key_env": args.api_key_env,
        "device": args.device,
        "name": args.name or f"serve {args.model}",
        "env": dict(spec_mod.parse_assignments(args.env)) if args.env else {},
    }
    if args.cards:
        values["cards"] = args.cards
    spec = spec_mod.from_mapping(values, base=spec_mod.preset("serve a model"))
    return spec_mod.with_overrides(spec, list(args.overrides))


def run(args: argparse.Namespace) -> int:
    from gaudi_tui.core.jobs.spec import SpecError

    try:
        spec = build_spec(args)
    except SpecError as exc:
        print(f"gaudi-tui serve: {exc}", file=sys.stderr)
        return 2
    from gaudi_tui.commands.train import start_job

    code = start_job(spec, dry_run=args.dry_run, follow=False, prog="serve")
    if code == 0 and not args.dry_run:
        print("its address: serve.json in the run folder, and `gaudi-tui jobs` once it is ready")
    return code
