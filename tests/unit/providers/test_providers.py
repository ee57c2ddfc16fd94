"""The providers package, against the real OpenAI and Anthropic SDKs on local scripted servers.

Sections: the public surface; error mapping (every SDK exception class); the retry policy
(failures-before-success x failure mode, backoff patched to zero); alignment (tables);
FunctionDrafter; the OpenAI chat and completions drafters; the Anthropic drafter (prefill, the
trailing-whitespace rule, the prefill-refusal fallback); errors through the wire for every drafter;
the async twins; as_drafter.
"""

from __future__ import annotations

import email.utils
import importlib
import inspect
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from types import SimpleNamespace
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from conftest import DUMMY_KEY

import providers
from providers import (
    AnthropicDrafter,
    AsyncDrafter,
    Drafter,
    DraftRequest,
    FunctionDrafter,
    OpenAIChatDrafter,
    OpenAICompletionsDrafter,
    as_drafter,
)
from providers import retry as retry_module
from providers.align import (
    CONTINUE_INSTRUCTION,
    Aligner,
    continued_text,
    instruction,
)
from providers.base import check_prompt
from providers.clients import ClientKind, client_kind
from providers.errors import ProviderError, redact
from providers.sdk_errors import retry_after_seconds, to_provider_error
from tests.support.servers import MockServer, Reply, disconnect, error, malformed, text

PREFILL_REFUSAL = "This model does not support assistant message prefill. The conversation must end with a user message."  # noqa: E501


@pytest.fixture(autouse=True)
def _fresh_prefill_memory() -> Iterator[None]:
    AnthropicDrafter.forget_prefill_refusals()
    yield
    AnthropicDrafter.forget_prefill_refusals()


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without waiting: the policy's backoff hook, patched to zero."""
    monkeypatch.setattr(retry_module, "backoff", lambda attempt, exc: 0.0)


def chunks_of(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)]


# --------------------------------------------------------------------------- public surface


SUBMODULES = [
    "providers",
    "providers.align",
    "providers.anthropic",
    "providers.clients",
    "providers.errors",
    "providers.openai",
    "providers.openai_responses",
    "providers.retry",
    "providers.sdk",
    "providers.sdk_errors",
    "providers.sdk_stream",
]


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff's order for __all__ (RUF022): CONSTANTS, then Classes, then functions."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", SUBMODULES)
def test_all_is_sorted(name: str) -> None:
    exported = importlib.import_module(name).__all__
    assert exported == sorted(exported, key=_isort_key)


@pytest.mark.parametrize("name", SUBMODULES)
def test_all_names_resolve(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []


def test_drafters_satisfy_the_protocols(openai_client: Any, anthropic_client: Any) -> None:
    drafters = [
        FunctionDrafter(lambda prompt, prefix: ""),
        OpenAIChatDrafter(openai_client(), "m"),
        OpenAICompletionsDrafter(openai_client(), "m"),
        AnthropicDrafter(anthropic_client(), "m"),
    ]
    for drafter in drafters:
        assert isinstance(drafter, Drafter)
        assert isinstance(drafter, AsyncDrafter)


# --------------------------------------------------------------------------- error mapping


def _exception_classes() -> list[tuple[str, type[BaseException]]]:
    found: list[tuple[str, type[BaseException]]] = []
    for module, base in ((openai, openai.OpenAIError), (anthropic, anthropic.AnthropicError)):
        for name in dir(module):
            value = getattr(module, name)
            # type(value), not inspect.isclass: that reads __class__, which loads each of the
            # SDK's lazy module proxies (openai.chat, ...): seconds at every collection.
            is_class = issubclass(type(value), type)
            if not name.startswith("_") and is_class and issubclass(value, base):
                found.append((f"{module.__name__}.{name}", value))
    return found


SDK_ERRORS = _exception_classes()


def build_error(cls: type[BaseException]) -> BaseException:
    """An instance of an SDK exception class, whatever its constructor asks for."""
    status = getattr(cls, "status_code", None)
    status = status if isinstance(status, int) else 500
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    headers = {"x-request-id": "req_built", "request-id": "req_built", "retry-after": "2"}
    response = httpx2.Response(status, request=request, headers=headers)
    values: dict[str, Any] = {
        "message": "boom",
        "request": request,
        "response": response,
        "body": None,
        "completion": SimpleNamespace(usage=None),
        "unsent_messages": [],
        "path": None,
        "status_code": None,
        "request_id": None,
    }
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            args.append("boom")
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        elif parameter.name not in values:
            if parameter.default is inspect.Parameter.empty:
                pytest.fail(f"{cls.__name__} needs {parameter.name}: teach build_error about it")
        elif parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = values[parameter.name]
        else:
            args.append(values[parameter.name])
    return cls(*args, **kwargs)


def expected_retryable(exc: BaseException) -> bool:
    for sdk in (openai, anthropic):
        if isinstance(exc, sdk.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        if isinstance(exc, sdk.APIConnectionError):
            return True
    return isinstance(exc, (anthropic.RetryableError, openai.WebSocketConnectionClosedError))


def test_the_sdks_export_many_error_classes() -> None:
    # Guards the enumeration itself: an empty list would pass the test below vacuously.
    assert len([n for n, _ in SDK_ERRORS if n.startswith("openai.")]) >= 15
    assert len([n for n, _ in SDK_ERRORS if n.startswith("anthropic.")]) >= 30


@pytest.mark.parametrize(("name", "cls"), SDK_ERRORS, ids=[n for n, _ in SDK_ERRORS])
def test_every_sdk_error_maps_to_a_provider_error(name: str, cls: type[BaseException]) -> None:
    exc = build_error(cls)
    mapped = to_provider_error(exc)
    assert isinstance(mapped, ProviderError)
    assert mapped.retryable is expected_retryable(exc)
    assert mapped.message
    if isinstance(exc, (openai.APIStatusError, anthropic.APIStatusError)):
        assert mapped.status == exc.status_code
        assert mapped.request_id == "req_built"
        assert mapped.retry_after == (2.0 if mapped.retryable else None)


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (httpx2.ReadError("reset"), True),
        (httpx2.RemoteProtocolError("peer closed"), True),
        (httpx2.ConnectError("refused"), True),
        (httpx2.ReadTimeout("slow"), True),
        (httpx2.DecodingError("bad gzip"), False),
        (ConnectionResetError("reset"), True),
        (json.JSONDecodeError("Expecting value", "{x", 1), False),
        (ProviderError("as is", retryable=True), True),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_transport_errors_map(exc: BaseException, retryable: bool) -> None:
    assert to_provider_error(exc).retryable is retryable


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({}, None),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-4"}, 0.0),
    ],
)
def test_retry_after_headers(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


def test_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = retry_after_seconds({"retry-after": when})
    assert seconds is not None and 25 <= seconds <= 31


@pytest.mark.parametrize(
    "secret",
    [DUMMY_KEY, "sk-ant-api03-abcdefghijklmnop", "sk-proj-ABCDEF123456"],
)
def test_keys_are_masked(secret: str) -> None:
    assert secret not in redact(f"Incorrect API key provided: {secret}.")
    assert secret not in redact(f"api_key={secret}")


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("Incorrect API key provided: my-gw.t0k3n. See docs.", "provided: ***. See docs."),
        ('{"api_key": "abc-123"}', '{"api_key": "***"}'),
        ("x-api-key: abcdef", "x-api-key: ***"),
        # Prose after "API key" is not a key: nothing to mask.
        ("You can find your API key at the console.", "your API key at the console."),
        ("Invalid API key format", "Invalid API key format"),
    ],
)
def test_the_value_after_a_key_label_is_masked_not_the_prose(message: str, shown: str) -> None:
    assert shown in redact(message)


def test_a_key_in_an_error_body_never_reaches_the_message(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(error(401, f"Incorrect API key provided: {DUMMY_KEY}"))
    drafter = OpenAIChatDrafter(openai_client(), "m")
    with pytest.raises(ProviderError) as caught:
        drafter.draft(DraftRequest(prompt="hi"))
    assert DUMMY_KEY not in str(caught.value)
    assert caught.value.status == 401
    assert not caught.value.retryable


# --------------------------------------------------------------------------- retry policy


@pytest.mark.parametrize(
    ("exc", "retry"),
    [
        (ProviderError("x", retryable=True), True),
        (ProviderError("x", retryable=False), False),
        (ValueError("x"), False),
    ],
)
def test_should_retry(exc: BaseException, retry: bool) -> None:
    assert retry_module.should_retry(exc) is retry


def test_backoff_follows_retry_after() -> None:
    assert retry_module.backoff(1, ProviderError("x", retryable=True, retry_after=2.5)) == 2.5


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 10])
def test_backoff_is_exponential_with_bounded_jitter(attempt: int) -> None:
    full = min(retry_module.INITIAL_BACKOFF * 2 ** (attempt - 1), retry_module.MAX_BACKOFF)
    for _ in range(20):
        assert 0.75 * full <= retry_module.backoff(attempt, None) <= full


def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError):
        retry_module.next_wait(1, ProviderError("x", retryable=True), 0)


@pytest.mark.usefixtures("no_backoff")
def test_next_wait_retries_only_retryable_errors_within_the_attempts() -> None:
    retryable = ProviderError("x", retryable=True)
    assert [retry_module.next_wait(n, retryable, 3) for n in (1, 2, 3)] == [0.0, 0.0, None]
    assert retry_module.next_wait(1, ProviderError("x"), 3) is None
    assert retry_module.next_wait(1, ValueError("not a provider's"), 3) is None


def test_next_wait_takes_the_providers_retry_after() -> None:
    asked = ProviderError("x", retryable=True, retry_after=2.5)
    assert retry_module.next_wait(1, asked, 4) == 2.5
    # Issue 24: a Retry-After of 999999999 was cut to a minute's wait, then the 429 came back;
    # now the error, with its Retry-After, goes back at once.
    too_long = ProviderError("x", retryable=True, retry_after=999999999)
    assert retry_module.next_wait(1, too_long, 4) is None
    at_the_cap = ProviderError("x", retryable=True, retry_after=retry_module.MAX_RETRY_AFTER)
    assert retry_module.next_wait(1, at_the_cap, 4) == retry_module.MAX_RETRY_AFTER


FAILURES: dict[str, Callable[[], Reply]] = {
    "429 retry-after": lambda: error(429, "slow down", headers={"retry-after": "1"}),
    "500": lambda: error(500, "oops", type="server_error"),
    "503": lambda: error(503, "unavailable"),
    "disconnect": lambda: disconnect('{"partial": ', 2),
    "no finish reason": lambda: text('{"partial": ', unfinished=True),
    "no choices": lambda: text('{"ok": true}', no_choices=True),
    "malformed event": malformed,
    "malformed event mid-stream": lambda: text('{"partial": 1}', malformed_after=2),
    "JSON body, no stream": lambda: text('{"ok": true}', json_reply=True),
}


def _retried_round(drafter: Any, on_retry: Callable[[int, BaseException], None]) -> str:
    """One round under the policy, as the driver runs it: retry while next_wait says so."""
    attempt = 1
    while True:
        try:
            return "".join(drafter.draft(DraftRequest(prompt="go")))
        except Exception as exc:
            if retry_module.next_wait(attempt, exc, retry_module.DEFAULT_MAX_ATTEMPTS) is None:
                raise
            on_retry(attempt, exc)
            attempt += 1


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize("failures", [0, 1, 2, 3])
@pytest.mark.parametrize("mode", list(FAILURES))
def test_retries_until_success(
    mode: str, failures: int, openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(*[FAILURES[mode]() for _ in range(failures)], text('{"ok": true}'))
    drafter = OpenAICompletionsDrafter(openai_client(), "m")
    seen: list[tuple[int, BaseException]] = []
    assert _retried_round(drafter, lambda n, exc: seen.append((n, exc))) == '{"ok": true}'
    assert [n for n, _ in seen] == list(range(1, failures + 1))
    assert all(isinstance(exc, ProviderError) and exc.retryable for _, exc in seen)
    assert len(openai_server.exchanges) == failures + 1


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize("mode", list(FAILURES))
def test_gives_up_after_max_attempts(
    mode: str, openai_server: MockServer, openai_client: Any
) -> None:
    attempts = retry_module.DEFAULT_MAX_ATTEMPTS
    openai_server.script(*[FAILURES[mode]() for _ in range(attempts)], text("never reached"))
    drafter = OpenAICompletionsDrafter(openai_client(), "m")
    seen: list[int] = []
    with pytest.raises(ProviderError) as caught:
        _retried_round(drafter, lambda n, exc: seen.append(n))
    assert caught.value.retryable
    assert seen == list(range(1, attempts))
    assert len(openai_server.exchanges) == attempts


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize("reply", [error(400, "bad"), error(401, "no")], ids=["400", "401"])
def test_does_not_retry_what_cannot_succeed(
    reply: Reply, openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(reply, text("never reached"))
    drafter = OpenAICompletionsDrafter(openai_client(), "m")
    with pytest.raises(ProviderError) as caught:
        _retried_round(drafter, lambda n, exc: pytest.fail("retried"))
    assert not caught.value.retryable
    assert len(openai_server.exchanges) == 1


def test_the_wait_comes_from_the_backoff_hook(
    monkeypatch: pytest.MonkeyPatch, openai_server: MockServer, openai_client: Any
) -> None:
    asked: list[tuple[int, float | None]] = []

    def hook(attempt: int, exc: BaseException | None) -> float:
        assert isinstance(exc, ProviderError)
        asked.append((attempt, exc.retry_after))
        return 0.0

    monkeypatch.setattr(retry_module, "backoff", hook)
    openai_server.script(FAILURES["429 retry-after"](), FAILURES["500"](), text("done"))
    drafter = OpenAICompletionsDrafter(openai_client(), "m")
    assert _retried_round(drafter, lambda n, exc: None) == "done"
    assert asked == [(1, 1.0), (2, None)]


# --------------------------------------------------------------------------- alignment


def aligned(prefix: str, chunks: Iterable[str], **options: Any) -> str:
    aligner = Aligner(prefix, **options)
    return "".join(aligner.feed(chunk) for chunk in chunks) + aligner.finish()


FELIX = '{"name": "Felix", "age"'
ALIGN_CASES = [
    # prefix, reply, output
    ('{"a"', ": 1}", ": 1}"),
    (FELIX, '{"name": "Felix", "age": 3}', ": 3}"),  # the whole prefix again
    ('{\n  "name": "Felix",\n  "age"', '  "age": 3\n}', '  "age": 3\n}'),  # too short to tell
    ('{\n  "id": 7,\n  "name": "Fel', '  "name": "Felix"\n}', 'ix"\n}'),  # its last line again
    ('{"a"', '```json\n{"a": 1}\n```', ": 1}\n```"),  # a fence, then an answer started over
    ('{"a"', "```json\n: 1}", ": 1}"),
    ('{"a"', "\n```\n: 1}", ": 1}"),
    ("", '```json\n{"a": 1}', '{"a": 1}'),
    ("", '{"a": 1}', '{"a": 1}'),
    ("", "", ""),
    # A continuation that happens to start like the end of the prefix is kept whole.
    ('{"n": 10', "00}", "00}"),
    ("the river mississippi is long. missi", "ssippi", "ssippi"),
    ('{\n  "a": [\n    ', "    1]}", "    1]}"),
    ("hello", "lo world", "lo world"),
    ("hello", "hello world", "hello world"),
    ("[1, 2", "[1, 2, 3]", "[1, 2, 3]"),
    ("The cat sat on", " the mat", " the mat"),
    ("```py\nx = compute(", "```py\nx = compute(1)", "1)"),
    ("x", "``", "``"),
    ("x", "```not a fence opening because it never ends the line" + "x" * 80, None),
]


@pytest.mark.parametrize("size", [1, 2, 3, 1000])
@pytest.mark.parametrize(("prefix", "reply", "output"), ALIGN_CASES)
def test_aligner_strips_fence_and_unambiguous_repeat(
    prefix: str, reply: str, output: str | None, size: int
) -> None:
    aligner = Aligner(prefix)
    got = "".join(aligner.feed(chunk) for chunk in chunks_of(reply, size)) + aligner.finish()
    assert got == (reply if output is None else output)
    assert aligner.stripped + got == reply  # what is removed is kept, nothing else is lost


ANCHORED_CASES = [
    # cut whitespace, reply, output
    (" ", " world", "world"),
    (" ", "world", "world"),
    ("\n  ", "\n    x", "  x"),
    ("\n  ", "\n  x", "x"),
    (" \n", "\nx", "\nx"),
    ("", "x", "x"),
]


@pytest.mark.parametrize("size", [1, 1000])
@pytest.mark.parametrize(("cut", "reply", "output"), ANCHORED_CASES)
def test_anchored_aligner_strips_the_common_start(
    cut: str, reply: str, output: str, size: int
) -> None:
    got = aligned(cut, chunks_of(reply, size), anchored=True, strip_fence=False)
    assert got == output


def test_aligner_holds_back_only_what_it_must() -> None:
    aligner = Aligner("hello there")
    assert aligner.feed("x") == "x"  # no line of "hello there" starts with "x": decided at once
    assert aligner.decided
    chunk = "any chunk, passed through as it is"
    assert aligner.feed(chunk) is chunk

    aligner = Aligner("a\nhello there", strip_fence=False)
    assert aligner.feed("hello") == ""  # a repeat of the last line may be starting
    assert aligner.feed(" there") == ""  # complete, but "a\nhello..." is no longer possible
    assert aligner.decided
    assert aligner.stripped == "hello there"
    assert aligner.feed(" you") == " you"


ECHO_CASES = [
    # prefix, reply, output: a first line echoing the instruction goes; nothing else does
    ("SELECT a", "--Do not repeat any of the text already written.\n FROM t;", " FROM t;"),
    ('{"a"', "Continue your last message exactly where it stops.\n: 1}", ": 1}"),
    ('{"a"', "# Reply with the continuation only, do not explain\n```json\n: 1}", ": 1}"),
    ('{"a"', ": 1}", ": 1}"),
    ("- one\n- ", "two\n- three\n", "two\n- three\n"),
    ("The cat sat", " on the mat, and it did not repeat any word.\n", None),
    ("x", "do it\nnow", None),  # too few words to be an echo
]


@pytest.mark.parametrize("size", [1, 3, 1000])
@pytest.mark.parametrize(("prefix", "reply", "output"), ECHO_CASES)
def test_aligner_strips_an_echo_of_the_instruction(
    prefix: str, reply: str, output: str | None, size: int
) -> None:
    aligner = Aligner(prefix, echoes=CONTINUE_INSTRUCTION)
    got = "".join(aligner.feed(chunk) for chunk in chunks_of(reply, size)) + aligner.finish()
    assert got == (reply if output is None else output)
    assert aligner.stripped + got == reply


def test_a_continuation_that_starts_with_no_word_is_not_held_for_an_echo() -> None:
    aligner = Aligner('{"a"', echoes=CONTINUE_INSTRUCTION)
    assert aligner.feed(": 1") == ": 1"


def test_aligner_min_repeat_sets_the_evidence_needed() -> None:
    assert aligned("ab\ncd", ["cd!"], min_repeat=2) == "!"
    assert aligned("ab\ncd", ["cd!"]) == "cd!"


def test_instruction_for_a_str_prompt() -> None:
    messages = instruction("Give JSON.", '{"a"')
    assert messages[:2] == [
        {"role": "user", "content": "Give JSON."},
        {"role": "assistant", "content": '{"a"'},
    ]
    assert messages[2]["role"] == "user"
    assert messages[2]["content"] == CONTINUE_INSTRUCTION


def test_instruction_without_a_prefix_is_the_conversation() -> None:
    assert instruction("Give JSON.", "") == [{"role": "user", "content": "Give JSON."}]


def test_instruction_merges_the_callers_own_prefill() -> None:
    prompt = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "JSON please"},
        {"role": "assistant", "content": "{"},
    ]
    messages = instruction(prompt, '"a"')
    assert messages[-2] == {"role": "assistant", "content": '{"a"'}
    assert messages[0] == prompt[0]
    assert prompt[-1] == {"role": "assistant", "content": "{"}  # the caller's list is untouched
    assert continued_text(prompt, "x")[1] == "{x"


# --------------------------------------------------------------------------- FunctionDrafter


def test_function_of_prompt_and_prefix() -> None:
    drafter = FunctionDrafter(lambda prompt, prefix: f"<{prompt}|{prefix}>")
    assert drafter.capabilities.prefill
    assert not drafter.capabilities.streaming
    stream = drafter.draft(DraftRequest(prompt="p", prefix="x"))
    assert list(stream) == ["<p|x>"]
    assert stream.finish_reason == "stop"


@pytest.mark.anyio
async def test_a_function_says_why_its_reply_ended_with_a_reply() -> None:
    """A str ended as meant ("stop"); a `Reply` carries its own reason, sync and async."""

    async def cut(prompt: str, prefix: str) -> providers.Reply:
        return providers.Reply("ab", "length")

    drafter = FunctionDrafter(lambda prompt, prefix: providers.Reply("ab", "length"))
    stream = drafter.draft(DraftRequest(prompt="p"))
    assert (list(stream), stream.finish_reason) == (["ab"], "length")
    stream = await FunctionDrafter(cut).adraft(DraftRequest(prompt="p"))
    assert ([c async for c in stream], stream.finish_reason) == (["ab"], "length")
    stream = await drafter.adraft(DraftRequest(prompt="p"))
    assert ([c async for c in stream], stream.finish_reason) == (["ab"], "length")
    stream = FunctionDrafter(lambda text: providers.Reply(text)).draft(DraftRequest(prompt="p"))
    assert (list(stream), stream.finish_reason) == (["p"], "stop")


def test_function_of_one_text() -> None:
    drafter = FunctionDrafter(lambda text: f"[{text}]")
    assert list(drafter.draft(DraftRequest(prompt="p", prefix="x"))) == ["[px]"]
    with pytest.raises(TypeError):
        drafter.draft(DraftRequest(prompt=[{"role": "user", "content": "p"}]))


def test_function_with_a_prefix_default_takes_both() -> None:
    def fn(prompt: str, prefix: str = "") -> str:
        return prefix.upper()

    assert list(FunctionDrafter(fn).draft(DraftRequest(prompt="p", prefix="ab"))) == ["AB"]


def test_generator_function_streams_and_close_stops_it() -> None:
    produced: list[int] = []
    finished: list[bool] = []

    def fn(prompt: str, prefix: str) -> Iterator[str]:
        try:
            for i in range(100):
                produced.append(i)
                yield str(i)
        finally:
            finished.append(True)

    drafter = FunctionDrafter(fn)
    assert drafter.capabilities.streaming
    stream = drafter.draft(DraftRequest(prompt="p"))
    iterator = iter(stream)
    assert [next(iterator), next(iterator)] == ["0", "1"]
    stream.close()
    assert stream.finish_reason == "closed"
    assert finished == [True]
    assert len(produced) == 2


def test_callable_object_with_generator_call_streams() -> None:
    class Model:
        def __call__(self, text: str) -> Iterator[str]:
            yield text

    assert FunctionDrafter(Model()).capabilities.streaming


def test_function_gets_max_tokens_when_it_names_it() -> None:
    seen: dict[str, Any] = {}

    def fn(text: str, max_tokens: int) -> str:
        seen.update(text=text, max_tokens=max_tokens)
        return "x"

    list(FunctionDrafter(fn).draft(DraftRequest(prompt="p", prefix="q", max_tokens=7)))
    assert seen == {"text": "pq", "max_tokens": 7}


@pytest.mark.parametrize("returned", [{"a": 1}, {"a", "b"}, b'{"a": 1}'])
def test_a_function_that_returns_no_text_is_an_error_not_text_of_its_parts(returned: object):
    with pytest.raises(ProviderError, match="not str or chunks of str"):
        FunctionDrafter(lambda text: returned).draft(DraftRequest(prompt="p"))


@pytest.mark.parametrize("content", [5, ["a"], {"text": "x"}])
def test_a_message_whose_content_is_no_text_nor_parts_is_refused(content: object) -> None:
    prompt = [{"role": "user", "content": content}]
    with pytest.raises(TypeError, match=r"prompt\[0\]\['content'\] must be a str or a list"):
        check_prompt(prompt)
    parts = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert check_prompt(parts) is parts
    assert check_prompt([{"role": "assistant", "content": None}])


def test_function_errors_become_provider_errors() -> None:
    def broken(text: str) -> str:
        raise ValueError("nope")

    with pytest.raises(ProviderError) as caught:
        FunctionDrafter(broken).draft(DraftRequest(prompt="p"))
    assert not caught.value.retryable
    assert str(caught.value.__cause__) == "builtins.ValueError: nope"  # a masked copy

    def flaky(text: str) -> Iterator[str]:
        yield "a"
        raise httpx2.ReadError("dropped")

    stream = FunctionDrafter(flaky).draft(DraftRequest(prompt="p"))
    with pytest.raises(ProviderError) as caught:
        list(stream)
    assert caught.value.retryable


def test_function_must_yield_str() -> None:
    with pytest.raises(ProviderError):
        list(FunctionDrafter(lambda text: iter([b"bytes"])).draft(DraftRequest(prompt="p")))


def test_sync_draft_refuses_async_functions() -> None:
    async def fn(text: str) -> str:
        return text

    async def gen(text: str) -> AsyncIterator[str]:
        yield text

    for function in (fn, gen):
        with pytest.raises(TypeError, match="adraft"):
            FunctionDrafter(function).draft(DraftRequest(prompt="p"))


@pytest.mark.anyio
async def test_async_function_and_async_generator() -> None:
    async def fn(prompt: str, prefix: str) -> str:
        return prompt + prefix

    async def gen(text: str) -> AsyncIterator[str]:
        for piece in ("a", "b"):
            yield piece

    def sync(text: str) -> Iterator[str]:
        yield from text

    stream = await FunctionDrafter(fn).adraft(DraftRequest(prompt="p", prefix="q"))
    assert [c async for c in stream] == ["pq"]
    drafter = FunctionDrafter(gen)
    assert drafter.capabilities.streaming
    stream = await drafter.adraft(DraftRequest(prompt="p"))
    assert [c async for c in stream] == ["a", "b"]
    assert stream.finish_reason == "stop"
    stream = await FunctionDrafter(sync).adraft(DraftRequest(prompt="xy"))
    assert [c async for c in stream] == ["x", "y"]


@pytest.mark.anyio
async def test_async_generator_aclose_stops_it() -> None:
    finished: list[bool] = []

    async def gen(text: str) -> AsyncIterator[str]:
        try:
            for i in range(100):
                yield str(i)
        finally:
            finished.append(True)

    stream = await FunctionDrafter(gen).adraft(DraftRequest(prompt="p"))
    iterator = aiter(stream)
    assert await anext(iterator) == "0"
    await stream.aclose()
    assert finished == [True]
    assert stream.finish_reason == "closed"


# --------------------------------------------------------------------------- OpenAI chat


def test_chat_streams_chunks_with_usage_and_request_id(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(text('{"name": "Ada"}', chunk_size=3, usage=(11, 5)))
    drafter = OpenAIChatDrafter(openai_client(), "gpt-test", temperature=0.5)
    stream = drafter.draft(DraftRequest(prompt="A person as JSON"))
    assert list(stream) == chunks_of('{"name": "Ada"}', 3)
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (11, 5)
    assert stream.finish_reason == "stop"
    assert stream.request_id is not None and stream.request_id.startswith("req_")
    body = openai_server.bodies[0]
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.5
    assert "stop" not in body
    assert body["max_completion_tokens"] == 512
    assert body["messages"] == [{"role": "user", "content": "A person as JSON"}]


def test_chat_reports_length(openai_server: MockServer, openai_client: Any) -> None:
    openai_server.script(text("abc", finish_reason="length"))
    stream = OpenAIChatDrafter(openai_client(), "m").draft(DraftRequest(prompt="p"))
    assert "".join(stream) == "abc"
    assert stream.finish_reason == "length"


def test_chat_asks_to_continue_and_aligns_the_reply(
    openai_server: MockServer, openai_client: Any
) -> None:
    prefix = '{"name": "Ada", "born": '
    openai_server.script(text('```json\n{"name": "Ada", "born": 1815}\n```', chunk_size=5))
    drafter = OpenAIChatDrafter(openai_client(), "m")
    assert not drafter.capabilities.prefill
    stream = drafter.draft(DraftRequest(prompt="Ada as JSON", prefix=prefix))
    assert "".join(stream) == "1815}\n```"
    messages = openai_server.bodies[0]["messages"]
    assert messages[1] == {"role": "assistant", "content": prefix}
    assert messages[2]["role"] == "user"
    assert messages[2]["content"].startswith(CONTINUE_INSTRUCTION)
    assert "extra_body" not in openai_server.bodies[0]


def test_chat_strips_a_repeated_last_line(openai_server: MockServer, openai_client: Any) -> None:
    openai_server.script(text('  "birthyear": 1815\n}', chunk_size=2))
    drafter = OpenAIChatDrafter(openai_client(), "m")
    prefix = '{\n  "name": "Ada",\n  "birthyear"'
    stream = drafter.draft(DraftRequest(prompt="p", prefix=prefix))
    assert "".join(stream) == ": 1815\n}"
    assert stream.stripped == '  "birthyear"'


def test_chat_keeps_a_continuation_that_looks_like_a_repeat(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(text("00}", chunk_size=1))
    stream = OpenAIChatDrafter(openai_client(), "m").draft(
        DraftRequest(prompt="p", prefix='{"n": 10')
    )
    assert "".join(stream) == "00}"
    assert stream.stripped == ""


def test_chat_prefill_continues_a_final_assistant_message(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(text("1815}"))
    drafter = OpenAIChatDrafter(openai_client(), "m", prefill=True, extra_body={"top_k": 3})
    assert drafter.capabilities.prefill
    stream = drafter.draft(DraftRequest(prompt="Ada as JSON", prefix='{"born": '))
    assert "".join(stream) == "1815}"
    body = openai_server.bodies[0]
    assert body["messages"][-1] == {"role": "assistant", "content": '{"born": '}
    assert body["continue_final_message"] is True
    assert body["add_generation_prompt"] is False
    assert body["top_k"] == 3


def test_chat_prefill_with_nothing_to_continue_sends_no_continue_flag(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(text("```json\n{}"))
    drafter = OpenAIChatDrafter(openai_client(), "m", prefill=True)
    assert "".join(drafter.draft(DraftRequest(prompt="p"))) == "{}"
    assert "continue_final_message" not in openai_server.bodies[0]


def test_early_close_stops_the_server(openai_server: MockServer, openai_client: Any) -> None:
    total = 200
    openai_server.script(text("x" * total, chunk_size=1, delay=0.005))
    stream = OpenAIChatDrafter(openai_client(), "m").draft(DraftRequest(prompt="p"))
    iterator = iter(stream)
    assert next(iterator) == "x"
    stream.close()
    assert stream.finish_reason == "closed"
    (exchange,) = openai_server.wait()
    assert exchange.client_closed
    assert exchange.chunks_sent < total // 4


def test_create_kwargs_cannot_override_the_drafter(openai_client: Any) -> None:
    with pytest.raises(TypeError):
        OpenAIChatDrafter(openai_client(), "m", messages=[])


def test_wrong_client_pairing(openai_client: Any) -> None:
    drafter = OpenAIChatDrafter(openai_client(), "m")
    with pytest.raises(TypeError, match="draft"):
        drafter.adraft(DraftRequest(prompt="p")).send(None)


# --------------------------------------------------------------------------- OpenAI completions


def test_completions_continue_the_raw_text(openai_server: MockServer, openai_client: Any) -> None:
    openai_server.script(text("Lovelace", chunk_size=3, usage=(4, 2)))
    drafter = OpenAICompletionsDrafter(openai_client(), "davinci")
    assert drafter.capabilities.prefill
    stream = drafter.draft(DraftRequest(prompt="Name: ", prefix="Ada ", max_tokens=9))
    assert list(stream) == ["Lov", "ela", "ce"]
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (4, 2)
    body = openai_server.bodies[0]
    assert body["prompt"] == "Name: Ada "
    assert body["max_tokens"] == 9
    assert openai_server.exchanges[0].path == "/v1/completions"


def test_completions_need_a_text_prompt(openai_client: Any) -> None:
    drafter = OpenAICompletionsDrafter(openai_client(), "m")
    with pytest.raises(TypeError):
        drafter.draft(DraftRequest(prompt=[{"role": "user", "content": "p"}]))


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_prefills_and_streams(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(text("1815}", chunk_size=2, usage=(9, 3)))
    drafter = AnthropicDrafter(anthropic_client(), "claude-test", metadata={"user_id": "u1"})
    assert drafter.capabilities.prefill
    prompt = [
        {"role": "system", "content": "Reply in JSON."},
        {"role": "user", "content": "Ada"},
    ]
    stream = drafter.draft(DraftRequest(prompt=prompt, prefix='{"born":'))
    assert list(stream) == ["18", "15", "}"]
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (9, 3)
    assert stream.finish_reason == "stop"
    assert stream.request_id is not None
    body = anthropic_server.bodies[0]
    assert body["messages"] == [
        {"role": "user", "content": "Ada"},
        {"role": "assistant", "content": '{"born":'},
    ]
    assert body["system"] == "Reply in JSON."
    assert "stop_sequences" not in body
    assert body["metadata"] == {"user_id": "u1"}
    assert body["max_tokens"] == 512


@pytest.mark.parametrize(
    ("prefix", "reply", "output"),
    [
        ('{"born": ', " 1815}", "1815}"),
        ('{"born": ', "1815}", "1815}"),
        ("a:\n  ", "\n    b", "  b"),
    ],
)
def test_anthropic_trailing_whitespace_is_cut_and_realigned(
    prefix: str, reply: str, output: str, anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(text(reply, chunk_size=1))
    drafter = AnthropicDrafter(anthropic_client(), "claude-test")
    assert "".join(drafter.draft(DraftRequest(prompt="p", prefix=prefix))) == output
    assert anthropic_server.bodies[0]["messages"][-1] == {
        "role": "assistant",
        "content": prefix.rstrip(),
    }


def test_anthropic_fresh_answer_loses_its_fence(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(text('```json\n{"born": 1815}\n```'))
    stream = AnthropicDrafter(anthropic_client(), "m").draft(DraftRequest(prompt="p"))
    assert "".join(stream) == '{"born": 1815}\n```'
    assert anthropic_server.bodies[0]["messages"] == [{"role": "user", "content": "p"}]


def test_anthropic_max_tokens_is_length(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(text("abc", finish_reason="length"))
    stream = AnthropicDrafter(anthropic_client(), "m").draft(DraftRequest(prompt="p"))
    assert "".join(stream) == "abc"
    assert stream.finish_reason == "length"


def test_anthropic_falls_back_when_prefill_is_refused(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    model = "claude-no-prefill"
    anthropic_server.script(
        error(400, PREFILL_REFUSAL),
        text('```json\n{"born": 1815}', chunk_size=4),
        text("1815}"),
    )
    client = anthropic_client()
    drafter = AnthropicDrafter(client, model)
    request = DraftRequest(prompt="Ada", prefix='{"born": ')
    with pytest.raises(ProviderError, match="refuses assistant prefill") as caught:
        drafter.draft(request)
    # The refused request is an attempt of its own; the next one, at once, asks without prefill.
    assert caught.value.retryable
    assert caught.value.retry_after == 0
    assert "".join(drafter.draft(request)) == "1815}"
    first, second = anthropic_server.bodies
    assert first["messages"][-1] == {"role": "assistant", "content": '{"born":'}
    assert second["messages"][-2] == {"role": "assistant", "content": '{"born": '}
    assert second["messages"][-1]["role"] == "user"
    assert second["messages"][-1]["content"].startswith(CONTINUE_INSTRUCTION)
    assert not drafter.capabilities.prefill
    assert AnthropicDrafter.refuses_prefill(model)

    # A later draft for the same model, by another drafter, goes straight to the instruction.
    again = AnthropicDrafter(client, model)
    assert not again.capabilities.prefill
    assert "".join(again.draft(DraftRequest(prompt="Ada", prefix='{"born": '))) == "1815}"
    assert len(anthropic_server.bodies) == 3
    assert anthropic_server.bodies[2]["messages"][-1]["role"] == "user"
    # Other models still prefill.
    assert not AnthropicDrafter.refuses_prefill("claude-other")


def test_anthropic_other_400s_do_not_fall_back(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(error(400, "max_tokens: must be at most 4096"), text("never"))
    drafter = AnthropicDrafter(anthropic_client(), "claude-strict")
    with pytest.raises(ProviderError) as caught:
        drafter.draft(DraftRequest(prompt="p", prefix="x"))
    assert caught.value.status == 400
    assert not caught.value.retryable
    assert len(anthropic_server.exchanges) == 1
    assert drafter.capabilities.prefill


@pytest.mark.parametrize(
    ("kind", "retryable"), [("overloaded_error", True), ("invalid_request_error", False)]
)
def test_anthropic_error_event_mid_stream(
    kind: str, retryable: bool, anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(text("abcdefgh", disconnect_after=1, stream_error=kind))
    stream = AnthropicDrafter(anthropic_client(), "m").draft(DraftRequest(prompt="p"))
    received: list[str] = []
    with pytest.raises(ProviderError) as caught:
        for chunk in stream:
            received.append(chunk)
    assert received == ["abcd"]
    assert caught.value.retryable is retryable
    assert caught.value.request_id == stream.request_id


def test_anthropic_early_close_stops_the_server(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    total = 200
    anthropic_server.script(text("y" * total, chunk_size=1, delay=0.005))
    stream = AnthropicDrafter(anthropic_client(), "m").draft(DraftRequest(prompt="p"))
    assert next(iter(stream)) == "y"
    stream.close()
    (exchange,) = anthropic_server.wait()
    assert exchange.client_closed
    assert exchange.chunks_sent < total // 4


# --------------------------------------------------------------------------- errors on the wire

DRAFTERS = ["openai-chat", "openai-completions", "anthropic"]


def _drafter(kind: str, request: pytest.FixtureRequest) -> tuple[Any, MockServer]:
    if kind == "anthropic":
        server = request.getfixturevalue("anthropic_server")
        return AnthropicDrafter(request.getfixturevalue("anthropic_client")(), "m"), server
    server = request.getfixturevalue("openai_server")
    client = request.getfixturevalue("openai_client")()
    cls = OpenAIChatDrafter if kind == "openai-chat" else OpenAICompletionsDrafter
    return cls(client, "m"), server


@pytest.mark.parametrize("kind", DRAFTERS)
def test_429_with_retry_after(kind: str, request: pytest.FixtureRequest) -> None:
    drafter, server = _drafter(kind, request)
    server.script(error(429, "rate limited", headers={"retry-after": "7"}))
    with pytest.raises(ProviderError) as caught:
        drafter.draft(DraftRequest(prompt="p"))
    assert (caught.value.status, caught.value.retryable, caught.value.retry_after) == (429, True, 7)
    assert caught.value.request_id is not None
    # The SDK's error, as a masked copy that names it (it could quote a key).
    assert str(caught.value.__cause__).split(":")[0] in (
        "openai.RateLimitError",
        "anthropic.RateLimitError",
    )


@pytest.mark.parametrize("kind", DRAFTERS)
@pytest.mark.parametrize(("status", "retryable"), [(500, True), (529, True), (400, False)])
def test_status_errors(
    kind: str, status: int, retryable: bool, request: pytest.FixtureRequest
) -> None:
    drafter, server = _drafter(kind, request)
    server.script(error(status, "scripted"))
    with pytest.raises(ProviderError) as caught:
        drafter.draft(DraftRequest(prompt="p"))
    assert caught.value.status == status
    assert caught.value.retryable is retryable
    assert caught.value.retry_after is None


@pytest.mark.parametrize("kind", DRAFTERS)
def test_disconnect_mid_stream(kind: str, request: pytest.FixtureRequest) -> None:
    drafter, server = _drafter(kind, request)
    server.script(disconnect("abcdefghijkl", 2))
    stream = drafter.draft(DraftRequest(prompt="p"))
    received: list[str] = []
    with pytest.raises(ProviderError) as caught:
        for chunk in stream:
            received.append(chunk)
    assert "".join(received) == "abcdefgh"
    assert caught.value.retryable
    assert caught.value.request_id == stream.request_id


@pytest.mark.parametrize("kind", DRAFTERS)
def test_a_stream_without_finish_reason_was_cut_off(
    kind: str, request: pytest.FixtureRequest
) -> None:
    drafter, server = _drafter(kind, request)
    server.script(text('{"a": 1', chunk_size=2, unfinished=True))
    stream = drafter.draft(DraftRequest(prompt="p"))
    received: list[str] = []
    with pytest.raises(ProviderError, match="without a finish reason") as caught:
        received.extend(stream)
    assert "".join(received) == '{"a": 1'  # what arrived stays; the round resumes after it
    assert caught.value.retryable


@pytest.mark.parametrize("kind", DRAFTERS)
def test_a_surrogate_pair_split_across_events_is_joined(
    kind: str, request: pytest.FixtureRequest
) -> None:
    drafter, server = _drafter(kind, request)
    value = '{"face": "\U0001f600 ok \U0001f680"}'
    server.script(text(value, chunk_size=1, utf16_chunks=True))
    assert "".join(drafter.draft(DraftRequest(prompt="p"))) == value


@pytest.mark.parametrize("kind", DRAFTERS)
def test_malformed_event_is_a_fault_on_the_way(kind: str, request: pytest.FixtureRequest) -> None:
    # The next attempt gets a fresh stream: retryable, like a drop.
    drafter, server = _drafter(kind, request)
    server.script(malformed())
    with pytest.raises(ProviderError, match="malformed event") as caught:
        list(drafter.draft(DraftRequest(prompt="p")))
    assert caught.value.retryable


def test_connection_refused_is_retryable() -> None:
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key=DUMMY_KEY, max_retries=0)
    with client, pytest.raises(ProviderError) as caught:
        OpenAIChatDrafter(client, "m").draft(DraftRequest(prompt="p"))
    assert caught.value.retryable


# --------------------------------------------------------------------------- async twins


@pytest.mark.anyio
async def test_async_openai_chat(openai_server: MockServer, openai_client: Any) -> None:
    openai_server.script(text('{"name": "Ada", "born": 1815}', chunk_size=3, usage=(5, 4)))
    async with openai_client(asynchronous=True) as client:
        drafter = OpenAIChatDrafter(client, "m")
        stream = await drafter.adraft(DraftRequest(prompt="p", prefix='{"name": "Ada", "born"'))
        assert "".join([c async for c in stream]) == ": 1815}"
        assert (stream.usage.input_tokens, stream.usage.output_tokens) == (5, 4)
        assert stream.request_id is not None
        with pytest.raises(TypeError, match="adraft"):
            drafter.draft(DraftRequest(prompt="p"))


@pytest.mark.anyio
async def test_async_openai_completions(openai_server: MockServer, openai_client: Any) -> None:
    openai_server.script(text("abcdef", chunk_size=2))
    async with openai_client(asynchronous=True) as client:
        stream = await OpenAICompletionsDrafter(client, "m").adraft(DraftRequest(prompt="p"))
        assert [c async for c in stream] == ["ab", "cd", "ef"]
        assert stream.finish_reason == "stop"


@pytest.mark.anyio
async def test_async_openai_early_close(openai_server: MockServer, openai_client: Any) -> None:
    total = 200
    openai_server.script(text("z" * total, chunk_size=1, delay=0.005))
    async with openai_client(asynchronous=True) as client:
        stream = await OpenAIChatDrafter(client, "m").adraft(DraftRequest(prompt="p"))
        assert await anext(aiter(stream)) == "z"
        await stream.aclose()
    assert stream.finish_reason == "closed"
    (exchange,) = openai_server.wait()
    assert exchange.client_closed
    assert exchange.chunks_sent < total // 4


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("reply", "retryable"),
    [
        (error(429, "slow", headers={"retry-after-ms": "1500"}), True),
        (error(400, "bad"), False),
        (disconnect("abcdefgh", 1), True),
        (malformed(), True),
    ],
    ids=["429", "400", "disconnect", "malformed"],
)
async def test_async_openai_errors(
    reply: Reply, retryable: bool, openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(reply)
    async with openai_client(asynchronous=True) as client:
        drafter = OpenAIChatDrafter(client, "m")
        with pytest.raises(ProviderError) as caught:
            stream = await drafter.adraft(DraftRequest(prompt="p"))
            async for _ in stream:
                pass
    assert caught.value.retryable is retryable
    if reply.status == 429:
        assert caught.value.retry_after == 1.5


@pytest.mark.anyio
async def test_async_anthropic_prefill_and_fallback(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    anthropic_server.script(
        text(" 1815}", chunk_size=2, usage=(3, 2)),
        error(400, PREFILL_REFUSAL),
        text('{"born": 1815}'),
    )
    async with anthropic_client(asynchronous=True) as client:
        stream = await AnthropicDrafter(client, "claude-a").adraft(
            DraftRequest(prompt="p", prefix='{"born": ')
        )
        assert "".join([c async for c in stream]) == "1815}"
        assert (stream.usage.input_tokens, stream.usage.output_tokens) == (3, 2)

        drafter = AnthropicDrafter(client, "claude-b")
        with pytest.raises(ProviderError, match="refuses assistant prefill"):
            await drafter.adraft(DraftRequest(prompt="p", prefix='{"born": '))
        stream = await drafter.adraft(DraftRequest(prompt="p", prefix='{"born": '))
        assert "".join([c async for c in stream]) == "1815}"
        assert not drafter.capabilities.prefill
    bodies = anthropic_server.bodies
    assert bodies[0]["messages"][-1]["role"] == "assistant"
    assert bodies[1]["messages"][-1]["role"] == "assistant"
    assert bodies[2]["messages"][-1]["role"] == "user"


@pytest.mark.anyio
async def test_async_anthropic_errors_and_close(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    total = 200
    anthropic_server.script(
        error(503, "busy", headers={"retry-after": "2"}),
        disconnect("abcdefgh", 1),
        text("w" * total, chunk_size=1, delay=0.005),
    )
    async with anthropic_client(asynchronous=True) as client:
        drafter = AnthropicDrafter(client, "m")
        with pytest.raises(ProviderError) as caught:
            await drafter.adraft(DraftRequest(prompt="p"))
        assert (caught.value.status, caught.value.retry_after) == (503, 2.0)
        stream = await drafter.adraft(DraftRequest(prompt="p"))
        with pytest.raises(ProviderError) as caught:
            async for _ in stream:
                pass
        assert caught.value.retryable
        stream = await drafter.adraft(DraftRequest(prompt="p"))
        assert await anext(aiter(stream)) == "w"
        await stream.aclose()
        with pytest.raises(TypeError, match="adraft"):
            drafter.draft(DraftRequest(prompt="p"))
    exchange = anthropic_server.wait()[-1]
    assert exchange.client_closed
    assert exchange.chunks_sent < total // 4


@pytest.mark.anyio
@pytest.mark.parametrize("failures", [0, 2])
async def test_async_retries(
    failures: int, no_backoff: None, openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(*[disconnect('{"partial', 1) for _ in range(failures)], text("{}"))
    seen: list[int] = []
    async with openai_client(asynchronous=True) as client:
        drafter = OpenAICompletionsDrafter(client, "m")
        while True:
            try:
                stream = await drafter.adraft(DraftRequest(prompt="p"))
                result = "".join([c async for c in stream])
                break
            except ProviderError as exc:
                assert retry_module.next_wait(len(seen) + 1, exc, 4) is not None
                seen.append(len(seen) + 1)
    assert result == "{}"
    assert seen == list(range(1, failures + 1))


# --------------------------------------------------------------------------- as_drafter


def test_as_drafter_passes_drafters_through() -> None:
    drafter = FunctionDrafter(lambda text: text)
    assert as_drafter(drafter) is drafter


def test_as_drafter_wraps_functions() -> None:
    drafter = as_drafter(lambda prompt, prefix: "x")
    assert isinstance(drafter, FunctionDrafter)


@pytest.mark.anyio
async def test_as_drafter_sends_sdk_clients_to_wrap(
    openai_client: Any, anthropic_client: Any
) -> None:
    # A client alone does not say which model drafts: the error names the two ways that do.
    async with openai_client(asynchronous=True) as oa, anthropic_client(asynchronous=True) as an:
        for client, drafter in [(oa, "OpenAIChatDrafter"), (an, "AnthropicDrafter")]:
            with pytest.raises(TypeError, match=rf"needs a model: use backtrack.wrap.*{drafter}"):
                as_drafter(client)
    with pytest.raises(TypeError, match="OpenAIChatDrafter"):
        as_drafter(openai_client())


class _OwnClient(openai.AsyncOpenAI):
    """A subclass from outside the SDK's package, as a user's own client is."""


def _azure() -> object:
    return openai.AzureOpenAI(api_key=DUMMY_KEY, azure_endpoint="http://x", api_version="1")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        pytest.param(lambda: openai.OpenAI(api_key=DUMMY_KEY), ("openai", False), id="openai"),
        pytest.param(lambda: openai.AsyncOpenAI(api_key=DUMMY_KEY), ("openai", True), id="async"),
        pytest.param(_azure, ("openai", False), id="azure"),
        pytest.param(lambda: _OwnClient(api_key=DUMMY_KEY), ("openai", True), id="subclass"),
        pytest.param(lambda: anthropic.Anthropic(api_key=DUMMY_KEY), ("anthropic", False), id="an"),
        pytest.param(
            lambda: anthropic.AsyncAnthropic(api_key=DUMMY_KEY), ("anthropic", True), id="async-an"
        ),
        pytest.param(object, None, id="object"),
        pytest.param(lambda: SimpleNamespace(chat=None, messages=None), None, id="look-alike"),
    ],
)
def test_client_kind_names_the_sdk_and_whether_it_is_async(
    make: Callable[[], object], kind: tuple[str, bool] | None
) -> None:
    assert client_kind(make()) == (None if kind is None else ClientKind(*kind))


def test_a_drafter_refuses_what_is_no_sdk_client() -> None:
    with pytest.raises(TypeError, match="not an OpenAI or Anthropic SDK client: object"):
        OpenAIChatDrafter(object(), "m")


def test_as_drafter_refuses_other_things() -> None:
    with pytest.raises(TypeError):
        as_drafter(42)


def test_importing_providers_does_not_import_the_sdks() -> None:
    # providers is imported by backtrack; a user of plain functions should not pay for the SDKs.
    import subprocess
    import sys

    code = "import providers, sys; print('openai' in sys.modules, 'anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    assert providers.__name__ == "providers"
