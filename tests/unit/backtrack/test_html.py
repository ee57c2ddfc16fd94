"""The HTML trace: what the page says, that model text can never become markup, and how it renders.

The first part reads the rendered string. The second loads a trace full of hostile text into real
headless Chromium (Debian's `chromium`): `--dump-dom` gives the DOM after load, `--screenshot` a
PNG, decoded here with zlib and struct. Without Chromium those tests skip, except under CI (the
`CI` variable set), where they fail: scripts/setup.sh installs it there.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import struct
import subprocess
import typing
import zlib
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from backtrack.trace.html import render
from backtrack.trace.record import OUTPUT_ORIGINS, Drop, Origin, Repair, Round, Span, Trace
from backtrack.trace.result import GuideResult

ORIGINS = typing.get_args(Origin)
SCRIPT = "<script>document.title='pwned'</script>"
BREAKOUT = "</span></pre><img src=x onerror=alert(1)>"
QUOTES = """both "double" and 'single' & an &amp; already escaped"""
RTL = "مرحبا بالعالم — שלום עולם"
EMOJI = "🐱‍👤 cat-ninja, 👍🏽, 🇫🇷"
OVERRIDE = "\u202egnp.exe"  # RIGHT-TO-LEFT OVERRIDE, unterminated
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "div", "h1", "h2", "b", "p", "pre"}
PAGE_TAGS |= {"span", "i", "bdi", "table", "tbody", "tr", "th", "td"}  # the browser adds tbody
PAGE_TAGS |= {"ul", "li", "code"}
PAGE_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "class", "data-round", "data-ws"}
PAGE_ATTRIBUTES |= {"data-tip"}


def page_of(result: GuideResult) -> str:
    """The page backtrack.trace.html renders for `result` (what its to_html() returns)."""
    return render(
        result.trace, valid=result.valid, stop_reason=result.stop_reason, seconds=result.seconds
    )


def result_of(
    spans: list[tuple[str, str, int]],
    rounds: list[Round],
    *,
    prompt: str = "Describe a cat as JSON.",
    valid: bool = True,
    stop_reason: str = "complete",
    seconds: float = 1.25,
    drops: tuple[Drop, ...] = (),
) -> GuideResult:
    """A GuideResult built by hand; its text is what the output spans say."""
    trace = Trace(prompt, tuple(Span(t, o, r) for t, o, r in spans), tuple(rounds), drops)
    text = "".join(s.text for s in trace.spans if s.origin in OUTPUT_ORIGINS)
    return GuideResult(text, valid, valid, stop_reason, trace, seconds)


def hostile_result() -> GuideResult:
    """Every origin, each carrying text that would be markup if it were not escaped."""
    return result_of(
        [
            (f"Sure! {SCRIPT}\n", "dropped", 0),
            ('{"a": "', "draft", 0),
            (SCRIPT, "draft", 0),
            (f"<b>{QUOTES}", "deleted", 0),
            (f"{RTL}</b>", "skipped", 0),
            (f"<i>{EMOJI}", "edit", 0),
            (BREAKOUT, "rejected", 0),
            ('"', "healed", 1),
            (f', "rtl": "{RTL}"', "correction", 1),
            ("\n", "rejected", 2),
            (f', "q": "{html.escape(QUOTES)}", "e": "{EMOJI}', "reused", 2),
            (f'{OVERRIDE}"', "forced", 3),
            ("}", "correction", 3),
            (f"\n{BREAKOUT}", "dropped", 4),
        ],
        [
            Round(
                *(0, "draft", "cut", 0.5, 47, 41, 47, ("'\"'", SCRIPT), 120, 30, 1, True),
                repairs=(Repair(47, f"<b>{QUOTES}", f"{RTL}</b>", f"<i>{EMOJI}", 3),),
            ),
            Round(1, "correction", "target_stopped", 0.2, local_tokens=5, target_stop="terminal"),
            Round(2, "draft", "error", 0.1, error=f"HTTP 500: {BREAKOUT} {QUOTES}"),
            Round(
                3, "completion", "target_stopped", 0.3, local_tokens=2, target_stop="grammar_end"
            ),
            Round(4, "draft", "trailing", 0.1, 1, 41, request_id=f"req-{SCRIPT}"),
        ],
        drops=(
            Drop(f"Sure! {SCRIPT}\n", "preamble", 0, 0),
            Drop(f"\n{BREAKOUT}", "trailing", 4, 90),
        ),
        prompt=f"{SCRIPT} & {QUOTES}\n{RTL} {EMOJI}",
    )


class Page(HTMLParser):
    """A parsed page: its tags, its text (character references decoded) and its attributes."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.texts: list[str] = []
        self.title = ""
        self._in_title = False
        self.feed(source)
        self.close()
        self.text = "".join(self.texts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self._in_title:
            self.title += data


def iso(text: str) -> str:
    """`text` isolated in the hover details: between FIRST STRONG ISOLATE and its PDI."""
    return f"\u2068{text}\u2069"


def tips(page: str) -> list[str]:
    return [value for name, value in Page(page).attributes if name == "data-tip"]


# -- the rendered string ---------------------------------------------------------------------------


def test_model_text_never_becomes_markup() -> None:
    page = page_of(hostile_result())
    parsed = Page(page)
    assert set(parsed.tags) <= PAGE_TAGS
    assert "<script" not in page.lower() and "<img" not in page.lower()
    names = {name for name, _ in parsed.attributes}
    assert names <= PAGE_ATTRIBUTES
    assert not any(name.startswith("on") for name in names)
    assert parsed.title == "backtrack trace"


@pytest.mark.parametrize("text", [SCRIPT, BREAKOUT, QUOTES, RTL, EMOJI, OVERRIDE])
def test_hostile_text_is_escaped_and_shown(text: str) -> None:
    page = page_of(hostile_result())
    assert html.escape(text, quote=True) in page
    assert text in Page(page).text


def test_each_span_appears_escaped_in_one_piece() -> None:
    result = hostile_result()
    page = page_of(result)
    for span in result.trace.spans:
        assert html.escape(span.text, quote=True) in page


def test_round_details_are_escaped_into_the_hover_text() -> None:
    page = page_of(hostile_result())
    details = "\n".join(tips(page))
    assert f"expected at the cut: {iso(chr(39) + chr(34) + chr(39))}, {iso(SCRIPT)}" in details
    assert f"error: {iso(f'HTTP 500: {BREAKOUT} {QUOTES}')}" in details
    assert f"request id: {iso(f'req-{SCRIPT}')}" in details
    assert "API tokens in/out: 120/30" in details and "retries: 1" in details
    assert "local tokens: 5 (stopped: terminal)" in details
    assert "stream closed at the cut" in details


def test_every_origin_has_its_colour_and_a_legend_entry() -> None:
    page = page_of(hostile_result())
    for origin in ORIGINS:
        assert f'class="s {origin}' in page, origin
        assert len(background(page, origin)) == 3, origin
        assert f'<span class="{origin}">' in page, origin


def test_summary_numbers() -> None:
    result = hostile_result()
    summary = Page(re.search(r'<div class="summary">.*?</div>', page_of(result))[0]).text
    repaired = len(f"<b>{QUOTES}") + len(f"{RTL}</b>")  # deleted and skipped
    rejected = len(f"Sure! {SCRIPT}\n") + len(BREAKOUT) + 1 + len(f"\n{BREAKOUT}") + repaired
    for fact in [
        "valid",
        "stop: complete",
        "API calls: 4",  # 3 draft rounds and a retry
        "API tokens in / out: 120 / 30",
        "rounds: 5",
        "corrections: 2",
        "repairs: 1",
        f"characters accepted / rejected: {result.accepted_chars} / {rejected}",
        "local tokens: 7",
        "time: 1.25 s",
    ]:
        assert fact in summary, (fact, summary)


def test_an_invalid_result_says_so() -> None:
    result = result_of([("{", "draft", 0)], [Round(0, "draft", "error", 0.1, 1, error="boom")])
    page = page_of(replace(result, valid=False, stop_reason="error"))
    assert '<b class="bad">not valid</b>' in page and "stop: <b>error</b>" in page


@pytest.mark.parametrize(
    ("text", "marker"), [("\n", "↵"), ("  \t", "··⇥"), ("\r\n", "␍↵"), ("\n  ", "↵··")]
)
def test_blank_spans_are_marked(text: str, marker: str) -> None:
    page = page_of(
        result_of([("1", "draft", 0), (text, "rejected", 0)], [Round(0, "draft", "cut", 0)])
    )
    assert f'<span class="s rejected ws" data-ws="{marker}"' in page
    assert Dom(page).spans[1] == text  # the text itself is unchanged


# Text an HTML parser would not keep as it is: NUL is dropped, CR read as LF, a newline right
# after <pre> dropped. The prompt starts with one; text after RLO runs right to left.
CONTROLS = "a\x00b\rc\r\nd\x00"
LEAD = "\n\x00first line\r\n"


def controls_result() -> GuideResult:
    expected = (f"'{OVERRIDE}'", "'b'")
    return result_of(
        [("{", "draft", 0), (CONTROLS, "rejected", 0), ("\x00", "correction", 1)],
        [
            Round(0, "draft", "error", 0.1, 1, 12, 1, expected, error=f"HTTP 500: {OVERRIDE}"),
            Round(1, "correction", "target_stopped", 0.1),
        ],
        prompt=LEAD + OVERRIDE,
    )


class Dom(HTMLParser):
    """A page as a browser holds it: each output span's text (a NUL marker read back as NUL), the
    prompt, and the text of each <bdi> (an isolated piece). `dumped`: the source is Chromium's
    --dump-dom, the DOM written out as it is (not a page a browser still has to read)."""

    def __init__(self, source: str, *, dumped: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self._dumped = dumped
        self.spans: list[str] = []
        self.prompt = ""
        self.isolated: list[str] = []
        self._open: list[tuple[str, str]] = []  # (tag, class) of each open element
        self._pre_start = False  # the next text comes right after <pre>
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        if tag in ("meta",):
            return  # void: no end tag
        self._open.append((tag, classes))
        self._pre_start = tag == "pre"
        if tag == "span" and classes.startswith("s "):
            self.spans.append("")
        elif tag == "bdi":
            self.isolated.append("")
        elif tag == "i" and classes == "nul":
            self.handle_data("\x00")

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._pre_start and data.startswith("\n") and not self._dumped:
            data = data[1:]  # as a browser reads it
        self._pre_start = False
        inside = [f"{tag}.{classes.split(' ')[0]}" for tag, classes in self._open]
        if "span.s" in inside:
            self.spans[-1] += data
        if "pre.prompt" in inside:
            self.prompt += data
        if "bdi." in inside:
            self.isolated[-1] += data


def test_text_a_parser_would_change_is_encoded() -> None:
    page = page_of(controls_result())
    assert "\x00" not in page and "\r" not in page
    # Three in the output, one in the prompt, one in the legend.
    assert page.count('<i class="nul"></i>') == 5
    dom = Dom(page)
    assert dom.spans == ["{", CONTROLS, "\x00"]
    assert dom.prompt == LEAD + OVERRIDE
    assert all("\x00" not in tip for tip in tips(page))


def test_model_text_in_the_table_and_the_details_is_isolated() -> None:
    page = page_of(controls_result())
    isolated = Dom(page).isolated
    # Each untrusted piece on its own: an override in one expected item cannot reverse the next.
    assert f"'{OVERRIDE}'" in isolated and "'b'" in isolated
    assert f"HTTP 500: {OVERRIDE}" in isolated
    details = "\n".join(tips(page))
    assert f"expected at the cut: \u2068'{OVERRIDE}'\u2069, \u2068'b'\u2069" in details
    assert f"error: \u2068HTTP 500: {OVERRIDE}\u2069" in details


def test_round_boundaries_and_chunk_runs() -> None:
    spans = [("[", "draft", 0), ("1", "draft", 0), (",]", "rejected", 0), ("]", "correction", 1)]
    spans += [(" ", "draft", 2), ("x", "dropped", 2)]
    rounds = [Round(0, "draft", "cut", 0), Round(1, "correction", "target_stopped", 0)]
    rounds += [Round(2, "draft", "trailing", 0)]
    page = page_of(result_of(spans, rounds))
    assert re.findall(r'data-round="(\d+)"', page) == ["0", "1", "2"]
    # A streamed draft's chunks show as one span: same origin, same round.
    assert '<span class="s draft" data-tip="draft, 2 characters\nround 0: draft' in page
    assert page.count('class="s ') == 5


def test_one_table_row_per_round_and_long_expectations_cut() -> None:
    expected = tuple(f"'{c}'" for c in "abcdefghijklmnopq")
    result = result_of([("x", "draft", 0)], [Round(0, "draft", "cut", 0.002, 1, 0, 1, expected)])
    page = page_of(result)
    assert page.count("<tr>") == 2  # header and one round
    shown = Page(page).text
    assert "'a', 'b'" in shown and "'l' … (+5 more)" in shown and "'m'" not in shown


def test_result_methods_render_the_same_page(tmp_path: Path) -> None:
    result = hostile_result()
    page = page_of(result)
    assert result.to_html() == page == result._repr_html_()
    assert result.save_html(tmp_path / "t.html").read_text(encoding="utf-8") == page


def test_the_page_is_self_contained() -> None:
    page = page_of(hostile_result())
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'; style-src 'unsafe-inline'" in page
    style = re.search(r"<style>(.*?)</style>", page, re.S)[1]
    assert "url(" not in style and "@import" not in style
    assert all(rule.startswith(".bt") for rule in re.findall(r"^[^ \n].*?\{", style, re.M))


# -- in headless Chromium --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None and os.path.exists("/usr/bin/chromium"):
        found = "/usr/bin/chromium"
    if found is None:
        message = "chromium is not installed (Debian: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run these tests (scripts/setup.sh installs it)")
        pytest.skip(message)
    return found


def browse(chromium: str, page: Path, profile: Path, *action: str) -> str:
    """Load `page` in a fresh headless Chromium with no network; its stdout."""
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *action,
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:].decode(errors="replace")
    return done.stdout.decode()  # as bytes: text mode would read each CR as a line end


def test_chromium_runs_inline_scripts_in_a_page_without_our_csp(
    chromium: str, tmp_path: Path
) -> None:
    """The control: in a page that lets it, the injected script does change the title."""
    page = tmp_path / "control.html"
    page.write_text(f"<!DOCTYPE html><title>backtrack trace</title><p>{SCRIPT}</p>", "utf-8")
    assert Page(browse(chromium, page, tmp_path / "profile", "--dump-dom")).title == "pwned"


def test_hostile_trace_in_chromium(chromium: str, tmp_path: Path) -> None:
    result = hostile_result()
    page = result.save_html(tmp_path / "trace.html")
    dom = browse(chromium, page, tmp_path / "profile", "--dump-dom")
    parsed = Page(dom)
    assert parsed.title == "backtrack trace"  # no script ran
    assert set(parsed.tags) <= PAGE_TAGS  # no element came from model text: no <img>, no <script>
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    for text in [SCRIPT, BREAKOUT, QUOTES, RTL, EMOJI, OVERRIDE, f"{SCRIPT} & {QUOTES}\n{RTL}"]:
        assert text in parsed.text, text
    assert any(BREAKOUT in tip for tip in tips(dom))
    assert '<span class="s rejected ws" data-ws="↵"' in dom  # the lone "\n" span

    png = tmp_path / "trace.png"
    browse(chromium, page, tmp_path / "profile", f"--screenshot={png}", "--window-size=1200,900")
    width, height, pixels = decode_png(png.read_bytes())
    assert (width, height) == (1200, 900) and png.stat().st_size > 20_000
    colours = set(pixels)
    assert len(colours) > 50
    # Every origin's colour is painted (legend and spans): the CSS applied.
    for origin in ORIGINS:
        assert background(page.read_text(), origin) in colours, origin


def test_controls_and_overrides_in_chromium(chromium: str, tmp_path: Path) -> None:
    result = controls_result()
    page = result.save_html(tmp_path / "controls.html")
    dom = Dom(browse(chromium, page, tmp_path / "profile", "--dump-dom"), dumped=True)
    assert dom.spans == [span.text for span in result.trace.spans]  # NUL and CR kept
    assert dom.prompt == result.trace.prompt  # its leading newline too
    assert f"'{OVERRIDE}'" in dom.isolated and f"HTTP 500: {OVERRIDE}" in dom.isolated


def background(page: str, origin: str) -> bytes:
    """The RGB background an origin's spans get from the page's CSS."""
    colour = re.search(rf"\.bt \.{origin}\{{background:#(\w+)", page)[1]
    return bytes.fromhex(colour if len(colour) == 6 else "".join(c + c for c in colour))


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the RGB value of every pixel of an 8-bit RGB or RGBA PNG (no interlace)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat = 8, []
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        body = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
        elif kind == b"IDAT":
            idat.append(body)
    step = 3 if colour == 2 else 4
    stride = width * step
    raw = zlib.decompress(b"".join(idat))
    previous = bytearray(stride)
    pixels: list[bytes] = []
    for y in range(height):
        method = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride if method else 0):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if method == 1:
                line[i] = (line[i] + left) & 255
            elif method == 2:
                line[i] = (line[i] + up) & 255
            elif method == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            else:  # Paeth
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                near = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + near) & 255
        pixels += [bytes(line[x : x + 3]) for x in range(0, stride, step)]
        previous = line
    return width, height, pixels


def test_what_was_left_out_is_listed_at_the_top_with_its_reason() -> None:
    result = hostile_result()
    page = page_of(result)
    summary, left_out = page.index('class="summary"'), page.index("<h2>Left out</h2>")
    assert summary < left_out < page.index("<h2>Prompt</h2>")
    listed = Page(page[left_out : page.index("<h2>Prompt</h2>")]).text
    for drop in result.drops:
        assert f"{drop.reason}, {len(drop.text)} characters at output character {drop.at}" in listed
        assert drop.text in listed
    lost = f"({result.lost_chars} characters lost)"
    assert f"API answer text kept: {result.kept:.0%} {lost}" in Page(page).text
