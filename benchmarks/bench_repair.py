"""Repairing black-box drafts: backtrack vs grammar-guide vs retrying from scratch.

    python -m benchmarks.bench_repair [--quick] [--no-peer]

The documents are benchmarks/corpora/main.py: valid documents in each shipped grammar, each with a
corrupted version carrying one or two realistic slips. A scripted API (`ScriptedAPI`) stands in
for the black box, the same for every method:

- It means to write the clean document C, but each reply may carry the slips: the first reply
  always does (it is the corrupted document D: every case is a repair), every later one
  independently with probability P_CORRUPT (seeded by the case name, so that every method sees
  the same sequence of slips, call by call).
- Given the prefix P it is asked to continue, it finds where P stands in C without reading the
  grammar: the end of P when P starts C; otherwise the point after the longest suffix (3 to 20
  characters) of P found in C at or after where P and C part; else where they part. A clean reply
  is C's remainder from there; a slipping one is D's remainder from the matching point of D (C and D
  aligned by difflib), so that the slips still ahead come back. When D's remainder is empty and
  C's is not (D was truncated), the reply is C's remainder: a truncation hits one reply. A reply
  that ends where a truncated D ends says so, as an API says a reply ran out of tokens
  (`Reply(text, "length")`); every other reply ended as the API meant ("stop").
  It cannot improvise: after a correction that C has no room for (say "IN" where C has "LIKE"),
  its replies may never fit again. Real APIs adapt better; every method meets the same replies.

Methods, each with the real SmolLM2-135M-Instruct as its local model where it has one:
- backtrack: `guide()` with its defaults (8 corrections, then the target completes the text).
- retry: call the API with an empty prefix up to K=3 times until a reply is valid; else the last
  reply (invalid) is the output.
- grammar-guide 0.0.11 (its own venv, benchmarks/peers/repair_grammar_guide.py): its generic
  loop with the same API (served from this process, so the replies are the same), a guidance
  model of SmolLM2 given the prompt for corrections with several candidates,
  max_grammar_corrections=8, at most GG_LIMIT_S seconds a case (its candidate choice has no
  length limit and can run on).

Every output is checked by llguidance (`Grammar.matches`) and by the lark library (parse). The
edit distance is Levenshtein's between the output and C (the table gives its median over valid
outputs; "near": valid and within 10% of C's length). The outputs, with their notes, are saved
in .bench/repair_outputs.json.
"Thrown away" is what the API wrote that is not in the output: backtrack's rejected and dropped
characters; retry's invalid replies; for grammar-guide, the characters drafted minus those of the
output that it did not insert itself (an estimate: it does not attribute its output).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.corpora import unseen
from benchmarks.corpora.main import CASES, JSON_KEYS_N, Case, check_corpus, load_grammar
from benchmarks.corpora.other import GRAMMARS, OTHER_CASES, check_other_corpus, load_other_grammar
from benchmarks.corpora.sweep import sweep_cases
from grammars.grammar import Grammar
from providers import Reply

P_CORRUPT = 0.7
RETRIES = 3
SEED = 2026
WINDOW = 20
GG_MAX_CORRECTIONS = 8
NEAR = 0.1  # "near": valid, at most 10% of the clean document's length away from it
GG_LIMIT_S = 60  # grammar-guide's time limit per case (its corrections are not bounded)
# --quick: two cases a grammar, picked to finish fast (no 512-token completion).
QUICK = (
    "json-trailing-commas",
    "json-python-literals",
    "keys-extra-key",
    "keys-fenced",
    "sql-top",
    "sql-similar-to",
    "arith-unbalanced",
    "arith-truncated",
    "csv-blank-line",
    "csv-truncated",
    "py-unbalanced",
    "py-fenced",
)
QUICK_GG_LIMIT_S = 20
KIND = {
    "json": "JSON",
    "json_keys": "JSON object",
    "sqlite": "SQLite query",
    "arithmetic": "expression",
    "csv": "CSV",
    "python_expr": "Python code",
    "toml": "TOML file",
    "html": "HTML fragment",
    "graphql": "GraphQL query",
    **unseen.KINDS,
}
COMMAND = "python -m benchmarks.bench_repair"
UNSEEN = {"unseen": "look", "unseen-held": "held"}  # --corpus: a half of benchmarks/corpora/unseen


# -- the scripted API ------------------------------------------------------------------------------


def common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def position_map(clean: str, corrupted: str) -> list[int]:
    """For each offset c in `clean` (0..len), the matching offset in `corrupted`: inside equal
    runs the same character; at the start of a replaced or inserted piece its start (the slip
    comes next); inside a replaced piece its end (the slip was passed)."""
    out = [len(corrupted)] * (len(clean) + 1)
    done = [False] * (len(clean) + 1)
    matcher = difflib.SequenceMatcher(None, clean, corrupted, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for c in range(i1, max(i2, i1 + 1)):
            if c > len(clean) or done[c]:
                continue
            if tag == "equal":
                out[c] = j1 + (c - i1)
            elif c == i1:
                out[c] = j1
            else:
                out[c] = j2
            done[c] = True
    return out


def align(clean: str, prefix: str) -> int:
    """Where `prefix` stands in `clean` (see the module docstring); the grammar is not read."""
    if clean.startswith(prefix):
        return len(prefix)
    parted = common_prefix(clean, prefix)
    tail = prefix[-WINDOW:]
    for n in range(len(tail), 2, -1):
        at = clean.find(tail[-n:], max(parted - n + 1, 0))
        if at >= 0:
            return at + n
    return parted


@dataclass
class ScriptedAPI:
    """The black box of one case; `__call__(prompt, prefix)` is a FunctionDrafter function."""

    case: Case
    p_corrupt: float = P_CORRUPT
    seed: int = SEED
    calls: int = 0
    chars: int = 0  # characters written, all calls
    replies: list[str] = field(default_factory=list)
    cut_short: bool = False  # the last reply ends where a truncated D does

    def __post_init__(self) -> None:
        self._rng = random.Random(zlib.crc32(self.case.name.encode()) ^ self.seed)
        self._map = position_map(self.case.clean, self.case.corrupted)

    def reply(self, prefix: str) -> str:
        clean, corrupted = self.case.clean, self.case.corrupted
        slips = self.calls == 0 or self._rng.random() < self.p_corrupt
        self.calls += 1
        c = align(clean, prefix)
        if not slips:
            text = clean[c:]
        else:
            text = (
                corrupted[len(prefix) :]
                if corrupted.startswith(prefix)
                else corrupted[self._map[c] :]
            )
            if not text:
                text = clean[c:]
            else:
                self.cut_short = self.case.slips.startswith("truncated")
        self.chars += len(text)
        self.replies.append(text)
        return text

    def __call__(self, prompt: Any, prefix: str) -> str:
        return self.reply(prefix)

    def ended(self, prompt: Any, prefix: str) -> str | Reply:
        """The reply, and where it ends where a truncated D does, that it was cut short."""
        self.cut_short = False
        text = self.reply(prefix)
        return Reply(text, "length") if self.cut_short else text


# -- measures --------------------------------------------------------------------------------------


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def lark_valid(grammar: Grammar, text: str) -> bool:
    try:
        grammar.parse(text)
    except Exception:
        return False
    return True


@dataclass
class Outcome:
    case: str
    grammar: str
    method: str
    output: str
    clean: str
    valid: bool
    lark_agrees: bool
    exact: bool
    api_calls: int
    thrown: int
    local_tokens: int
    edit: int
    seconds: float
    note: str = ""
    traits: list[str] = field(default_factory=list)  # backtrack only: see traits()


def outcome(
    case: Case, method: str, output: str, api: ScriptedAPI, thrown: int, tokens: int, seconds: float
) -> Outcome:
    grammar = grammar_of(case)
    valid = grammar.matches(output)
    return Outcome(
        case=case.name,
        grammar=case.grammar,
        method=method,
        output=output,
        clean=case.clean,
        valid=valid,
        lark_agrees=lark_valid(grammar, output) == valid,
        exact=output == case.clean,
        api_calls=api.calls,
        thrown=thrown,
        local_tokens=tokens,
        edit=levenshtein(output, case.clean),
        seconds=seconds,
    )


def target_prompt(case: Case) -> str:
    return f"{case.prompt} Reply with the {KIND[case.grammar]} only."


# -- the methods -----------------------------------------------------------------------------------


def run_backtrack(case: Case, target: Any) -> Outcome:
    from backtrack import guide
    from providers import FunctionDrafter

    grammar = grammar_of(case)
    api = ScriptedAPI(case)
    start = time.perf_counter()
    result = guide(FunctionDrafter(api.ended), grammar, prompt=target_prompt(case), target=target)
    seconds = time.perf_counter() - start
    out = outcome(
        case, "backtrack", result.text, api, result.rejected_chars, result.local_tokens, seconds
    )
    out.note = f"{result.stop_reason}, {result.corrections} corrections"
    out.traits = traits(case, result, far=not near(out))
    return out


LONG_COMPLETION = 100  # local tokens: the API's continuations stopped fitting


def traits(case: Case, result: Any, *, far: bool) -> list[str]:
    """What happened in a backtrack run that explains a distance from the clean document: a
    good start dropped ("start"), a long completion ("long"), else a valid output that is not
    near the clean document ("astray")."""
    found = []
    dropped = ""
    for span in result.trace.spans:
        if span.origin != "dropped":
            break
        dropped += span.text
    preamble = max(0, case.corrupted.find(case.clean[:8]))  # where the answer really starts
    if len(dropped) > preamble:
        found.append("start")  # dropped more than the real preamble: a good start was lost
    if result.local_tokens >= LONG_COMPLETION:
        found.append("long")
    if far and not found:
        found.append("astray")
    return found


def run_retry(case: Case) -> Outcome:
    grammar = grammar_of(case)
    api = ScriptedAPI(case)
    start = time.perf_counter()
    thrown = 0
    text = ""
    for _ in range(RETRIES):
        text = api("", "")
        if grammar.matches(text):
            break
        thrown += len(text)
    return outcome(case, "retry", text, api, thrown, 0, time.perf_counter() - start)


class GrammarGuidePeer:
    """grammar-guide in its venv; its drafts are served by ScriptedAPIs in this process."""

    def __init__(self, limit_s: float = GG_LIMIT_S) -> None:
        from benchmarks.peers import HERE, peer_python, smollm2_tf4

        self.limit_s = limit_s
        self.model = smollm2_tf4()
        python = peer_python("grammar-guide")
        env = dict(
            os.environ,
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            TOKENIZERS_PARALLELISM="false",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
        )
        self.log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [str(python), str(HERE / "repair_grammar_guide.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=HERE.parents[1],
        )
        self.dead = False
        hello = self._send({"op": "load", "model": str(self.model)})
        self.versions: dict[str, str] = hello.get("versions", {})

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"grammar-guide runner died:\n{self.stderr_tail()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def death(self) -> str:
        """Why the runner died, in a few words (a timeout: where it was)."""
        tail = self.stderr_tail(200)
        if "Timeout (" not in tail:
            return "the runner died: " + " / ".join(tail.splitlines()[-2:])
        frames = [
            line.strip().split("site-packages/")[-1].replace('", line ', ":")
            for line in tail.splitlines()
            if line.strip().startswith("File ")
        ]
        ours = next((f for f in frames if f.startswith("grammar_guide/")), "")
        inner = frames[0] if frames else ""
        return f"no result within {self.limit_s:.0f} s (in {ours}, at {inner})"

    def stderr_tail(self, lines: int = 40) -> str:
        self.log.seek(0)
        return "\n".join(self.log.read().strip().splitlines()[-lines:])

    def run(
        self, case: Case, wrap: Callable[[ScriptedAPI], Callable[[Any, str], str]] | None = None
    ) -> Outcome:
        """grammar-guide on `case`; its drafts are the ScriptedAPI's replies, through `wrap` when
        given (bench_latency: the replies at a simulated speed)."""
        api = ScriptedAPI(case)
        draft = wrap(api) if wrap is not None else api
        source = grammar_source(case.grammar)
        start = time.perf_counter()
        try:
            reply = self._send(
                {
                    "op": "case",
                    "name": case.name,
                    "grammar": source,
                    "prompt": target_prompt(case),
                    "max_corrections": GG_MAX_CORRECTIONS,
                    "limit_s": self.limit_s,
                }
            )
            while reply.get("op") == "draft":
                reply = self._send({"op": "text", "text": draft(reply["prompt"], reply["prefix"])})
        except RuntimeError:
            self.dead = True
            reply = {"op": "error", "error": self.death()}
        seconds = time.perf_counter() - start
        if reply.get("op") == "error":
            out = outcome(case, "grammar-guide", "", api, api.chars, 0, seconds)
            out.valid = out.exact = False
            out.note = f"failed: {reply['error']}"
            return out
        text = reply["output"]
        own = reply["inserted_chars"] + reply["seed_chars"]
        thrown = max(0, api.chars - max(0, len(text) - own))
        out = outcome(case, "grammar-guide", text, api, thrown, reply["local_tokens"], seconds)
        out.note = reply.get("note", "")
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(RuntimeError, OSError, ValueError):
                self._send({"op": "quit"})
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def grammar_source(name: str) -> str:
    import grammars

    if name in GRAMMARS:
        return load_other_grammar(name).source
    if name in unseen.GRAMMARS:
        return unseen.load_unseen_grammar(name).source
    if name == "json_keys":
        return grammars.source("json_keys", n=JSON_KEYS_N)
    return grammars.source(name)


# -- the run ---------------------------------------------------------------------------------------


def grammar_of(case: Case) -> Grammar:
    if case.grammar in GRAMMARS:
        return load_other_grammar(case.grammar)
    if case.grammar in unseen.GRAMMARS:
        return unseen.load_unseen_grammar(case.grammar)
    return load_grammar(case.grammar)


def pick(quick: bool, corpus: str = "main") -> list[Case]:
    if corpus == "other":
        return list(OTHER_CASES)
    if corpus in UNSEEN:
        return list(unseen.half_cases(UNSEEN[corpus]))
    if corpus == "unseen-sweep":
        return list(sweep_cases())
    return [c for c in CASES if c.name in QUICK] if quick else list(CASES)


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def near(o: Outcome) -> bool:
    """Valid and within NEAR of the clean document's length in edit distance."""
    return o.valid and o.edit <= NEAR * len(o.clean)


def row(label: str, outs: Sequence[Outcome]) -> str:
    valid = [o for o in outs if o.valid]
    edit = f"{statistics.median(o.edit for o in valid):.0f}" if valid else "-"
    seconds = [o.seconds for o in outs]
    return (
        f"| {label} | {len(valid)}/{len(outs)} | {sum(near(o) for o in outs)} "
        f"| {sum(o.exact for o in outs)} | {mean([o.api_calls for o in outs]):.2f} "
        f"| {mean([o.thrown for o in outs]):.1f} | {mean([o.local_tokens for o in outs]):.1f} "
        f"| {edit} | {mean(seconds):.2f} / {statistics.median(seconds):.2f} |"
    )


HEADER = (
    "| method | valid | near | exact | API calls | chars thrown away | local tokens "
    "| edit distance, median (valid) | wall s, mean / median |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


# A case's slip kind, from its name: the first rule whose word the name contains.
SLIP_KINDS = (
    ("truncated", "truncation"),
    ("unbalanced", "bracket or tag"),
    ("missing-br", "bracket or tag"),
    ("end-tag", "bracket or tag"),
    ("overlapping", "bracket or tag"),
    ("sql-", "SQL dialect"),
    ("fenced", "prose or fence around"),
    ("prose", "prose or fence around"),
    ("space-after", "separator or blank"),
    ("quote", "quotes"),
    ("trailing", "separator or blank"),
    ("blank", "separator or blank"),
    ("keys-", "content the grammar refuses"),
)


def slip_kind(case: str) -> str:
    """The kind of slip a case carries (its first, where it has two)."""
    return next((kind for word, kind in SLIP_KINDS if word in case), "another language's notation")


def summary(outs: list[Outcome], methods: Sequence[str]) -> str:
    lines = [
        f'"near": valid and within {NEAR:.0%} of the clean document\'s length in edit '
        'distance; "exact": the clean document itself. Means per case.',
        "",
        "All cases:",
        "",
        HEADER,
    ]
    for method in methods:
        lines.append(row(method, [o for o in outs if o.method == method]))
    lines += [
        "",
        "By grammar:",
        "",
        HEADER.replace("| method |", "| grammar, method |", 1),
    ]
    for grammar in dict.fromkeys(o.grammar for o in outs):
        for method in methods:
            picked = [o for o in outs if o.method == method and o.grammar == grammar]
            if picked:
                lines.append(row(f"{grammar}, {method}", picked))
    lines += ["", "By slip kind:", "", HEADER.replace("| method |", "| slip kind, method |", 1)]
    for kind in dict.fromkeys(slip_kind(o.case) for o in outs):
        for method in methods:
            picked = [o for o in outs if o.method == method and slip_kind(o.case) == kind]
            lines.append(row(f"{kind}, {method}", picked))
    return "\n".join(lines)


def details(outs: list[Outcome], methods: Sequence[str], cases: list[Case]) -> str:
    head = "| case | slips | " + " | ".join(methods) + " |"
    lines = [
        "Per case: valid (V) or not (x), edit distance, API calls, local tokens, seconds.",
        "",
        head,
        "|" + "---|" * (len(methods) + 2),
    ]
    by = {(o.case, o.method): o for o in outs}
    for case in cases:
        cells = []
        for method in methods:
            o = by.get((case.name, method))
            if o is None:
                cells.append("-")
                continue
            mark = "V" if o.valid else "x"
            cell = f"{mark} {o.edit} / {o.api_calls} / {o.local_tokens} / {o.seconds:.1f}"
            if o.note.startswith("failed"):
                cell = "failed"
            cells.append(cell)
        lines.append(f"| {case.name} | {case.slips} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


EMPTY_VALID = "should already be assumed to fail"


def gg_failures(failed: list[Outcome]) -> str:
    """grammar-guide's failures, grouped by reason, with what the reason means."""
    reasons: dict[str, list[str]] = {}
    for o in failed:
        note = o.note.removeprefix("failed: ")
        if EMPTY_VALID in note:
            note = (
                "the grammar accepts the empty text, and grammar-guide's first step "
                "(prepare_initial_prefix) raises ValueError on a text that parses"
            )
        elif note.startswith("no result within"):
            note += (
                ": the guidance regex call that picks among several candidate terminals has no "
                "length limit, and SmolLM2 did not end the terminal"
            )
        reasons.setdefault(note, []).append(o.case)
    return "".join(f"; failed on {', '.join(cases)}: {reason}" for reason, cases in reasons.items())


def findings(outs: list[Outcome], methods: Sequence[str], gg_note: str) -> list[str]:
    def share(method: str) -> str:
        picked = [o for o in outs if o.method == method]
        return f"{sum(o.valid for o in picked)}/{len(picked)}" if picked else "-"

    lines = [
        "- Valid outputs: " + ", ".join(f"{m} {share(m)}" for m in methods) + ".",
    ]
    bt = {o.case: o for o in outs if o.method == "backtrack"}
    rt = {o.case: o for o in outs if o.method == "retry"}
    worse = [
        name
        for name, o in bt.items()
        if name in rt and rt[name].valid and (not o.valid or o.edit > rt[name].edit)
    ]
    if worse:
        lines.append(
            f"- A successful retry (the clean document) beats backtrack's repair on {len(worse)} "
            "cases: an edit made the draft fit in another way than the clean document (a word "
            "the grammar takes kept where the document has another), or the local model's "
            "words differ from the API's."
        )
    causes = {
        "start": "the answer's start was placed past a good start, which was dropped as a "
        "preamble (loop._answer_start: in Python-like grammars a valid tail after an early slip "
        "looks like an answer after a preamble)",
        "long": f"the API's continuations stopped fitting; the local model wrote "
        f"{LONG_COMPLETION}+ tokens (completion)",
        "astray": "a repair or a correction went another way than the document, and the API's "
        "later text fit after it but meant something else (a dialect keyword read as a name, "
        "an operator inserted, a line dropped as trailing; see .bench/repair_outputs.json)",
    }
    for trait, cause in causes.items():
        hit = [o for o in bt.values() if trait in o.traits]
        if hit:
            named = ", ".join(
                f"{o.case} ({'ed ' + str(o.edit) if o.valid else 'invalid'})" for o in hit
            )
            lines.append(f"- Where backtrack loses: {cause}: {named}.")
    invalid = [o for o in bt.values() if not o.valid]
    if invalid:
        lines.append(
            "- backtrack's invalid outputs: "
            + ", ".join(f"{o.case} ({o.note})" for o in invalid)
            + " (`incomplete`: the local model's completion did not close within its budget)."
        )
    disagree = [f"{o.method}/{o.case}" for o in outs if not o.lark_agrees]
    if disagree:
        lines.append("- llguidance and lark disagree on: " + ", ".join(disagree))
    if gg_note:
        lines.append(f"- grammar-guide: {gg_note}")
    return lines


def run(
    quick: bool,
    *,
    peer: bool = True,
    corpus: str = "main",
    log: Callable[[str], None] = print,
) -> str:
    import torch

    from local_target import LocalTarget

    checks = {"other": check_other_corpus, **dict.fromkeys(UNSEEN, unseen.check_unseen_corpus)}
    problems = checks.get(corpus, check_corpus)()
    if problems:
        raise RuntimeError("corpus: " + "; ".join(problems))
    torch.set_num_threads(1)
    cases = pick(quick, corpus)
    load_start = os.getloadavg()
    target = LocalTarget.default(device="cpu")
    # Warm-up: the first guide() call pays for tables and allocations.
    run_backtrack(cases[0], target)
    outs: list[Outcome] = []
    gg_note = ""
    gg: GrammarGuidePeer | None = None
    methods = ["backtrack", "retry"]
    gg_limit = QUICK_GG_LIMIT_S if quick else GG_LIMIT_S
    if peer:
        try:
            gg = GrammarGuidePeer(gg_limit)
            methods.insert(1, "grammar-guide")
            gg_note = "versions " + ", ".join(f"{k} {v}" for k, v in gg.versions.items())
        except Exception as exc:  # the peer is optional: say why it is missing
            gg_note = f"not run: {type(exc).__name__}: {str(exc).strip().splitlines()[-1:]}"
            log(f"grammar-guide leg skipped: {exc}")
    log(f"{len(cases)} cases; methods: {', '.join(methods)}")
    try:
        for case in cases:
            results = [run_backtrack(case, target), run_retry(case)]
            if gg is not None:
                results.append(gg.run(case))
                if gg.dead:  # it ran past its time limit: start a new one
                    log(f"grammar-guide on {case.name}: {results[-1].note}")
                    gg.close()
                    gg = GrammarGuidePeer(gg_limit)
            outs.extend(results)
            log(
                f"{case.name:<26} "
                + "  ".join(
                    f"{o.method}: {'V' if o.valid else 'x'} ed {o.edit:<3} calls {o.api_calls} "
                    f"tok {o.local_tokens:<3} {o.seconds:5.2f}s"
                    for o in results
                )
            )
    finally:
        if gg is not None:
            gg.close()
    load_end = os.getloadavg()
    gg_note += gg_failures([o for o in outs if o.note.startswith("failed")])
    table = summary(outs, methods)
    log(table)
    mode = (
        (" --quick" if quick else "")
        + ("" if peer else " --no-peer")
        + ("" if corpus == "main" else f" --corpus {corpus}")
    )
    section = [
        "## Repair of black-box drafts",
        "",
        f"`{COMMAND}{mode}` ({len(cases)} documents in {len({c.grammar for c in cases})} grammars; "
        "see the module docstring "
        f"for the scripted API: first reply corrupted, later ones with p={P_CORRUPT}; "
        f"retry K={RETRIES}). Load average {load_start[0]:.2f} at start, {load_end[0]:.2f} at "
        "end; one torch thread; SmolLM2-135M-Instruct fp32 on CPU as the local model.",
        "",
        table,
        "",
        details(outs, methods, cases),
        "",
        *findings(outs, methods, gg_note),
    ]
    save_outputs(outs)
    return "\n".join(section)


def save_outputs(outs: list[Outcome]) -> None:
    folder = Path(".bench")
    folder.mkdir(exist_ok=True)
    (folder / "repair_outputs.json").write_text(json.dumps([asdict(o) for o in outs], indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{len(QUICK)} cases")
    parser.add_argument("--no-peer", action="store_true", help="skip grammar-guide")
    parser.add_argument(
        "--corpus",
        choices=("main", "other", *UNSEEN, "unseen-sweep"),
        default="main",
        help="benchmarks/corpora/main.py (shipped grammars), benchmarks/corpora/other.py "
        "(TOML, HTML, GraphQL from public sources), or benchmarks/corpora/unseen.py (grammars "
        "nobody tuned on): its look half (unseen) or its held-out half (unseen-held, reported "
        "as it comes out, never tuned on), or every slip kind on every one of its documents "
        "(unseen-sweep, a wider look set without the held half's drafts: corpora/sweep.py)",
    )
    args = parser.parse_args()
    print(run(args.quick, peer=not args.no_peer, corpus=args.corpus))


if __name__ == "__main__":
    main()
