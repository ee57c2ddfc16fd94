"""A second repair corpus, in formats the shipped grammars do not cover: TOML, HTML, GraphQL.

It exists to check that the repair gains measured on benchmarks/corpora/main.py are not tuned to
that corpus. Same `Case` shape; `grammar` names a file of benchmarks/grammars/ by its stem (toml,
html, graphql), loaded by `load_other_grammar`.

The clean documents are taken from public test suites and documentation written by others (each
one's repository, path and commit are noted beside it), trimmed only to fit the grammar's subset
or 50-400 characters. The corrupted documents are made from the clean ones by the small slip
functions below, one per kind of slip; where a slip could hit several places, the place is drawn
by a generator seeded with the case name, not picked by hand. Four cases carry two slips.
`check_other_corpus()` verifies that every clean document is valid under llguidance and under the
lark library, and that every corrupted one is invalid.

Sources (commits as fetched):
- toml-lang/toml-test @ d168c2a4f539a5219c804055af1600b8cf9ca6d7, tests/valid/...
- BurntSushi/ripgrep @ 07b86fef9f2c8c134e90f6910934139e620eaf68, Cargo.toml
- graphql/graphql-spec @ 1fe9b61b3151251d4a09a8061fa55e1c5e929168, spec/Section 2 -- Language.md
  (its `graphql example` blocks; "line N" is the line where a block starts)
- graphql/graphql-js @ a7db60beb22b0e417f9ed12215945c7fcb43246e, benchmark/kitchen-sink.graphql
- twbs/bootstrap, site/content/docs/5.3/... (the `{{< example >}}` blocks; commit per file below)
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

from benchmarks.corpora.main import Case
from grammars.errors import GrammarError, TextError
from grammars.grammar import Grammar

GRAMMAR_DIR = Path(__file__).parents[1] / "grammars"
GRAMMARS = ("toml", "html", "graphql")


@cache
def load_other_grammar(name: str) -> Grammar:
    """The grammar benchmarks/grammars/<name>.lark."""
    if name not in GRAMMARS:
        raise ValueError(f"no grammar {name!r} in this corpus (known: {', '.join(GRAMMARS)})")
    return Grammar.from_file(GRAMMAR_DIR / f"{name}.lark")


# -- slips ----------------------------------------------------------------------------------------
# Each function makes one kind of slip. `key` seeds the choice of place where there are several.


def _rng(key: str) -> random.Random:
    return random.Random(zlib.crc32(key.encode("utf-8")))


def _pick(text: str, pattern: str, key: str) -> re.Match[str]:
    matches = list(re.finditer(pattern, text, re.MULTILINE))
    if not matches:
        raise ValueError(f"{key}: no {pattern!r} in the document")
    return _rng(key).choice(matches)


def _splice(text: str, found: re.Match[str], new: str) -> str:
    return text[: found.start()] + new + text[found.end() :]


def truncated(text: str, key: str, grammar: str) -> str:
    """The API's reply ends early: cut somewhere in the middle 40-85% of the text. A cut that
    leaves a complete document (a TOML file cut after a line or inside a number) is a slip no
    checker can see; the cuts are drawn until one leaves an incomplete document."""
    rng = _rng(key)
    complete = load_other_grammar(grammar).matches
    for _ in range(100):
        cut = rng.randrange(len(text) * 2 // 5, len(text) * 17 // 20)
        if not complete(text[:cut]):
            return text[:cut]
    raise ValueError(f"{key}: every cut drawn leaves a complete document")


def fenced(text: str, lang: str, before: str = "", after: str = "") -> str:
    """The answer in a markdown code fence, with prose before and after it when given."""
    body = text.rstrip("\n")
    return f"{before}```{lang}\n{body}\n```{after}"


def dialect_one(text: str, pattern: str, replacement: str, key: str) -> str:
    """One place written as a neighbouring dialect writes it (`replacement` may use \\1)."""
    found = _pick(text, pattern, key)
    return _splice(text, found, found.expand(replacement))


def dialect_all(text: str, pattern: str, replacement: str | Callable[[re.Match[str]], str]) -> str:
    """Every such place written as a neighbouring dialect writes it."""
    return re.sub(pattern, replacement, text, flags=re.MULTILINE)


def missing(text: str, pattern: str, key: str) -> str:
    """A closing bracket or tag left out."""
    return _splice(text, _pick(text, pattern, key), "")


def extra(text: str, pattern: str, key: str) -> str:
    """A closing bracket or tag written twice."""
    found = _pick(text, pattern, key)
    return _splice(text, found, found[0] * 2)


def trailing_separator(text: str, closer: str, key: str, sep: str = ",") -> str:
    """A separator after the last item, before a closing `closer` (a pattern)."""
    found = _pick(text, rf"(\s*)({closer})", key)
    return _splice(text, found, sep + found[0])


def single_quotes(text: str, pattern: str = r'"([^"\\\n]*)"') -> str:
    """Double-quoted strings written with single quotes."""
    return re.sub(pattern, r"'\1'", text)


def unquoted(text: str, pattern: str, key: str) -> str:
    """One quoted value written bare; `pattern`'s group 1 is the quoted value, quotes included."""
    found = _pick(text, pattern, key)
    start, end = found.span(1)
    return text[:start] + text[start + 1 : end - 1] + text[end:]


def stray(text: str, pattern: str, char: str, key: str) -> str:
    """A stray character inserted after one place matching `pattern`."""
    found = _pick(text, pattern, key)
    return text[: found.end()] + char + text[found.end() :]


def swapped(text: str, pattern: str, key: str) -> str:
    """Two neighbours written in the wrong order (`pattern` has two groups), e.g. end tags that
    overlap: `</a></li>` as `</li></a>`."""
    found = _pick(text, pattern, key)
    return _splice(text, found, found[2] + found[1])


# -- TOML -----------------------------------------------------------------------------------------

# toml-test tests/valid/spec-example-1.toml, from the top down to the [database] table
_TOML_SPEC_TOP = """\
# This is a TOML document. Boom.

title = "TOML Example"

[owner]
name = "Lance Uppercut"
dob = 1979-05-27T07:32:00-08:00 # First class dates? Why not?

[database]
server = "192.168.1.1"
ports = [ 8001, 8001, 8002 ]
connection_max = 5000
enabled = true
"""
# toml-test tests/valid/spec-example-1.toml, the [servers] and [clients] tables ([clients]'s
# hosts left out)
_TOML_SPEC_SERVERS = """\
[servers]

  # You can indent as you please. Tabs or spaces. TOML don't care.
  [servers.alpha]
  ip = "10.0.0.1"
  dc = "eqdc10"

  [servers.beta]
  ip = "10.0.0.2"
  dc = "eqdc10"

[clients]
data = [ ["gamma", "delta"], [1, 2] ]
"""
# toml-test tests/valid/example.toml
_TOML_EXAMPLE = """\
best-day-ever = 1987-07-05T17:45:00Z

[numtheory]
boring = false
perfection = [6, 28, 496]
"""
# toml-test tests/valid/spec-1.0.0/array-of-tables-0.toml
_TOML_PRODUCTS = """\
[[products]]
name = "Hammer"
sku = 738594937

[[products]]  # empty table within the array

[[products]]
name = "Nail"
sku = 284758393

color = "gray"
"""
# toml-test tests/valid/spec-1.0.0/comment-0.toml
_TOML_COMMENTS = """\
# This is a full-line comment
key = "value"  # This is a comment at the end of a line
another = "# This is not a comment"
"""
# toml-test tests/valid/spec-1.0.0/float-0.toml
_TOML_FLOATS = """\
# fractional
flt1 = +1.0
flt2 = 3.1415
flt3 = -0.01

# exponent
flt4 = 5e+22
flt5 = 1e06
flt6 = -2E-2

# both
flt7 = 6.626e-34
"""
# toml-test tests/valid/spec-1.0.0/inline-table-0.toml
_TOML_INLINE = """\
name = { first = "Tom", last = "Preston-Werner" }
point = { x = 1, y = 2 }
animal = { type.name = "pug" }
"""
# toml-test tests/valid/spec-1.0.0/array-0.toml, its last two keys
_TOML_MIXED_ARRAY = """\
# Mixed-type arrays are allowed
numbers = [ 0.1, 0.2, 0.5, 1, 2, 5 ]
contributors = [
  "Foo Bar <foo@example.com>",
  { name = "Baz Qux", email = "bazqux@example.com", url = "https://example.com/bazqux" }
]
"""
# ripgrep Cargo.toml, its [dependencies] section (serde_json and termcolor left out)
_CARGO_DEPENDENCIES = """\
[dependencies]
anyhow = "1.0.75"
bstr = "1.7.0"
grep = { version = "0.3.1", path = "crates/grep" }
ignore = { version = "0.4.22", path = "crates/ignore" }
lexopt = "0.3.0"
log = "0.4.5"
textwrap = { version = "0.16.0", default-features = false }
"""
# ripgrep Cargo.toml, its [profile.release-lto] section
_CARGO_PROFILE = """\
[profile.release-lto]
inherits = "release"
opt-level = 3
debug = "none"
strip = "symbols"
debug-assertions = false
overflow-checks = false
lto = "fat"
panic = "abort"
incremental = false
codegen-units = 1
"""

_TOML_CASES = (
    Case(
        "toml-python-bools",
        "toml",
        "TOML config: title TOML Example, owner Lance Uppercut born 1979-05-27T07:32:00-08:00, "
        "database server 192.168.1.1 on ports 8001, 8001, 8002, 5000 connections, enabled.",
        _TOML_SPEC_TOP,
        dialect_all(_TOML_SPEC_TOP, r"= (true|false)\b", lambda m: "= " + m[1].title()),
        "Python True for true",
    ),
    Case(
        "toml-yaml-colon",
        "toml",
        "TOML: an array of products: Hammer (sku 738594937), an empty one, then Nail "
        "(sku 284758393, color gray).",
        _TOML_PRODUCTS,
        dialect_one(_TOML_PRODUCTS, r"^(\w+) = ", r"\1: ", "toml-yaml-colon"),
        "YAML `key: value` for one `key = value`",
    ),
    Case(
        "toml-inline-trailing-comma",
        "toml",
        "Cargo.toml [dependencies]: anyhow 1.0.75, bstr 1.7.0, grep 0.3.1 and ignore 0.4.22 "
        "from crates/, lexopt 0.3.0, log 0.4.5, textwrap 0.16.0 without default features.",
        _CARGO_DEPENDENCIES,
        trailing_separator(_CARGO_DEPENDENCIES, r"\}", "toml-inline-trailing-comma"),
        "trailing comma in an inline table",
    ),
    Case(
        "toml-unquoted-string",
        "toml",
        "TOML: servers alpha (10.0.0.1) and beta (10.0.0.2), both in dc eqdc10, and clients "
        "with data [[gamma, delta], [1, 2]].",
        _TOML_SPEC_SERVERS,
        unquoted(_TOML_SPEC_SERVERS, r'= ("[^"]*")$', "toml-unquoted-string"),
        "a string value without quotes",
    ),
    Case(
        "toml-missing-bracket",
        "toml",
        "TOML: best-day-ever 1987-07-05T17:45:00Z, and a numtheory table with boring false and "
        "perfection 6, 28, 496.",
        _TOML_EXAMPLE,
        missing(_TOML_EXAMPLE, r"\]", "toml-missing-bracket"),
        "missing ]",
    ),
    Case(
        "toml-ini-comments",
        "toml",
        "TOML with a full-line comment, key = value with a comment after it, and another key "
        'whose value is "# This is not a comment".',
        _TOML_COMMENTS,
        dialect_all(_TOML_COMMENTS, r"(^|\s)#", r"\1;"),
        "INI `;` comments for `#`",
    ),
    Case(
        "toml-json-inline-table",
        "toml",
        "TOML: numbers 0.1, 0.2, 0.5, 1, 2, 5 and contributors: the string Foo Bar "
        "<foo@example.com>, then a table for Baz Qux (email bazqux@example.com, url "
        "https://example.com/bazqux).",
        _TOML_MIXED_ARRAY,
        dialect_all(
            _TOML_MIXED_ARRAY,
            r"\{ (.*) \}",
            lambda m: "{" + re.sub(r"(\w+) = ", r'"\1": ', m[1]) + "}",
        ),
        "an inline table written as a JSON object",
    ),
    Case(
        "toml-fenced",
        "toml",
        "TOML: inline tables name (first Tom, last Preston-Werner), point (x 1, y 2) and animal "
        "with type.name pug.",
        _TOML_INLINE,
        fenced(_TOML_INLINE, "toml", "Here is the TOML:\n\n", "\n\nEach line is an inline table."),
        "prose + markdown fence around",
    ),
    Case(
        "toml-truncated",
        "toml",
        "TOML: the floats +1.0, 3.1415, -0.01 (fractional), 5e+22, 1e06, -2E-2 (exponent) and "
        "6.626e-34 (both), as flt1 to flt7 with a comment per group.",
        _TOML_FLOATS,
        truncated(_TOML_FLOATS, "toml-truncated", "toml"),
        "truncated output",
    ),
    Case(
        "toml-python-bools-yaml",
        "toml",
        "Cargo.toml [profile.release-lto]: inherits release, opt-level 3, debug none, strip "
        "symbols, no debug assertions or overflow checks, fat LTO, abort on panic, no "
        "incremental builds, one codegen unit.",
        _CARGO_PROFILE,
        dialect_one(
            dialect_all(_CARGO_PROFILE, r"= (true|false)\b", lambda m: "= " + m[1].title()),
            r"^([\w-]+) = ",
            r"\1: ",
            "toml-python-bools-yaml",
        ),
        "Python False for false, and YAML `key: value` for one `key = value`",
    ),
)

# -- GraphQL --------------------------------------------------------------------------------------

# graphql-spec Section 2, line 427
_GQL_ME = """\
{
  me {
    id
    firstName
    lastName
    birthday {
      month
      day
    }
    friends {
      name
    }
  }
}
"""
# graphql-spec Section 2, line 532
_GQL_ALIASES = """\
{
  user(id: 4) {
    id
    name
    smallPic: profilePic(size: 64)
    bigPic: profilePic(size: 1024)
  }
}
"""
# graphql-spec Section 2, line 598
_GQL_NO_FRAGMENTS = """\
query noFragments {
  user(id: 4) {
    friends(first: 10) {
      id
      name
      profilePic(size: 50)
    }
    mutualFriends(first: 10) {
      id
      name
      profilePic(size: 50)
    }
  }
}
"""
# graphql-spec Section 2, lines 618 and 631 (the description before the fragment left out)
_GQL_WITH_FRAGMENTS = """\
query withFragments {
  user(id: 4) {
    friends(first: 10) {
      ...friendProfile
    }
    mutualFriends(first: 10) {
      ...friendProfile
    }
  }
}

fragment friendProfile on User {
  id
  name
  profilePic(size: 50)
}
"""
# graphql-spec Section 2, line 650
_GQL_NESTED_FRAGMENTS = """\
query withNestedFragments {
  user(id: 4) {
    friends(first: 10) {
      ...friendFields
    }
    mutualFriends(first: 10) {
      ...friendFields
    }
  }
}

fragment friendFields on User {
  id
  name
  ...standardProfilePic
}

fragment standardProfilePic on User {
  profilePic(size: 50)
}
"""
# graphql-spec Section 2, line 693
_GQL_FRAGMENT_TYPING = """\
query FragmentTyping {
  profiles(handles: ["zuck", "coca-cola"]) {
    handle
    ...userFragment
    ...pageFragment
  }
}

fragment userFragment on User {
  friends {
    count
  }
}

fragment pageFragment on Page {
  likers {
    count
  }
}
"""
# graphql-spec Section 2, line 769
_GQL_INCLUDE = """\
query inlineFragmentNoType($expandedInfo: Boolean) {
  user(handle: "zuck") {
    id
    name
    ... @include(if: $expandedInfo) {
      firstName
      lastName
      birthday
    }
  }
}
"""
# graphql-spec Section 2, line 1216
_GQL_OBJECT_ARG = """\
{
  nearestThing(location: { lon: 12.43, lat: -53.211 })
}
"""
# graphql-spec Section 2, line 1268 (the variable's description left out)
_GQL_VARIABLE = """\
query getZuckProfile(
  $devicePicSize: Int
) {
  user(id: 4) {
    id
    name
    profilePic(size: $devicePicSize)
  }
}
"""
# graphql-js benchmark/kitchen-sink.graphql, the mutation (directives and all)
_GQL_KITCHEN_MUTATION = """\
mutation likeStory @onMutation {
  like(story: 123) @onField {
    story {
      id @onField
    }
  }
}
"""

_GQL_CASES = (
    Case(
        "gql-single-quotes",
        "graphql",
        "GraphQL: the profiles with handles zuck and coca-cola: their handle, the friend count "
        "of users and the liker count of pages, through the fragments userFragment and "
        "pageFragment.",
        _GQL_FRAGMENT_TYPING,
        single_quotes(_GQL_FRAGMENT_TYPING),
        "single-quoted strings",
    ),
    Case(
        "gql-missing-brace",
        "graphql",
        "GraphQL shorthand query: my id, first and last name, birthday month and day, and my "
        "friends' names.",
        _GQL_ME,
        missing(_GQL_ME, r"\}", "gql-missing-brace"),
        "missing }",
    ),
    Case(
        "gql-json-object-keys",
        "graphql",
        "GraphQL shorthand query: nearestThing at the location lon 12.43, lat -53.211.",
        _GQL_OBJECT_ARG,
        dialect_all(_GQL_OBJECT_ARG, r"(\w+): (?=-?\d)", r'"\1": '),
        'input object keys quoted as in JSON ("lon": 12.43)',
    ),
    Case(
        "gql-variables-no-dollar",
        "graphql",
        "GraphQL query getZuckProfile with an Int variable devicePicSize: user 4's id, name and "
        "profilePic at that size.",
        _GQL_VARIABLE,
        dialect_all(_GQL_VARIABLE, r"\$", ""),
        "variables written without $",
    ),
    Case(
        "gql-fragment-no-on",
        "graphql",
        "GraphQL query withNestedFragments: user 4's friends and mutual friends (first 10), "
        "selected by the fragment friendFields (id, name, and the fragment standardProfilePic: "
        "profilePic at size 50).",
        _GQL_NESTED_FRAGMENTS,
        dialect_one(_GQL_NESTED_FRAGMENTS, r"^(fragment \w+) on ", r"\1 ", "gql-fragment-no-on"),
        "`on` left out of a fragment definition",
    ),
    Case(
        "gql-json-request-body",
        "graphql",
        "GraphQL shorthand query: user 4's id, name, and profilePic at size 64 as smallPic and "
        "at 1024 as bigPic.",
        _GQL_ALIASES,
        json.dumps({"query": _GQL_ALIASES}),
        "wrapped in a JSON request body",
    ),
    Case(
        "gql-fenced",
        "graphql",
        "GraphQL query withFragments: user 4's friends and mutual friends (first 10 each), both "
        "through a fragment friendProfile on User with id, name and profilePic at size 50.",
        _GQL_WITH_FRAGMENTS,
        fenced(
            _GQL_WITH_FRAGMENTS,
            "graphql",
            "Sure! Here's the query using a fragment:\n\n",
            "\n\nThe fragment avoids repeating the fields.",
        ),
        "prose + markdown fence around",
    ),
    Case(
        "gql-truncated",
        "graphql",
        "GraphQL query noFragments: user 4's friends and mutual friends (first 10 each), with "
        "id, name and profilePic at size 50.",
        _GQL_NO_FRAGMENTS,
        truncated(_GQL_NO_FRAGMENTS, "gql-truncated", "graphql"),
        "truncated output",
    ),
    Case(
        "gql-quotes-missing-paren",
        "graphql",
        "GraphQL query inlineFragmentNoType with a Boolean variable expandedInfo: the user with "
        "handle zuck, id and name, and first name, last name and birthday only when expandedInfo "
        "is set (@include).",
        _GQL_INCLUDE,
        missing(single_quotes(_GQL_INCLUDE), r"\)", "gql-quotes-missing-paren"),
        "single-quoted string, missing )",
    ),
    Case(
        "gql-semicolons",
        "graphql",
        "GraphQL mutation likeStory with the directive @onMutation: like story 123 (@onField) "
        "and return the story's id (@onField).",
        _GQL_KITCHEN_MUTATION,
        stray(
            _GQL_KITCHEN_MUTATION,
            r"\}$",
            ";",
            "gql-semicolons",
        ),
        "a stray ; after a }",
    ),
)

# -- HTML -----------------------------------------------------------------------------------------

# bootstrap forms/overview.md @ 28cc57aa919b949af3b297c450463b8d334258c4, the first field of
# the first example
_HTML_EMAIL_FIELD = """\
<div class="mb-3">
  <label for="exampleInputEmail1" class="form-label">Email address</label>
  <input type="email" class="form-control" id="exampleInputEmail1" aria-describedby="emailHelp">
  <div id="emailHelp" class="form-text">We'll never share your email with anyone else.</div>
</div>
"""
# bootstrap components/breadcrumb.md @ 669ed9e9ef47c5b91a18c0305a60a7211050e1e6, the third
# breadcrumb of the first example
_HTML_BREADCRUMB = """\
<nav aria-label="breadcrumb">
  <ol class="breadcrumb">
    <li class="breadcrumb-item"><a href="#">Home</a></li>
    <li class="breadcrumb-item"><a href="#">Library</a></li>
    <li class="breadcrumb-item active" aria-current="page">Data</li>
  </ol>
</nav>
"""
# bootstrap forms/select.md @ 16207ad96afe16d1677cb88a5abff2b975cc2b87, "Default"
_HTML_SELECT = """\
<select class="form-select" aria-label="Default select example">
  <option selected>Open this select menu</option>
  <option value="1">One</option>
  <option value="2">Two</option>
  <option value="3">Three</option>
</select>
"""
# bootstrap components/pagination.md @ 74c262a6fd9536fcf27717458d8c67e876019fe5, "Working with
# icons", pages 2 and 3 left out
_HTML_PAGINATION_ICONS = """\
<nav aria-label="Page navigation example">
  <ul class="pagination">
    <li class="page-item">
      <a class="page-link" href="#" aria-label="Previous">
        <span aria-hidden="true">&laquo;</span>
      </a>
    </li>
    <li class="page-item"><a class="page-link" href="#">1</a></li>
    <li class="page-item">
      <a class="page-link" href="#" aria-label="Next">
        <span aria-hidden="true">&raquo;</span>
      </a>
    </li>
  </ul>
</nav>
"""
# bootstrap components/pagination.md @ 74c262a6fd9536fcf27717458d8c67e876019fe5, "Overview",
# page 3 left out
_HTML_PAGINATION = """\
<nav aria-label="Page navigation example">
  <ul class="pagination">
    <li class="page-item"><a class="page-link" href="#">Previous</a></li>
    <li class="page-item"><a class="page-link" href="#">1</a></li>
    <li class="page-item"><a class="page-link" href="#">2</a></li>
    <li class="page-item"><a class="page-link" href="#">Next</a></li>
  </ul>
</nav>
"""
# bootstrap components/card.md @ 103880cbccaf98888ef900f849f6c2faaed9e2b7, "Titles, text, and
# links", the text shortened and the second link left out
_HTML_CARD_LINKS = """\
<div class="card" style="width: 18rem;">
  <div class="card-body">
    <h5 class="card-title">Card title</h5>
    <h6 class="card-subtitle mb-2 text-body-secondary">Card subtitle</h6>
    <p class="card-text">Some quick example text to build on the card title.</p>
    <a href="#" class="card-link">Card link</a>
  </div>
</div>
"""
# bootstrap components/card.md @ 103880cbccaf98888ef900f849f6c2faaed9e2b7, "Using custom CSS"
_HTML_CARD_WIDTH = """\
<div class="card" style="width: 18rem;">
  <div class="card-body">
    <h5 class="card-title">Special title treatment</h5>
    <p class="card-text">With supporting text below as a natural lead-in to additional content.</p>
    <a href="#" class="btn btn-primary">Go somewhere</a>
  </div>
</div>
"""
# bootstrap components/alerts.md @ 2538f04a2ba304eb30c750ad4e4222251bae7734, "Additional
# content", the paragraphs shortened
_HTML_ALERT_CONTENT = """\
<div class="alert alert-success" role="alert">
  <h4 class="alert-heading">Well done!</h4>
  <p>Aww yeah, you successfully read this important alert message.</p>
  <hr>
  <p class="mb-0">Whenever you need to, be sure to use margin utilities.</p>
</div>
"""
# bootstrap components/alerts.md @ 2538f04a2ba304eb30c750ad4e4222251bae7734, "Dismissing"
_HTML_ALERT_DISMISS = """\
<div class="alert alert-warning alert-dismissible fade show" role="alert">
  <strong>Holy guacamole!</strong> You should check in on some of those fields below.
  <button type="button" class="btn-close" data-bs-dismiss="alert" aria-label="Close"></button>
</div>
"""
# bootstrap content/images.md @ 0f176f755ca9a2e4db0e8116507aa6fdbbe58d95, "Picture"
_HTML_PICTURE = """\
<picture>
  <source srcset="..." type="image/svg+xml">
  <img src="..." class="img-fluid img-thumbnail" alt="...">
</picture>
"""

_END_TAG = r"</[a-z0-9]+>"
_VOID_END = r"(<(?:area|br|col|hr|img|input|link|meta|source|wbr)\b[^>]*)>"

_HTML_CASES = (
    Case(
        "html-xhtml-void",
        "html",
        "HTML (Bootstrap): a form field for an email address: label, email input "
        "exampleInputEmail1 described by emailHelp, and the help text "
        '"We\'ll never share your email with anyone else."',
        _HTML_EMAIL_FIELD,
        dialect_all(_HTML_EMAIL_FIELD, _VOID_END, r"\1 />"),
        "XHTML `<input ... />` for `<input ...>`",
    ),
    Case(
        "html-unquoted-attribute",
        "html",
        "HTML (Bootstrap): a breadcrumb Home / Library / Data, with Data the current page.",
        _HTML_BREADCRUMB,
        unquoted(_HTML_BREADCRUMB, r'=("[^" ]*")', "html-unquoted-attribute"),
        "an attribute value without quotes",
    ),
    Case(
        "html-single-quotes",
        "html",
        'HTML (Bootstrap): a select menu, "Open this select menu" selected, options One, Two, '
        "Three with values 1 to 3.",
        _HTML_SELECT,
        single_quotes(_HTML_SELECT),
        "single-quoted attribute values",
    ),
    Case(
        "html-missing-end-tag",
        "html",
        "HTML (Bootstrap): pagination with a Previous arrow (&laquo;), page 1 and a Next arrow "
        "(&raquo;), the arrows labelled for screen readers.",
        _HTML_PAGINATION_ICONS,
        missing(_HTML_PAGINATION_ICONS, _END_TAG, "html-missing-end-tag"),
        "an end tag left out",
    ),
    Case(
        "html-extra-end-tag",
        "html",
        "HTML (Bootstrap): a card 18rem wide with a title, a subtitle, a line of text and a "
        "card link.",
        _HTML_CARD_LINKS,
        extra(_HTML_CARD_LINKS, _END_TAG, "html-extra-end-tag"),
        "an end tag written twice",
    ),
    Case(
        "html-overlapping-tags",
        "html",
        "HTML (Bootstrap): pagination with Previous, 1, 2, Next links.",
        _HTML_PAGINATION,
        swapped(_HTML_PAGINATION, rf"({_END_TAG})({_END_TAG})", "html-overlapping-tags"),
        "two end tags in the wrong order",
    ),
    Case(
        "html-void-end-tag",
        "html",
        "HTML (Bootstrap): a success alert with the heading Well done!, a paragraph, a "
        "divider, and a last paragraph without bottom margin.",
        _HTML_ALERT_CONTENT,
        dialect_all(
            _HTML_ALERT_CONTENT, _VOID_END, lambda m: m[0] + "</" + m[1][1:].split()[0] + ">"
        ),
        "an end tag for a void element (<hr></hr>)",
    ),
    Case(
        "html-jsx-attributes",
        "html",
        "HTML (Bootstrap): a card 18rem wide with the title Special title treatment, a line of "
        "text and a Go somewhere button link.",
        _HTML_CARD_WIDTH,
        dialect_all(
            dialect_all(_HTML_CARD_WIDTH, r"\bclass=", "className="),
            r'style="(\w+): ([^;"]*);"',
            r"style={{\1: '\2'}}",
        ),
        "JSX: className= and a style={{...}} object",
    ),
    Case(
        "html-fenced-xhtml",
        "html",
        "HTML: a picture element with an SVG source and an img fallback (classes img-fluid "
        "img-thumbnail), sources and alt text left as ...",
        _HTML_PICTURE,
        fenced(
            dialect_all(_HTML_PICTURE, _VOID_END, r"\1 />"),
            "html",
            "Here's the markup:\n\n",
            "\n",
        ),
        "markdown fence with prose, and XHTML `<img ... />`",
    ),
    Case(
        "html-truncated",
        "html",
        "HTML (Bootstrap): a dismissible warning alert: Holy guacamole! in bold, a sentence "
        "about checking the fields below, and a close button.",
        _HTML_ALERT_DISMISS,
        truncated(_HTML_ALERT_DISMISS, "html-truncated", "html"),
        "truncated output",
    ),
)

OTHER_CASES: tuple[Case, ...] = (*_TOML_CASES, *_GQL_CASES, *_HTML_CASES)


def check_other_corpus() -> list[str]:
    """Problems with this corpus: a clean document that llguidance or lark refuses, a corrupted
    one that llguidance accepts, a duplicate name, a grammar outside benchmarks/grammars. Empty
    when all is well."""
    problems = []
    seen: set[str] = set()
    for case in OTHER_CASES:
        if case.name in seen:
            problems.append(f"{case.name}: duplicate name")
        seen.add(case.name)
        if case.grammar not in GRAMMARS:
            problems.append(f"{case.name}: unknown grammar {case.grammar!r}")
            continue
        grammar = load_other_grammar(case.grammar)
        if not grammar.matches(case.clean):
            at = grammar.check(case.clean).chars
            problems.append(
                f"{case.name}: clean document invalid at {at}: {case.clean[at:][:20]!r}"
            )
        else:
            try:
                grammar.parse(case.clean)  # the lark library, after llguidance
            except (TextError, GrammarError) as exc:
                problems.append(f"{case.name}: lark refuses the clean document: {exc}")
        if grammar.matches(case.corrupted):
            problems.append(f"{case.name}: corrupted document is valid")
        if case.corrupted == case.clean:
            problems.append(f"{case.name}: corrupted document is the clean one")
    return problems


if __name__ == "__main__":
    found = check_other_corpus()
    print(
        "\n".join(found)
        or f"{len(OTHER_CASES)} cases, all clean documents valid, corrupted invalid"
    )
