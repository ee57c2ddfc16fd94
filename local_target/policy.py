"""How a correction chooses and stops, in numbers (`DecodingPolicy`), and when it stops
besides its budget (`Until`); the choosing is local_target.decoding's. Imports nothing but
Python, so it loads inside vLLM's environment as well as ours."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Until = Literal["terminal", "complete", "close"] | int
"""When a correction stops besides its budget: at the end of a lexeme ("terminal"), at a full
sentence of the grammar or the budget ("complete"; "close": the same, with the closing bias from
its first token), or after that many tokens (an int)."""


@dataclass(frozen=True)
class DecodingPolicy:
    """The numbers behind a correction's choices (the defaults are what the tests and benchmarks
    were measured with).

    The closing window of a completion budget of `max_tokens` is its last
    `max_tokens // closing_share` tokens, but at least `closing_min` and at most `closing_max`:
    `closing_window(12) == 4`, `closing_window(512) == 32`; and, however large the budget, every
    token after the first `closing_after`.
    """

    closing_bonus: float = 10.0
    """Added to the logits of closing tokens (`Vocabulary.closers`) in the closing window."""
    closing_share: int = 4
    closing_min: int = 4
    closing_max: int = 32
    closing_after: int = 64
    """A completion writes what the API left, not a document of its own: past this many tokens
    it is in its closing window, whatever its budget (seen: SmolLM2 finishing a bug report's
    list of steps with 498 tokens of counting, `"2, 2, 2, ..."`, before its last 32 closed it)."""
    lexeme_ends: frozenset[int] = frozenset(b",:;()[]{}\"'`=<>+-*/%|&!?. \t\r\n")
    """A "terminal" correction stops once a token ends in one of these bytes (punctuation or
    whitespace): the drafter is better placed to write the next word."""
    speculate: int = 8
    """The most proposed tokens verified in one forward pass (local_target.speculation); 0 turns
    speculation off. It changes the number of passes, never the tokens chosen."""
    selective_vocab: int = 100_000
    """Vocabularies at least this large compute the grammar's mask before the logits, and then
    only the allowed tokens' logits where they are at most `selective_share` of the vocabulary
    (local_target.head): the output layer is then a large share of a forward pass."""
    selective_share: float = 0.25
    max_blank_run: int = 32
    """Where a correction's new text ends in this many blank bytes, tokens of blanks only are
    refused while the grammar allows anything else: a grammar with free whitespace (JSON) would
    let a small model pad on to its whole budget (seen: 512 tokens of line ends and spaces)."""
    blank_depth: int | None = 4
    """Where the text (the committed text's end and a correction's new text) ends in blanks
    this many past its deepest indentation (a line's or, without a line end, a gap's), or in
    three line ends, tokens of blanks only are refused while the grammar allows anything else;
    None turns it off. A small model among blanks goes on with blanks (seen: SmolLM2 after
    `"nights":` and a line end indented 8 wrote 16 tokens of spaces, then 32 more and a number
    of 200 digits; the blanks were the draft's, left between two repairs)."""
    max_repeats: int = 4
    """Where a correction's new text ends in this many copies in a row of one block of 8 to 64
    bytes, more than blanks and closers, tokens that would begin one more copy are refused while
    the grammar allows anything else: a small model repeats a list's item to its whole budget
    (seen: SmolLM2 writing `"chicken",` about 90 times in a recipe's array, 492 tokens). Copies
    that differ in their blanks and numbers only count too (`local_target.repeats`). Where the
    block is longer (65 to 512 bytes: whole lines again), the correction stops instead, as if its
    budget were spent (`repeats.long_loop`)."""
    max_digit_run: int = 40
    """Where the new text ends in more than this many digits in a row, tokens that start with a
    digit are refused while the grammar allows anything else: that long a number, or string of
    digits, is a small model counting on (seen: SmolLM2 writing a 400-digit `"sku"` until its
    budget ended, the text incomplete). A token may take the run a few digits past it."""
    refusal_blanks: bool = False
    """Whether a token that writes a blank first (healing: past the committed text) may answer
    the grammar's refusal of the model's own choice where the text already ends in a blank
    (while the grammar allows anything else: `local_target.blanks`). A small model refused its
    choice takes the blanks the mask leaves and asks for the same again after them (seen:
    SmolLM2 after `"email" : `, a string refused where the schema takes a boolean, wrote
    `\\n             \\n         \\n        false`; now ` false`). Where the mask is computed
    before the logits (`selective_vocab`), the model's own choice is not known and this does
    not apply."""
    min_novelty: float = 0.15
    """Where the last `repeats.NOVELTY_BYTES` (384) bytes the model wrote (in this correction and
    the rounds before it) compress, with zlib, to less than this share of their size, the
    correction stops as if its budget were spent (`max_tokens`), and the run's own ending follows:
    a loop that varies round `max_repeats` (seen: SmolLM2 in an INI key,
    `-import-python-import-python3.2-import-python4-...`, 512 tokens; 0.12 at 384 bytes). No
    384-byte stretch of the repair corpora's 294 documents long enough compresses below 0.31."""
    comments: bool = False
    """Whether the model may open the grammar's comments (grammars.lark.comments: what its
    ignored terminals, and those it names comments, begin with). A grammar never needs one, and
    a small model free to write them wrote its answer there (seen: SmolLM2 completing a proto
    file wrote `//proto3`, `//user`, `//id`, ..., 114 tokens the grammar reads nothing of)."""

    def __post_init__(self) -> None:
        if self.closing_share < 1:
            raise ValueError(f"closing_share must be >= 1, got {self.closing_share}")
        if self.speculate < 0:
            raise ValueError(f"speculate must be >= 0, got {self.speculate}")
        if not 0 <= self.selective_share <= 1:
            raise ValueError(f"selective_share must be in [0, 1], got {self.selective_share}")
        if self.max_repeats < 2:
            raise ValueError(
                f"max_repeats must be >= 2 (one copy is no loop), got {self.max_repeats}"
            )
        if not 0 <= self.min_novelty <= 1:
            raise ValueError(f"min_novelty must be in [0, 1], got {self.min_novelty}")
        if self.closing_after < 0:
            raise ValueError(f"closing_after must be >= 0, got {self.closing_after}")
        if not 0 <= self.closing_min <= self.closing_max:
            raise ValueError(
                "closing_min and closing_max must satisfy 0 <= closing_min <= closing_max,"
                f" got {self.closing_min} and {self.closing_max}"
            )

    def closing_window(self, max_tokens: int) -> int:
        """How many tokens before the end of a completion budget the closing bias starts."""
        share = max_tokens // self.closing_share
        window = min(self.closing_max, max(self.closing_min, share))
        return max(window, max_tokens - self.closing_after)

    def ends_lexeme(self, new: bytes | bytearray, until: Until) -> bool:
        """A "terminal" correction that wrote `new` (something besides blanks) may stop here."""
        if until != "terminal" or not new.strip():
            return False
        return new[-1] in self.lexeme_ends


DEFAULT_POLICY = DecodingPolicy()
