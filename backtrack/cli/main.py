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
import sys
from collections.abc import Callable

from backtrack.cli import commands
from backtrack.cli.errors import error_line
from backtrack.cli.parser import build_parser
from grammars import BacktrackError

# What each command runs (backtrack.cli.commands), by the name the parser sets as `command`.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": commands.run,
    "demo": commands.demo,
    "check": commands.check,
    "grammars": commands.list_grammars,
    "serve": commands.serve,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = COMMANDS[args.command](args)
    except (BacktrackError, OSError) as exc:
        print(error_line(exc), file=sys.stderr, flush=True)
        return 2
    return code
