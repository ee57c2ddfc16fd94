"""A wider look set over the third corpus's documents: every document under every slip kind, two
seeds each (the dialects taken in turn), beyond the twelve cases a grammar gets in
benchmarks/corpora/unseen.py.

It is a look set: failures here may be looked at. A draft identical to one of the held half's is
left out, so that looking here never means looking there. Seeds and names differ from the
corpus's (`sweep<seed>-<grammar>-<kind>-<document>`), so most drafts are new; a slip with one
place to go (a fence, an echo) repeats a look-half case.
"""

from __future__ import annotations

from functools import cache

from benchmarks.corpora.main import Case
from benchmarks.corpora.unseen import (
    DOCUMENTS,
    LANGUAGES,
    SLIPS,
    dialect,
    half_cases,
    load_unseen_grammar,
)

SEEDS = (1, 2)


@cache
def sweep_cases() -> tuple[Case, ...]:
    """Every document x every slip kind x SEEDS, where the slip applies and leaves a draft the
    grammar refuses that the held half does not hold."""
    held = {case.corrupted for case in half_cases("held")}
    cases = []
    for lang in LANGUAGES.values():
        refuses = load_unseen_grammar(lang.grammar).matches
        for doc in (d for d in DOCUMENTS if d.grammar == lang.grammar):
            for kind in (*SLIPS, "dialect"):
                for seed in SEEDS:
                    name = f"sweep{seed}-{lang.grammar}-{kind}-{doc.key}"
                    try:
                        if kind == "dialect":
                            which = lang.dialects[seed % len(lang.dialects)]
                            draft = dialect(doc.text, lang, doc.prompt, name, which)
                        else:
                            draft = SLIPS[kind][0](doc.text, lang, doc.prompt, name)
                    except (ValueError, IndexError):
                        continue  # the slip has no place in this document
                    if draft == doc.text or draft in held or refuses(draft):
                        continue
                    cases.append(Case(name, lang.grammar, doc.prompt, doc.text, draft, kind))
    return tuple(cases)
