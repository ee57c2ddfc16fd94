"""The `backtrack` command line: run, demo, check, grammars, and the progress display.

`run` goes through the real OpenAI and Anthropic SDKs to the local scripted servers
(tests/support/servers.py). Tests whose drafts need no correction use a stand-in target that fails
if touched; the end-to-end set corrects with the real SmolLM2, loaded once for the module.
"""

from __future__ import annotations

import html
import io
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import backtrack
import grammars
from backtrack.cli import commands as cli_commands
from backtrack.cli import models as cli_models
from backtrack.cli.main import main
from backtrack.cli.parser import DEMO_PROMPT, build_parser
from backtrack.cli.progress import Progress
from backtrack.cli.upstream import check_reachable
from providers import retry
from providers.errors import ProviderError
from tests.support.responder import DOC, KEPT, PROMPT, SLIP, responder
from tests.support.scripted import ScriptedAPI
from tests.support.servers import MockServer, error, text

KEY = "sk-test-cli-0123456789abcdef"  # a dummy; no output may show it
Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """`run_cli(*argv)`: main()'s exit code, stdout and stderr."""

    def call(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


class _NoTarget:
    """A target for runs that must not need one."""

    def session(self, prompt: Any) -> Any:
        raise AssertionError("the target was used")


@pytest.fixture
def no_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_commands, "load_target", lambda args, progress: _NoTarget())


def provider_args(kind: str, openai: MockServer, anthropic: MockServer) -> list[str]:
    if kind == "anthropic":
        return ["--provider", "anthropic:claude-test", "--base-url", anthropic.url]
    found = ["--provider", "openai:gpt-test", "--base-url", f"{openai.url}/v1"]
    return [*found, "--completions"] if kind == "openai-completions" else found


def one_error_line(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("backtrack: error: "), err
    return err


# -- grammars and check ----------------------------------------------------------------------------


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


YES_NO = 'from guidance import select\nG = select(["yes", "no"])'


@pytest.mark.parametrize(
    ("definition", "content", "code"),
    [
        pytest.param(
            'from guidance import select\nG = select(["yes", "no"])', "no", 0, id="select"
        ),
        pytest.param('from guidance import select\nG = select(["yes", "no"])', "nope", 1, id="not"),
        pytest.param(
            'import guidance\nG = guidance.json(schema={"type": "array"})', "[1, 2]", 0, id="json"
        ),
        pytest.param('from guidance import gen\nG = "#" + gen(regex="[0-9]+")', "#12", 0, id="gen"),
        pytest.param("import pydantic\nclass G(pydantic.BaseModel):\n  n: int", '{"n": 1}', 0),
    ],
)
def test_check_with_a_grammar_object_defined_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Run, definition, content, code
):
    (tmp_path / "my_grammars.py").write_text(definition, encoding="utf-8")
    (tmp_path / "text").write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    monkeypatch.delitem(sys.modules, "my_grammars", raising=False)
    assert run_cli("check", "my_grammars:G", "text")[0] == code


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        pytest.param("no_such_module:G", "grammar no_such_module:G: cannot import", id="module"),
        pytest.param("json:G", "grammar json:G: json has no G", id="name"),
        pytest.param("json:dumps", "cannot make a grammar from function", id="not-grammar"),
    ],
)
def test_a_python_grammar_that_is_not_there_is_one_error_line(
    tmp_path: Path, run_cli: Run, spec: str, needle: str
):
    code, _, err = run_cli("check", spec, str(tmp_path / "x"))
    assert code == 2 and needle in err and err.count("\n") == 1


def test_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["check", "no_such_grammar", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("backtrack: error: no shipped grammar 'no_such_grammar'")
    assert err.count("\n") == 1


def test_all_is_sorted_and_complete():
    assert backtrack.__all__ == sorted(backtrack.__all__)
    for name in backtrack.__all__:
        assert getattr(backtrack, name) is not None
    with pytest.raises(AttributeError, match="'backtrack' has no attribute 'Target'"):
        backtrack.Target  # noqa: B018


def test_importing_backtrack_and_its_command_line_imports_no_torch():
    """torch and transformers take seconds to import; only a local model needs them."""
    code = (
        "import sys, backtrack, backtrack.cli.main; "
        "print(sorted({'torch', 'transformers'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"]


def test_help_runs_as_a_module():
    argv = [sys.executable, "-m", "backtrack", "--help"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.startswith("usage: backtrack")


# -- help ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        pytest.param(
            [], ["run", "demo", "check", "grammars", "examples:", "exit status"], id="top"
        ),
        pytest.param(
            ["run"],
            ["--provider", "openai:MODEL", "OPENAI_BASE_URL", "--completions", "examples:"],
            id="run",
        ),
        pytest.param(["demo"], ["No API key", "(default: 4)", "examples:"], id="demo"),
        pytest.param(["check"], ["caret", "example:"], id="check"),
    ],
)
def test_help_explains_with_examples(
    capsys: pytest.CaptureFixture[str], argv: list[str], needles: list[str]
):
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for needle in needles:
        assert needle in out


# -- run: errors before any model or request -------------------------------------------------------

BAD_LARK = 'start: "a" b\nb: /x/ |\n  c.2: "y"\n'


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["hi", "-p", "gemini:pro"], "unknown provider 'gemini:pro'", id="provider"),
        pytest.param(["hi", "-p", "openai"], "unknown provider 'openai'", id="no-model"),
        pytest.param(["hi", "--prompt", "ho"], "give one prompt", id="two-prompts"),
        pytest.param([], "give one prompt", id="no-prompt"),
        pytest.param(["  "], "the prompt is empty", id="empty-prompt"),
        pytest.param(["hi", "-g", "nope.lark"], "grammar file not found: nope.lark", id="no-file"),
        pytest.param(["hi", "-g", "{bad}"], "bad.lark:3:8: priority not supported", id="grammar"),
        pytest.param(["hi", "-g", "{schema}"], "schema.json:1:2: JSON schema is not", id="schema"),
        pytest.param(["hi", "--prompt-file", "missing.txt"], "file not found", id="prompt-file"),
        pytest.param(["hi", "--base-url", "http://x"], "--base-url is for", id="local-url"),
        pytest.param(["hi", "-p", "anthropic:m", "--completions"], "--completions", id="compl"),
    ],
)
def test_run_usage_errors_are_one_line(
    run_cli: Run, keys: None, no_target: None, tmp_path: Path, argv: list[str], message: str
):
    (tmp_path / "bad.lark").write_text(BAD_LARK, encoding="utf-8")
    (tmp_path / "schema.json").write_text("{oops", encoding="utf-8")
    fill = {"{bad}": tmp_path / "bad.lark", "{schema}": tmp_path / "schema.json"}
    code, out, err = run_cli("run", *[str(fill.get(a, a)) for a in argv])
    assert (code, out) == (2, "")
    assert message in one_error_line(err)


def test_run_with_a_folder_that_is_no_model(run_cli: Run, tmp_path: Path):
    code, _, err = run_cli("run", "hi", "--target", str(tmp_path))
    assert code == 2
    assert f"--target {tmp_path}: not a transformers model folder" in one_error_line(err)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--target", "vllm:ftp://x"], "takes an http:// or https:// URL", id="url"),
        pytest.param(
            ["--target", "vllm:http://127.0.0.1:9", "--device", "cpu"],
            "--device is the vLLM server's to choose",
            id="device",
        ),
        pytest.param(["--tokenizer", "tok"], "--tokenizer goes with --target vllm:URL", id="tok"),
        pytest.param(
            ["--target", "vllm:http://127.0.0.1:9"],  # the discard port: nobody listens
            "no model listed by the vLLM server at http://127.0.0.1:9/v1",
            id="unreachable",
        ),
    ],
)
def test_run_on_a_vllm_target_that_cannot_be(run_cli: Run, argv: list[str], message: str):
    code, out, err = run_cli("run", "hi", "-q", *argv)
    assert (code, out) == (2, "")
    assert message in one_error_line(err)


@pytest.mark.parametrize(
    ("device", "message"),
    [
        pytest.param("warp9", "--device warp9: ", id="unknown"),
        pytest.param("cuda:0", "--device cuda:0: CUDA is not available here", id="no-cuda"),
    ],
)
def test_run_on_a_device_that_is_not_there(run_cli: Run, device: str, message: str):
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = run_cli("run", "hi", "--device", device, "--quiet")
    assert code == 2
    assert message in one_error_line(err)


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port: int = listener.getsockname()[1]
    return port


@pytest.mark.parametrize("command", ["openai", "anthropic", "serve"])
def test_an_upstream_that_cannot_be_reached_fails_before_the_model_loads(
    run_cli: Run, keys: None, monkeypatch: pytest.MonkeyPatch, closed_port: int, command: str
):
    loaded: list[Any] = []
    monkeypatch.setattr(cli_commands, "load_target", lambda args, progress: loaded.append(args))
    url = f"http://127.0.0.1:{closed_port}"
    if command == "serve":
        argv = ["serve", "--upstream", url]
    else:
        argv = ["run", "hi", "-p", f"{command}:m", "--base-url", url]
    code, out, err = run_cli(*argv)
    assert (code, out, loaded) == (2, "", [])
    assert f"cannot reach {url}" in one_error_line(err)
    assert "Connection refused" in err


def test_an_upstream_behind_a_proxy_is_reached_through_it(
    monkeypatch: pytest.MonkeyPatch, openai_server: MockServer, closed_port: int
):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(ProviderError, match="through the proxy the environment sets"):
        check_reachable(openai_server.url, timeout=5)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    check_reachable(openai_server.url, timeout=5)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_run_without_a_key_says_which_variable(
    run_cli: Run, keys: None, no_target: None, monkeypatch: pytest.MonkeyPatch, kind: str
):
    variable = f"{kind.upper()}_API_KEY"
    monkeypatch.delenv(variable)
    code, _, err = run_cli("run", "hi", "-p", f"{kind}:m")
    assert code == 2
    assert f"{variable} is not set" in one_error_line(err)


@pytest.mark.parametrize("kind", ["openai-chat", "openai-completions", "anthropic"])
def test_run_http_401_is_one_line_without_the_key(
    run_cli: Run,
    keys: None,
    no_target: None,
    openai_server: MockServer,
    anthropic_server: MockServer,
    kind: str,
):
    server = anthropic_server if kind == "anthropic" else openai_server
    server.script(error(401, f"Incorrect API key provided: {KEY}", type="authentication_error"))
    argv = provider_args(kind, openai_server, anthropic_server)
    code, out, err = run_cli("run", "hi", *argv, "--quiet")
    assert (code, out) == (2, "")
    line = one_error_line(err)
    assert "status 401" in line and "Incorrect API key provided" in line
    assert KEY not in line and KEY[8:] not in line
    assert len(server.exchanges) == 1  # not retried
    sent = server.exchanges[0].headers
    assert KEY in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))


def test_run_failing_midway_writes_the_partial_trace(
    run_cli: Run, keys: None, no_target: None, openai_server: MockServer, tmp_path: Path
):
    openai_server.script(text('{"a": [1, 2', finish_reason="length"), error(403, "forbidden"))
    page = tmp_path / "partial.html"
    argv = ["-p", "openai:gpt-test", "--base-url", f"{openai_server.url}/v1", "--html", str(page)]
    code, out, err = run_cli("run", "hi", *argv)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith("backtrack: error: openai.PermissionDeniedError: ")
    assert f"HTML trace of the work before the failure written to {page.resolve()}" in err
    assert html.escape('{"a": [1', quote=True) in page.read_text(encoding="utf-8")


def test_a_key_echoed_by_the_server_is_in_no_output(
    run_cli: Run,
    keys: None,
    no_target: None,
    openai_server: MockServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
):
    secret = "correct-horse-battery-staple-4417"  # not shaped like a key: only its value masks it
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    openai_server.script(
        text('{"a": [1, 2', finish_reason="length"),
        error(401, f"invalid credentials {secret} for this project", type="invalid_api_key"),
    )
    page = tmp_path / "partial.html"
    argv = ["-p", "openai:gpt-test", "--base-url", f"{openai_server.url}/v1", "--json"]
    code, out, err = run_cli("run", "hi", *argv, "--html", str(page))
    assert code == 2
    written = page.read_text(encoding="utf-8")
    for output in (out, err, written):
        assert secret not in output
    # Nothing lost: the partial result comes out as JSON, with the (masked) error.
    data = json.loads(out)
    assert (data["text"], data["valid"], data["stop_reason"]) == ('{"a": [1, 2', False, "error")
    assert "invalid credentials *** for this project" in data["error"]
    assert "invalid credentials *** for this project" in one_error_line(err.splitlines()[-1] + "\n")
    assert "invalid credentials *** for this project" in written


def test_more_text_lost_than_allowed_is_an_error_that_keeps_the_result(
    run_cli: Run, keys: None, no_target: None, openai_server: MockServer
):
    openai_server.script(text('id,name\n1,"Ann" Lee\n2,Bo\n'))  # a repair skips " Lee"
    argv = ["-g", "csv", "-p", "openai:gpt-test", "--base-url", f"{openai_server.url}/v1"]
    code, out, err = run_cli("run", "hi", *argv, "--max-lost-chars", "2", "--json")
    assert code == 2
    assert "3 non-blank characters of the API's answer text were left out" in err.splitlines()[-1]
    data = json.loads(out)  # the whole result still comes out, with the error
    assert (data["text"], data["lost_chars"]) == ('id,name\n1,"Ann"\n2,Bo\n', 3)
    assert "max_lost_chars=2" in data["error"]


class Stalling:
    """A server that accepts connections and never answers. Each connection is dropped after
    `hold` seconds, so a client with no timeout of its own still ends (the test stays bounded)."""

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _serve(self) -> None:
        held: list[socket.socket] = []
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            held.append(connection)
            threading.Timer(self.hold, connection.close).start()
        for connection in held:
            connection.close()
        self._listener.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def stalling() -> Iterator[Stalling]:
    server = Stalling(hold=5.0)
    yield server
    server.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stalled_server_times_out(
    run_cli: Run,
    keys: None,
    no_target: None,
    stalling: Stalling,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
):
    monkeypatch.setattr("providers.retry.backoff", lambda attempt, exc: 0.0)
    url = f"{stalling.url}/v1" if kind == "openai" else stalling.url
    argv = ["-p", f"{kind}:m", "--base-url", url, "--timeout", "0.2", "--quiet"]
    code, out, err = run_cli("run", "hi", *argv)
    assert (code, out) == (2, "")
    assert "timed out" in one_error_line(err)
    # The check that the server can be reached connects once (it waits for no answer); then
    # each attempt of the round timed out (a timeout is retried), none waited for the drop.
    assert stalling.connections == 1 + retry.DEFAULT_MAX_ATTEMPTS


def test_requests_time_out_after_a_minute_by_default(monkeypatch: pytest.MonkeyPatch):
    built: list[dict[str, Any]] = []
    monkeypatch.setattr("openai.OpenAI", lambda **options: built.append(options))
    args = build_parser().parse_args(["run", "hi", "-p", "openai:m"])
    cli_models.sdk_client("openai", args)
    assert args.timeout == 60.0 and built == [{"max_retries": 0, "timeout": 60.0}]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_must_be_a_positive_number_of_seconds(
    capsys: pytest.CaptureFixture[str], value: str
):
    with pytest.raises(SystemExit) as exited:
        main(["run", "hi", "--timeout", value])
    assert exited.value.code == 2
    assert "--timeout" in capsys.readouterr().err


# -- run: drafts that need no correction -----------------------------------------------------------


def test_run_reads_the_prompt_from_stdin_and_prints_json(
    run_cli: Run,
    keys: None,
    no_target: None,
    openai_server: MockServer,
    monkeypatch: pytest.MonkeyPatch,
):
    openai_server.script(text(DOC, usage=(11, 5)))
    monkeypatch.setattr("sys.stdin", io.StringIO(PROMPT + "\n"))
    code, out, err = run_cli(
        "run", "-", "-p", "openai:gpt-test", "--base-url", f"{openai_server.url}/v1", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert (data["text"], data["valid"], data["complete"]) == (DOC, True, True)
    assert (data["stop_reason"], data["api_calls"], data["corrections"]) == ("complete", 1, 0)
    assert data["usage"] == {"input_tokens": 11, "output_tokens": 5, "known": True}
    assert {(s["origin"], s["round"]) for s in data["spans"]} == {("draft", 0)}
    assert "".join(s["text"] for s in data["spans"]) == DOC
    assert [r["kind"] for r in data["round_details"]] == ["draft"] == ["draft"] * data["rounds"]
    assert (data["accepted_chars"], data["rejected_chars"], data["local_tokens"]) == (
        len(DOC),
        0,
        0,
    )
    assert (data["kept"], data["lost_chars"], data["drops"]) == (1.0, 0, [])
    assert openai_server.bodies[0]["messages"] == [{"role": "user", "content": PROMPT}]
    assert openai_server.bodies[0]["model"] == "gpt-test"
    # Progress as plain lines (stderr is no terminal here); no summary beside --json.
    assert "guided generation, openai:gpt-test drafting..." in err
    assert "draft 1 by openai:gpt-test, 0 characters kept" in err
    assert "valid:" not in err


def test_run_reads_the_base_url_from_the_environment(
    run_cli: Run,
    keys: None,
    no_target: None,
    anthropic_server: MockServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    anthropic_server.script(text('{"ok": true}'))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Say ok as JSON.\n", encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    code, out, err = run_cli("run", "--prompt-file", str(prompt), "-p", "anthropic:claude-test")
    assert (code, out) == (0, '{"ok": true}\n')
    assert err.splitlines()[-1].startswith("valid: True  stop: complete  API calls: 1")
    assert anthropic_server.bodies[0]["messages"] == [
        {"role": "user", "content": "Say ok as JSON."}
    ]


# -- progress --------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_spins_in_place():
    stream = _Terminal()
    progress = Progress(stream, interval=0.005)
    with progress.step("loading"):
        time.sleep(0.05)
        progress.status("still loading")
        progress.note("a note")
        time.sleep(0.03)
    out = stream.getvalue()
    assert out.count("\r\x1b[K| loading  0.") >= 1 and "\r\x1b[K/ loading" in out
    assert " still loading  0." in out  # the status redraws the line with the new message
    assert "\r\x1b[Ka note\n" in out
    assert out.endswith("s\n") and "\r\x1b[Kloading: done in 0." in out
    assert out.count("\n") == 2  # the note and the end of the step; all else redraws in place


def test_progress_elsewhere_is_plain_lines():
    stream = io.StringIO()
    progress = Progress(stream)
    with progress.step("loading"):
        progress.status("round 1")
    with pytest.raises(RuntimeError), progress.step("failing"):
        raise RuntimeError
    lines = stream.getvalue().splitlines()
    assert lines[:2] == ["loading...", "round 1"]
    assert lines[2].startswith("loading: done in ")
    assert lines[3] == "failing..."
    assert lines[4].startswith("failing: failed after ")
    assert "\r" not in stream.getvalue()


def test_progress_quiet_writes_nothing():
    stream = _Terminal()
    progress = Progress(stream, quiet=True)
    with progress.step("loading"):
        progress.note("a note")
        progress.status("x")
    assert stream.getvalue() == ""
    assert not progress.live


# -- end to end: SmolLM2 corrects ------------------------------------------------------------------


@pytest.fixture
def default_target(monkeypatch: pytest.MonkeyPatch, target: Any) -> list[dict[str, Any]]:
    """LocalTarget.default() returns the module's target; the calls' keyword arguments."""
    from local_target import LocalTarget

    calls: list[dict[str, Any]] = []

    def default(**kwargs: Any) -> Any:
        calls.append(kwargs)
        kwargs["progress"]("(converted already)")
        return target

    monkeypatch.setattr(LocalTarget, "default", default)
    return calls


SMALL = ["--max-corrections", "2", "--completion-tokens", "24"]
# The correction path alone: a cut is a correction by SmolLM2 and a new request, no repair.
CORRECTIONS_ONLY = [*SMALL, "--repair-window", "0"]


def spans(data: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(s["round"], s["origin"], s["text"]) for s in data["spans"]]


def check_corrected(data: dict[str, Any], server: MockServer, api: ScriptedAPI) -> None:
    """The cut keeps the slip's valid start, SmolLM2 closes the list as the prompt shows, and the
    API's rest finishes its document in a second request."""
    assert (data["text"], data["valid"], data["stop_reason"]) == (DOC, True, "complete")
    assert (data["api_calls"], data["corrections"], len(server.exchanges)) == (2, 1, 2)
    assert spans(data) == [
        (0, "draft", KEPT),
        (0, "rejected", "},"),
        (1, "correction", "],"),
        (2, "draft", ' "b": null}'),
    ]
    assert api.sent == [SLIP, ' "b": null}']
    assert data["local_tokens"] >= 1
    assert [r["kind"] for r in data["round_details"]] == ["draft", "correction", "draft"]


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["openai-chat", "openai-completions", "anthropic"])
def test_run_corrects_a_slip(
    run_cli: Run,
    keys: None,
    default_target: list[dict[str, Any]],
    openai_server: MockServer,
    anthropic_server: MockServer,
    tmp_path: Path,
    kind: str,
):
    server = anthropic_server if kind == "anthropic" else openai_server
    api = ScriptedAPI(DOC, drafts=[SLIP])
    server.responder = responder(kind, api, usage=(7, 3))
    page = tmp_path / "trace.html"
    argv = provider_args(kind, openai_server, anthropic_server)
    code, out, err = run_cli("run", PROMPT, *argv, *CORRECTIONS_ONLY, "--json", "--html", str(page))
    assert code == 0
    data = json.loads(out)
    check_corrected(data, server, api)
    # The second reply's usage (7, 3). An OpenAI stream closed at the cut never gets its usage
    # chunk (so the usage is not known whole); Anthropic's first event (message_start) says 7
    # input tokens and 1 output token.
    usage = (14, 4, True) if kind == "anthropic" else (7, 3, False)
    assert tuple(data["usage"].values()) == usage
    assert default_target == [{"device": None, "progress": default_target[0]["progress"]}]
    assert "(converted already)" in err and "loading the target model" in err
    assert f"HTML trace written to {page.resolve()}" in err
    written = page.read_text(encoding="utf-8")
    for span in data["spans"]:
        assert html.escape(span["text"], quote=True) in written


@pytest.mark.e2e
def test_run_prints_the_text_and_a_summary(
    run_cli: Run, keys: None, default_target: Any, anthropic_server: MockServer
):
    """The slip is mended by an edit in the same reply: one request, no correction."""
    anthropic_server.responder = responder("anthropic", ScriptedAPI(DOC, drafts=[SLIP]))
    base = ["--base-url", anthropic_server.url]
    code, out, err = run_cli("run", "--prompt", PROMPT, "-p", "anthropic:claude-test", *base)
    assert (code, out) == (0, DOC + "\n")
    summary = err.splitlines()[-1]
    assert summary.startswith(
        "valid: True  stop: complete  API calls: 1  corrections: 0  repairs: 1  "
    )


# Opened deeper than the grammar's own ending may close (backtrack.run.shortest_end: 48).
DEEP = "[" * 50


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("repairs", "first", "expected"),
    [
        # The stray "}" where "]" belongs is replaced; the text still is not finished.
        pytest.param(
            [],
            DEEP + '{"a": [[["x", 1}',
            [(0, "draft", DEEP + '{"a": [[["x", 1'), (0, "skipped", "}"), (0, "edit", "]")],
            id="repairs",
        ),
        # Cut after a key: the one token cannot give it a value, nor can closers.
        pytest.param(
            ["--repair-window", "0"],
            DEEP + '{"a": [[["x", 1]]], "b"}',
            [(0, "draft", DEEP + '{"a": [[["x", 1]]], "b"'), (0, "rejected", "}")],
            id="no-repairs",
        ),
    ],
)
def test_run_that_cannot_finish_exits_1(
    run_cli: Run,
    keys: None,
    default_target: Any,
    openai_server: MockServer,
    repairs: list[str],
    first: str,
    expected: list[tuple[int, str, str]],
):
    """No correction and one token to finish with: the API's text is what comes out, and it is
    not finished. (A reply that stops short is continued by the API once: its second reply
    stops short too, after a key, where neither one token, nor closers, nor the grammar's own
    ending within its bound end the text.)"""
    openai_server.script(text(first), text(', 2, {"b"'))
    argv = ["-p", "openai:gpt-test", "--base-url", f"{openai_server.url}/v1", "--json"]
    budget = ["--max-corrections", "0", "--completion-tokens", "1"]
    code, out, _ = run_cli("run", PROMPT, *argv, *budget, *repairs)
    data = json.loads(out)
    assert (code, data["valid"], data["stop_reason"]) == (1, False, "incomplete")
    assert [span for span in spans(data) if span[0] == 0] == expected  # then 1 token healed
    assert data["text"].startswith("".join(t for _, o, t in expected if o in ("draft", "edit")))


@pytest.mark.e2e
def test_run_with_a_model_folder_as_target(
    run_cli: Run, keys: None, target: Any, openai_server: MockServer
):
    from local_target.loading import converted_smollm2

    api = ScriptedAPI(DOC, drafts=[SLIP])
    openai_server.responder = responder("openai-chat", api)
    folder = converted_smollm2()
    argv = ["-p", "openai:gpt-test", "--base-url", f"{openai_server.url}/v1", "--json"]
    code, out, err = run_cli("run", PROMPT, *argv, *CORRECTIONS_ONLY, "--target", str(folder))
    assert code == 0
    check_corrected(json.loads(out), openai_server, api)
    assert f"loading the target model from {folder}: done in " in err


@pytest.mark.e2e
def test_demo(run_cli: Run, default_target: Any, tmp_path: Path):
    page = tmp_path / "demo.html"
    code, out, err = run_cli("demo", "--html", str(page), "--max-draft-tokens", "48")
    assert code in (0, 1)
    draft, _, rest = out.partition("--- guided result ---\n")
    assert draft.startswith("--- unconstrained draft (first round) ---\n")
    assert rest.strip() and page.is_file()
    assert err.splitlines()[-2].startswith(f"valid: {code == 0}  stop: ")


@pytest.mark.e2e
def test_the_demo_prints_no_third_party_warning(tmp_path: Path):
    """Run as a user runs it (a process of its own, Python's default warning filters): stderr
    holds the demo's own lines only, no warning or log line of a library."""
    page = tmp_path / "demo.html"
    argv = ["-m", "backtrack", "demo", "--max-draft-tokens", "48", "--html", str(page)]
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    lines = [ln for ln in re.split(r"[\r\n]+", done.stderr) if ln.strip()]
    ours = ("loading the target model", "guided generation", "draft ", "valid: ", "HTML trace")
    assert [ln for ln in lines if not ln.startswith(ours)] == []
    assert not re.search(r"Warning|warn|deprecat", done.stderr, re.IGNORECASE)


@pytest.mark.e2e
def test_demo_shows_the_first_draft_as_smollm2_wrote_it(
    run_cli: Run, default_target: Any, target: Any, tmp_path: Path
):
    """The draft shown is what SmolLM2 wrote unconstrained (as much as was read of it)."""
    argv = ["--html", str(tmp_path / "demo.html"), "--max-draft-tokens", "48", "--quiet"]
    _, out, _ = run_cli("demo", *argv)
    shown = out.partition("--- guided result ---\n")[0]
    shown = shown.removeprefix("--- unconstrained draft (first round) ---\n").removesuffix("\n")
    written = "".join(target.session(DEMO_PROMPT).generate("", max_tokens=48))
    assert shown and written.startswith(shown), (shown, written)
