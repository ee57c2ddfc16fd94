"""The commands' bodies: `run` (and `demo`, a run with SmolLM2 drafting), `check`, `grammars` and
`serve`, each given the parsed command line and returning the exit status. Everything that can be
wrong with a command line fails before any model loads or any request goes out."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from backtrack.cli.errors import CommandError
from backtrack.cli.models import drafter_for, load_target, sdk_client, watched
from backtrack.cli.output import report, report_failure
from backtrack.cli.parser import guide_options
from backtrack.cli.progress import Progress
from backtrack.cli.upstream import check_reachable
from backtrack.run.guide import guide
from backtrack.serve.app import ServeLimits
from backtrack.trace.result import GuideResult, TextLostError
from grammars import Grammar, GrammarError, shipped
from providers.errors import ProviderError

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
    model loads or any request goes out; an API that cannot be reached, before the model loads."""
    prompt = _prompt(args)
    grammar = _grammar(args.grammar) if args.grammar else Grammar.from_json_schema(DEMO_SCHEMA)
    kind, model = _provider(args.provider)
    _check_options(args, kind)
    options = guide_options(args)
    progress = Progress(quiet=args.quiet)
    client = None if kind == "local" else sdk_client(kind, args)
    try:
        if client is not None:
            check_reachable(str(client.base_url), args.timeout)
        target = load_target(args, progress)
        drafter = drafter_for(args, kind, model, target, client)
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
    """Check that the upstream can be reached, load the target once, then serve until
    interrupted (backtrack.serve.app)."""
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
        header_seconds=args.header_timeout,
        body_seconds=args.body_timeout,
    )
    config = ServeConfig(args.upstream, args.upstream_kind, key, limits, guide_options(args))
    check_reachable(args.upstream, args.timeout)
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
