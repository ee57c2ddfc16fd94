"""Sphinx configuration of the API reference: `make docs` builds it into build/docs.

The pages in api/ document the public names from their docstrings (autodoc), the command line
page is read from the argparse parser itself (sphinx-argparse), and the shipped grammars' table
from grammars.names() (the `shipped-grammars` directive below), so none of them can fall behind
the code. `make test` builds it with -n -W: a reference that resolves to nothing fails.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # the project; this file, for cli.rst's parser

project = "backtrack"
extensions = ["sphinx.ext.autodoc", "sphinxarg.ext"]
html_theme = "alabaster"
# The docstrings write code in single backticks, as Markdown does.
default_role = "code"
smartquotes = False  # `--json` stays two hyphens
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
nitpicky = True

# The other packages' objects: their inventories are on the web, which the build does not reach,
# so a reference to them stays text. backtrack.wire.guided_clients' classes exist only for type
# checkers (wrap() returns a proxy), so autodoc cannot document them.
nitpick_ignore_regex = [
    ("py:.*", r"(builtins|collections|typing|threading|pathlib|concurrent|asyncio|enum)\..*"),
    ("py:.*", r"(openai|anthropic|httpx|llguidance|lark|guidance|pydantic|torch|transformers)\..*"),
    ("py:.*", r"backtrack\.wire\.guided_clients\..*"),
]
# A name a signature imports only under TYPE_CHECKING stays bare there (autodoc cannot evaluate
# it): the project's resolve by their last name; these are the other packages' and the type
# checkers' own. And the internal types that documented classes' fields name.
nitpick_ignore = [
    ("py:class", name)
    for name in (
        *("OpenAI", "AsyncOpenAI", "Anthropic", "AsyncAnthropic", "LLMatcher", "LLTokenizer"),
        *("GuidedOpenAI", "GuidedAsyncOpenAI", "GuidedAnthropic", "GuidedAsyncAnthropic"),
        *("grammars.json_schema.relax.Relaxation", "grammars.json_schema.build.Validator"),
        "local_target.head.Pass",
    )
]


CODE = re.compile(r"`[^`]+`")  # a code span, on one line


def markdown_docstrings(
    _app: Sphinx, _what: str, _name: str, _obj: object, _options: object, lines: list[str]
) -> None:
    """Reads a docstring as Markdown would where reStructuredText differs: an indented block
    (examples, tables of names) is shown as written (a literal block, not a quote), and a
    backslash in `code` is itself (not an escape)."""
    lines[:] = [CODE.sub(lambda m: m[0].replace("\\", "\\\\"), line) for line in lines]
    at = 1
    while at < len(lines) - 1:
        before, after = lines[at - 1], lines[at + 1]
        paragraph_ends = before.strip() and not before.startswith(" ") and not lines[at].strip()
        if paragraph_ends and after.startswith(" ") and not before.endswith("::"):
            lines[at:at] = ["", "::"]
            at += 2
        at += 1


def cli_parser() -> argparse.ArgumentParser:
    """The command line's parser, each epilog (examples laid out by hand, as `--help` prints them)
    a literal block, which sphinx-argparse would read as reStructuredText."""
    from backtrack.cli.parser import build_parser

    top = build_parser()
    subparsers = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    for parser in [top, *(p for s in subparsers for p in s.choices.values())]:
        if parser.epilog:
            parser.epilog = "::\n\n" + textwrap.indent(parser.epilog, "    ")
    return top


class ShippedGrammars(SphinxDirective):
    """A table of the shipped grammars, each name with its one-line description."""

    def run(self) -> list[nodes.Node]:
        from grammars import describe, names

        rows = [f"   * - ``{name}``\n     - {describe(name)}" for name in names()]
        header = [".. list-table::", "   :header-rows: 1", "", "   * - name", "     - what it is"]
        return self.parse_text_to_nodes("\n".join([*header, *rows]))


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_directive("shipped-grammars", ShippedGrammars)
    app.connect("autodoc-process-docstring", markdown_docstrings)
    return {"parallel_read_safe": True}
