"""JSON Schema's keywords: a dict none of whose keys is one is no schema the user meant (such a
schema takes any document)."""

from __future__ import annotations

import functools
from typing import Any

from grammars.errors import GrammarError


def check_schema_words(schema: dict[str, Any]) -> None:
    """GrammarError where `schema` has keys and none of them is a JSON Schema keyword."""
    if not schema or schema.keys() & _schema_words():
        return
    raise GrammarError(
        f"a dict is read as a JSON schema, and none of its keys ({', '.join(map(repr, schema))})"
        " is a JSON Schema keyword, so it would take any document; for a regex or Lark text,"
        ' give {"regex": ...} or {"lark": ...}'
    )


@functools.cache
def _schema_words() -> frozenset[str]:
    """Every keyword of JSON Schema drafts 4 to 2020-12, validating or annotating."""
    import jsonschema

    drafts = (
        jsonschema.Draft4Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft202012Validator,
    )
    return frozenset(word for draft in drafts for word in draft.VALIDATORS) | _ANNOTATIONS


_ANNOTATIONS = frozenset(
    (
        *("$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$vocabulary", "$defs"),
        *("definitions", "$comment", "title", "description", "default", "examples"),
        *("deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType"),
        *("contentSchema", "x-guidance"),
    )
)
