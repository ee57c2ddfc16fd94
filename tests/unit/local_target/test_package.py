"""The local_target package: its public names are read from their modules on first use, so that
importing it, its errors, `Sampling` or `Correction` brings no torch or transformers in."""

from __future__ import annotations

import subprocess
import sys

import pytest

import local_target


def test_every_public_name_resolves_and_the_list_is_sorted():
    assert local_target.__all__ == sorted(local_target.__all__)
    for name in local_target.__all__:
        assert getattr(local_target, name) is not None


def test_a_name_it_does_not_have_is_an_attribute_error():
    with pytest.raises(AttributeError, match="'local_target' has no attribute 'Tokenizer'"):
        local_target.Tokenizer  # noqa: B018


def test_the_light_names_import_no_torch():
    code = (
        "import sys; import local_target.errors; "
        "from local_target import Correction, Sampling; Sampling(temperature=0.5, seed=1); "
        "print(sorted({'torch', 'transformers'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"]
