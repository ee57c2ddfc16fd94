"""The `backtrack` command line: demo, check, grammars.

Errors print as one line on stderr with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grammars as shipped
from backtrack.errors import BacktrackError
from backtrack.grammar import Grammar

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


def _grammar(spec: str) -> Grammar:
    """A shipped name, a .lark file, or a JSON schema file (.json)."""
    path = Path(spec)
    if path.suffix == ".json" and path.is_file():
        return Grammar.from_json_schema(path.read_text(encoding="utf-8"))
    if path.suffix == ".lark" or path.is_file():
        return Grammar.from_file(path)
    return Grammar.load(spec)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def demo(args: argparse.Namespace) -> int:
    from backtrack.guide import guide
    from local_target import LocalTarget
    from providers.local import LocalDrafter

    _say("Loading SmolLM2-135M-Instruct (the first run converts it, about 30 s)...")
    target = LocalTarget.default(progress=_say)
    grammar = _grammar(args.grammar) if args.grammar else Grammar.from_json_schema(DEMO_SCHEMA)
    _say(f"Prompt: {args.prompt}")
    result = guide(
        LocalDrafter(target),
        grammar,
        prompt=args.prompt,
        target=target,
        max_corrections=4,
        max_draft_tokens=96,
        completion_tokens=96,
    )
    draft_round = [s for s in result.trace.spans if s.round == 0]
    print("--- unconstrained draft (first round) ---")
    print("".join(s.text for s in draft_round))
    print("--- guided result ---")
    print(result.text)
    print("---")
    print(
        f"valid: {result.valid}  stop: {result.stop_reason}  API calls: {result.api_calls}  "
        f"corrections: {result.corrections}  characters accepted/rejected: "
        f"{result.accepted_chars}/{result.rejected_chars}  local tokens: {result.local_tokens}  "
        f"time: {result.seconds:.1f} s"
    )
    out = Path(args.html)
    result.save_html(out)
    print(f"HTML trace written to {out.resolve()}")
    return 0 if result.valid else 1


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


def list_grammars(_args: argparse.Namespace) -> int:
    width = max(len(n) for n in shipped.names())
    for name in shipped.names():
        print(f"{name:<{width}}  {shipped.describe(name)}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="backtrack",
        description="Grammar-valid output from black-box LLMs: the API drafts, an Earley check "
        "cuts at the first bad byte, a small local model corrects.",
    )
    sub = top.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run guide() with SmolLM2 as both drafter and target")
    d.add_argument("--prompt", default=DEMO_PROMPT)
    d.add_argument(
        "--grammar", help="shipped name, .lark file or JSON schema file (default: a cat schema)"
    )
    d.add_argument("--html", default="backtrack-trace.html", help="where to write the trace")
    d.set_defaults(run=demo)
    c = sub.add_parser("check", help="where a text stops matching a grammar")
    c.add_argument("grammar", help="shipped name, .lark file or JSON schema file")
    c.add_argument("file", help="the text to check ('-' for stdin)")
    c.set_defaults(run=check)
    g = sub.add_parser("grammars", help="list the shipped grammars")
    g.set_defaults(run=list_grammars)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except (BacktrackError, OSError) as exc:
        print(f"backtrack: error: {exc}", file=sys.stderr)
        return 2
    return code
