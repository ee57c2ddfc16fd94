"""Real model drafts: SmolLM2-135M-Instruct through llama.cpp's OpenAI-compatible server.

    BACKTRACK_LLAMA_PYTHON=../llama-env/bin/python .venv/bin/python -m benchmarks.bench_real_drafts

The drafts are a real model's (temperature 0; `--temperature 0.8 --seed 1 --sets first look`:
other drafts for the same tasks, one sample), served by a server nobody here wrote
(tests/support/llama_server.py says how to install it), read through the real openai SDK. Each
task (JSON schemas, shipped grammars, the third repair corpus's grammars) runs through guide()
with the local SmolLM2 as target. There is no clean document to compare with: what counts is
what the API's text became. For each task: valid; API calls; `kept` (the share of the API's
answer text in the output, as the result reports it); local tokens; wall time, and the draft
rounds' share of it (the server writing, on this machine's CPU too, and the run reading its
stream); and, for schemas, values that are one of the schema's own key names (`"city":
"occupation"`: a weak model's slip that parses). Beside it, llama.cpp's own constrained decoding
of the same schema (`response_format`), valid or not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from typing import Any

from openai import OpenAI

from benchmarks.corpora.unseen import load_unseen_grammar
from tests.support.llama_server import llama_python, running_llama


def _obj(**props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


S, INT, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}

SCHEMA_TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "person": ("a person", _obj(name=S, age=INT, city=S, occupation=S)),
    "flight": ("a flight", _obj(flight_number=S, origin=S, destination=S, departure_time=S)),
    "book": ("a book", _obj(title=S, author=S, year=INT, pages=INT)),
    "product": ("a product in a shop", _obj(name=S, price=N, in_stock=B, category=S)),
    "event": ("a concert", _obj(artist=S, venue=S, date=S, tickets_left=INT)),
    "recipe": ("a recipe", _obj(dish=S, servings=INT, ingredients={"type": "array", "items": S})),
    "address": ("a postal address", _obj(street=S, city=S, postcode=S, country=S)),
    "weather": ("today's weather", _obj(city=S, temperature_c=N, condition=S, windy=B)),
    "order": ("an order", _obj(order_id=S, quantity=INT, total=N, shipped=B)),
    "movie": ("a film", _obj(title=S, director=S, year=INT, rating=N)),
    "employee": ("an employee", _obj(name=S, department=S, salary=INT, remote=B)),
    "song": ("a song", _obj(title=S, artist=S, duration_seconds=INT, genre=S)),
    "car": ("a car", _obj(make=S, model=S, year=INT, electric=B)),
    "hotel": ("a hotel booking", _obj(hotel=S, nights=INT, guests=INT, breakfast=B)),
    "todo": ("a to-do list", _obj(owner=S, items={"type": "array", "items": S})),
}


def _list(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _enum(*values: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


# A second set, written after the fixes the first one drove (2026-11-27): nested objects, arrays
# of objects, enums. Its tasks alternate between the look half and the held half (`HELD`).
SCHEMA_TASKS |= {
    "invoice": (
        "an invoice",
        _obj(customer=_obj(name=S, email=S), lines=_list(_obj(sku=S, qty=INT)), total=N),
    ),
    "ticket": (
        "a support ticket",
        _obj(title=S, priority=_enum("low", "medium", "high"), assignee=S, open=B),
    ),
    "student": ("a student", _obj(name=S, grade=INT, courses=_list(S), gpa=N)),
    "city": ("a city", _obj(name=S, country=S, population=INT, landmarks=_list(S))),
    "playlist": ("a playlist", _obj(name=S, songs=_list(_obj(title=S, artist=S)))),
    "profile": (
        "a user profile",
        _obj(username=S, email=S, age=INT, interests=_list(S), verified=B),
    ),
    "meeting": ("a meeting", _obj(title=S, start_time=S, duration_minutes=INT, attendees=_list(S))),
    "laptop": ("a laptop", _obj(brand=S, model=S, ram_gb=INT, price=N, ssd=B)),
    "restaurant": (
        "a restaurant",
        _obj(name=S, cuisine=S, rating=N, address=_obj(street=S, city=S)),
    ),
    "pet": (
        "a pet",
        _obj(name=S, species=_enum("dog", "cat", "bird", "fish"), age=INT, vaccinated=B),
    ),
    "payment": (
        "a payment",
        _obj(id=S, amount=N, currency=_enum("USD", "EUR", "GBP"), completed=B),
    ),
    "course": ("a university course", _obj(code=S, title=S, credits=INT, prerequisites=_list(S))),
    "country": ("a country", _obj(name=S, capital=S, population=INT, languages=_list(S))),
    "rental": ("a car rental", _obj(car=S, days=INT, insurance=B, driver=_obj(name=S, age=INT))),
    "sensor": ("a sensor reading", _obj(sensor_id=S, temperature=N, humidity=N, timestamp=S)),
    "shopping": ("a shopping list", _obj(store=S, items=_list(_obj(name=S, quantity=INT)))),
    "job": ("a job posting", _obj(title=S, company=S, salary_min=INT, salary_max=INT, remote=B)),
    "account": ("a bank account", _obj(holder=S, iban=S, balance=N, currency=S)),
    "podcast": ("a podcast", _obj(title=S, host=S, episodes=INT, topics=_list(S))),
    "booking": (
        "a flight booking",
        _obj(passenger=_obj(first_name=S, last_name=S), flight=S, seat=S, bags=INT),
    ),
}
# A third set, written and run once before any change of the evening of 2026-11-27: optional
# keys, enums, numbers with bounds, deeper nesting. Its tasks alternate between a look half and
# a held half too (`THIRD_HELD`).
_OPTIONAL = {"type": "object", "additionalProperties": False}
SCHEMA_TASKS |= {
    "bug": (
        "a bug report",
        _obj(title=S, severity=_enum("low", "medium", "high"), steps=_list(S), fixed=B),
    ),
    "library": ("a library", _obj(name=S, books=_list(_obj(title=S, year=INT)))),
    "user-settings": (
        "a user's settings",
        _obj(theme=_enum("light", "dark"), language=S, notifications=_obj(email=B, sms=B)),
    ),
    "museum": (
        "a museum",
        _obj(
            name=S, city=S, open_days=_list(_enum("mon", "tue", "wed", "thu", "fri", "sat", "sun"))
        ),
    ),
    "trip": (
        "a trip plan",
        _obj(destination=S, days=INT, budget=N, stops=_list(_obj(place=S, nights=INT))),
    ),
    "review": (
        "a product review",
        _obj(product=S, stars={"type": "integer", "minimum": 1, "maximum": 5}, text=S),
    ),
    "team": ("a sports team", _obj(name=S, sport=S, players=_list(_obj(name=S, number=INT)))),
    "contact": (
        "a contact card",
        {**_OPTIONAL, "properties": {"name": S, "phone": S, "email": S}, "required": ["name"]},
    ),
    "server": (
        "a server's status",
        _obj(host=S, port=INT, up=B, load=N, services=_list(S)),
    ),
    "lesson": (
        "a lesson plan",
        _obj(subject=S, level=_enum("beginner", "advanced"), minutes=INT, goals=_list(S)),
    ),
    "garden": ("a garden", _obj(owner=S, plants=_list(_obj(name=S, watered=B)))),
    "package": (
        "a parcel delivery",
        _obj(tracking=S, weight_kg=N, sender=_obj(name=S, city=S), delivered=B),
    ),
}
GRAMMAR_TASKS: dict[str, tuple[str, str]] = {
    "sql-customers": ("an SQLite query: the ten customers with the most orders", "sqlite"),
    "sql-average": ("an SQLite query: the average price per category of products", "sqlite"),
    "csv-planets": ("a CSV table of the planets with name and moons", "csv"),
    "csv-fruit": ("a CSV table of five fruits with name, colour and price", "csv"),
    "json-config": ("a JSON configuration for a web server", "json"),
    # the second set
    "arith-circle": (
        "an arithmetic expression: the area of a circle of radius 3, with 3.14",
        "arithmetic",
    ),
    "arith-mean": ("an arithmetic expression: the average of 4, 8 and 15", "arithmetic"),
    "py-evens": ("a Python expression: the even numbers from 1 to 20, as a list", "python_expr"),
    "py-colours": (
        "a Python assignment: a dict of three colours and their hex codes",
        "python_expr",
    ),
    "sql-join": ("an SQLite query: each order with its customer's name", "sqlite"),
    "sql-group": ("an SQLite query: employees per department, largest first", "sqlite"),
    "csv-cities": ("a CSV table of five cities with country and population", "csv"),
    "csv-books": ("a CSV table of three books with title, author and year", "csv"),
    "json-tasks": ("a JSON list of three tasks, each with a title and whether it is done", "json"),
    "json-menu": ("a JSON menu of a cafe, with items and prices", "json"),
    # the third set
    "arith-speed": ("an arithmetic expression: 120 km in 1.5 hours, in km per hour", "arithmetic"),
    "py-squares": (
        "a Python expression: a dict of the numbers 1 to 5 and their squares",
        "python_expr",
    ),
    "sql-recent": ("an SQLite query: the five most recent orders over 100", "sqlite"),
    "csv-scores": ("a CSV table of four students with name and score", "csv"),
    "json-profile": ("a JSON profile of a user with name, age and hobbies", "json"),
    "sql-count": ("an SQLite query: how many products each supplier has", "sqlite"),
}
# A fourth set, written and run once on 2026-11-29 before any change it could show: the grammars
# of the third repair corpus (benchmarks/corpora/unseen), which nobody here tuned on; every other
# task is held (`UNSEEN_HELD`).
UNSEEN_TASKS: dict[str, tuple[str, str]] = {
    "css-button": ("a CSS rule for a blue button with white text and rounded corners", "css"),
    "css-card": ("CSS for a card: a white box with a shadow, padding and a bold title", "css"),
    "dot-pipeline": ("a Graphviz DOT digraph of a pipeline: checkout, build, test, deploy", "dot"),
    "dot-family": ("a Graphviz DOT graph of a family: two parents and two children", "dot"),
    "ini-app": ("an INI file for a web app with a [server] and a [database] section", "ini"),
    "ini-tox": ("a tox.ini that runs pytest on Python 3.11 and 3.12", "ini"),
    "proto-user": ("a proto3 file with a User message: id, name and email", "protobuf"),
    "proto-order": ("a proto3 file for an order: its items, their quantities, a total", "protobuf"),
    "sexp-shopping": ("an S-expression of a shopping list with quantities", "sexp"),
    "sexp-point": ("an S-expression describing a point with x and y and a colour", "sexp"),
    "md-tips": ("a markdown list of five tips for learning Python", "mdlist"),
    "chess-italian": ("the first six moves of the Italian Game, one move pair a line", "chess"),
}
UNSEEN_HELD = list(UNSEEN_TASKS)[1::2]
FIRST_SET = [*list(SCHEMA_TASKS)[:15], *list(GRAMMAR_TASKS)[:5]]
SECOND_SET = [task for task in [*SCHEMA_TASKS, *GRAMMAR_TASKS] if task not in FIRST_SET]
HELD = SECOND_SET[1::2]
"""Reported as they come out, never looked into to change the code: every other task of the
second set (the first set, and the other half of the second, are the ones looked at)."""
THIRD_SET = [*list(SCHEMA_TASKS)[-12:], *list(GRAMMAR_TASKS)[-6:]]
SECOND_SET = [task for task in SECOND_SET if task not in THIRD_SET]
HELD = SECOND_SET[1::2]
THIRD_HELD = THIRD_SET[1::2]
"""The same for the third set."""


@dataclass
class Row:
    task: str
    valid: bool
    calls: int
    kept: float
    local_tokens: int
    seconds: float
    draft_seconds: float  # the draft rounds': the server writing, the run reading as it streams
    keys_as_values: int
    peer_valid: bool | None
    text: str


def _keys_as_values(text: str, schema: dict[str, Any]) -> int:
    try:
        value = json.loads(text)
    except ValueError:
        return 0
    keys = set(schema["properties"])
    values = value.values() if isinstance(value, dict) else []
    return sum(1 for v in values if isinstance(v, str) and v in keys)


def _peer(client: OpenAI, prompt: str, schema: dict[str, Any]) -> bool:
    """llama.cpp's own constrained decoding of `schema`: does its reply parse under it?"""
    from grammars import Grammar

    reply = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": prompt}],
        temperature=0,
        max_tokens=256,
        response_format={"type": "json_object", "schema": schema},  # type: ignore[typeddict-unknown-key]
    )
    return Grammar.from_json_schema(schema).matches(reply.choices[0].message.content or "")


def run(url: str, tasks: list[str], temperature: float = 0, seed: int | None = None) -> list[Row]:
    from backtrack import guide
    from local_target import LocalTarget
    from providers import OpenAIChatDrafter

    client = OpenAI(base_url=url, api_key="none", max_retries=0)
    target = LocalTarget.default(device="cpu")
    rows = []
    for task in tasks:
        schema: dict[str, Any] | None = None
        if task in SCHEMA_TASKS:
            what, schema = SCHEMA_TASKS[task]
            grammar: Any = schema
            keys = ", ".join(schema["properties"])
            prompt = f"Give a JSON object describing {what}, with the keys {keys}."
        elif task in UNSEEN_TASKS:
            prompt, name = UNSEEN_TASKS[task]
            grammar, prompt = load_unseen_grammar(name), f"Write {prompt}."
        else:
            prompt, grammar = GRAMMAR_TASKS[task]
            prompt = f"Write {prompt}."
        sampled = {} if seed is None else {"seed": seed}
        drafter = OpenAIChatDrafter(client, "smollm2", temperature=temperature, **sampled)
        start = time.perf_counter()
        result = guide(drafter, grammar, prompt=prompt, target=target, max_draft_tokens=256)
        seconds = time.perf_counter() - start
        rows.append(
            Row(
                task=task,
                valid=result.valid,
                calls=result.api_calls,
                kept=result.kept,
                local_tokens=result.local_tokens,
                seconds=seconds,
                draft_seconds=sum(r.seconds for r in result.trace.rounds if r.kind == "draft"),
                keys_as_values=_keys_as_values(result.text, schema) if schema else 0,
                peer_valid=_peer(client, prompt, schema) if schema else None,
                text=result.text,
            )
        )
    return rows


def report(rows: list[Row]) -> str:
    lines = [
        "| task | valid | API calls | kept | local tokens | wall s | drafts s | keys as values "
        "| llama.cpp constrained |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        peer = "" if r.peer_valid is None else ("valid" if r.peer_valid else "invalid")
        lines.append(
            f"| {r.task} | {'V' if r.valid else 'x'} | {r.calls} | {r.kept:.2f} | "
            f"{r.local_tokens} | {r.seconds:.1f} | {r.draft_seconds:.1f} | {r.keys_as_values} "
            f"| {peer} |"
        )
    schema_rows = [r for r in rows if r.peer_valid is not None]
    lines += [
        "",
        f"- valid {sum(r.valid for r in rows)}/{len(rows)}; mean API calls "
        f"{statistics.mean(r.calls for r in rows):.2f}; mean kept "
        f"{statistics.mean(r.kept for r in rows):.2f}; kept under 0.9: "
        f"{sum(r.kept < 0.9 for r in rows)}; mean local tokens "
        f"{statistics.mean(r.local_tokens for r in rows):.1f}",
        f"- wall s: {_spread([r.seconds for r in rows])}; without the draft rounds (the server "
        f"writing on this machine's CPU): {_spread([r.seconds - r.draft_seconds for r in rows])}",
        f"- schemas: {sum(r.keys_as_values > 0 for r in schema_rows)}/{len(schema_rows)} outputs "
        "with a key name as a value; llama.cpp's own constrained decoding valid "
        f"{sum(bool(r.peer_valid) for r in schema_rows)}/{len(schema_rows)}",
    ]
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    ranked = sorted(values)
    p95 = ranked[min(len(ranked) - 1, int(0.95 * len(ranked)))]
    return f"median {statistics.median(ranked):.1f}, p95 {p95:.1f}, max {ranked[-1]:.1f}"


def _tasks(name: str) -> list[str]:
    if name == "first":
        return FIRST_SET
    if name.startswith("unseen"):
        return [task for task in UNSEEN_TASKS if (task in UNSEEN_HELD) == (name == "unseen-held")]
    if name.startswith("third"):
        return [task for task in THIRD_SET if (task in THIRD_HELD) == (name == "third-held")]
    return [task for task in SECOND_SET if (task in HELD) == (name == "held")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="*", help="these tasks only")
    parser.add_argument(
        "--set",
        choices=["first", "look", "held", "third-look", "third-held", "unseen-look", "unseen-held"],
        default="first",
        help="first: the tasks the work of 2026-11-27 looked at; look: the second set's look "
        "half; held: its held half, reported as it comes out; third-look, third-held: the same "
        "halves of the third set; unseen-look, unseen-held: of the fourth, in the third repair "
        "corpus's grammars",
    )
    parser.add_argument("--texts", action="store_true", help="print each output too")
    parser.add_argument(
        "--sets", nargs="*", default=[], help="these sets' tasks, one after the other (not --set)"
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=0,
        help="the drafts' temperature: above 0 (with --seed), other drafts for the same tasks",
    )
    parser.add_argument("--seed", type=int, help="the server's sampling seed")
    args = parser.parse_args()
    python = llama_python()
    if python is None:
        raise SystemExit("no llama.cpp server: see tests/support/llama_server.py to install one")
    with running_llama(python) as url:
        tasks = args.tasks or [t for name in args.sets or [args.set] for t in _tasks(name)]
        rows = run(url, tasks, args.temperature, args.seed)
    print(report(rows))
    if args.texts:
        for r in rows:
            print(f"\n## {r.task}\n{r.text}")


if __name__ == "__main__":
    main()
