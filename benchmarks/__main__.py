"""Run every benchmark, print the tables, write BENCHMARKS.md.

    python -m benchmarks [--quick] [--only NAME ...] [--reuse NAME ...] [--output PATH]
    make bench                                                      (the same, all modules)

Modules, in order: bench_check (draft checking), bench_speed (constrained decoding against the
peers), bench_repair (repairing black-box drafts), bench_latency (the wait against one plain API
call, at simulated API speeds), bench_target (per-token cost of the constraint), bench_serve (the
HTTP server under concurrent clients). Each has
`run(quick: bool) -> str`, which prints its tables as it goes and returns a Markdown section;
each also runs alone (`python -m benchmarks.NAME`). A module that cannot be imported or fails is
reported as such, and the others still run.

The full run writes BENCHMARKS.md at the repository root: the machine (CPU, cores, memory, load
averages at start and end), the date, the versions of Python, torch, transformers, llguidance and
lark and of the peers' packages in `.bench/venvs`, the command, then the sections. A partial run
(`--quick` or `--only`) writes `.bench/BENCHMARKS-partial.md` instead, unless `--output` says
otherwise, so that it never replaces the full figures. Every section is also saved in
`.bench/sections/NAME.md` (`NAME.quick.md` for --quick); `--reuse NAME` takes the saved section
of a module instead of running it again (the report says so), for a long module such as
bench_speed when only another one changed.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

MODULES = (
    "bench_check",
    "bench_speed",
    "bench_repair",
    "bench_latency",
    "bench_target",
    "bench_serve",
)
ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / ".bench" / "venvs"
SECTIONS = ROOT / ".bench" / "sections"
OURS = ("torch", "transformers", "llguidance", "lark", "guidance", "tokenizers")
PEER_PACKAGES = (
    "grammar-guide",
    "guidance",
    "llguidance",
    "transformers-cfg",
    "outlines",
    "outlines-core",
    "transformers",
    "torch",
)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def peer_versions() -> dict[str, dict[str, str]]:
    """Versions of the peers' packages, read from each venv's *.dist-info folders."""
    found: dict[str, dict[str, str]] = {}
    if not VENVS.is_dir():
        return found
    wanted = {p.replace("-", "_").lower(): p for p in PEER_PACKAGES}
    for venv in sorted(VENVS.iterdir()):
        versions: dict[str, str] = {}
        for info in venv.glob("lib/python*/site-packages/*.dist-info"):
            name, _, rest = info.name.removesuffix(".dist-info").partition("-")
            key = name.replace("-", "_").lower()
            if key in wanted:
                versions[wanted[key]] = rest
        if versions:
            found[venv.name] = dict(sorted(versions.items()))
    return found


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def header(command: str, started: str, load_start: str, load_end: str, seconds: float) -> str:
    lines = [
        "# Benchmarks",
        "",
        f"Written by `{command}` on {started} ({seconds / 60:.1f} minutes). Each section says how "
        "to run it alone; the modules' docstrings say what is measured and how.",
        "",
        f"- Machine: {cpu_model()}, {os.cpu_count()} cores, {memory_gib()} memory, "
        f"{platform.system()} {platform.release()}; no GPU used.",
        f"- Load average (1 / 5 / 15 min): {load_start} at start, {load_end} at end. Other "
        "sessions share this machine: compare figures side by side within a section.",
        f"- Python {platform.python_version()}; "
        + ", ".join(f"{p} {package_version(p)}" for p in OURS)
        + f"; backtrack {package_version('backtrack')}.",
    ]
    for venv, versions in peer_versions().items():
        lines.append(
            f"- Peer venv `.bench/venvs/{venv}`: "
            + ", ".join(f"{p} {v}" for p, v in versions.items())
            + "."
        )
    return "\n".join(lines)


def run_module(name: str, quick: bool) -> str:
    print(f"\n=== {name} ===", flush=True)
    began = time.perf_counter()
    try:
        module = importlib.import_module(f"benchmarks.{name}")
    except Exception as exc:
        message = f"could not be imported: {type(exc).__name__}: {exc}"
        print(f"{name} skipped: {message}", flush=True)
        return f"## {name}\n\nSkipped: {message}."
    if not callable(getattr(module, "run", None)):
        print(f"{name} skipped: it has no run(quick)", flush=True)
        return f"## {name}\n\nSkipped: the module has no `run(quick)` yet."
    try:
        section = str(module.run(quick))
    except Exception as exc:
        tail = traceback.format_exc().strip().splitlines()[-6:]
        print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
        return (
            f"## {name}\n\nFailed: `{type(exc).__name__}: {exc}`\n\n```\n"
            + "\n".join(tail)
            + "\n```"
        )
    print(f"({name}: {time.perf_counter() - began:.0f} s)", flush=True)
    return section


def section_file(name: str, quick: bool) -> Path:
    return SECTIONS / f"{name}{'.quick' if quick else ''}.md"


def reused(name: str, quick: bool) -> str | None:
    """The saved section of `name`, marked as reused; None when there is none."""
    path = section_file(name, quick)
    if not path.is_file():
        print(f"{name}: no saved section at {path}: running it", flush=True)
        return None
    saved = datetime.datetime.fromtimestamp(path.stat().st_mtime).astimezone()
    print(f"\n=== {name} === reused from {path} ({saved:%Y-%m-%d %H:%M %Z})", flush=True)
    text = path.read_text(encoding="utf-8").strip()
    head, _, rest = text.partition("\n")
    note = f"(Reused: this section was measured on {saved:%Y-%m-%d %H:%M %Z}, in an earlier run.)"
    return f"{head}\n\n{note}\n{rest}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="smaller workloads (a few minutes)")
    parser.add_argument("--only", nargs="+", choices=MODULES, metavar="NAME", help="these only")
    parser.add_argument(
        "--reuse",
        nargs="+",
        default=[],
        choices=MODULES,
        metavar="NAME",
        help="take these modules' saved sections instead of running them",
    )
    parser.add_argument("--output", type=Path, help="where to write the report")
    args = parser.parse_args(argv)
    chosen = [m for m in MODULES if not args.only or m in args.only]
    partial = args.quick or bool(args.only)
    output = args.output or (
        ROOT / ".bench" / "BENCHMARKS-partial.md" if partial else ROOT / "BENCHMARKS.md"
    )
    command = " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])])
    started = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    load_start = loadavg()
    began = time.perf_counter()
    sections = []
    for name in chosen:
        section = reused(name, args.quick) if name in args.reuse else None
        if section is None:
            section = run_module(name, args.quick)
            if "\n\nSkipped: " not in section and "\n\nFailed: " not in section:
                SECTIONS.mkdir(parents=True, exist_ok=True)
                section_file(name, args.quick).write_text(section, encoding="utf-8")
        sections.append(section)
    text = (
        header(command.strip(), started, load_start, loadavg(), time.perf_counter() - began)
        + "\n\n"
        + "\n\n".join(s.strip() for s in sections)
        + "\n"
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(f"\nwrote {output}")


if __name__ == "__main__":
    main()
