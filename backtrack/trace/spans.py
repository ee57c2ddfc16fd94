"""The trace's spans as a run writes them: adjacent pieces of one origin and round make one span
(a draft streamed in 4-character chunks would otherwise cost a Span per chunk), and output text
a repair takes back becomes "deleted" spans where it was."""

from __future__ import annotations

from collections.abc import Iterator

from backtrack.trace.record import OUTPUT_ORIGINS, Origin, Span
from grammars.text import append_piece


class SpanLog:
    def __init__(self) -> None:
        self._spans: list[Span] = []
        # The last span's text, still growing.
        self._open: tuple[Origin, int, list[str]] | None = None

    def add(self, text: str, origin: Origin, round_: int) -> None:
        if not text:
            return
        if self._open is not None and self._open[:2] == (origin, round_):
            append_piece(self._open[2], text)
            return
        self._close()
        self._open = (origin, round_, [text])

    def _close(self) -> None:
        if self._open is not None:
            origin, round_, pieces = self._open
            self._spans.append(Span("".join(pieces), origin, round_))
            self._open = None

    def all(self) -> tuple[Span, ...]:
        """Every span so far, in order."""
        self._close()
        return tuple(self._spans)

    def retract(self, chars: int, *, shown: bool = True) -> None:
        """The last `chars` characters of output become a "deleted" span, in place (or go from
        the trace when not `shown`: text that is read again after an insertion; and always, for
        text a repair inserted)."""
        self._close()
        total = sum(len(s.text) for s in self._spans if s.origin in OUTPUT_ORIGINS)
        self.delete(total - chars, total, shown=shown)

    def insert(self, at: int, text: str, origin: Origin, round_: int) -> None:
        """A span of `origin` goes in before output character `at` (which another span holds),
        where it is, or after the output's last character: the spans around it stay in their
        places."""
        spans: list[Span] = []
        last, total = 0, 0  # after the last output span; the output's length
        for span, first, end in self._placed():
            if first <= at < end:
                before, after = span.text[: at - first], span.text[at - first :]
                spans += [Span(before, span.origin, span.round)] if before else []
                spans += [Span(text, origin, round_), Span(after, span.origin, span.round)]
                at = -1  # placed
            else:
                spans.append(span)
            if span.origin in OUTPUT_ORIGINS:
                last, total = len(spans), end
        if at == total:
            spans.insert(last, Span(text, origin, round_))
        elif at >= 0:
            raise RuntimeError("an insertion past the output's end")
        self._spans[:] = spans

    def delete(self, start: int, end: int, *, shown: bool = True) -> None:
        """Output characters `start` to `end` become "deleted" spans where they are, in their
        rounds (see `retract`)."""
        spans: list[Span] = []
        at = 0  # where the last span ends in the output
        for span, first, at in self._placed():
            if span.origin not in OUTPUT_ORIGINS or at <= start or first >= end:
                spans.append(span)
                continue
            cut = slice(max(first, start) - first, min(at, end) - first)
            pieces = [
                (span.text[: cut.start], span.origin),
                (span.text[cut] if shown and span.origin != "edit" else "", "deleted"),
                (span.text[cut.stop :], span.origin),
            ]
            spans += [Span(text, origin, span.round) for text, origin in pieces if text]
        if start < 0 or end > at:
            raise RuntimeError("a repair took back more than the output holds")
        self._spans[:] = spans

    def _placed(self) -> Iterator[tuple[Span, int, int]]:
        """Every span (the last one closed), with where it starts and ends in the output (a span
        shown beside the output: where the output stands there, empty)."""
        self._close()
        end = 0
        for span in self._spans:
            first = end
            end += len(span.text) if span.origin in OUTPUT_ORIGINS else 0
            yield span, first, end
