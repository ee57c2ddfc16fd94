"""What the command line prints: the text, a one-line summary, the result as JSON, the trace."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from backtrack.cli.errors import error_line
from backtrack.cli.progress import Progress
from backtrack.trace.result import GuideResult
from grammars import BacktrackError

# -- output ----------------------------------------------------------------------------------------


def summary(result: GuideResult) -> str:
    """One line: whether the text is valid, why it stopped, and what it cost."""
    return (
        f"valid: {result.valid}  stop: {result.stop_reason}  API calls: {result.api_calls}  "
        f"corrections: {result.corrections}  repairs: {result.repairs}  "
        "characters accepted/rejected: "
        f"{result.accepted_chars}/{result.rejected_chars}  kept: {result.kept:.0%}"
        f"{f' ({result.lost_chars} lost)' if result.lost_chars else ''}  "
        f"local tokens: {result.local_tokens}  time: {result.seconds:.1f} s"
    )


def as_json(result: GuideResult) -> dict[str, Any]:
    """The result as plain JSON data: the text, its counts, and every span and round."""
    usage = result.usage
    return {
        "text": result.text,
        "valid": result.valid,
        "complete": result.complete,
        "stop_reason": result.stop_reason,
        "api_calls": result.api_calls,
        "rounds": result.rounds,
        "corrections": result.corrections,
        "repairs": result.repairs,
        "accepted_chars": result.accepted_chars,
        "rejected_chars": result.rejected_chars,
        "kept": round(result.kept, 4),
        "lost_chars": result.lost_chars,
        "drops": [dataclasses.asdict(d) for d in result.drops],
        "local_tokens": result.local_tokens,
        # known: false where a reply did not report its usage (the counts are a lower bound)
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "known": usage.known,
        },
        "seconds": round(result.seconds, 3),
        "spans": [dataclasses.asdict(s) for s in result.trace.spans],
        "round_details": [dataclasses.asdict(r) for r in result.trace.rounds],
    }


def _first_draft(result: GuideResult) -> str:
    """The first round's reply as the drafter wrote it: without what repairs inserted."""
    return "".join(s.text for s in result.trace.spans if s.round == 0 and s.origin != "edit")


def report(args: argparse.Namespace, result: GuideResult, progress: Progress) -> None:
    if args.json:
        print(json.dumps(as_json(result), ensure_ascii=False, indent=2))
    elif args.show_draft:
        print("--- unconstrained draft (first round) ---")
        print(_first_draft(result))
        print("--- guided result ---")
        print(result.text)
    else:
        print(result.text)
    sys.stdout.flush()
    if not args.json:
        progress.note(summary(result))
    if args.html:
        path = result.save_html(args.html)
        progress.note(f"HTML trace written to {path.resolve()}")


def report_failure(
    args: argparse.Namespace, exc: BacktrackError, partial: GuideResult, progress: Progress
) -> None:
    """What was done before the failure is not lost: --json prints it with the error, --html
    writes its trace. The error text is redacted (keys masked) like the error line."""
    if args.json:
        data = {**as_json(partial), "error": error_line(exc).removeprefix("backtrack: error: ")}
        print(json.dumps(data, ensure_ascii=False, indent=2), flush=True)
    if args.html:
        path = partial.save_html(args.html)
        progress.note(f"HTML trace of the work before the failure written to {path.resolve()}")
