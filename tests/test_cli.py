"""The `backtrack` command line: check and grammars (the demo runs in the e2e set)."""

from __future__ import annotations

from pathlib import Path

import pytest

import backtrack
import grammars
from backtrack.cli import main


def test_grammars_lists_every_shipped_one(capsys: pytest.CaptureFixture[str]):
    assert main(["grammars"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == grammars.names()


@pytest.mark.parametrize(
    ("content", "code", "needle"),
    [
        pytest.param('{"a": [1, 2]}', 0, "valid", id="valid"),
        pytest.param('{"a": tru', 1, "incomplete", id="prefix"),
        pytest.param('{"a": 1,}', 1, "t.json:1:9: invalid at character 8 (byte 8)", id="cut"),
    ],
)
def test_check(tmp_path: Path, capsys: pytest.CaptureFixture[str], content, code, needle):
    path = tmp_path / "t.json"
    path.write_text(content, encoding="utf-8")
    assert main(["check", "json", str(path)]) == code
    out = capsys.readouterr().out
    assert needle in out
    if code and "invalid" in needle:
        assert '{"a": 1,}\n        ^' in out
        assert "expected: " in out


def test_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["check", "no_such_grammar", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("backtrack: error: no shipped grammar named 'no_such_grammar'")
    assert err.count("\n") == 1


def test_all_is_sorted_and_complete():
    assert backtrack.__all__ == sorted(backtrack.__all__)
    for name in backtrack.__all__:
        assert getattr(backtrack, name) is not None
