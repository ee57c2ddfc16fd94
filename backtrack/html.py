"""The trace as one self-contained HTML page (no scripts, no external assets).

Every piece of model or user text goes through `html.escape(..., quote=True)`: it is untrusted.
The page is rendered from the GuideResult's trace alone.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backtrack.trace import GuideResult, Round, Span

_STYLE = """
body{font:14px/1.5 system-ui,sans-serif;margin:2em;color:#222;max-width:70em}
h1{font-size:1.3em;margin:0 0 .5em}
.summary{display:flex;flex-wrap:wrap;gap:.4em 1.6em;margin-bottom:1em}
.summary b{font-weight:600}
.ok{color:#137333}.bad{color:#b3261e}
.legend span{margin-right:1em;padding:0 .3em;border-radius:3px}
pre.out{white-space:pre-wrap;word-break:break-word;font:13px/1.6 ui-monospace,monospace;
 background:#fafafa;border:1px solid #ddd;padding:1em;border-radius:6px}
.s{border-radius:2px}
.draft{background:#e8f0fe}
.reused{background:#d2e3fc;outline:1px dashed #1a73e8}
.rejected{background:#fce8e6;color:#a50e0e;text-decoration:line-through}
.dropped{background:#eee;color:#888;text-decoration:line-through}
.correction{background:#ceead6;color:#0d652d;font-weight:600}
.healed{background:#fef7e0;color:#8a5300;font-weight:600}
.forced{background:#f3e8fd;color:#681da8}
.round{border-left:2px solid #999;margin-left:1px}
table{border-collapse:collapse;margin-top:1em}
td,th{border:1px solid #ddd;padding:.2em .6em;text-align:left;vertical-align:top}
.prompt{color:#555;white-space:pre-wrap}
"""

_LEGEND = (
    ("draft", "accepted draft"),
    ("reused", "reused after a correction"),
    ("rejected", "rejected draft"),
    ("correction", "local correction"),
    ("healed", "healed token"),
    ("forced", "forced by the grammar"),
    ("dropped", "dropped (preamble / trailing)"),
)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _round_title(r: Round) -> str:
    parts = [f"round {r.index}: {r.kind}, ended: {r.ended}", f"{r.seconds * 1000:.0f} ms"]
    if r.cut_at is not None:
        parts.append(f"cut at character {r.cut_at}")
    if r.expected:
        parts.append("expected: " + ", ".join(r.expected[:12]))
    if r.local_tokens:
        parts.append(f"{r.local_tokens} local tokens ({r.target_stop})")
    if r.output_tokens or r.input_tokens:
        parts.append(f"API tokens in/out: {r.input_tokens}/{r.output_tokens}")
    if r.retries:
        parts.append(f"retries: {r.retries}")
    if r.error:
        parts.append(f"error: {r.error}")
    return "\n".join(parts)


def _spans(spans: tuple[Span, ...], rounds: tuple[Round, ...]) -> str:
    out: list[str] = []
    previous = None
    for span in spans:
        title = _round_title(rounds[span.round]) if span.round < len(rounds) else span.origin
        boundary = " round" if span.round != previous else ""
        previous = span.round
        out.append(
            f'<span class="s {span.origin}{boundary}" title="{_e(span.origin + chr(10) + title)}">'
            f"{_e(span.text)}</span>"
        )
    return "".join(out)


def render(result: GuideResult) -> str:
    trace = result.trace
    status = '<b class="ok">valid</b>' if result.valid else '<b class="bad">not valid</b>'
    facts = [
        status,
        f"stop: <b>{_e(result.stop_reason)}</b>",
        f"API calls: <b>{result.api_calls}</b>",
        f"rounds: <b>{result.rounds}</b>",
        f"corrections: <b>{result.corrections}</b>",
        f"characters accepted / rejected: <b>{result.accepted_chars} / {result.rejected_chars}</b>",
        f"local tokens: <b>{result.local_tokens}</b>",
        f"time: <b>{result.seconds:.2f} s</b>",
    ]
    legend = "".join(f'<span class="{cls}">{_e(label)}</span>' for cls, label in _LEGEND)
    rows = "".join(
        f"<tr><td>{r.index}</td><td>{_e(r.kind)}</td><td>{_e(r.ended)}</td>"
        f"<td>{r.accepted_chars}</td><td>{r.rejected_chars}</td><td>{r.local_tokens}</td>"
        f"<td>{r.seconds * 1000:.0f}</td><td>{_e(', '.join(r.expected[:8]))}</td></tr>"
        for r in trace.rounds
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>backtrack trace</title><style>{_STYLE}</style></head><body>"
        "<h1>backtrack trace</h1>"
        f'<div class="summary">{"".join(f"<span>{f}</span>" for f in facts)}</div>'
        f'<div class="prompt"><b>Prompt:</b> {_e(trace.prompt)}</div>'
        f'<p class="legend">{legend}</p>'
        f'<pre class="out">{_spans(trace.spans, trace.rounds)}</pre>'
        "<table><tr><th>round</th><th>kind</th><th>ended</th><th>accepted</th>"
        "<th>rejected</th><th>local tokens</th><th>ms</th><th>expected at the cut</th></tr>"
        f"{rows}</table></body></html>\n"
    )
