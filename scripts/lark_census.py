"""How many Lark grammar files compile, why the others do not, and whether llguidance and the lark
library agree on the sentences of those that do.

    mkdir /tmp/lark && git --git-dir=LARK_CLONE/.git archive HEAD | tar -x -C /tmp/lark
    .venv/bin/python -m scripts.lark_census /tmp/lark [--samples 60]

(LARK_CLONE: a clone of github.com/lark-parser/lark; a bare one takes --git-dir=LARK_CLONE.)

Each `*.lark` file under the folder is read with `Grammar.from_file`. A file without a `start`
rule is read again with `start=` its first rule (as a user of that file would name it). For each
grammar that compiles, sentences drawn from its rules (tests/support/sampler.py), the same with
ignored text (`%ignore`) before and after them, and one-character corruptions of them are given to
both engines:
`Grammar.matches` and lark's Earley parser (`Grammar.parse`'s settings, with the file's path for
its imports). The output lists each file, the failures grouped by reason, and the disagreements.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import sys
from pathlib import Path

import lark

from grammars.errors import GrammarError
from grammars.grammar import Grammar
from grammars.lark.source import translate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import sampler

REASONS = [
    ("priority (refused, rightly)", re.compile(r"priority not supported")),
    ("look-around in a regex (refused, rightly)", re.compile(r"look-around|lookaround")),
    (
        "defines no rule (a library: terminals, templates or imports only)",
        re.compile(r"defines no rule"),
    ),
    (
        "only templates, nothing to start from",
        re.compile(r"no start rule.*\(the grammar's rules: $"),
    ),
    ("%declare (needs lark's postlexer)", re.compile(r"declare statement")),
]


def reason(message: str) -> str:
    for label, pattern in REASONS:
        if pattern.search(message):
            return label
    return "other: " + message.split("\n")[0][:120]


def first_rule(path: Path) -> str | None:
    try:
        translate(path.read_text(encoding="utf-8"), path=path, start="\0")
    except GrammarError as exc:
        found = re.search(r"rules: '([^']+)'", exc.message)
        return found[1] if found else None
    return None


def compile_file(path: Path) -> tuple[Grammar | None, str | None, str]:
    """The grammar (or None), the start rule named (None: `start`), and what happened."""
    try:
        return Grammar.from_file(path), None, "ok"
    except GrammarError as exc:
        if "no start rule" not in exc.message:
            return None, None, str(exc)
    start = first_rule(path)
    if start is None:
        return None, None, "no start rule (the grammar defines no rule)"
    try:
        return Grammar.from_file(path, start=start), start, "ok"
    except GrammarError as exc:
        return None, start, str(exc)


def lark_accepts(parser: lark.Lark, text: str) -> bool | None:
    """None: lark fails on it ("Earley should not generate multiple start symbol items")."""
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    except RuntimeError:
        return None
    return True


def differential(grammar: Grammar, start: str | None, n: int) -> tuple[int, int, list[str]]:
    """Texts compared, those lark accepts, and those on which the engines disagree."""
    parser = grammar._lark_parser()
    original = sampler.lark_parser
    sampler.lark_parser = lambda _source: parser  # the file's own parser, imports and all
    try:
        draw = sampler.Sampler(grammar.source, start=start or "start", max_tokens=25)
    except (ValueError, NotImplementedError, KeyError, lark.exceptions.LarkError) as exc:
        return 0, 0, [f"(not sampled: {exc})"]
    finally:
        sampler.lark_parser = original
    rng = random.Random(7)
    texts: list[str] = []
    for _ in range(n):
        try:
            texts.append(draw.sentence(rng))
        except (ValueError, NotImplementedError, KeyError, RecursionError):
            continue
    drawn = list(texts)
    if draw.ignore:  # ignored text before and after, as people leave it
        for text in drawn:
            texts.append(draw.terminal(rng.choice(draw.ignore), rng) + text)
            texts.append(text + draw.terminal(rng.choice(draw.ignore), rng))
    alphabet = sampler.alphabet_of(drawn) if drawn else "a"
    texts += [sampler.mutate(t, rng, alphabet).text for t in drawn if t]
    wrong = []
    accepted = 0
    for text in texts:
        ours, theirs = grammar.matches(text), lark_accepts(parser, text)
        accepted += bool(theirs)
        if theirs is not None and ours != theirs:
            wrong.append(f"{text!r}: llguidance {ours}, lark {theirs}")
    return len(texts), accepted, wrong


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--samples", type=int, default=60, help="sentences drawn per grammar")
    args = ap.parse_args()
    files = sorted(args.folder.rglob("*.lark"))
    failures: collections.Counter[str] = collections.Counter()
    compiled = named = compared = disagree = 0
    for path in files:
        grammar, start, outcome = compile_file(path)
        name = path.relative_to(args.folder)
        if grammar is None:
            failures[reason(outcome)] += 1
            print(f"FAIL {name}: {outcome[:160]}")
            continue
        compiled += 1
        named += start is not None
        count, accepted, wrong = differential(grammar, start, args.samples)
        compared += count
        disagree += len(wrong)
        how = f" (start={start!r})" if start else ""
        print(f"OK   {name}{how}: {count} texts ({accepted} in the language), {len(wrong)} differ")
        for line in wrong[:5]:
            print(f"       {line}")
    print(f"\n{compiled} of {len(files)} compile ({named} of them with start= their first rule)")
    for label, count in failures.most_common():
        print(f"  {count:3d}  {label}")
    print(f"{compared} texts compared between llguidance and lark: {disagree} differ")


if __name__ == "__main__":
    main()
