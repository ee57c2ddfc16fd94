"""Regenerate docs/trace.png: a real guide() run, its HTML trace, a headless Chromium screenshot.

    .venv/bin/python -m scripts.screenshot_trace [--out docs/trace.png] [--html trace.html]

The black box is a scripted stand-in for an API model: it writes sloppy JSON (a preamble in a code
fence, single quotes, a float for an integer, a missing comma), reports token usage and fails once
with a retryable 503. The corrections are real: SmolLM2-135M (LocalTarget.default()) writes them
under a JSON schema. The details of one span are shown open, as on hover. Needs Debian's chromium.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from backtrack import guide
from backtrack.trace.result import GuideResult
from providers.base import Capabilities, DraftRequest, DraftStream
from providers.errors import ProviderError

PROMPT = "Describe our cat Felix as JSON: name, age in years, whether he stays indoors, his toys."
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "indoor": {"type": "boolean"},
        "toys": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "indoor", "toys"],
    "additionalProperties": False,
}
# What the stand-in means to write; each reply is the rest of it after the committed prefix.
ANSWER = '{\n  "name": "Felix",\n  "age": 4,\n  "indoor": true,\n  "toys": ["mouse", "yarn"]\n}'
# Its habits, one list per reply: (pattern, replacement) applied to what it sends.
HABITS = [
    [(r"^", "Sure! Here is Felix:\n```json\n"), (r'"Felix"', "'Felix'"), (r"$", "\n```\nEnjoy!")],
    [(r"\b4\b", "4.5"), (r"true", "True")],
    [(r"true,", "true")],
]
OPEN_ROUND = 2
OPEN_STYLE = ".bt .s.open{outline:2px solid #5f6368}.bt .s.open::after{left:17em;top:-1.6em}"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


class SloppyDrafter:
    """A Drafter (not streaming) that sends ANSWER's rest with the habits of its reply number."""

    capabilities = Capabilities(prefill=True, streaming=False)

    def __init__(self) -> None:
        self.calls = 0

    def draft(self, request: DraftRequest) -> DraftStream:
        self.calls += 1
        if self.calls == 2:
            raise ProviderError("Service Unavailable", retryable=True, status=503, retry_after=0.1)
        reply = self._reply(request.prefix, 0 if self.calls == 1 else self.calls - 2)
        stream = DraftStream(chunks=iter(()), request_id=f"req_{self.calls:03d}")
        stream.usage.input_tokens = (len(PROMPT) + len(request.prefix)) // 4 + 12
        stream.usage.output_tokens = len(reply) // 4 + 1
        stream.chunks = iter([reply])
        stream.finish_reason = "stop"
        return stream

    def _reply(self, prefix: str, habits: int) -> str:
        if ANSWER.startswith(prefix):
            rest = ANSWER[len(prefix) :]
        else:
            # A correction went its own way: carry on with the first key not written yet.
            keys = [m.start() for m in re.finditer(r'\n  "', ANSWER)]
            todo = [k for k in keys if ANSWER[k : ANSWER.index(":", k)].strip() not in prefix]
            rest = ANSWER[todo[0] if todo else -2 :]
            rest = rest if prefix.rstrip().endswith(",") or not todo else "," + rest
        for pattern, replacement in HABITS[habits] if habits < len(HABITS) else ():
            rest = re.sub(pattern, replacement, rest)
        return rest


def run() -> GuideResult:
    import torch

    from local_target import LocalTarget

    torch.set_num_threads(1)
    return guide(
        SloppyDrafter(),
        SCHEMA,
        prompt=PROMPT,
        target=LocalTarget.default(),
        max_corrections=6,
        max_draft_tokens=128,
    )


def screenshot(page: Path, png: Path, width: int, height: int) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={png.resolve()}",
                f"--window-size={width},{height}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/trace.png"))
    parser.add_argument("--html", type=Path, help="also keep the HTML page here")
    parser.add_argument("--size", default="1100x1010", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args()
    result = run()
    print(result.text)
    print(f"valid: {result.valid}  stop: {result.stop_reason}  rounds: {result.rounds}")
    for span in result.trace.spans:
        print(f"  {span.round:2} {span.origin:10} {span.text!r}")
    width, height = (int(n) for n in args.size.split("x"))
    # Show the details of the draft after the retry, as if the mouse were on it; beside the text,
    # where they hide nothing.
    first_draft = rf'class="s draft"(?= data-tip="[^"]*\nround {OPEN_ROUND}:)'
    page_html, opened = re.subn(first_draft, 'class="s draft open"', result.to_html(), count=1)
    if not opened:
        sys.exit(f"round {OPEN_ROUND} accepted nothing: the run went differently")
    page_html = page_html.replace("</style>", OPEN_STYLE + "</style>", 1)
    with tempfile.TemporaryDirectory() as tmp:
        page = args.html or Path(tmp) / "trace.html"
        page.write_text(page_html, encoding="utf-8")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(page, args.out, width, height)
    print(f"{args.out}: {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
