"""Sentences of a Lark grammar, drawn at random, and byte-level corruptions of them.

`Sampler` walks the rules of a grammar as the `lark` library compiles them (EBNF already expanded
into plain alternatives) with a seeded `random.Random`: same seed, same sentences. Past a depth or
size budget it takes, for every rule, the alternative with the fewest terminals, so that every
walk ends. Terminals are written from their patterns: literals as they are (random letter case for
`"kw"i`), regexes by a small generator for the regex subset our grammars use (`sre_parse` trees).

A sampled sentence follows the rules, but two adjacent tokens may lex differently from how they
were drawn (a name followed directly by another name reads as one name): most samples are in the
language, not all. That is what the differential tests want: both engines must still agree.

`mutations` corrupts a text at one offset (insert, delete or replace a character, or a byte where
the result stays UTF-8), for differential tests of the two engines on near-misses.
"""

from __future__ import annotations

import functools
import random
import re
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lark

from grammars.lark.tree import without_llguidance_only

try:  # Python >= 3.11 (importing sre_parse there warns, and warnings are errors in our tests)
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

_C = sre_parse  # opcodes and categories are module attributes (LITERAL, IN, MAX_REPEAT, ...)

# Characters drawn for negated classes and `.`: mostly ASCII, some multi-byte UTF-8 (accents, CJK,
# an emoji, a combining mark, a zero-width space) so that offsets in chars and bytes differ.
PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "
EXOTIC = "éüßñ€中文日本한😀👍\u0301\u200b"
_POOL = PRINTABLE * 3 + EXOTIC + "\t"
BLANKS = [" "] * 6 + ["\n", "  ", "\t", "\r\n", "\n    "]


def lark_parser(source: str) -> lark.Lark:
    """A lark parser configured as `Grammar.parse` configures it (Earley, dynamic lexer)."""
    return lark.Lark(without_llguidance_only(source), parser="earley", lexer="dynamic")


@functools.cache
def lark_file_parser(path: Path) -> lark.Lark:
    """`lark_parser` of a grammar file, built once."""
    return lark_parser(path.read_text(encoding="utf-8"))


def lark_accepts(path: Path, text: str) -> bool:
    """Whether the lark library parses `text` with the grammar file at `path`."""
    try:
        lark_file_parser(path).parse(text)
    except lark.exceptions.UnexpectedInput:
        return False
    return True


# -- regexes -------------------------------------------------------------------------------------


class RegexSampler:
    """Random strings matching a regex, for the subset of regex syntax used in our grammars:
    literals, classes (ranges, negation, \\d \\s \\w), `.`, groups, alternation, repeats.
    Anchors are ignored; backreferences and lookaround are refused."""

    def __init__(self, pattern: str, flags: int = 0, *, max_repeat: int = 3) -> None:
        self.pattern = pattern
        self.tree = sre_parse.parse(pattern, flags)
        self.ignorecase = bool(flags & re.IGNORECASE)
        self.max_repeat = max_repeat
        self.usual: list[str] = []  # common texts a Sampler prefers (set by Sampler)
        self.compiled = re.compile(pattern, flags)

    def sample(self, rng: random.Random) -> str:
        text = "".join(self._walk(self.tree, rng, self.ignorecase))
        if not self.compiled.fullmatch(text):  # a bug in this generator, not in a grammar
            raise AssertionError(f"sampled {text!r} does not match /{self.pattern}/")
        return text

    def _walk(self, items: Any, rng: random.Random, icase: bool) -> Iterator[str]:
        for op, arg in items:
            yield from self._item(op, arg, rng, icase)

    def _item(self, op: Any, arg: Any, rng: random.Random, icase: bool) -> Iterator[str]:
        if op is _C.LITERAL:
            yield _case(chr(arg), rng) if icase else chr(arg)
        elif op is _C.NOT_LITERAL:
            yield _draw(rng, lambda c: c != chr(arg) and not (icase and c.lower() == chr(arg)))
        elif op is _C.ANY:
            yield _draw(rng, lambda c: c != "\n")
        elif op is _C.IN:
            yield self._in(arg, rng)
        elif op is _C.CATEGORY:
            yield self._in([(op, arg)], rng)
        elif op is _C.BRANCH:
            yield from self._walk(rng.choice(arg[1]), rng, icase)
        elif op is _C.SUBPATTERN:
            _group, add_flags, del_flags, sub = arg
            sub_icase = (icase or bool(add_flags & re.IGNORECASE)) and not (
                del_flags & re.IGNORECASE
            )
            yield from self._walk(sub, rng, sub_icase)
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
            low, high, sub = arg
            high = min(high, low + self.max_repeat)
            for _ in range(rng.randint(low, high)):
                yield from self._walk(sub, rng, icase)
        elif op is _C.AT:
            return
        else:
            raise NotImplementedError(f"regex construct {op} in /{self.pattern}/")

    def _in(self, items: Sequence[Any], rng: random.Random) -> str:
        if items and items[0][0] is _C.NEGATE:
            rest = items[1:]
            return _draw(rng, lambda c: not _class_has(rest, c, self.ignorecase))
        op, arg = rng.choice(list(items))
        if op is _C.LITERAL:
            return chr(arg)
        if op is _C.RANGE:
            return chr(rng.randint(arg[0], arg[1]))
        if op is _C.CATEGORY:
            return _draw(rng, lambda c: _class_has([(op, arg)], c, False))
        raise NotImplementedError(f"class item {op} in /{self.pattern}/")


def _class_has(items: Sequence[Any], c: str, icase: bool) -> bool:
    cands = {c, c.lower(), c.upper()} if icase else {c}
    for op, arg in items:
        if op is _C.LITERAL and chr(arg) in cands:
            return True
        if op is _C.RANGE and any(arg[0] <= ord(x) <= arg[1] for x in cands):
            return True
        if op is _C.CATEGORY and _category_has(arg, c):
            return True
    return False


def _category_has(category: Any, c: str) -> bool:
    tests = {
        _C.CATEGORY_DIGIT: str.isdigit,
        _C.CATEGORY_SPACE: str.isspace,
        _C.CATEGORY_WORD: lambda x: x.isalnum() or x == "_",
    }
    negated = {
        _C.CATEGORY_NOT_DIGIT: _C.CATEGORY_DIGIT,
        _C.CATEGORY_NOT_SPACE: _C.CATEGORY_SPACE,
        _C.CATEGORY_NOT_WORD: _C.CATEGORY_WORD,
    }
    if category in negated:
        return not tests[negated[category]](c)
    return bool(tests[category](c))


def _draw(rng: random.Random, ok: Any) -> str:
    for _ in range(1000):
        c = rng.choice(_POOL)
        if ok(c):
            return c
    raise ValueError("no character in the pool fits")


def _case(c: str, rng: random.Random) -> str:
    return c.upper() if rng.random() < 0.5 else c.lower()


# -- grammars ------------------------------------------------------------------------------------


class Sampler:
    """Random sentences of a Lark grammar (text as given to `Grammar.from_lark`).

    `examples` maps a terminal name to strings to draw from instead of its pattern.
    `max_depth` bounds the nesting of rules and `max_tokens` the terminals of one sentence: each
    sentence aims at a number of terminals drawn between half of `max_tokens` and all of it. Both
    bounds are soft: past them, each rule takes its shortest way out. Below them, `grow` is the
    chance that a rule picks its alternatives weighted by how many rules they hold (else
    uniformly). `empty` is the chance that a rule with an empty alternative (an optional blank,
    say) takes it; None: the empty alternative is drawn like the others. Below 0.5, tokens are
    glued together less often.
    """

    def __init__(
        self,
        source: str,
        *,
        start: str = "start",
        max_depth: int = 40,
        max_tokens: int = 60,
        grow: float = 0.5,
        empty: float | None = 0.25,
        examples: dict[str, Sequence[str]] | None = None,
    ) -> None:
        self.parser = lark_parser(source)
        self.start = start
        self.max_depth = max_depth
        self.max_tokens = max_tokens
        self.grow = grow
        self.empty = empty
        self.examples = dict(examples or {})
        self.rules: dict[str, list[list[Any]]] = {}
        for rule in self.parser.rules:
            self.rules.setdefault(str(rule.origin.name), []).append(list(rule.expansion))
        self.terminals = {str(t.name): t for t in self.parser.terminals}
        self.ignore = [str(name) for name in self.parser.ignore_tokens]
        self._regexes: dict[str, RegexSampler] = {}
        self.height = self._heights()
        self.size = self._sizes()
        # rules that are one optional terminal (`_w: _W?`)
        self._optional_terminal = {
            name
            for name, alts in self.rules.items()
            if sorted(map(len, alts)) == [0, 1] and all(s.is_term for a in alts for s in a)
        }
        # for each rule, its alternatives with the fewest terminals
        self._quickest = {
            name: [e for e in alts if self._expansion_size(e) == self.size[name]]
            for name, alts in self.rules.items()
        }

    def _expansion_height(self, expansion: list[Any]) -> float:
        return 1 + max((self.height[s.name] for s in expansion if not s.is_term), default=0)

    def _branching(self, expansion: list[Any]) -> int:
        """How much an alternative may grow: 1 + its rules (other than optional terminals)."""
        return 1 + sum(not s.is_term and s.name not in self._optional_terminal for s in expansion)

    def _expansion_size(self, expansion: list[Any]) -> float:
        return sum(1 if s.is_term else self.size[s.name] for s in expansion)

    def _sizes(self) -> dict[str, float]:
        """For each rule, the fewest terminals it can derive (fixed point)."""
        size: dict[str, float] = dict.fromkeys(self.rules, float("inf"))
        changed = True
        while changed:
            changed = False
            for name, alts in self.rules.items():
                best = min(sum(1 if s.is_term else size[s.name] for s in alt) for alt in alts)
                if best < size[name]:
                    size[name], changed = best, True
        return size

    def _heights(self) -> dict[str, float]:
        """For each rule, the least depth of a derivation down to terminals (fixed point)."""
        height: dict[str, float] = dict.fromkeys(self.rules, float("inf"))
        changed = True
        while changed:
            changed = False
            for name, alts in self.rules.items():
                best = min(
                    1 + max((height[s.name] for s in alt if not s.is_term), default=0)
                    for alt in alts
                )
                if best < height[name]:
                    height[name], changed = best, True
        stuck = sorted(name for name, h in height.items() if h == float("inf"))
        if stuck:
            raise ValueError(f"rules that never finish: {stuck}")
        return height

    def sentence(self, rng: random.Random) -> str:
        """One sentence, drawn with `rng`."""
        out: list[str] = []
        self._expand(self.start, 0, rng, out)
        return "".join(out)

    def sentences(self, n: int, seed: int) -> list[str]:
        """`n` sentences from a fresh `random.Random(seed)`."""
        rng = random.Random(seed)
        return [self.sentence(rng) for _ in range(n)]

    def _expand(self, name: str, depth: int, rng: random.Random, out: list[str]) -> None:
        # An explicit stack rather than recursion: nested expressions run deep in rule levels.
        # `owed` is the fewest terminals the stack still has to write: the budget counts them,
        # or left recursion (`sum: sum "+" product`) would nest to max_depth before any output.
        stack: list[tuple[Any, int]] = [(_Rule(name), depth)]
        owed = self.size[name]
        tokens = 0
        target = rng.randint(self.max_tokens // 2, self.max_tokens)  # lengths vary
        while stack:
            symbol, level = stack.pop()
            if isinstance(symbol, _Rule):
                owed -= self.size[symbol.name]
                alts = self.rules[symbol.name]
                if self.empty is not None and symbol.name in self._optional_terminal:
                    # an optional blank (say): keep the odds the same when over budget
                    alt = [] if rng.random() < self.empty else next(a for a in alts if a)
                elif level >= self.max_depth or tokens + owed >= target:
                    alt = rng.choice(self._quickest[symbol.name])
                elif rng.random() < self.grow:
                    # lean to alternatives that nest: sentences with some structure
                    alt = rng.choices(alts, [self._branching(a) ** 2 for a in alts])[0]
                elif self.empty is not None and [] in alts:
                    alt = [] if rng.random() < self.empty else rng.choice([a for a in alts if a])
                else:
                    alt = rng.choice(alts)
                for s in reversed(alt):
                    stack.append((_Rule(s.name) if not s.is_term else s, level + 1))
                owed += self._expansion_size(alt)
            else:
                owed -= 1
                if out and self.ignore and rng.random() < 0.3:
                    out.append(self.terminal(rng.choice(self.ignore), rng))
                out.append(self.terminal(symbol.name, rng))
                tokens += 1

    def terminal(self, name: str, rng: random.Random) -> str:
        """A random text for terminal `name`."""
        if name in self.examples:
            return rng.choice(list(self.examples[name]))
        pattern = self.terminals[name].pattern
        if isinstance(pattern, lark.lexer.PatternStr):
            value = str(pattern.value)
            if "i" in pattern.flags:
                return "".join(_case(c, rng) for c in value)
            return value
        sampler = self._regexes.get(name)
        if sampler is None:
            flags = re.IGNORECASE if "i" in pattern.flags else 0
            sampler = self._regexes[name] = RegexSampler(str(pattern.value), flags)
            # a terminal of blanks only: blanks as people write them
            if not any(sampler.compiled.fullmatch(c) for c in PRINTABLE.strip()):
                sampler.usual = [b for b in BLANKS if sampler.compiled.fullmatch(b)]
        if sampler.usual and rng.random() < 0.9:
            return rng.choice(sampler.usual)
        return sampler.sample(rng)


@dataclass(frozen=True)
class _Rule:
    name: str


# -- corruptions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """`text` corrupted at `offset` (in characters of the original text for char edits, in bytes
    of its UTF-8 for byte edits)."""

    kind: str  # insert, delete, replace, insert-byte, delete-byte, replace-byte
    offset: int
    what: str  # the character or byte written ('' for deletions)
    text: str

    def describe(self) -> str:
        return f"{self.kind}@{self.offset}:{self.what!r}"


def insert(text: str, k: int, c: str) -> str:
    return text[:k] + c + text[k:]


def delete(text: str, k: int) -> str:
    return text[:k] + text[k + 1 :]


def replace(text: str, k: int, c: str) -> str:
    return text[:k] + c + text[k + 1 :]


def mutate(text: str, rng: random.Random, alphabet: str) -> Mutation:
    """One random corruption of `text`: a character edit drawn from `alphabet`, or a byte edit
    (kept only where the bytes still decode as UTF-8; otherwise another draw)."""
    for _ in range(100):
        kind = rng.choice(
            ["insert", "delete", "replace", "insert-byte", "delete-byte", "replace-byte"]
        )
        if kind.endswith("-byte"):
            data = text.encode("utf-8")
            k = rng.randint(0, max(len(data) - (kind != "insert-byte"), 0))
            byte = bytes([rng.randint(0, 255) if rng.random() < 0.3 else rng.randint(32, 126)])
            if kind == "insert-byte":
                new, what = data[:k] + byte + data[k:], byte.hex()
            elif not data:
                continue
            elif kind == "delete-byte":
                new, what = data[:k] + data[k + 1 :], ""
            else:
                new, what = data[:k] + byte + data[k + 1 :], byte.hex()
            try:
                return Mutation(kind, k, what, new.decode("utf-8"))
            except UnicodeDecodeError:
                continue
        k = rng.randint(0, max(len(text) - (kind != "insert"), 0))
        c = rng.choice(alphabet)
        if kind == "insert":
            return Mutation(kind, k, c, insert(text, k, c))
        if not text:
            continue
        if kind == "delete":
            return Mutation(kind, k, text[k], delete(text, k))
        return Mutation(kind, k, c, replace(text, k, c))
    raise ValueError(f"cannot corrupt {text!r}")


def alphabet_of(texts: Sequence[str]) -> str:
    """The characters of `texts` plus a few foreign ones: what a corruption draws from."""
    return "".join(sorted(set("".join(texts)))) + EXOTIC + "\x00\t\n\\'\"`"
