"""The trace as one self-contained HTML page: no scripts, no external assets (its CSP forbids both).

Every piece of model or user text goes through `html.escape(..., quote=True)`: it is untrusted.
Each span's escaped text appears in the page in one piece, and a browser's DOM holds it as it is:
a CR goes in as a character reference (raw, the parser would read it as a line end) and a NUL,
which no HTML text can hold, as a marker element. Markers that make NULs, blank spans and round
boundaries visible, and the hover details, are CSS pseudo-elements, so they are neither in the
DOM text nor in what a reader copies. Untrusted text cannot reorder the page around it: output
spans and table cells isolate it (`unicode-bidi: isolate`, `<bdi>`), and in the hover details
each piece sits between FSI and PDI, so an unterminated RIGHT-TO-LEFT OVERRIDE ends with it.
The styles are scoped under `.bt`, so the page can also sit inside a notebook (`_repr_html_`). A
span with the class `open` shows its details without hovering (for screenshots).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import replace

from backtrack.trace.record import Drop, Repair, Round, Span, Trace

_STYLE = """
.bt{font:14px/1.5 system-ui,sans-serif;color:#222;max-width:72em;margin:1.5em}
.bt h1{font-size:1.3em;margin:0 0 .4em}
.bt h2{font-size:1em;margin:1.2em 0 .3em}
.bt .summary{display:flex;flex-wrap:wrap;gap:.2em 1.4em;margin-bottom:.8em}
.bt .summary b{font-weight:600}
.bt .ok{color:#137333}.bt .bad{color:#b3261e}
.bt pre{white-space:pre-wrap;word-break:break-word;font:13px/1.7 ui-monospace,monospace;
 border:1px solid #ddd;padding:.7em 1em;border-radius:6px;margin:0}
.bt pre.prompt{unicode-bidi:plaintext;background:#f6f6f6;color:#444;max-height:12em;overflow:auto}
.bt pre.out{background:#fcfcfc}
.bt .legend span{display:inline-block;margin:0 .8em .3em 0;padding:0 .4em;border-radius:3px}
.bt .s{position:relative;border-radius:2px;unicode-bidi:isolate}
.bt .draft{background:#e8f0fe}
.bt .reused{background:#d2e3fc;box-shadow:inset 0 -2px #1a73e8}
.bt .rejected{background:#fce8e6;color:#a50e0e;text-decoration:line-through}
.bt .dropped{background:#eee;color:#888;text-decoration:line-through}
.bt pre.reasoning{unicode-bidi:plaintext;color:#666}
.bt .correction{background:#ceead6;color:#0d652d;font-weight:600}
.bt .healed{background:#feefc3;color:#8a5300;font-weight:600}
.bt .forced{background:#f3e8fd;color:#681da8}
.bt .edit{background:#fff3c4;color:#7a4f01;font-weight:600;box-shadow:inset 0 -2px #e37400}
.bt .deleted{background:#fce8e6;color:#a50e0e;text-decoration:line-through double}
.bt .skipped{background:#f1f3f4;color:#a50e0e;text-decoration:line-through wavy}
.bt .ws::before{content:attr(data-ws);color:#999;font-weight:400}
.bt .nul::before{content:"NUL";font:9px/1 ui-monospace,monospace;color:#fff;background:#b3261e;
 border-radius:2px;padding:0 2px;margin:0 1px;vertical-align:1px}
.bt .rb::before{content:attr(data-round);font:10px/1 system-ui,sans-serif;color:#fff;
 background:#80868b;border-radius:6px;padding:1px 4px;margin:0 2px;vertical-align:2px}
.bt .s:hover{outline:2px solid #5f6368}
.bt .s:hover::after,.bt .s.open::after{content:attr(data-tip);position:absolute;left:0;top:100%;
 z-index:2;width:max-content;max-width:36em;white-space:pre-wrap;
 font:12px/1.45 system-ui,sans-serif;color:#fff;background:#333;padding:.4em .6em;
 border-radius:4px;pointer-events:none}
.bt table{border-collapse:collapse;font-size:13px}
.bt td,.bt th{border:1px solid #ddd;padding:.15em .5em;text-align:left;vertical-align:top}
.bt td{white-space:nowrap}
.bt td.n{text-align:right}
.bt td.w{white-space:normal;overflow-wrap:anywhere}
.bt td.err{color:#b3261e}
"""

_LEGEND = (
    ("draft", "accepted draft"),
    ("reused", "reused after a correction"),
    ("rejected", "rejected draft"),
    ("correction", "local correction"),
    ("healed", "healed token"),
    ("forced", "forced by the grammar"),
    ("dropped", "dropped (preamble / trailing)"),
    ("edit", "inserted by a repair"),
    ("deleted", "taken back by a repair"),
    ("skipped", "skipped by a repair"),
)
_BLANKS = {"\n": "↵", "\r": "␍", "\t": "⇥", " ": "·"}
_EXPECTED_SHOWN = 12
_NUL = '<i class="nul"></i>'
# FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE: what <bdi> does, inside an attribute's text.
_FSI, _PDI = "\u2068", "\u2069"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _text(text: str) -> str:
    """`text` as element content that a browser's DOM holds unchanged (NUL as a marker)."""
    return _e(text).replace("\r", "&#13;").replace("\x00", _NUL)


def _bdi(text: str) -> str:
    return f"<bdi>{_text(text)}</bdi>"


def _isolated(text: str) -> str:
    """`text` for the hover details: isolated, and a NUL (an attribute cannot hold one) shown."""
    return f"{_FSI}{text.replace(chr(0), '␀')}{_PDI}"


def _expected(r: Round, piece: Callable[[str], str]) -> str:
    """What the grammar wanted, each item through `piece`, the list cut after a dozen (the
    separators and the count of the rest are plain text, the same in HTML)."""
    more = len(r.expected) - _EXPECTED_SHOWN
    shown = ", ".join(piece(item) for item in r.expected[:_EXPECTED_SHOWN])
    return shown + (f" … (+{more} more)" if more > 0 else "")


def _edit(edit: Repair) -> str:
    """What one repair did, its pieces of text isolated."""
    done = [
        f"{what} {_isolated(text)}"
        for what, text in (
            ("deleted", edit.deleted),
            ("skipped", edit.skipped),
            ("inserted", edit.inserted),
        )
        if text
    ]
    return f"{', '.join(done)}; then {edit.fits} characters of the draft fit again"


def _round_details(r: Round) -> list[str]:
    """The facts about a round, one per line of the hover box."""
    lines = [f"round {r.index}: {r.kind}, ended: {r.ended}", f"time: {r.seconds * 1000:.1f} ms"]
    if r.cut_at is not None:
        lines.append(f"cut at character {r.cut_at}")
    if r.expected:
        lines.append(f"expected at the cut: {_expected(r, _isolated)}")
    if r.kind == "draft":
        lines.append(f"API tokens in/out: {r.input_tokens}/{r.output_tokens}")
        if r.closed_early:
            lines.append("stream closed at the cut")
    if r.local_tokens or r.target_stop:
        lines.append(f"local tokens: {r.local_tokens} (stopped: {r.target_stop})")
    for edit in r.repairs:
        lines.append(f"repair at character {edit.at}: {_edit(edit)}")
    if r.retries:
        lines.append(f"retries: {r.retries}")
    if r.request_id:
        lines.append(f"request id: {_isolated(r.request_id)}")
    if r.error:
        lines.append(f"error: {_isolated(r.error)}")
    return lines


def _span(span: Span, rounds: tuple[Round, ...]) -> str:
    details = [f"{span.origin}, {len(span.text)} characters"]
    if 0 <= span.round < len(rounds):
        details += _round_details(rounds[span.round])
    classes, blank = f"s {span.origin}", ""
    if not span.text.strip():
        # A blank span would be invisible (a rejected "\n" is only a line break): mark it.
        classes += " ws"
        blank = f' data-ws="{_e("".join(_BLANKS.get(c, c) for c in span.text))}"'
    return (
        f'<span class="{classes}"{blank} data-tip="{_e(chr(10).join(details))}">'
        f"{_text(span.text)}</span>"
    )


def _spans(spans: tuple[Span, ...], rounds: tuple[Round, ...]) -> str:
    """The output, a streamed draft's chunks joined: one span per run of one origin in one round."""
    runs: list[Span] = []
    for span in spans:
        if runs and (runs[-1].round, runs[-1].origin) == (span.round, span.origin):
            span = replace(span, text=runs.pop().text + span.text)
        runs.append(span)
    out: list[str] = []
    for i, span in enumerate(runs):
        if i == 0 or span.round != runs[i - 1].round:
            out.append(f'<i class="rb" data-round="{_e(span.round)}"></i>')
        out.append(_span(span, rounds))
    return "".join(out)


def _row(r: Round) -> str:
    ended = r.ended + (f" ({r.target_stop})" if r.target_stop else "")
    api = f"{r.input_tokens} / {r.output_tokens}" if r.kind == "draft" else ""
    api = api if r.usage_known else "not reported"
    # Each cell's HTML: untrusted text (expected items, the error) isolated piece by piece.
    cells = [
        (_e(r.index), "n"),
        (_e(r.kind), ""),
        (_e(ended), ""),
        (_e(r.accepted_chars), "n"),
        (_e(r.rejected_chars), "n"),
        ("" if r.cut_at is None else _e(r.cut_at), "n"),
        (_expected(r, _bdi), "w"),  # its separators and "(+n more)" need no escaping
        (_e(api), "n"),
        (_e(r.local_tokens), "n"),
        (_e(len(r.repairs)), "n"),
        (_e(r.retries), "n"),
        (_e(f"{r.seconds * 1000:.1f}"), "n"),
        (_bdi(r.error) if r.error else "", "w err"),
    ]
    return "<tr>" + "".join(f'<td class="{c}">{v}</td>' for v, c in cells) + "</tr>"


_BAD = ' class="bad"'
_DROP_SHOWN = 400  # characters of a dropped text shown; the rest is counted


def _drops(drops: tuple[Drop, ...]) -> str:
    """What of the API's text was left out, each with its reason and where it stood; reasoning
    whole, folded (it may run to pages)."""
    if not drops:
        return ""
    items = []
    for d in drops:
        where = f"{len(d.text)} characters at output character {d.at} (round {d.round})"
        if d.reason == "reasoning":
            items.append(
                f"<li><details><summary><b>reasoning</b>, {where}</summary>"
                f'<pre class="reasoning">\n{_text(d.text)}</pre></details></li>'
            )
            continue
        more = len(d.text) - _DROP_SHOWN
        shown = _bdi(d.text[:_DROP_SHOWN]) + (f" … (+{more} characters)" if more > 0 else "")
        items.append(
            f"<li><b>{_e(d.reason)}</b>, {len(d.text)} characters at output character {d.at}"
            f' (round {d.round}): <code class="dropped">{shown}</code></li>'
        )
    return f"<h2>Left out</h2><ul>{''.join(items)}</ul>"


_HEADER = (
    "round",
    "kind",
    "ended",
    "accepted",
    "rejected",
    "cut at",
    "expected at the cut",
    "API tokens in / out",
    "local tokens",
    "repairs",
    "retries",
    "ms",
    "error",
)


def render(trace: Trace, *, valid: bool, stop_reason: str, seconds: float) -> str:
    """The whole page for a run's trace, with its summary counts."""
    usage = trace.usage
    status = '<b class="ok">valid</b>' if valid else '<b class="bad">not valid</b>'
    facts = [
        status,
        f"stop: <b>{_e(stop_reason)}</b>",
        f"API calls: <b>{trace.api_calls}</b>",
        f"API tokens in / out: <b>{usage.input_tokens} / {usage.output_tokens}</b>"
        + ("" if usage.known else " (a reply did not report its usage: at least)"),
        f"rounds: <b>{len(trace.rounds)}</b>",
        f"corrections: <b>{trace.corrections}</b>",
        f"repairs: <b>{trace.repairs}</b>",
        f"characters accepted / rejected: <b>{trace.accepted_chars} / {trace.rejected_chars}</b>",
        f"API answer text kept: <b{_BAD if trace.lost_chars else ''}>{trace.kept:.0%}</b>"
        f" ({trace.lost_chars} characters lost)",
        f"local tokens: <b>{trace.local_tokens}</b>",
        f"time: <b>{seconds:.2f} s</b>",
    ]
    legend = "".join(f'<span class="{cls}">{_e(label)}</span>' for cls, label in _LEGEND)
    legend += '<span><i class="rb" data-round="n"></i>round n starts</span>'
    legend += '<span class="ws" data-ws="↵"> blank text</span>'
    legend += f"<span>{_NUL} NUL character</span><span>hover a span for details</span>"
    header = "".join(f"<th>{_e(h)}</th>" for h in _HEADER)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>backtrack trace</title><style>{_STYLE}</style></head><body>"
        '<div class="bt"><h1>backtrack trace</h1>'
        f'<div class="summary">{"".join(f"<span>{f}</span>" for f in facts)}</div>'
        f"{_drops(trace.drops)}"
        # A parser drops a newline right after <pre>: this one, not the prompt's own first.
        f'<h2>Prompt</h2><pre class="prompt">\n{_text(trace.prompt)}</pre>'
        f'<h2>Output</h2><p class="legend">{legend}</p>'
        f'<pre class="out">{_spans(trace.spans, trace.rounds)}</pre>'
        f"<h2>Rounds</h2><table><tr>{header}</tr>"
        f"{''.join(_row(r) for r in trace.rounds)}</table></div></body></html>\n"
    )
