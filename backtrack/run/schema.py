"""What a guided run does for a JSON schema whose grammar is not its whole test.

Such a schema's drafts are checked in any key order, and some keywords only its validator checks
(`Grammar.schema`, grammars.grammar.SchemaParts): a complete text may still be invalid. The loop
asks its policy, the same questions for every grammar:

    final_limit(output)   how much of the text may be final before the run ends
    met(text)             whether a complete text is valid
    settle(output)        change a complete but invalid text: a cut for the target, or None
    target_grammar(output) the grammar the target writes under (it may take back a dead end)
    grammar               the grammar the run checks with

`NoSchema`, every other grammar's, answers as if its check were the whole test; `SchemaSettling`
answers for a JSON schema, and may move the run to the schema's own order mid-run.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from grammars.errors import GrammarError
from grammars.grammar import Grammar, SchemaParts
from grammars.json_schema.order import in_text_order, repeated_in_prefix

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from grammars import Checker
    from grammars.json_schema.build import Validator

logger = logging.getLogger(__name__)

# At most this many cuts per run at a value that only a JSON schema's validator refuses (a keyword
# the grammar does not enforce): the target writes under that grammar and may write it again.
MAX_VALIDATOR_CUTS = 3
# After an object's last key, what no order of the schema goes on from: its comma, blanks, and a
# key begun (the any-order grammar takes another key there, even one the object has).
_DEAD_END = re.compile(r'\s*(?:,\s*)?(?:"(?:[^"\\]|\\.)*)?')
_MOST_REPEATS = 8  # repeated members deleted before a target call, at most
_FRACTION = re.compile(r"-?[0-9]+(\.[0-9]+)(?![0-9.eE])")  # a number's fraction, no exponent


def _delete_member(output: Output, start: int, end: int) -> bool:
    """Deletes the member from `start` to `end` (its comma, key and value), where nothing final
    goes: where the final point is past its start and what follows it begins as the member did
    but for blanks (the schema's order took its `, "` as the next key's), that next member's
    separator goes instead (`, "b": 2, "c"` loses `b": 2, "`): the same text but for blanks.
    False: it cannot."""
    text, promised = output.text, output.promised
    final = re.sub(r"\s", "", text[start:promised])  # what of the member is final, but blanks
    follows = re.compile(r"\s*".join(map(re.escape, final))).match(text, end)
    if follows is None:
        return False
    output.delete(max(start, promised), follows.end())
    return True


@dataclass(frozen=True)
class Settled:
    """How a complete but invalid text was changed: changed in place (`cut` False: check it
    again), or cut for the target to write on from its end, with what followed the cut to offer
    it again (`rest`; None: not offered)."""

    cut: bool
    rest: str | None = None


class SchemaPolicy(Protocol):
    @property
    def grammar(self) -> Grammar: ...

    def final_limit(self, output: Output) -> int: ...

    def met(self, text: str) -> bool: ...

    def settle(self, output: Output) -> Settled | None: ...

    def target_grammar(self, output: Output) -> Grammar: ...


def policy_for(grammar: Grammar) -> SchemaPolicy:
    """The policy for a run under `grammar`."""
    return NoSchema(grammar) if grammar.schema is None else SchemaSettling(grammar, grammar.schema)


class NoSchema:
    """A grammar not built from a JSON schema: its check is the whole test."""

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar

    def final_limit(self, output: Output) -> int:
        return output.chars

    def met(self, text: str) -> bool:
        return True

    def settle(self, output: Output) -> Settled | None:
        return None

    def target_grammar(self, output: Output) -> Grammar:
        return self.grammar


class SchemaSettling:
    """A JSON schema's grammar, whose `parts` may hold the schema's own order (`strict`: drafts
    are read in any key order) and a validator with the final word. Once a complete text fails in
    a way no inserted key mends, the run checks in the schema's own order: `grammar` is `strict`
    from then on."""

    def __init__(self, grammar: Grammar, parts: SchemaParts) -> None:
        self.grammar = grammar
        self._parts = parts
        # Keywords the grammar does not enforce: only the validator can tell, once the text is
        # complete, what must be written again.
        self._validator_decides = any(r.checked for r in parts.relaxed)
        self._inserted_keys: set[str] = set()  # required keys inserted so far
        self._validator_cuts = 0
        self._order: Checker | None = None  # the schema's own order, over the committed text
        # The schema's grammar with its keys in a text's order, by that schema (None: none).
        self._orders: dict[str, Grammar | None] = {}

    def final_limit(self, output: Output) -> int:
        """Under a schema read in any key order, text its own order refuses may be taken back
        when the text is complete (`settle`): only text in that order may be final before the run
        ends. Under a schema with keywords only its validator checks, any value may be taken back
        then: nothing more is final before the run ends."""
        if self._validator_decides:
            return output.promised
        strict = self._parts.strict
        if strict is None:
            return output.chars
        # Rolled back no further than the last final point (nothing before it changes), a call
        # costs the new text.
        if self._order is None:
            self._order = strict.checker()
        order = self._order
        order.rollback(min(order.chars, output.promised))
        order.feed(output.text[order.chars :])
        return order.chars

    def met(self, text: str) -> bool:
        """The complete `text` is valid under the schema (the grammar alone decides where there
        is no validator)."""
        return self._parts.validator is None or self.grammar.matches(text)

    def target_grammar(self, output: Output) -> Grammar:
        """The schema's own order while the text keeps it, else the schema with its properties
        listed in the order of the text's objects where that takes the text: either way the
        target writes each key once and every required key. Where that order takes all but a
        dead end the any-order grammar let through (a comma after an object's last key, a key
        begun after it), the dead end is taken back; where the text has a member whose key its
        object already has, that member is deleted, as at the end (`settle`), or the text taken
        back to it where it is the text's end or cannot be deleted past the final point: under
        the drafts' any-order grammar, which lets a key repeat, a small model wrote `"nights"`
        again and again, 491 tokens. Else that grammar; the final check still holds."""
        strict = self._parts.strict
        if strict is None:
            return self.grammar
        for _ in range(_MOST_REPEATS):
            grammar = self._taking(strict, output)
            repeated = repeated_in_prefix(output.text) if grammar is None else None
            if repeated is None:
                return grammar or self.grammar
            start, end = repeated
            if end == len(output.text) or not _delete_member(output, start, end):
                output.take_back(max(start, output.promised))
            logger.debug("JSON schema: a repeated key's member deleted at character %d", start)
        return self._taking(strict, output) or self.grammar

    def _taking(self, strict: Grammar, output: Output) -> Grammar | None:
        """The schema's grammar in its own order or the text's that takes the text (a dead end
        taken back); None: none."""
        text = output.text
        if strict.check(text).chars == len(text):
            return strict
        ordered = self._in_text_order(strict, text)
        at = len(text) if ordered is None else ordered.check(text).chars
        if ordered is None or at == len(text):
            return ordered
        if at < output.promised or not _DEAD_END.fullmatch(text, at):
            return None
        logger.debug("JSON schema: a dead end taken back at character %d", at)
        output.take_back(at)
        return ordered

    def _in_text_order(self, strict: Grammar, text: str) -> Grammar | None:
        """The schema's grammar with its properties in `text`'s order."""
        schema = self._parts.strict_schema
        reordered = None if schema is None else in_text_order(schema, text)
        if reordered is None:
            return None
        key = json.dumps(reordered)
        if key not in self._orders:
            try:
                grammar = Grammar.from_json_schema(reordered, limits=strict.limits)
            except GrammarError as exc:
                logger.debug("JSON schema in the text's key order: %s", exc)
                grammar = None
            parts = grammar.schema if grammar is not None else None
            self._orders[key] = parts.strict if parts and parts.strict else grammar
        return self._orders[key]

    def settle(self, output: Output) -> Settled | None:
        """The text is complete but not valid under the schema. A key its object already has is
        deleted with its value. A required key that is missing is inserted where its object
        ends, for the target to write its value (once per key). Anything else (a fraction where
        an integer goes) and from here on the run checks and writes in the schema's own order,
        cut where that order refuses the text; where it takes the whole text (the validator
        refuses what no grammar here enforces), the cut is at the value the validator refuses,
        and that value is not offered again. None when nothing is left to try."""
        validator = self._parts.validator
        if validator is None:
            raise RuntimeError("no JSON schema validator to settle with")  # met() held
        if self._delete_repeated_member(output) or self._delete_fraction(output, validator):
            return Settled(cut=False)
        text = output.text
        in_any_order = self._parts.strict is not None
        missing = validator.missing_key(text) if in_any_order else None
        if missing is None or missing.key in self._inserted_keys:
            return self._cut_in_order(output, validator)
        self._inserted_keys.add(missing.key)
        logger.debug("JSON schema: required key inserted at character %d", missing.at)
        output.take_back(missing.at)
        output.checker.feed(missing.text)
        output.add(missing.text, "edit")
        return Settled(cut=True, rest=text[missing.at :])

    def _delete_repeated_member(self, output: Output) -> bool:
        """A key its object already has (a repair that wrote an existing key for one the schema
        refuses, or the API writing a key twice): its later member is deleted, comma and value,
        and the text after it read again (JSON without a member: the same grammar takes it). Not
        before a point already passed on as final."""
        repeated = repeated_in_prefix(output.text)
        if repeated is None or not _delete_member(output, *repeated):
            return False
        logger.debug("JSON schema: a repeated key's member deleted at character %d", repeated[0])
        return True

    def _delete_fraction(self, output: Output, validator: Validator) -> bool:
        """A number with a fraction where the schema takes none (`1.2487` where an integer goes):
        its fraction is deleted, where that is what the schema refused there, and the text after
        it read again: the API's own integer, and the rest of its document, with no value
        written anew. Not before a point already passed on as final."""
        text = output.text
        at = validator.refused_value(text)
        number = None if at is None else _FRACTION.match(text, at)
        if number is None or number.start(1) < output.promised:
            return False
        start, end = number.span(1)
        if validator.refused_value(text[:start] + text[end:]) == at:
            return False  # refused there all the same: not for its fraction
        output.delete(start, end)
        logger.debug("JSON schema: a fraction deleted at character %d", start)
        return True

    def _cut_in_order(self, output: Output, validator: Validator) -> Settled | None:
        """From here on the schema's own order (where drafts were read in any): the text is cut
        where that order refuses it, else at the value `validator` refuses (None: it refuses none
        it may cut at)."""
        text = output.text
        in_order = self._move_to_order(text)
        at: int | None = len(text) if in_order is None else in_order.chars
        rest: str | None = text[at:]
        if at == len(text):
            at, rest = self._refused_value(validator, text, output.promised), None
        if at is not None:
            output.take_back(at)
        if in_order is not None:  # the output's checker from here on
            in_order.rollback(output.chars)
            output.checker = in_order
        return None if at is None else Settled(cut=True, rest=rest)

    def _move_to_order(self, text: str) -> Checker | None:
        """Check in the schema's own order from here on: its checker over `text` (None where the
        run does already)."""
        strict = self._parts.strict
        if strict is None:
            return None
        self.grammar, self._parts = strict, strict.schema or SchemaParts()
        self._order = None
        checker = strict.checker()
        checker.feed(text)
        logger.debug(
            "JSON schema not met in any key order: its order from character %d", checker.chars
        )
        return checker

    def _refused_value(self, validator: Validator, text: str, promised: int) -> int | None:
        """Where the value starts that `validator` refuses in the complete `text`, if it is not
        final yet and the run has cuts for it left."""
        refused = validator.refused_value(text)
        if refused is None or refused < promised or self._validator_cuts >= MAX_VALIDATOR_CUTS:
            return None
        self._validator_cuts += 1
        logger.debug("JSON schema: the validator refuses the value at character %d", refused)
        return refused
