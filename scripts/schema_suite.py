"""Whether `Grammar.matches` agrees with JSON-Schema-Test-Suite, and which of its schemas
`Grammar.from_json_schema` compiles.

    .venv/bin/python -m scripts.schema_suite --git-dir SUITE [--under tests/draft2020-12]

SUITE: a clone of github.com/json-schema-org/JSON-Schema-Test-Suite (a bare one works). Each
`<keyword>.json` file directly under `--under` is a list of groups: a schema and test instances
(`data` with the `valid` the specification gives it). The suite is the reference: an instance it
calls valid that `matches` refuses is a false refusal, one it calls invalid that `matches` takes a
false accept. Each instance is written as an API writes JSON (`json.dumps(..., ensure_ascii=False)`;
the `\\u`-escaped form is tried too, as in `scripts/schema_census.py`, whose worker pool, failure
causes and refusal diagnosis this reuses).

Each group is compiled in a worker process with a time limit (`--timeout`) and no network: a
`$ref` to the suite's remote documents (`http://localhost:1234/...`) fails to compile, or leaves
its instances to a validator that cannot fetch them (counted apart, as `unresolved`). `format.json`
is reported apart: the specification reads `format` as an annotation, the engine enforces the
formats it knows. `--json OUT` writes every result; `--against OLD.json` adds a comparison with an
earlier run (another tree of the library on `PYTHONPATH`, the same suite commit).
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scripts.schema_census import (
    Pool,
    compile_into,
    git_names,
    not_compiled,
    read_git_json,
    why_refused,
)

UNDER = "tests/draft2020-12"
FORMAT = "format.json"  # its groups are reported apart (format as an annotation)


@dataclass
class Instance:
    description: str
    valid: bool  # the suite's verdict
    verdict: bool | None  # `matches`; None when it raised (a reference it cannot resolve)
    why: str = ""  # for a disagreement: its likely cause
    escaped_refused: bool = False  # valid, taken as written, refused with \u escapes


@dataclass
class Group:
    name: str  # <file>#<index>
    description: str
    status: str  # "ok", "error", "timeout", "crash"
    seconds: float = 0.0
    message: str = ""
    relaxed: list[str] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)

    @property
    def file(self) -> str:
        return self.name.split("#")[0]


def list_files(git_dir: str, rev: str, under: str) -> list[str]:
    return sorted(n for n in git_names(git_dir, rev, under) if n.endswith(".json"))


def suite_commit(git_dir: str, rev: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", rev],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


# -- the work --------------------------------------------------------------------------------------


def _no_network(*args: object, **kwargs: object) -> Any:
    raise OSError("no network in the schema suite run")


def judge(name: str, group: dict[str, Any]) -> Group:
    """Compile one group's schema and judge its instances (runs in a worker, offline)."""
    socket.create_connection = _no_network
    socket.socket.connect = _no_network  # type: ignore[method-assign]

    schema = group["schema"]
    result = Group(name, group["description"], "ok")
    grammar = compile_into(result, schema)
    if grammar is None:
        return result
    for test in group["tests"]:
        text = json.dumps(test["data"], ensure_ascii=False)
        valid = bool(test["valid"])
        instance = Instance(test["description"], valid, None)
        try:
            instance.verdict = grammar.matches(text)
        except Exception as exc:  # the validator could not resolve a reference
            instance.why = f"unresolved: {type(exc).__name__}"
            result.instances.append(instance)
            continue
        if valid and not instance.verdict:
            instance.why = why_refused(grammar, schema, text)
        elif instance.verdict and not valid:
            instance.why = why_accepted(grammar)
        escaped = json.dumps(test["data"])
        if valid and instance.verdict and escaped != text and not grammar.matches(escaped):
            instance.escaped_refused = True
        result.instances.append(instance)
    return result


def why_accepted(grammar: Any) -> str:
    """The likely cause of a false accept: the grammar alone decided (no validator behind it), or
    the `jsonschema` validator takes the instance too."""
    if grammar.schema is None or grammar.schema.validator is None:
        return "the grammar alone decides, and takes it"
    return "the jsonschema validator takes it too"


def _lost(name: str, status: str, seconds: float) -> Group:
    return Group(name, "", status, seconds=seconds)


# -- the report ------------------------------------------------------------------------------------


@dataclass
class Tally:
    groups: int = 0
    compiled: int = 0
    instances: int = 0
    agree: int = 0
    false_accepts: int = 0
    false_refusals: int = 0
    unresolved: int = 0

    def add(self, group: Group) -> None:
        self.groups += 1
        self.compiled += group.status == "ok"
        for i in group.instances:
            if i.verdict is None:
                self.unresolved += 1
                continue
            self.instances += 1
            self.agree += i.verdict == i.valid
            self.false_accepts += i.verdict and not i.valid
            self.false_refusals += i.valid and not i.verdict

    def row(self, label: str) -> str:
        rate = f"{100 * self.agree / self.instances:.1f}%" if self.instances else "-"
        return (
            f"| {label} | {self.groups} | {self.compiled} | {self.instances} | {rate} | "
            f"{self.false_accepts} | {self.false_refusals} | {self.unresolved} |"
        )


HEADER = [
    "| file | groups | compiled | instances | agree | false accepts | false refusals "
    "| unresolved |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
]


def tally(groups: list[Group]) -> Tally:
    out = Tally()
    for group in groups:
        out.add(group)
    return out


def _disagreement_cause(why: str) -> str:
    return "cut by the grammar" if why.startswith("cut") else why


def report(groups: list[Group]) -> str:
    files = sorted({g.file for g in groups})
    lines = list(HEADER)
    for name in files:
        lines.append(tally([g for g in groups if g.file == name]).row(name.removesuffix(".json")))
    keywords = [g for g in groups if g.file != FORMAT]
    lines.append(tally(keywords).row("**all but format**"))
    if len(keywords) < len(groups):
        lines.append(tally([g for g in groups if g.file == FORMAT]).row("**format, apart**"))
    lines += not_compiled(
        groups,
        "Groups not compiled, by cause:",
        "Compiled groups with a keyword left to the validator:",
    )
    escaped = sum(i.escaped_refused for g in groups for i in g.instances)
    lines += [
        "",
        f"Valid instances taken as written but refused with \\u escapes: {escaped}",
    ]
    for label, wrong in (
        ("False accepts", lambda i: i.verdict and not i.valid),
        ("False refusals", lambda i: i.valid and i.verdict is False),
        ("Unresolved", lambda i: i.verdict is None),
    ):
        by_cause: dict[str, list[str]] = collections.defaultdict(list)
        for g in groups:
            for i in g.instances:
                if wrong(i):
                    detail = f" ({i.why})" if i.why.startswith("cut") else ""
                    by_cause[_disagreement_cause(i.why)].append(
                        f"{g.name} {g.description} / {i.description}{detail}"
                    )
        if not by_cause:
            continue
        lines += ["", f"{label}, by cause:"]
        for why, where in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
            lines += ["", f"- {len(where)} x {why}:"]
            lines += [f"  - {w}" for w in where]
    return "\n".join(lines)


def compare(groups: list[Group], before: list[Group]) -> str:
    """Before and after, overall and on the groups both compiled (format apart)."""
    old = {g.name: g for g in before}
    both = {g.name for g in groups if g.status == "ok" and old.get(g.name, g).status == "ok"}
    lines = ["", "Against the earlier run:", "", *HEADER]
    for label, rows in (("before", before), ("after", groups)):
        keyword_rows = [g for g in rows if g.file != FORMAT]
        lines.append(tally(keyword_rows).row(f"{label}, all but format"))
        common = [g for g in keyword_rows if g.name in both]
        lines.append(tally(common).row(f"{label}, groups both compiled"))
        lines.append(tally([g for g in rows if g.file == FORMAT]).row(f"{label}, format"))
    return "\n".join(lines)


def load(path: str) -> list[Group]:
    groups = []
    for row in json.loads(Path(path).read_text()):
        row["instances"] = [Instance(**i) for i in row["instances"]]
        groups.append(Group(**row))
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--git-dir", required=True, help="a (bare) clone of the test suite")
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--under", default=UNDER, help="the folder of <keyword>.json files")
    parser.add_argument("--files", nargs="+", help="only these files (default: all)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per group")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("--against", help="an earlier run's --json, to compare with")
    args = parser.parse_args()

    names = args.files or list_files(args.git_dir, args.rev, args.under)
    suite = read_git_json(args.git_dir, args.rev, [f"{args.under}/{n}" for n in names])
    tasks = [
        (f"{n}#{index}", group)
        for n in names
        for index, group in enumerate(suite[f"{args.under}/{n}"])
    ]
    started = time.perf_counter()
    groups: list[Group] = Pool(args.jobs, args.timeout, judge, _lost).run(tasks)
    order = {name: k for k, (name, _) in enumerate(tasks)}
    groups.sort(key=lambda g: order[g.name])
    for g in groups:  # a lost group's description, from the suite
        g.description = (
            g.description
            or suite[f"{args.under}/{g.file}"][int(g.name.split("#")[1])]["description"]
        )
    print(report(groups))
    if args.against:
        print(compare(groups, load(args.against)))
    import grammars

    print(
        f"\n{len(groups)} groups in {time.perf_counter() - started:.0f} s ({args.jobs} jobs); "
        f"suite {suite_commit(args.git_dir, args.rev)[:12]} {args.under}; "
        f"grammars from {Path(grammars.__file__).parent}",
        file=sys.stdout,
    )
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(g) for g in groups], indent=1))


if __name__ == "__main__":
    main()
