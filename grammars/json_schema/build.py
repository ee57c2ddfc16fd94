"""JSON semantics for drafts under a JSON schema.

llguidance builds a schema's grammar in generation order: an object's properties in the order the
schema lists them, an integer without a fraction. That is a fine order to write in, and the local
target writes in it, but JSON objects are unordered and an API may put the keys in any order or
write `1.0` for an integer; cutting such a draft would alter what the API meant.

So drafts are checked with a looser grammar (`loosen`): each listed property becomes an exact-name
pattern property (any order, also across the `allOf` branches and `$ref`s the engine merges),
`required` and the property counts are left to the end (so is a `required` whose properties are
listed elsewhere: beside a `$ref`, in an `anyOf` branch), an integer may be written as a number,
and a `const` or `enum` value is matched by value (its keys in any order; a number near it, which
takes `1.0` for 1). The loose grammar accepts a superset of the schema's
documents; a complete document is then validated against the schema itself (`Validator`, the
`jsonschema` package, draft 2020-12, plus no repeated key), which decides whether it is valid.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from grammars.errors import TextError
from grammars.limits import nesting_past

__all__ = ["VALIDATOR_MAX_DEPTH", "MissingKey", "Validator", "loosen"]

_T = TypeVar("_T")
_REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$#&-~")
# Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("$defs", "definitions", "patternProperties", "dependentSchemas")
# Left to the final validation: they count the properties, which any order makes unknowable.
_COUNTS = ("required", "minProperties", "maxProperties", "dependentRequired", "dependencies")


# The deepest document the validator decides. It recurses a few frames per level of the document
# (and of the schema): under `{"items": {"$ref": "#"}}` 200 levels fit in Python's 1,000 frames,
# 250 do not. Within this depth, a document that still runs out of stack is a TextError too.
VALIDATOR_MAX_DEPTH = 256

# An object with more properties keeps the schema's order: each is a regex of the engine's lexer,
# and hundreds of them make compiling slow (600 took minutes).
MAX_ANY_ORDER = 48


def _exact(name: str) -> str:
    """An anchored regex matching exactly `name`."""
    return "^" + "".join("\\" + c if c in _REGEX_SPECIAL else c for c in name) + "$"


def loosen(schema: Any) -> Any:
    """`schema` with every object's properties in any order, integers as numbers and `const` and
    `enum` values matched by value (a copy).
    An object that already has pattern properties keeps its own order (llguidance needs them
    disjoint, which an exact name may not be), and so does one with more than MAX_ANY_ORDER."""
    if isinstance(schema, list):
        return [loosen(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    # A `const` or `enum` value is matched by value, not as the text the engine would write.
    by_value = []
    if "const" in out and not _plain(out["const"]):
        by_value.append(_by_value(out.pop("const")))
    if isinstance(out.get("enum"), list) and not all(_plain(v) for v in out["enum"]):
        by_value.append({"anyOf": [_by_value(v) for v in out.pop("enum")]})
    if by_value:
        out["allOf"] = [*out.get("allOf", []), *by_value]
    for key in _ONE:
        if isinstance(out.get(key), dict):
            out[key] = loosen(out[key])
    for key in _LIST:
        if isinstance(out.get(key), list):
            out[key] = loosen(out[key])
    for key in (*_MAP, "properties"):
        if isinstance(out.get(key), dict):
            out[key] = {name: loosen(s) for name, s in out[key].items()}
    if out.get("type") == "integer":
        out["type"] = "number"
    elif isinstance(out.get("type"), list):
        out["type"] = ["number" if t == "integer" else t for t in out["type"]]
    properties = out.get("properties")
    if (
        isinstance(properties, dict)
        and 0 < len(properties) <= MAX_ANY_ORDER
        and "patternProperties" not in out
    ):
        out["patternProperties"] = {_exact(name): s for name, s in out.pop("properties").items()}
        for key in _COUNTS:
            out.pop(key, None)
    elif properties is None:
        # `required` beside a `$ref`, or in an `anyOf` branch, names keys whose schemas are listed
        # elsewhere: the engine would want them first.
        out.pop("required", None)
    return out


def _plain(value: Any) -> bool:
    """A JSON value with one way to write it (escapes aside): a string, a boolean or null."""
    return value is None or isinstance(value, str | bool)


def _by_value(value: Any) -> dict[str, Any]:
    """A schema of the JSON values equal to `value` (a superset: the validator decides): an
    object's keys in any order, a number written any way (`1.0` for 1)."""
    if _plain(value):
        return {"const": value}
    if isinstance(value, int | float):
        # The engine takes a range with equal ends as the integer alone (`1.0` is cut) and
        # misreads ranges past 2**53: a window around the number, or past that any number.
        if abs(value) < 2**53:
            return {"type": "number", "exclusiveMinimum": value - 1, "exclusiveMaximum": value + 1}
        return {"type": "number"}
    if isinstance(value, list):
        items = [_by_value(v) for v in value]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    return {
        "type": "object",
        "properties": {name: _by_value(v) for name, v in value.items()},
        "required": list(value),
        "additionalProperties": False,
    }


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key is repeated")
    return dict(pairs)


@functools.lru_cache(maxsize=8)
def _with_dependencies(cls: Any) -> Any:
    """The validator class `cls`, reading `dependencies` too: draft 2019-09 split it in two and
    dropped it, but a schema that still uses it means it (JSON-Schema-Test-Suite's optional
    dependencies-compatibility.json expects it enforced)."""
    import jsonschema

    if "dependencies" in cls.VALIDATORS:
        return cls
    legacy = jsonschema.Draft7Validator.VALIDATORS["dependencies"]
    return jsonschema.validators.extend(cls, {"dependencies": legacy})


@dataclass(frozen=True)
class MissingKey:
    """A required key an object lacks: insert `text` at character `at` (after the object's last
    member, or after its `{` when it has none) and write the key's value there."""

    at: int
    key: str
    text: str


class Validator:
    """Whether a whole JSON text is valid under the schema, in JSON's own semantics."""

    def __init__(self, schema: dict[str, Any]) -> None:
        import jsonschema

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        self._validator = _with_dependencies(cls)(schema)

    def __call__(self, text: str) -> bool:
        return self._apply(text, self._validator.is_valid) is True

    def _errors(self, text: str) -> list[Any] | None:
        return self._apply(text, lambda value: list(self._validator.iter_errors(value)))

    def _apply(self, text: str, use: Callable[[Any], _T]) -> _T | None:
        """`use` of the value of a JSON `text`; None when it is not JSON with distinct keys.
        TextError when it nests past VALIDATOR_MAX_DEPTH, or so deep for this schema that the
        validator (which recurses) would run out of stack."""
        value = _load(text)
        if value is _INVALID:
            return None
        try:
            return use(value)
        except RecursionError:
            raise _too_deep(
                text,
                "the document nests too deeply for the JSON schema validator under this schema",
            ) from None

    def missing_key(self, text: str) -> MissingKey | None:
        """The first required key a valid JSON `text` lacks, and where it goes (None when no
        key is missing or the text is not JSON with distinct keys)."""
        for error in self._errors(text) or ():
            if error.validator != "required" or not isinstance(error.instance, dict):
                continue
            key = next(k for k in error.validator_value if k not in error.instance)
            open_at, last_end = _object_at(text, list(error.absolute_path))
            at = last_end if error.instance else open_at + 1
            separator = ", " if error.instance else ""
            return MissingKey(at, key, f"{separator}{json.dumps(key)}: ")
        return None

    def refused_value(self, text: str) -> int | None:
        """Where, in a JSON `text`, the value starts that the schema refuses (of the errors, one
        at the deepest place: the least to write again); None when the text is valid or is not
        JSON with distinct keys."""
        errors = self._errors(text)
        if not errors:
            return None
        deepest = max(errors, key=lambda e: len(e.absolute_path))
        at = _skip(text, 0)
        for step in deepest.absolute_path:
            at = _member(text, at, step)
        return at


def _too_deep(text: str, message: str, byte_offset: int = 0) -> TextError:
    raw = text.encode("utf-8", "surrogatepass")
    return TextError(
        message,
        text=text,
        char_offset=len(raw[:byte_offset].decode("utf-8", "surrogatepass")),
        byte_offset=byte_offset,
    )


_INVALID = object()
_DECODER = json.JSONDecoder()
_BLANK = " \t\n\r"


def _load(text: str) -> Any:
    """The JSON value of `text` (_INVALID when it is not JSON with distinct keys); TextError past
    VALIDATOR_MAX_DEPTH."""
    past = nesting_past(text.encode("utf-8", "surrogatepass"), VALIDATOR_MAX_DEPTH)
    if past is not None:
        raise _too_deep(
            text,
            f"the document nests arrays and objects more than {VALIDATOR_MAX_DEPTH} levels deep; "
            f"the JSON schema validator decides at most {VALIDATOR_MAX_DEPTH}",
            past,
        )
    try:
        return json.loads(text, object_pairs_hook=_no_repeats)
    except ValueError:
        return _INVALID


def _object_at(text: str, path: list[str | int]) -> tuple[int, int]:
    """For the object at `path` in the JSON `text`: the offset of its `{` and the end of its last
    member's value (of the `{` + 1 when it has none)."""
    at = _skip(text, 0)
    for step in path:
        at = _member(text, at, step)
    end = at + 1
    for _, value_at in _members(text, at):
        end = _DECODER.raw_decode(text, value_at)[1]
    return at, end


def _member(text: str, at: int, step: str | int) -> int:
    """Where the value of member `step` (a key, or an array index) of the container at `at`
    starts."""
    for index, (key, value_at) in enumerate(_members(text, at)):
        if key == step or (isinstance(step, int) and index == step and key is None):
            return value_at
    raise ValueError(f"no member {step!r} at character {at}")


def _members(text: str, at: int) -> Iterator[tuple[str | None, int]]:
    """(key or None for array items, offset of the value) for each member of the container
    whose bracket is at `at`."""
    is_object = text[at] == "{"
    at = _skip(text, at + 1)
    while text[at] not in "}]":
        key = None
        if is_object:
            key, at = _DECODER.raw_decode(text, at)
            at = _skip(text, _skip(text, at) + 1)  # past the colon
        yield key, at
        at = _skip(text, _DECODER.raw_decode(text, at)[1])
        if text[at] == ",":
            at = _skip(text, at + 1)


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _BLANK:
        at += 1
    return at
