"""The `backtrack` command line.

    backtrack run PROMPT [--grammar G] [--provider P]   guided generation: the text on stdout
    backtrack demo                                      run, with SmolLM2 drafting (no API key)
    backtrack check GRAMMAR FILE                        where a text stops matching a grammar
    backtrack grammars                                  the shipped grammars
    backtrack serve --upstream URL                      an OpenAI/Anthropic-compatible server

stdout carries only the output; progress, summaries and errors go to stderr. Exit status: 0 when
the output is valid (or the check passes), 1 when not, 2 on an error, which prints as one line
`backtrack: error: ...`; a run that fails after some work still prints it (--json) and writes its
trace (--html). API keys come from the environment (through the SDKs) and are never printed: all
error text, in the error line, the JSON and the trace, goes through `providers.errors.redact`,
which masks every key value the process knows and anything shaped like a key. Each API request
gives up after `--timeout` seconds (60 by default) without an answer.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backtrack.cli.errors import CommandError, error_line
from backtrack.cli.models import drafter_for, load_target, watched
from backtrack.cli.output import report, report_failure
from backtrack.cli.progress import Progress
from backtrack.run.guide import guide
from backtrack.run.options import GuideOptions
from backtrack.serve.app import ServeLimits
from backtrack.trace.result import GuideResult, TextLostError
from grammars import BacktrackError, Grammar, GrammarError, shipped
from local_target import Sampling
from providers.errors import ProviderError

DEMO_PROMPT = "Give a JSON object with the name, color and age of a cat."
# The demo's grammar: SmolLM2 tends to add keys or quote the age, which the schema forbids.
DEMO_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "color": {"type": "string"},
        "age": {"type": "integer"},
    },
    "required": ["name", "color", "age"],
    "additionalProperties": False,
}
GRAMMAR_HELP = (
    "shipped name, .lark file, JSON schema .json file, or module:name (a guidance grammar,"
    " pydantic model or schema dict defined in Python)"
)
# `--grammar module:name`: a grammar object defined in Python (a module's dotted path, a name).
_PYTHON_OBJECT = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
# Where each provider's SDK looks for its key (the SDK reads it; we only check it is there).
KEY_VARIABLES = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
}


# -- inputs ----------------------------------------------------------------------------------------


def _grammar(spec: str) -> Grammar:
    """A shipped name, a .lark file (guidance's serialized grammars are such text), a JSON schema
    file (.json), or `module:name`, a Python object the module defines: a guidance grammar
    (`select([...])`, `guidance.json(...)`), a pydantic model, a schema dict or a Grammar. Errors
    in a file name it."""
    path = Path(spec)
    if not path.is_file():
        if path.suffix in (".lark", ".json"):
            raise CommandError(f"grammar file not found: {spec}")
        if _PYTHON_OBJECT.fullmatch(spec):
            return Grammar.coerce(_python_object(spec))
        return Grammar.load(spec)
    try:
        if path.suffix == ".json":
            return Grammar.from_json_schema(path.read_text(encoding="utf-8"))
        return Grammar.from_file(path)
    except GrammarError as exc:
        where = f"{spec}:{exc.line}:{exc.column}" if exc.line is not None else spec
        raise GrammarError(f"{where}: {exc.message}") from exc


def _python_object(spec: str) -> Any:
    """The object `module:name` names (`name` may be dotted); the working directory is searched
    first, as `python -m` searches it."""
    module_name, _, attribute = spec.partition(":")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"grammar {spec}: cannot import {module_name}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise CommandError(f"grammar {spec}: {module_name} has no {attribute}")
        found = getattr(found, part)
    return found


def _read(source: str) -> str:
    """The text of a file, or of stdin for '-'."""
    if source == "-":
        text: str = sys.stdin.read()
        return text
    try:
        return Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"file not found: {source}") from None


def _prompt(args: argparse.Namespace) -> str:
    """The prompt: positional, --prompt or --prompt-file ('-' reads stdin), exactly one."""
    given: list[str] = [p for p in (args.prompt, args.prompt_option) if p is not None]
    if args.prompt_file is not None:
        given.append(_read(args.prompt_file).rstrip("\n"))
    elif given == ["-"]:
        given = [_read("-").rstrip("\n")]
    if len(given) != 1:
        raise CommandError("give one prompt: as an argument, with --prompt, or --prompt-file")
    if not given[0].strip():
        raise CommandError("the prompt is empty")
    return given[0]


def _provider(spec: str) -> tuple[str, str]:
    """'local', 'openai:MODEL' or 'anthropic:MODEL' as (kind, model)."""
    kind, _, model = spec.partition(":")
    if kind == "local" and not model:
        return "local", ""
    if kind in KEY_VARIABLES and model:
        return kind, model
    raise CommandError(
        f"unknown provider {spec!r}: use local, openai:MODEL or anthropic:MODEL "
        "(e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5)"
    )


def _check_options(args: argparse.Namespace, kind: str) -> None:
    if kind == "local" and args.base_url:
        raise CommandError("--base-url is for the openai: and anthropic: providers")
    if args.completions and kind != "openai":
        raise CommandError("--completions is for the openai: provider")
    if kind != "local" and not any(os.environ.get(v) for v in KEY_VARIABLES[kind]):
        raise CommandError(
            f"{KEY_VARIABLES[kind][0]} is not set: the {kind} provider reads its API key from "
            "the environment (any value will do for a local server that needs none)"
        )


# -- commands --------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Guided generation: everything that can be wrong with the command line fails before any
    model loads or any request goes out."""
    prompt = _prompt(args)
    grammar = _grammar(args.grammar) if args.grammar else Grammar.from_json_schema(DEMO_SCHEMA)
    kind, model = _provider(args.provider)
    _check_options(args, kind)
    options = _options(args)
    progress = Progress(quiet=args.quiet)
    target = load_target(args, progress)
    drafter, client = drafter_for(args, kind, model, target)
    try:
        with progress.step(f"guided generation, {args.provider} drafting"):
            result = guide(
                watched(drafter, progress, args.provider),
                grammar,
                prompt=prompt,
                target=target,
                options=options,
            )
    except (ProviderError, TextLostError) as exc:
        if isinstance(exc.partial, GuideResult):
            report_failure(args, exc, exc.partial, progress)
        raise
    finally:
        if client is not None:
            client.close()
    report(args, result, progress)
    return 0 if result.valid else 1


def _options(args: argparse.Namespace) -> GuideOptions:
    """The GuideOptions the flags set; the rest keep GuideOptions' defaults."""
    flags = [*OPTION_FLAGS, "max_seconds", "complete_on_budget"]
    changes = {name: getattr(args, name) for name in flags}
    sampling = Sampling(args.target_temperature, args.target_top_p, args.target_seed)
    try:
        return GuideOptions(sampling=sampling, **changes)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def demo(args: argparse.Namespace) -> int:
    """`run` with SmolLM2 drafting too, a cat schema, and the first draft shown."""
    if args.prompt_file is not None:
        args.prompt_option = None  # the file replaces the default prompt
    return run(args)


def check(args: argparse.Namespace) -> int:
    grammar = _grammar(args.grammar)
    text = Path(args.file).read_bytes() if args.file != "-" else sys.stdin.buffer.read()
    result = grammar.check(text)
    if result.valid and result.complete:
        print(f"valid: the whole text ({result.chars} characters) is a sentence of the grammar")
        return 0
    if result.valid:
        print(
            f"incomplete: the text is a valid prefix; expected next: {', '.join(result.expected)}"
        )
        return 1
    line = result.text.count("\n", 0, result.chars) + 1
    column = result.chars - (result.text.rfind("\n", 0, result.chars) + 1) + 1
    print(f"{args.file}:{line}:{column}: invalid at character {result.chars} (byte {result.bytes})")
    print(result.context())
    print(f"expected: {', '.join(result.expected)}")
    return 1


def serve(args: argparse.Namespace) -> int:
    """Load the target once, then serve until interrupted (backtrack.serve.app)."""
    from backtrack.serve.app import ServeConfig, run_server

    key = None
    if args.upstream_key_env is not None:
        key = os.environ.get(args.upstream_key_env)
        if not key:
            raise CommandError(f"--upstream-key-env: {args.upstream_key_env} is not set")
    if not args.upstream.startswith(("http://", "https://")):
        raise CommandError(f"--upstream must be an http:// or https:// URL, not {args.upstream!r}")
    limits = ServeLimits(
        max_body_bytes=args.max_body_bytes,
        max_grammar_bytes=args.max_grammar_bytes,
        compile_seconds=args.compile_timeout,
        timeout=args.timeout,
    )
    config = ServeConfig(args.upstream, args.upstream_kind, key, limits, _options(args))
    progress = Progress(quiet=args.quiet)
    target = load_target(args, progress)
    if key is not None and args.host not in ("127.0.0.1", "localhost", "::1"):
        progress.note(
            f"serving on {args.host} with the server's key: anyone who reaches it spends it"
        )
    run_server(config, target, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def list_grammars(_args: argparse.Namespace) -> int:
    width = max(len(n) for n in shipped.names())
    for name in shipped.names():
        print(f"{name:<{width}}  {shipped.describe(name)}")
    return 0


# -- the parser ------------------------------------------------------------------------------------

TOP_EPILOG = """\
examples:
  backtrack run "Top 5 customers by spend" --grammar sqlite --provider openai:gpt-4o-mini
  backtrack run --prompt-file ask.txt --grammar schema.json --provider anthropic:claude-sonnet-4-5
  backtrack demo                       SmolLM2 drafts and corrects; no API key needed
  backtrack check json draft.txt       where draft.txt stops being JSON
  backtrack serve --upstream https://api.openai.com
                                       a server that guides requests carrying a grammar
  backtrack COMMAND --help             the options of one command

exit status: 0 valid, 1 not valid, 2 error."""

RUN_EPILOG = """\
providers:
  local                 SmolLM2 drafts unconstrained (no API key; the default)
  openai:MODEL          OpenAI chat completions (--completions: the completions endpoint);
                        key from OPENAI_API_KEY, server from --base-url or OPENAI_BASE_URL
  anthropic:MODEL       Anthropic messages, with prefill;
                        key from ANTHROPIC_API_KEY, server from --base-url or ANTHROPIC_BASE_URL

examples:
  backtrack run "Describe a cat as JSON." --provider openai:gpt-4o-mini
  backtrack run "Top 5 customers by spend" --grammar sqlite --provider anthropic:claude-sonnet-4-5
  echo "A person record" | backtrack run - --grammar person.schema.json --json
  backtrack run "..." --provider openai:Qwen2.5-7B --base-url http://localhost:8000/v1 \\
      --completions --html trace.html

The text goes to stdout, a summary and progress to stderr (--quiet: nothing there but errors).
exit status: 0 valid, 1 not valid (the target could not finish the text), 2 error."""

FORMATTER = argparse.RawDescriptionHelpFormatter  # keeps the epilogs' layout


def _para(text: str) -> str:
    return textwrap.fill(text, width=88)


def _seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= `minimum`."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return convert


# The GuideOptions set by a flag of the same name: (smallest value, what it is).
OPTION_FLAGS: dict[str, tuple[int, str]] = {
    "max_corrections": (0, "local corrections at most"),
    "max_draft_tokens": (1, "tokens per draft request"),
    "max_rounds": (1, "drafts and corrections in all"),
    "correction_tokens": (1, "tokens per correction"),
    "completion_tokens": (1, "tokens the target may finish with"),
    "min_reuse_chars": (0, "a draft's rest that fits after a correction is kept from this length"),
    "max_preamble_chars": (0, "how much of a first draft may be skipped as preamble"),
    "max_attempts": (1, "attempts per draft request, retries included"),
    "repair_window": (0, "characters read past a cut to find an edit (0: no repairs)"),
    "max_repairs": (0, "edits per run, each read on from the same stream"),
    "max_lost_chars": (0, "more of the API's answer text left out than this is an error"),
}


def _temperature(text: str) -> float:
    """An argparse type: a finite temperature >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


def _add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", metavar="DIR", help="a local transformers model folder as target")
    p.add_argument("--device", help="where the target runs: cpu, cuda, cuda:1... (default: auto)")


def _add_guide_options(p: argparse.ArgumentParser) -> None:
    """The GuideOptions flags (`run`, `demo` and `serve`)."""
    defaults = GuideOptions()
    for name, (minimum, what) in OPTION_FLAGS.items():
        p.add_argument(
            "--" + name.replace("_", "-"),
            type=_at_least(minimum),
            default=getattr(defaults, name),
            metavar="N",
            help=f"{what} (default: %(default)s)",
        )
    p.add_argument(
        "--max-seconds",
        type=_seconds,
        default=defaults.max_seconds,
        metavar="SECONDS",
        help="the run's time bound: past it no API call, the target completes (default: none)",
    )
    p.add_argument(
        "--complete-on-budget",
        action=argparse.BooleanOptionalAction,
        default=defaults.complete_on_budget,
        help="when the corrections run out, the target finishes the text (default: %(default)s)",
    )
    p.add_argument(
        "--target-temperature",
        type=_temperature,
        default=defaults.sampling.temperature,
        metavar="T",
        help="the target's sampling temperature for corrections (default: %(default)s, greedy)",
    )
    p.add_argument(
        "--target-top-p",
        type=float,
        default=defaults.sampling.top_p,
        metavar="P",
        help="the target's nucleus sampling (default: %(default)s)",
    )
    p.add_argument(
        "--target-seed",
        type=int,
        default=defaults.sampling.seed,
        metavar="N",
        help="seed of the target's sampling (default: none)",
    )


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The options `run` and `demo` share."""
    p.add_argument(
        "--prompt-file", metavar="FILE", help="read the prompt from FILE ('-' for stdin)"
    )
    _add_target_options(p)
    _add_guide_options(p)
    p.add_argument("--html", metavar="FILE", help="write the trace as HTML to FILE")
    p.add_argument("--json", action="store_true", help="print the result as a JSON object")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or summary on stderr")


def _run_parser(sub: Any) -> None:
    r = sub.add_parser(
        "run",
        help="guided generation: an API drafts, the grammar checks, a local model corrects",
        description=_para(
            "Generate text that parses under a grammar. The provider drafts freely; the draft "
            "is cut at the first byte the grammar cannot continue; the local target model writes "
            "a correction under the grammar; the provider carries on from there."
        ),
        epilog=RUN_EPILOG,
        formatter_class=FORMATTER,
    )
    r.add_argument("prompt", nargs="?", help="the prompt ('-' reads it from stdin)")
    r.add_argument("--prompt", dest="prompt_option", metavar="TEXT", help="the prompt")
    r.add_argument(
        "-g",
        "--grammar",
        default="json",
        help=f"{GRAMMAR_HELP} (default: json; `backtrack grammars` lists the shipped ones)",
    )
    r.add_argument(
        "-p", "--provider", default="local", help="local, openai:MODEL or anthropic:MODEL"
    )
    r.add_argument("--base-url", metavar="URL", help="an OpenAI- or Anthropic-compatible server")
    r.add_argument(
        "--completions", action="store_true", help="openai: use the completions endpoint"
    )
    r.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up on an API request after this long without an answer (default: "
        "%(default)s; a timed-out request is retried like a dropped one)",
    )
    _add_run_options(r)
    r.set_defaults(run=run, show_draft=False, timeout=60.0)


def _demo_parser(sub: Any) -> None:
    d = sub.add_parser(
        "demo",
        help="run with SmolLM2 as both drafter and target (no API key needed)",
        description=_para(
            "`backtrack run` with SmolLM2 drafting unconstrained and correcting under the "
            "grammar (by default a JSON schema of a cat); shows the first draft and the result, "
            "and writes the trace to backtrack-trace.html (--html elsewhere). No API key needed."
        ),
        epilog="examples:\n  backtrack demo\n"
        "  backtrack demo --grammar sqlite --prompt 'The 5 oldest users, as SQL.'",
        formatter_class=FORMATTER,
    )
    d.add_argument(
        "--prompt",
        dest="prompt_option",
        default=DEMO_PROMPT,
        metavar="TEXT",
        help="the prompt (default: %(default)r)",
    )
    d.add_argument("-g", "--grammar", help=f"{GRAMMAR_HELP} (default: a JSON schema of a cat)")
    _add_run_options(d)
    d.set_defaults(
        run=demo,
        prompt=None,
        provider="local",
        base_url=None,
        completions=False,
        max_corrections=4,
        max_draft_tokens=96,
        completion_tokens=96,
        html="backtrack-trace.html",
        show_draft=True,
    )


SERVE_EPILOG = """\
A request without a grammar goes upstream untouched. One with a grammar is guided: OpenAI
response_format (json_schema, json_object), a `grammar` field (a shipped name or Lark text; SDKs
send it through extra_body), or vLLM's guided_json, guided_regex, guided_grammar, guided_choice,
structured_outputs. `backtrack: {"trace": "html"}` in the body adds the HTML trace to the reply.

examples:
  backtrack serve --upstream https://api.openai.com
  backtrack serve --upstream https://api.anthropic.com --upstream-kind anthropic
  backtrack serve --upstream http://localhost:9000 --upstream-key-env MY_KEY --port 8080"""


def _serve_parser(sub: Any) -> None:
    s = sub.add_parser(
        "serve",
        help="an OpenAI/Anthropic-compatible HTTP server that guides requests with a grammar",
        description=_para(
            "Serve POST /v1/chat/completions and /v1/completions (upstream kind openai) or "
            "/v1/messages (anthropic), GET /v1/models and /health. The target model is loaded "
            "once and shared by every request. The client's key (Authorization or x-api-key) "
            "goes upstream, or the server's own from --upstream-key-env; keys are never logged."
        ),
        epilog=SERVE_EPILOG,
        formatter_class=FORMATTER,
    )
    s.add_argument("--upstream", required=True, metavar="URL", help="the API's root URL")
    s.add_argument(
        "--upstream-kind",
        choices=("openai", "anthropic"),
        default="openai",
        help="the protocol the upstream speaks (default: %(default)s)",
    )
    s.add_argument(
        "--upstream-key-env",
        metavar="NAME",
        help="send the key in this environment variable upstream, not the clients' own",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    s.add_argument("--port", type=_at_least(0), default=8000, help="(default: %(default)s)")
    _add_target_options(s)
    defaults = ServeLimits()
    s.add_argument(
        "--max-body-bytes",
        type=_at_least(1),
        default=defaults.max_body_bytes,
        metavar="N",
        help="larger request bodies get 413 (default: %(default)s)",
    )
    s.add_argument(
        "--max-grammar-bytes",
        type=_at_least(1),
        default=defaults.max_grammar_bytes,
        metavar="N",
        help="larger grammars get 400 (default: %(default)s)",
    )
    s.add_argument(
        "--compile-timeout",
        type=_seconds,
        default=defaults.compile_seconds,
        metavar="SECONDS",
        help="a grammar that takes longer to compile gets 400 (default: %(default)s)",
    )
    s.add_argument(
        "--timeout",
        type=_seconds,
        default=defaults.timeout,
        metavar="SECONDS",
        help="a guided request that takes longer gets 504 (default: %(default)s)",
    )
    _add_guide_options(s)
    s.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="uvicorn's log level (default: %(default)s)",
    )
    s.add_argument("-q", "--quiet", action="store_true", help="no progress while loading")
    s.set_defaults(run=serve)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="backtrack",
        description=_para(
            "Grammar-valid output from black-box LLMs: the API drafts, an Earley check "
            "cuts at the first bad byte, a small local model corrects."
        ),
        epilog=TOP_EPILOG,
        formatter_class=FORMATTER,
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _run_parser(sub)
    _demo_parser(sub)
    c = sub.add_parser(
        "check",
        help="where a text stops matching a grammar",
        description=_para(
            "Check FILE against GRAMMAR: valid, a valid but incomplete prefix, or the "
            "line and column where it stops matching, with a caret and what was expected there."
        ),
        epilog="example:\n  backtrack check json draft.txt\n\nexit status: 0 valid, 1 not, "
        "2 error.",
        formatter_class=FORMATTER,
    )
    c.add_argument("grammar", help=GRAMMAR_HELP)
    c.add_argument("file", help="the text to check ('-' for stdin)")
    c.set_defaults(run=check)
    g = sub.add_parser("grammars", help="list the shipped grammars")
    g.set_defaults(run=list_grammars)
    _serve_parser(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except (BacktrackError, OSError) as exc:
        print(error_line(exc), file=sys.stderr, flush=True)
        return 2
    return code
