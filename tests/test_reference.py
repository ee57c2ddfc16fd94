"""The API reference (docs/api/*.rst, built by `make docs`) documents every public name.

Sphinx's strict build (`make test`) fails on a reference that resolves to nothing, but not on a
name the pages leave out: this reads the pages' autodoc directives, finds the object each one
documents, and holds each package's `__all__` to them.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs" / "api").glob("*.rst"))
PACKAGES = ("backtrack", "grammars", "providers", "local_target")
DIRECTIVE = re.compile(r"^\.\. (auto\w+|currentmodule):: (\S+)", re.MULTILINE)


def resolve(dotted: str) -> Any:
    """The object `dotted` names, as autodoc finds it: an attribute where the parent has one (a
    package's re-exported `wrap`, not its module `backtrack.wrap`), else a submodule."""
    first, *rest = dotted.split(".")
    obj: Any = importlib.import_module(first)
    for at, part in enumerate(rest, start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            obj = importlib.import_module(".".join([first, *rest[:at]]))
    return obj


def documented() -> dict[int, str]:
    """id() of each object the pages document, with the name a page gives it."""
    found: dict[int, str] = {}
    for page in PAGES:
        module = page.stem
        for kind, name in DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            if kind == "currentmodule":
                module = name
            elif kind != "automodule":
                dotted = name if name.split(".")[0] in PACKAGES else f"{module}.{name}"
                found[id(resolve(dotted))] = dotted
    return found


def test_the_reference_has_a_page_for_each_package() -> None:
    assert sorted(page.stem for page in PAGES) == sorted(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_in_the_reference(package: str) -> None:
    module = importlib.import_module(package)
    pages = documented()
    missing = sorted(name for name in module.__all__ if id(getattr(module, name)) not in pages)
    assert not missing, f"{package}.__all__ names missing from docs/api/*.rst: {missing}"
