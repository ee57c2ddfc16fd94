"""How many real-world JSON schemas `Grammar.from_json_schema` compiles, why the others do not, and
whether `Grammar.matches` agrees with the `jsonschema` package on the schemas' example documents.

    .venv/bin/python -m scripts.schema_census --git-dir BENCH [--sample 100] [--seed 0]

BENCH: a clone of github.com/guidance-ai/jsonschemabench (a bare one works; `--folder DIR` takes
a checkout's `maskbench/data` folder instead). Its `maskbench/data/<Subset>---<name>.json` files
hold a schema and example documents (`tests`: data with a valid/invalid label), for the subsets of
JSONSchemaBench. `--sample N` takes N schemas of each subset (a seeded random sample; 0: all).

Each schema is compiled in a worker process with a time limit (`--timeout`); a worker past it is
killed and the schema counted as a timeout. For each compiled schema, each example document (as
an API writes it: `json.dumps(..., ensure_ascii=False)`; the `\\u`-escaped form is tried too) is
judged by `Grammar.matches` and by the `jsonschema` validator the schema
names (draft 2020-12 when it names none; formats are annotations, as the validator reads them by
default). The validator is the reference: a document it accepts that `matches` refuses is a false
refusal, one it refuses that `matches` takes a false accept. `--json OUT` writes every result, for
comparing two runs on the same sample.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import multiprocessing.connection
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SUBSETS = (
    "Github_trivial",
    "Github_easy",
    "Github_medium",
    "Github_hard",
    "Github_ultra",
    "Glaiveai2K",
    "JsonSchemaStore",
    "Kubernetes",
    "Snowplow",
    "WashingtonPost",
)
DATA = "maskbench/data"


@dataclass
class Result:
    name: str
    subset: str
    status: str  # "ok", "error", "timeout", "crash"
    seconds: float = 0.0
    message: str = ""
    relaxed: list[str] = field(default_factory=list)
    # per example document: (validator says valid, matches says valid)
    verdicts: list[tuple[bool, bool]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # why each false refusal, as far as known
    escaped_refused: int = 0  # valid documents refused only when written with \u escapes
    label_disagrees: int = 0  # documents whose dataset label differs from the validator


# -- reading the data set ------------------------------------------------------------------------


def list_files(args: argparse.Namespace) -> list[str]:
    if args.folder:
        return sorted(p.name for p in Path(args.folder).glob("*---*.json"))
    return sorted(n for n in git_names(args.git_dir, args.rev, DATA) if "---" in n)


def git_names(git_dir: str, rev: str, under: str) -> list[str]:
    """The names in folder `under` of a git repository's tree at `rev`."""
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "--name-only", f"{rev}:{under}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()


def read_files(args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    if args.folder:
        return {n: json.loads((Path(args.folder) / n).read_text(encoding="utf-8")) for n in names}
    found = read_git_json(args.git_dir, args.rev, [f"{DATA}/{n}" for n in names])
    return {n: found[f"{DATA}/{n}"] for n in names}


def read_git_json(git_dir: str, rev: str, paths: list[str]) -> dict[str, Any]:
    """The JSON files at `paths` in commit `rev` of the git directory, read by path."""
    # One `git cat-file --batch` for every file: one process, not one per file.
    request = "".join(f"{rev}:{path}\n" for path in paths).encode()
    raw = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        input=request,
        check=True,
        capture_output=True,
    ).stdout
    files: dict[str, Any] = {}
    at = 0
    for path in paths:
        end = raw.index(b"\n", at)
        header = raw[at:end].split()
        size = int(header[2])
        files[path] = json.loads(raw[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return files


def sample(names: list[str], subsets: list[str], size: int, seed: int) -> list[str]:
    by_subset: dict[str, list[str]] = collections.defaultdict(list)
    for name in names:
        by_subset[name.split("---")[0]].append(name)
    chosen: list[str] = []
    for subset in subsets:
        pool = by_subset.get(subset, [])
        if not pool:
            sys.exit(f"no files for subset {subset!r}")
        chosen += pool if size <= 0 or size >= len(pool) else random.Random(seed).sample(pool, size)
    return chosen


# -- the work --------------------------------------------------------------------------------------


def compile_into(result: Any, schema: Any) -> Any:
    """`Grammar.from_json_schema(schema)`, timed, with what it relaxed, into `result` (a Result or
    the like: `status`, `message`, `seconds`, `relaxed`); None, status "error", when it failed."""
    from grammars.errors import GrammarError
    from grammars.grammar import Grammar

    started = time.perf_counter()
    try:
        grammar = Grammar.from_json_schema(schema)
    except GrammarError as exc:
        result.status, result.message = "error", str(exc)
        return None
    finally:
        result.seconds = time.perf_counter() - started
    relaxed = grammar.schema.relaxed if grammar.schema else ()
    result.relaxed = [n.keyword.split(" ")[0] for n in relaxed]
    return grammar


def judge(name: str, entry: dict[str, Any]) -> Result:
    """Compile one schema and judge its example documents (runs in a worker)."""
    import jsonschema

    schema = entry["schema"]
    result = Result(name, name.split("---")[0], "ok")
    grammar = compile_into(result, schema)
    if grammar is None:
        return result
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = cls(schema)
    except Exception as exc:  # a schema the reference cannot read: no verdicts
        result.message = f"validator: {type(exc).__name__}"
        return result
    for test in entry.get("tests", []):
        try:
            reference = bool(validator.is_valid(test["data"]))
        except Exception:  # e.g. an unresolvable remote $ref in the reference
            continue
        result.label_disagrees += reference != bool(test["valid"])
        # As an API writes JSON: characters as they are, not as \u escapes.
        text = json.dumps(test["data"], ensure_ascii=False)
        verdict = grammar.matches(text)
        result.verdicts.append((reference, verdict))
        escaped = json.dumps(test["data"])
        if reference and verdict and escaped != text and not grammar.matches(escaped):
            result.escaped_refused += 1
        if reference and not verdict:
            result.refusals.append(why_refused(grammar, schema, text))
    return result


def _without_formats(node: Any) -> Any:
    """`node` with every `format` keyword taken out (a diagnostic: data keywords are kept)."""
    if isinstance(node, list):
        return [_without_formats(v) for v in node]
    if not isinstance(node, dict):
        return node
    return {
        k: v if k in ("enum", "const", "default", "examples") else _without_formats(v)
        for k, v in node.items()
        if not (k == "format" and isinstance(v, str))
    }


def why_refused(grammar: Any, schema: dict[str, Any], text: str) -> str:
    """The likely cause of a false refusal: an asserted `format` (the validator reads formats as
    annotations), or where the grammar cut the document."""
    from grammars.errors import GrammarError
    from grammars.grammar import Grammar

    try:
        if Grammar.from_json_schema(_without_formats(schema)).matches(text):
            return "format asserted"
    except GrammarError:
        pass
    check = grammar.check(text)
    if check.valid and check.complete:
        return "grammar takes it, validator refuses (!)"
    before = text[max(0, check.chars - 30) : check.chars]
    return f"cut: {before!r} | {text[check.chars : check.chars + 20]!r}"


def _worker(conn: multiprocessing.connection.Connection, work: Callable[[str, Any], Any]) -> None:
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(work(*task))


def _lost(name: str, status: str, seconds: float) -> Result:
    return Result(name, name.split("---")[0], status, seconds=seconds)


class Pool:
    """Worker processes that each run `work(name, entry)` on one task at a time; one past
    `timeout` is killed. `lost(name, status, seconds)` stands for the result of a task whose
    worker was killed ("timeout") or died ("crash"). `work` and the results must be picklable:
    module-level, in a module the workers can import."""

    def __init__(
        self,
        jobs: int,
        timeout: float,
        work: Callable[[str, Any], Any] = judge,
        lost: Callable[[str, str, float], Any] = _lost,
    ) -> None:
        self.timeout, self.work, self.lost = timeout, work, lost
        self.context = multiprocessing.get_context("spawn")
        self.idle = [self._start() for _ in range(jobs)]

    def _start(self) -> tuple[Any, multiprocessing.connection.Connection]:
        here, there = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(there, self.work), daemon=True)
        process.start()
        return process, here

    def run(self, tasks: list[tuple[str, Any]]) -> list[Any]:
        results: list[Any] = []
        queue = list(reversed(tasks))
        busy: dict[Any, tuple[Any, str, float]] = {}  # conn -> (process, name, started)
        while queue or busy:
            while queue and self.idle:
                process, conn = self.idle.pop()
                name, entry = queue.pop()
                conn.send((name, entry))
                busy[conn] = (process, name, time.monotonic())
            ready = multiprocessing.connection.wait(list(busy), timeout=0.5)
            for conn in ready:
                process, name, _ = busy.pop(conn)  # type: ignore[index]
                try:
                    results.append(conn.recv())  # type: ignore[union-attr]
                    self.idle.append((process, conn))
                except EOFError:  # the worker died (a crash in the engine)
                    results.append(self.lost(name, "crash", 0.0))
                    self.idle.append(self._start())
            now = time.monotonic()
            for conn, (process, name, started) in list(busy.items()):
                if now - started > self.timeout:
                    process.kill()
                    process.join()
                    del busy[conn]
                    results.append(self.lost(name, "timeout", self.timeout))
                    self.idle.append(self._start())
            done = len(results)
            if done and done % 100 == 0 and ready:
                print(f"... {done}/{len(tasks)}", file=sys.stderr, flush=True)
        for process, conn in self.idle:
            conn.send(None)
            process.join(timeout=5)
        return results


# -- the report ------------------------------------------------------------------------------------


_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


def cause(message: str) -> str:
    """A failure message with its particulars (names, pointers, numbers) taken out."""
    first = message.split("\n")[0]
    if first.startswith(("Unimplemented keys", "Unknown format")):
        return first  # the particulars are the cause
    return _NUMBER.sub("N", _QUOTED.sub("'…'", first))[:110]


def not_compiled(compiled: Sequence[Any], failed_title: str, relaxed_title: str) -> list[str]:
    """Report lines: the schemas (or groups) not compiled, counted by cause, then the keywords
    left to the validator in those that compiled. Each item has `status` ("ok" once compiled),
    `message` and `relaxed`."""
    failures = collections.Counter(
        cause(c.message) if c.status == "error" else c.status for c in compiled if c.status != "ok"
    )
    lines = ["", failed_title, ""]
    lines += [f"- {n} x {c}" for c, n in failures.most_common()]
    relaxed = collections.Counter(k for c in compiled for k in set(c.relaxed))
    if relaxed:
        lines += ["", relaxed_title, ""]
        lines += [f"- {n} x {k}" for k, n in relaxed.most_common()]
    return lines


def report(results: list[Result], subsets: list[str]) -> str:
    lines = [
        "| subset | schemas | compile | rate | median s | p95 s | max s | timeouts |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def row(label: str, rows: list[Result]) -> str:
        ok = [r for r in rows if r.status == "ok"]
        times = sorted(r.seconds for r in ok) or [0.0]
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        timeouts = sum(r.status == "timeout" for r in rows)
        rate = 100 * len(ok) / max(1, len(rows))
        return (
            f"| {label} | {len(rows)} | {len(ok)} | {rate:.1f}% | "
            f"{statistics.median(times):.3f} | {p95:.3f} | {times[-1]:.2f} | {timeouts} |"
        )

    for subset in subsets:
        lines.append(row(subset, [r for r in results if r.subset == subset]))
    lines.append(row("**all**", results))
    lines += not_compiled(
        results,
        "Failures by cause:",
        "Compiled schemas with a keyword relaxed (left to the validator):",
    )
    verdicts = [v for r in results for v in r.verdicts]
    valid = [m for ref, m in verdicts if ref]
    invalid = [m for ref, m in verdicts if not ref]
    false_refusals = [r for r in results if any(ref and not m for ref, m in r.verdicts)]
    false_accepts = [r for r in results if any(m and not ref for ref, m in r.verdicts)]
    lines += [
        "",
        f"Agreement on the example documents of the compiled schemas ({len(verdicts)} documents"
        f" of {sum(bool(r.verdicts) for r in results)} schemas):",
        "",
        f"- valid by jsonschema: {len(valid)}, accepted by matches: {sum(valid)}"
        f" (false refusals: {len(valid) - sum(valid)}, in {len(false_refusals)} schemas)",
        f"- invalid by jsonschema: {len(invalid)}, "
        f"refused by matches: {len(invalid) - sum(invalid)}"
        f" (false accepts: {sum(invalid)}, in {len(false_accepts)} schemas)",
        f"- documents whose dataset label differs from jsonschema: "
        f"{sum(r.label_disagrees for r in results)}",
        f"- valid documents accepted as written but refused with \\u escapes for non-ASCII "
        f"characters: {sum(r.escaped_refused for r in results)}",
    ]
    causes = collections.Counter(
        c if c.startswith(("format", "grammar")) else "other" for r in results for c in r.refusals
    )
    if causes:
        lines.append(
            "- false refusals by cause: " + ", ".join(f"{c}: {n}" for c, n in causes.items())
        )
    for label, rows in (("false refusals", false_refusals), ("false accepts", false_accepts)):
        if rows:
            lines.append(f"- {label} in: " + ", ".join(r.name for r in rows[:20]))
    others = [(r.name, c) for r in results for c in r.refusals if c.startswith("cut")]
    if others:
        lines += ["", "Other false refusals (where the grammar cut):", ""]
        lines += [f"- {name}: {c}" for name, c in others[:40]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--git-dir", help="a (bare) clone of guidance-ai/jsonschemabench")
    where.add_argument("--folder", help="a folder of <Subset>---<name>.json files")
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--subsets", nargs="+", default=list(SUBSETS))
    parser.add_argument("--sample", type=int, default=100, help="schemas per subset (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per schema")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write every result to this file")
    args = parser.parse_args()

    names = sample(list_files(args), args.subsets, args.sample, args.seed)
    files = read_files(args, names)
    started = time.perf_counter()
    results = Pool(args.jobs, args.timeout).run([(n, files[n]) for n in names])
    results.sort(key=lambda r: names.index(r.name))
    print(report(results, args.subsets))
    print(f"\n{len(results)} schemas in {time.perf_counter() - started:.0f} s ({args.jobs} jobs)")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))


if __name__ == "__main__":
    main()
