"""`gaudi-tui serve MODEL|RUN_ID [--cards 0,1] [--engine vllm|transformers] [--port P] [--host H]
[--target local|slurm [--partition P] [--cards-per-node N] ...] [-- extra engine args]`: a model
server as a detached job, here or as one task on one Slurm node (what the form's serve on Slurm builds)."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
examples:
  gaudi-tui serve demo                                  # the demo model, transformers serve, a free port
  gaudi-tui serve 5f21                                  # what job 5f21 trained (its model, or base + adapter)
  gaudi-tui serve meta-llama/Llama-3.1-8B-Instruct --cards 0,1 --engine vllm -- --max-model-len 4096
  VLLM_KEY=... gaudi-tui serve ./my-model --engine vllm --host 0.0.0.0 --api-key-env VLLM_KEY
  gaudi-tui serve demo --target slurm --partition gaudi --cards-per-node 1 --time-limit 2:00:00

It listens on 127.0.0.1 unless --host says otherwise; --port 0 (the default) takes a free port. The
server's address and readiness are in the run folder's serve.json and in `gaudi-tui jobs`. It survives
this shell and the panel; on Slurm it runs on one node, at that node's address (in serve.json once
the node chose its port). `s` in Training (or `gaudi-tui jobs stop ID`) drains and stops it, `k k` kills.
vllm (vllm-gaudi on Gaudi): tensor parallel over the chosen cards; the Gaudi knobs
(VLLM_GRAPH_RESERVED_MEM, VLLM_BUCKETING_STRATEGY, PT_HPU_LAZY_MODE) go with --env NAME=VALUE.
"""

SLURM_OPTIONS = {
    "slurm_partition": ("--partition", "partition (default: the cluster's)"),
    "slurm_cards_per_node": (
        "--cards-per-node",
        "cards on the node (transformers: 1; vllm: tensor parallel)",
    ),
    "slurm_time_limit": ("--time-limit", "e.g. 30, 2:00:00 (default: the partition's)"),
    "slurm_account": ("--account", "account to charge"),
    "slurm_qos": ("--qos", "quality of service"),
    "slurm_gres_type": ("--gres-type", "GRES type, e.g. gaudi2"),
}
"""The spec's Slurm settings a server uses, by their option (the rest: --set slurm_...=...)."""


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
    options.add_argument("--target", default="local", metavar="local|slurm", help="where (default local)")
    slurm = options.add_argument_group("on Slurm (--target slurm)")
    for flag, help_text in SLURM_OPTIONS.values():
        slurm.add_argument(flag, default=None, metavar=flag.removeprefix("--").upper(), help=help_text)
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
        **_target_values(args),
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


def _target_values(args: argparse.Namespace) -> dict[str, object]:
    """`--target` and the Slurm options as spec values; Ray, or a Slurm option here, is a SpecError."""
    from gaudi_tui.core.jobs.kinds.serve_kind import LOCAL_OR_SLURM
    from gaudi_tui.core.jobs.spec import SpecError, coerce

    given: dict[str, object] = {}
    for name, (flag, _) in SLURM_OPTIONS.items():
        if (value := getattr(args, name.removeprefix("slurm_"))) is not None:
            try:
                given[name] = coerce(name, value)
            except SpecError as exc:
                raise SpecError(f"{flag}: {str(exc).removeprefix(name + ': ')}") from None
    if args.target not in ("local", "slurm"):
        raise SpecError(f"--target {args.target}: {LOCAL_OR_SLURM}")
    if args.target == "local" and given:
        flags = ", ".join(SLURM_OPTIONS[name][0] for name in given)
        raise SpecError(
            f"{flags}: {'Slurm settings' if len(given) > 1 else 'a Slurm setting'}; add --target slurm"
        )
    if args.target == "slurm" and args.cards:
        raise SpecError(
            "--cards: on Slurm the node's cards are Slurm's to choose; say how many with --cards-per-node"
        )
    return {"target": args.target, **given}


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
