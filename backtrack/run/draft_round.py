"""One draft round of a guided run (backtrack.run.loop): the API's reply read into the output by a
DraftReader (backtrack.run.draft), a failed attempt retried with a new reader from the committed
text; when the reply is over, what it left after the committed text, and the round's record.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backtrack.run.draft import DraftReader
from backtrack.run.moves import place_moves
from backtrack.run.trailing import drop_final_blanks, is_trailing
from backtrack.trace.record import Round, RoundEnd
from providers.errors import ProviderError, redact

if TYPE_CHECKING:
    from backtrack.repair.search import Prefer
    from backtrack.run.options import GuideOptions
    from backtrack.run.output import Output
    from grammars.grammar import Grammar
    from providers.align import Echo
    from providers.base import AsyncDraftStream, DraftStream, Usage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplyEnd:
    """What a draft's reply left when it was over: why the draft ended (`reason`: "stop" at a
    closing fence), whether it was `cut`, its `rest` after the cut, its text from a closing
    fence on (`closing`), whether the rest is commentary after a complete answer (`trailing`),
    and where the text was cut (`cut_at`, with what the grammar `expected` there)."""

    reason: str
    cut: bool
    rest: str
    closing: str
    trailing: bool
    cut_at: int | None
    expected: tuple[str, ...]

    @property
    def ended(self) -> RoundEnd:
        """How the round ended, for the trace."""
        if self.trailing:
            return "trailing"
        if self.reason == "empty":
            return "empty"
        return "cut" if self.cut else "drafter_ended"


class DraftRound:
    """The draft round under way, the run's `index`-th round: the `reader` of its current
    attempt, each retry's reader carrying on the failed one's (`DraftReader`'s `retry_of`)."""

    def __init__(
        self,
        output: Output,
        grammar: Grammar,
        options: GuideOptions,
        prefer: Prefer | None,
        *,
        index: int,
        repairs_before: int,
        echo: Echo,
    ) -> None:
        self.output = output
        self.index = index
        self._new_reader = functools.partial(
            DraftReader, output, grammar, options, prefer, repairs_before=repairs_before, echo=echo
        )
        self.reader = self._attempt(None)

    def retry(self) -> None:
        """A new attempt after a failed one: what it committed stays, its unread text goes."""
        self.reader.drop_unread()
        self.reader = self._attempt(self.reader)

    def _attempt(self, failed: DraftReader | None) -> DraftReader:
        # A failed attempt may have stopped at a cut, reading on for a repair: the retry asks for
        # the text from the committed end, so the cut and what was read after it are gone.
        self.output.checker.rollback(self.output.chars)
        return self._new_reader(retry_of=failed)

    def empty_reply(self, stream: DraftStream | AsyncDraftStream) -> ProviderError | None:
        """The error for an API reply that ended with the provider's finish reason but without one
        character while the text is not complete (a 200 reply with no content): a provider fault,
        retried from the committed text like a dropped connection, not a drafter that has
        finished. A drafter function that returns nothing has finished (`stream.finished` is the
        provider's word, and only API streams carry it). A reply that wrote the committed text
        again (`stream.stripped`) and stopped is no fault either: asked again, it says the same."""
        if not self.reader.received_nothing or self.output.checker.complete or stream.stripped:
            return None
        if not stream.finished or stream.finish_reason not in ("stop", "length"):
            return None
        if stream.finish_reason == "length":  # the same request would spend its budget again
            return ProviderError(
                "the reply spent its whole token budget without writing text (a reasoning model "
                "thinks within it): raise max_draft_tokens",
                request_id=stream.request_id,
            )
        return ProviderError(
            "the reply was empty while the text is not complete",
            retryable=True,
            request_id=stream.request_id,
        )

    def finish(self, finish_reason: str, stripped: str, reasoning: str = "") -> ReplyEnd:
        """The reply is over, for the provider's `finish_reason`: what it left. The trace shows
        the rest after a cut as rejected, or dropped when it is trailing (with the text's final
        blanks), and the text from a closing fence on as dropped."""
        reader, output = self.reader, self.output
        reason = reader.finish(finish_reason, stripped, reasoning)
        checker = output.checker
        rest, closing = "".join(reader.rest), reader.closing or ""
        at_fence = reader.closing is not None and not reader.cut
        trailing = checker.complete and (at_fence or (reader.cut and is_trailing(checker, rest)))
        cut_at = checker.chars if reader.cut or trailing else None
        expected = checker.expected() if cut_at is not None else ()
        if trailing:
            drop_final_blanks(output)
            output.drop(rest, "trailing")
        elif reader.cut:
            output.add(rest, "rejected")
        output.drop(closing, "fence")
        if output.moves and checker.complete and (trailing or not reader.cut):
            reader.repairs += place_moves(output)
        return ReplyEnd(reason, reader.cut, rest, closing, trailing, cut_at, expected)

    def close(
        self,
        end: ReplyEnd,
        *,
        usage: Usage,
        request_id: str | None,
        retries: int,
    ) -> Round:
        """The round's record, once its reply is over (`finish`)."""
        reader = self.reader
        rejected = len(end.rest) + len(end.closing)
        logger.debug(
            "draft round %d ended %s (%s): %d characters accepted, %d rejected%s",
            self.index,
            end.ended,
            end.reason,
            reader.accepted,
            rejected,
            f", cut at character {end.cut_at}" if end.cut_at is not None else "",
        )
        return Round(
            index=self.index,
            kind="draft",
            ended=end.ended,
            seconds=time.perf_counter() - reader.started,
            accepted_chars=reader.accepted,
            rejected_chars=rejected,
            repeated_chars=sum(
                len(d.text)
                for d in reader.output.drops
                if d.round == self.index and d.reason in ("repeat", "rewrite")
            ),
            cut_at=end.cut_at,
            expected=end.expected,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            usage_known=usage.known,
            retries=retries,
            closed_early=reader.closed_early,
            request_id=request_id,
            repairs=tuple(reader.repairs),
        )

    def failed(self, error: BaseException, *, retries: int) -> Round:
        """The round's record when the provider failed for good: what its attempts committed
        stays, the last one's unread text goes."""
        reader = self.reader
        reader.drop_unread()
        return Round(
            index=self.index,
            kind="draft",
            ended="error",
            seconds=time.perf_counter() - reader.started,
            accepted_chars=reader.accepted,
            retries=retries,
            error=redact(str(error)),
            repairs=tuple(reader.repairs),
        )
