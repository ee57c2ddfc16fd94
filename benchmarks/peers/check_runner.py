"""Draft-checking runner for bench_check, executed inside a peer's venv (see benchmarks/peers/).

Line protocol (JSON, one document per line). First line on stdin: {"parser": "grammar-guide",
"grammar": "<lark text>"}, answered by {"versions": {...}, "build_seconds": ...} or {"fatal": ...}.
Then each line {"text": "<draft>", "runs": 5, "too_slow": 10.0} is answered by {"seconds": CPU
seconds of one parse (the median of `runs` after a warm-up, or the warm-up alone when it took
over `too_slow`), "ok": whether the draft parsed} or {"error": ...}.

grammar-guide checks a draft with its Earley parser (`grammar_guide.load_parser`, minEarley, a
pruned copy of lark's Earley): `parser.parse(draft)`, as its `validate_program` does.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable

from protocol import emit


def cpu_time(run: Callable[[], object]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def main() -> None:
    import importlib.metadata as md

    hello = json.loads(sys.stdin.readline())
    try:
        import grammar_guide as gg

        start = time.process_time()
        parser = gg.load_parser(hello["grammar"])
        build = time.process_time() - start
    except Exception as exc:
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        emit({"fatal": f"{type(exc).__name__}: {exc}"[:500]})
        return
    emit({"versions": {"grammar-guide": md.version("grammar-guide")}, "build_seconds": build})
    for line in sys.stdin:
        if not line.strip():
            break
        job = json.loads(line)
        text = job["text"]
        ok = True

        def parse(text: str = text) -> None:
            nonlocal ok
            try:
                parser.parse(text)
            except Exception:
                ok = False

        try:
            first = cpu_time(parse)
            if first > float(job.get("too_slow", 10.0)):
                seconds = first
            else:
                seconds = statistics.median(cpu_time(parse) for _ in range(int(job["runs"])))
            emit({"seconds": seconds, "ok": ok})
        except Exception as exc:  # MemoryError, RecursionError...
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            emit({"error": f"{type(exc).__name__}: {exc}"[:300]})


if __name__ == "__main__":
    main()
