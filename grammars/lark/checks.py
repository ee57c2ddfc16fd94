"""Checks made on a Lark grammar before the engine compiles it: how deep its rules nest, and
whether it can end.

The engine compiles rules recursively (a chain of 3,000 rules overflowed the stack: SIGSEGV), so
the depth of the rules is measured here first, against GrammarLimits.max_depth, and the JSON
schemas of `%json` atoms are checked as any schema is (grammars/json_schema/checks.py). The engine
also accepts grammars that no text completes (`start: a`, `a: "x" a`): every prefix of "xxx..."
looks valid and none ends. A grammar whose start can derive no finite text is refused here; a rule
that can be entered but never left is reported in the grammar's warnings.

The rules are read as llguidance reads them (grammars/lark/formulas.py); a grammar that cannot be
followed there is left to the engine, which reports syntax errors with their position.
"""

from __future__ import annotations

from grammars.errors import GrammarError
from grammars.json_schema.checks import check_schema
from grammars.lark.formulas import Definition, Formula, Unreadable, read_rules
from grammars.lark.lexer import position
from grammars.limits import GrammarLimits

__all__ = ["check_lark"]


def _components(defined: dict[str, Definition]) -> list[list[str]]:
    """Strongly connected components of the reference graph, each after every component it
    refers to (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in defined:
        if root in index:
            continue
        work = [(root, iter(defined[root].refs))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next((r for r in edges if r in defined), None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(defined[step].refs)))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component[::-1])
    return found


class _Rules:
    """The rules' groups of mutual recursion (strongly connected components), each after the
    groups it refers to; how deep each nests; and which rules derive a finite text."""

    def __init__(self, defined: dict[str, Definition]) -> None:
        self.defined = defined
        self.components = _components(defined)
        self.owner = {name: k for k, component in enumerate(self.components) for name in component}
        # Depth: the longest chain of references, a recursive group counted as its size (the
        # engine's depth-first compile may walk all of it before it returns).
        self.deepest: list[int] = []
        self.below: list[int | None] = []  # the group the deepest chain goes on to
        self.finite: set[str] = set()
        for k, component in enumerate(self.components):
            refs = {r for name in component for r in defined[name].refs}
            nexts = {self.owner[r] for r in refs if r in self.owner} - {k}
            best = max(nexts, key=lambda j: self.deepest[j], default=None)
            self.deepest.append(len(component) + (self.deepest[best] if best is not None else 0))
            self.below.append(best)
            changed = True
            while changed:
                changed = False
                for name in component:
                    if name not in self.finite and self.holds(defined[name].formula):
                        self.finite.add(name)
                        changed = True

    def holds(self, formula: Formula) -> bool:
        """Whether `formula` derives a finite text, given the rules known so far to derive one."""
        if isinstance(formula, bool):
            return formula
        if isinstance(formula, str):
            # an undefined name is the engine's error to report, not a rule without a base case
            return formula in self.finite or formula not in self.defined
        parts = (self.holds(part) for part in formula[1])
        return all(parts) if formula[0] == "all" else any(parts)

    def too_deep(self, root: str, limits: GrammarLimits, text: str) -> GrammarError | None:
        depth = self.deepest[self.owner[root]]
        if depth <= limits.max_depth:
            return None
        last = self.owner[root]
        while (step := self.below[last]) is not None:
            last = step
        bottom = self.defined[self.components[last][0]]
        line, column = position(text, bottom.at)
        return GrammarError(
            f"rules nest {depth} deep from {root!r} down to {bottom.name!r}; "
            f"at most GrammarLimits.max_depth ({limits.max_depth})",
            line=line,
            column=column,
            source=text,
        )

    def never_ends(self, root: str, text: str) -> GrammarError | None:
        if root in self.finite:
            return None
        culprit = self.no_base_case(root)
        needed = f", and {root!r} needs it" if culprit.name != root else ""
        line, column = position(text, culprit.at)
        return GrammarError(
            f"rule {culprit.name!r} can never be completed: {self.blockers(culprit)}{needed}",
            line=line,
            column=column,
            source=text,
        )

    def reachable(self, roots: list[str]) -> list[str]:
        seen = dict.fromkeys(roots)
        queue = list(roots)
        while queue:
            for ref in self.defined[queue.pop()].refs:
                if ref in self.defined and ref not in seen:
                    seen[ref] = None
                    queue.append(ref)
        return list(seen)

    def no_base_case(self, root: str) -> Definition:
        """The rule to blame: follow unfinished references from `root` until they come back; the
        rule they come back to (or one that has no alternative)."""
        path = [root]
        while True:
            stuck = self.stuck(self.defined[path[-1]])
            back = next((r for r in stuck if r in path), None)
            if back is not None or not stuck:
                return self.defined[back or path[-1]]
            path.append(stuck[0])

    def stuck(self, rule: Definition) -> list[str]:
        return [r for r in rule.refs if r in self.defined and r not in self.finite]

    def blockers(self, rule: Definition) -> str:
        shown = ", ".join(repr(r) for r in self.stuck(rule))
        return f"each of its alternatives needs {shown}" if shown else "it has no alternative"


def check_lark(text: str, limits: GrammarLimits) -> tuple[str, ...]:
    """Refuse what the engine cannot take from Lark `text`; return warnings. Raises GrammarError."""
    try:
        defined, ignored, schemas = read_rules(text)
    except Unreadable:
        return ()
    for schema in schemas:
        check_schema(schema, limits)
    rules = _Rules(defined)
    roots = [name for name in ("start", *ignored) if name in defined]
    for root in roots:
        error = rules.too_deep(root, limits, text)
        if error is not None:
            raise error
    reachable = rules.reachable(roots)
    for root in roots:
        error = rules.never_ends(root, text)
        if error is not None:
            raise error
    return tuple(
        f"rule {name!r} can never be completed ({rules.blockers(defined[name])}): "
        "a text that enters it cannot end"
        for name in reachable
        if name not in rules.finite
    )
