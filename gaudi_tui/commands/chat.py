"""`gaudi-tui chat`: stream one answer from a model, with the Chat screen's load options."""

from __future__ import annotations

import argparse

EPILOG = """\
MODEL is "demo" (the embedded demo model, default), a local model folder, a PEFT adapter folder
(its base is read from adapter_config.json), a checkpoint-N folder, a training job's id (its
model/, else its newest complete checkpoint), or a Hub id (used from the local cache when
offline). Options not given come from [chat] in config.toml (`gaudi-tui config`), else the
defaults shown. Progress and a metrics line go to stderr; with --json stdout carries JSON lines
instead of text: {"type": "token", "text"} per chunk, then {"type": "result", "answer",
"stopped", "warnings", "metrics", "load", "answered_by"}.
--compare MODEL asks a second model the same question ("base": the first one's base model);
both answer at once (one engine when they differ only by an adapter), the text output prints
each answer under its model's name, and --json tags each token with "side" (0 or 1) and ends
with {"type": "result", "answers": [{"side", "answer", "stopped", "metrics", "answered_by"}],
"load": [...], "shared_engine"}.
--endpoint URL asks an OpenAI-compatible server (vLLM, `transformers serve`...) instead of an
engine of the panel's: --model is then the server's model id (default: the only one it lists on
/v1/models), --api-key-env the NAME of the environment variable holding its key (never the key
itself), and --compare may be a local model or a second server's URL (its only model, the same
key). --figures prints the server's own figures from its /metrics and asks nothing.
Ctrl+C stops the answer and keeps what was generated (exit 130)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from gaudi_tui.core.chat.options import DTYPES, QUANTIZATIONS

    parser = subparsers.add_parser(
        "chat",
        help="stream one answer from a model",
        description="Stream one answer from a model to stdout.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model",
        "-m",
        help="demo, a folder, an adapter or checkpoint folder, a job id, or a Hub id (default: chat.model, else demo)",
    )
    parser.add_argument(
        "--compare",
        metavar="MODEL",
        default="",
        help="a second model answering beside the first: 'base' (the first one's base), a job id, a folder…",
    )
    parser.add_argument(
        "--prompt", "-p", help="the question; - reads it from stdin (required but with --figures)"
    )
    server = parser.add_argument_group("an OpenAI-compatible server")
    server.add_argument(
        "--endpoint", metavar="URL", default="", help="the server's base URL, e.g. http://127.0.0.1:8000"
    )
    server.add_argument(
        "--api-key-env",
        metavar="NAME",
        default="",
        help="the environment variable holding the server's API key",
    )
    server.add_argument(
        "--figures", action="store_true", help="print the server's /metrics figures, ask nothing"
    )
    parser.add_argument("--system", default="", help="system prompt")
    parser.add_argument("--json", action="store_true", help="JSON lines on stdout, with the metrics")
    load = parser.add_argument_group("load options")
    load.add_argument(
        "--dtype",
        choices=DTYPES,
        help="auto = the accelerator's (bf16 on Gaudi); default: chat.dtype, else auto",
    )
    load.add_argument(
        "--quantization",
        choices=list(QUANTIZATIONS),
        help="bitsandbytes: nf4/fp4 4-bit, int8 8-bit (Gaudi: nf4 only); default: chat.quantization, else none",
    )
    load.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        help="torch.compile (hpu_backend on Gaudi); default: chat.compile, else off",
    )
    load.add_argument("--merge", action="store_true", help="merge an adapter into its base before answering")
    load.add_argument(
        "--base-in-dtype",
        action="store_true",
        help="a QLoRA adapter's base unquantized in --dtype instead of 4-bit NF4",
    )
    load.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the model's own code (only for models you trust)",
    )
    gen = parser.add_argument_group("generation")
    gen.add_argument("--max-new-tokens", type=int, default=256)
    gen.add_argument("--temperature", type=float, default=0.7)
    gen.add_argument("--top-p", type=float, default=0.9)
    gen.add_argument("--top-k", type=int, default=50)
    gen.add_argument("--repetition-penalty", type=float, default=1.0)
    gen.add_argument("--do-sample", action="store_true", help="sample (default: greedy)")
    gen.add_argument("--seed", type=int, default=None)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import signal
    import sys
    import threading

    from gaudi_tui.core.chat.backend import open_client
    from gaudi_tui.core.chat.errors import ChatError
    from gaudi_tui.core.chat.options import GenerationParams, LoadOptions
    from gaudi_tui.core.settings import load

    if args.figures:
        return figures(args.endpoint)
    if args.prompt is None:
        print("gaudi-tui chat: --prompt is required (the question)", file=sys.stderr)
        return 2
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        print("gaudi-tui chat: the prompt is empty", file=sys.stderr)
        return 2
    try:
        chat = load().settings.chat
        options = LoadOptions(
            args.model or ("" if args.endpoint else chat.model),
            args.dtype or chat.dtype,
            args.quantization or chat.quantization,
            chat.compile if args.compile is None else args.compile,
            args.trust_remote_code,
            merge=args.merge,
            base_in_dtype=args.base_in_dtype,
            endpoint=args.endpoint,
            api_key_env=args.api_key_env,
        )
        params = GenerationParams(
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
            repetition_penalty=args.repetition_penalty,
            do_sample=args.do_sample,
            seed=args.seed,
        )
    except ValueError as exc:
        print(f"gaudi-tui chat: {exc}", file=sys.stderr)
        return 2

    streamed = threading.Event()

    def emit(text: str) -> None:
        streamed.set()
        if args.json:
            sys.stdout.write(json.dumps({"type": "token", "text": text}, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(text)
        sys.stdout.flush()

    cancel = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
        {"role": "user", "content": prompt}
    ]
    if args.compare:
        return compare(options, args.compare, messages, params, args.json, cancel)
    client = open_client(options)
    try:
        client.start()
        print(f"loading {options.endpoint or options.model}…", file=sys.stderr, flush=True)
        report = client.load(options, cancel=cancel)
        print(f"loaded: {report.summary()}", file=sys.stderr, flush=True)
        answer = client.generate(
            messages,
            params,
            on_text=emit,
            cancel=cancel,
            on_warning=lambda w: print(f"warning: {w}", file=sys.stderr, flush=True),
        )
    except ChatError as exc:  # what was streamed before the failure stays on stdout
        if streamed.is_set() and not args.json:
            print(flush=True)
        print(f"gaudi-tui chat: {exc.message}", file=sys.stderr)
        return 130 if exc.kind == "cancelled" else 1
    except BrokenPipeError:
        return 1
    finally:
        client.shutdown()
    if args.json:
        result = {
            "type": "result",
            "answer": answer.text,
            "stopped": answer.stopped,
            "warnings": list(answer.warnings),
            "metrics": answer.metrics.to_dict(),
            "load": report.to_dict(),
            "answered_by": report.provenance.to_dict(),
        }
        print(json.dumps(result, ensure_ascii=False), flush=True)
    else:
        print(flush=True)
    print(answer.metrics.summary(), file=sys.stderr)
    return 130 if answer.stopped else 0


def figures(url: str) -> int:
    """`--figures`: the server's own figures (its /metrics), one line each."""
    import sys

    from gaudi_tui.core.serve.figures import FiguresError, fetch_figures, figure_lines

    if not url:
        print("gaudi-tui chat: --figures needs --endpoint URL", file=sys.stderr)
        return 2
    try:
        lines = figure_lines(fetch_figures(url))
    except FiguresError as exc:
        print(f"gaudi-tui chat: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def compare(options, second: str, messages: list, params, as_json: bool, cancel) -> int:  # noqa: ANN001
    """`--compare`: both models answer; text output prints each answer under its model's name."""
    import json
    import sys

    from gaudi_tui.core.chat.compare import Comparison
    from gaudi_tui.core.chat.errors import ChatError

    def emit(side: int, text: str) -> None:
        if as_json:
            print(json.dumps({"type": "token", "side": side, "text": text}, ensure_ascii=False), flush=True)

    try:
        comparison = Comparison(options, second)
    except ChatError as exc:
        print(f"gaudi-tui chat: {exc.message}", file=sys.stderr)
        return 1
    engines = "one engine" if comparison.plan.shared else "two engines"
    try:
        print(
            f"loading {options.endpoint or options.model} and {second} ({engines})…",
            file=sys.stderr,
            flush=True,
        )
        reports = comparison.load(cancel=cancel)
        answers = comparison.ask(messages, params, on_text=emit, cancel=cancel)
    except ChatError as exc:
        print(f"gaudi-tui chat: {exc.message}", file=sys.stderr)
        return 130 if exc.kind == "cancelled" else 1
    finally:
        comparison.close()
    who = comparison.provenances
    if as_json:
        result = {
            "type": "result",
            "answers": [
                {
                    "side": side,
                    "answer": answer.text,
                    "stopped": answer.stopped,
                    "warnings": list(answer.warnings),
                    "metrics": answer.metrics.to_dict(),
                    "answered_by": who[side].to_dict(),
                }
                for side, answer in enumerate(answers)
            ],
            "load": [report.to_dict() for report in reports],
            "shared_engine": comparison.plan.shared,
        }
        print(json.dumps(result, ensure_ascii=False), flush=True)
    else:
        for side, answer in enumerate(answers):
            print(f"== {who[side].summary()}\n{answer.text}\n", flush=True)
    for side, answer in enumerate(answers):
        print(f"{who[side].label}: {answer.metrics.summary()}", file=sys.stderr)
    return 130 if any(a.stopped for a in answers) else 0
