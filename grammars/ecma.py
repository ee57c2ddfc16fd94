"""Regexes read as JSON Schema reads them (ECMA-262): `\\d` is `[0-9]` and `\\w` is
`[A-Za-z0-9_]`, where the engine's regexes (Rust's `regex`) take any Unicode digit or letter
(a phone number written in 🯸 digits fits `\\d{3}`). Regex grammars are read the same way.
"""

from __future__ import annotations

from typing import Any

_ASCII = {"d": "0-9", "w": "A-Za-z0-9_"}


def ascii_classes(pattern: str) -> str:
    """`pattern` with `\\d`, `\\w`, `\\D` and `\\W` spelled as the ASCII classes they are in
    ECMA-262, inside a character class too; an escaped backslash stays what it is."""
    out: list[str] = []
    in_class = False
    opened = 0  # where the class's content starts in `out` (a `]` first is a literal)
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if escaped.lower() in _ASCII:
                ranges = _ASCII[escaped.lower()]
                if escaped.islower():
                    out.append(ranges if in_class else f"[{ranges}]")
                elif in_class:  # a negated class inside a class: keep the engine's own
                    out.append(char + escaped)
                else:
                    out.append(f"[^{ranges}]")
            else:
                out.append(char + escaped)
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            opened = len(out) + 1 + (pattern[i + 1 : i + 2] == "^")
        elif char == "]" and in_class and len(out) > opened:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


def ascii_schema_patterns(schema: Any) -> Any:
    """A copy of `schema` whose `pattern`s and `patternProperties` keys are `ascii_classes`'s;
    walked without recursion (a schema may be nested deep)."""
    root: list[Any] = [schema]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, schema)]
    while stack:
        parent, key, node = stack.pop()
        if isinstance(node, dict):
            copy: dict[str, Any] = {}
            for name, value in node.items():
                if name == "pattern" and isinstance(value, str):
                    copy[name] = ascii_classes(value)
                elif name == "patternProperties" and isinstance(value, dict):
                    copy[name] = {ascii_classes(k): v for k, v in value.items()}
                    stack.extend((copy[name], k, v) for k, v in copy[name].items())
                else:
                    copy[name] = value
                    stack.append((copy, name, value))
            parent[key] = copy
        elif isinstance(node, list):
            items = list(node)
            parent[key] = items
            stack.extend((items, i, v) for i, v in enumerate(items))
    return root[0]
