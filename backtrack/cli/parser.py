"""The command line's parser: the commands, their flags and help. The GuideOptions flags are read
from the options' declarations (backtrack.run.options), and `guide_options` reads them back."""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from backtrack.cli.errors import CommandError
from backtrack.run.options import GuideOptions, declaration
from backtrack.serve.app import ServeLimits
from local_target import Sampling

DEMO_PROMPT = "Give a JSON object with the name, color and age of a cat."
GRAMMAR_HELP = (
    "shipped name, .lark file, JSON schema .json file, or module:name (a guidance grammar,"
    " pydantic model or schema dict defined in Python)"
)

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
    p.add_argument(
        "--target",
        metavar="DIR|vllm:URL",
        help="the target: a local transformers model folder, or vllm:URL, a vLLM server running"
        " backtrack's logits processor (scripts/vllm_serve.py) (default: SmolLM2 in process)",
    )
    p.add_argument(
        "--tokenizer",
        metavar="DIR",
        help="with --target vllm:URL: the served model's tokenizer folder (default: SmolLM2's)",
    )
    p.add_argument("--device", help="where the target runs: cpu, cuda, cuda:1... (default: auto)")


def _add_guide_options(p: argparse.ArgumentParser) -> None:
    """One flag for each GuideOptions field (`run`, `demo` and `serve`), read from the field's
    declaration: its name, what it takes and its help; the target's sampling is three flags."""
    defaults = GuideOptions()
    for option_field in fields(GuideOptions):
        declared = declaration(option_field)
        flag = "--" + option_field.name.replace("_", "-")
        default = getattr(defaults, option_field.name)
        shown = "none" if default is None else "%(default)s"
        what = f"{declared.help} (default: {shown})"
        if declared.kind == "count":
            p.add_argument(
                flag, type=_at_least(declared.minimum), default=default, metavar="N", help=what
            )
        elif declared.kind == "seconds":
            p.add_argument(flag, type=_seconds, default=default, metavar="SECONDS", help=what)
        elif declared.kind == "switch":
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=what)
        else:
            _add_sampling_options(p, default)


def _add_sampling_options(p: argparse.ArgumentParser, defaults: Sampling) -> None:
    """The flags of the target's Sampling, a GuideOptions field of three parts."""
    p.add_argument(
        "--target-temperature",
        type=_temperature,
        default=defaults.temperature,
        metavar="T",
        help="the target's sampling temperature for corrections (default: %(default)s, greedy)",
    )
    p.add_argument(
        "--target-top-p",
        type=float,
        default=defaults.top_p,
        metavar="P",
        help="the target's nucleus sampling (default: %(default)s)",
    )
    p.add_argument(
        "--target-seed",
        type=int,
        default=defaults.seed,
        metavar="N",
        help="seed of the target's sampling (default: none)",
    )


def guide_options(args: argparse.Namespace) -> GuideOptions:
    """The GuideOptions the flags set (one for each option, the target's sampling three)."""
    changes: dict[str, Any] = {}
    for option_field in fields(GuideOptions):
        if declaration(option_field).kind == "sampling":
            sampling = Sampling(args.target_temperature, args.target_top_p, args.target_seed)
            changes[option_field.name] = sampling
        else:
            changes[option_field.name] = getattr(args, option_field.name)
    try:
        return GuideOptions(**changes)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


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
    r.set_defaults(show_draft=False, timeout=60.0)


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
response_format (json_schema, json_object), the Responses API's text.format, Anthropic's
output_format or output_config.format, a `grammar` field (a shipped name or Lark text; SDKs
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
            "Serve POST /v1/chat/completions, /v1/completions and /v1/responses (upstream kind "
            "openai) or "
            "/v1/messages (anthropic), GET /v1/models and /health. The target model is loaded "
            "once and shared by every request. The client's key (Authorization or x-api-key) "
            "goes upstream, or the server's own from --upstream-key-env; keys are never logged. "
            "The budget flags (--max-draft-tokens, --max-rounds...) are every request's defaults "
            "and its ceilings: a client's max_tokens or `backtrack` options never pass them."
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
    _add_serve_limits(s)
    _add_guide_options(s)
    s.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="uvicorn's log level (default: %(default)s)",
    )
    s.add_argument("-q", "--quiet", action="store_true", help="no progress while loading")


def _add_serve_limits(s: argparse.ArgumentParser) -> None:
    """The flags of the server's ServeLimits."""
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
        help="a grammar that takes longer to compile gets 400, and its compile (in a worker "
        "process) is stopped (default: %(default)s)",
    )
    s.add_argument(
        "--timeout",
        type=_seconds,
        default=defaults.timeout,
        metavar="SECONDS",
        help="a guided request that takes longer gets 504 (default: %(default)s)",
    )
    s.add_argument(
        "--header-timeout",
        type=_seconds,
        default=defaults.header_seconds,
        metavar="SECONDS",
        help="a request whose headers take longer to arrive (from the connection's start) gets "
        "408 and its connection closed (default: %(default)s)",
    )
    s.add_argument(
        "--body-timeout",
        type=_seconds,
        default=defaults.body_seconds,
        metavar="SECONDS",
        help="a request whose body takes longer to arrive (from its headers) gets 408 and its "
        "connection closed (default: %(default)s)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each sets `command` to its name (main dispatches on it)."""
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
    sub.add_parser("grammars", help="list the shipped grammars")
    _serve_parser(sub)
    return top
