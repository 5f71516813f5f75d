"""Instructions per engine operation, counted by Valgrind (docs/performance.md, "Counting
instructions").

    python -m bench.instructions [--scenarios put,put-unit,get-unit,session-put] [--calls 100,600] [--json]

Timings on a shared machine move with its load and with the speed it happens to run at
(on this one the same loop can take 210 or 355 µs from one process to the next); counted
instructions do not. Each scenario runs twice in a fresh interpreter under ``valgrind
--tool=cachegrind --cache-sim=no`` on a copy of one prepared SQLite database, once with
the smaller number of calls and once with the larger, and the difference divided by the
difference in calls is what one call costs, start-up and warm-up cancelled out. The
counted interpreters hash strings with one fixed seed: with a random one, the same run's
count moves by up to 1.5 million instructions from one process to the next (set and dict
orders at start-up), more than three puts cost; with the seed fixed, by under a thousand.
What the kernel does for a call (writing the WAL, a durable commit's sync) is not counted:
this compares the engine's own work between two versions of the code, as ``bench.writes``
compares what they write. In this process, through the services, no web server:

* ``put``: a put of one 1 KiB persistent message under an open unit of work
  (``message_put``), as each stage of a chained pipeline puts;
* ``put-unit``: begin, put of one message, commit (durable);
* ``get-unit``: begin, get of one committed message, commit (durable);
* ``session-put``: the put as a session's thread applies it: the request's text decoded,
  checked and validated, the operation performed for a superuser, its reply encoded;
* ``put-100-unit``, ``get-100-unit``: the same with 100 messages a put or get;
* ``session-put-100-unit``, ``session-get-100-unit``: begin, put (or get) of 100 messages,
  commit, each request as a session's thread applies it (as ``session-put``): what the
  goal of 20 µs per message per operation in calls of 100 counts, less the event loop.

Needs Valgrind (Debian's ``valgrind``). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SCENARIOS = (
    "put",
    "put-unit",
    "get-unit",
    "session-put",
    "put-100-unit",
    "get-100-unit",
    "session-put-100-unit",
    "session-get-100-unit",
)
#: Committed messages the prepared database holds for the get scenario (at least the
#: larger number of calls).
_STOCK = 3000
_BODY = b"x" * 1024
_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


class InstructionsError(RuntimeError):
    """Valgrind is missing, or a counted run failed."""


# --- in the counted interpreter (Django) ---------------------------------------------------


def _django(directory: str) -> None:
    os.environ.update(
        DATABASE_URL=f"sqlite:///{directory}/baton.sqlite3",
        BATON_VAR_DIR=directory,
        DJANGO_SETTINGS_MODULE="config.settings",
        BATON_DEBUG="0",
        BATON_LOG_LEVEL="WARNING",
    )
    import django

    django.setup()


def _prepare(directory: str) -> None:
    _django(directory)
    from django.core.management import call_command

    from brokers.services.access import api_token_issue
    from brokers.services.brokers import broker_define
    from brokers.services.message_input import MessageInput
    from brokers.services.messages.put import message_put
    from brokers.services.queues import queue_define

    call_command("migrate", verbosity=0)
    api_token_issue(username="bench", create_user=True, superuser=True)
    broker_define(name="B")
    for name in ("P", "G"):
        queue_define(broker="B", name=name, max_depth=10**9, default_persistence="persistent")
    for _ in range(_STOCK // 100):
        message_put(broker="B", queue="G", messages=[MessageInput(body=_BODY) for _ in range(100)])


def _run(directory: str, scenario: str, calls: int) -> None:
    _django(directory)
    from django.contrib.auth import get_user_model

    from brokers.api.operations import SESSION_OPERATIONS
    from brokers.api.parsers import json_request_loads, json_storable
    from brokers.api.session import reply_text
    from brokers.services.message_input import MessageInput
    from brokers.services.messages.get import message_get
    from brokers.services.messages.put import message_put
    from transactions.manager import transaction_begin, transaction_commit

    user = get_user_model().objects.get(username="bench")
    open_unit = transaction_begin(broker="B", timeout_ms=3_600_000, user_id=user.pk).id
    put = SESSION_OPERATIONS["put"]
    request = json.dumps(
        {"id": 1, "op": "put", "broker": "B", "queue": "P", "transaction": open_unit, "body": "x" * 1024}
        | {"persistence": "persistent", "bodies": "none"}
    )
    # the batch scenarios' requests, made once: the unit of work's id is put in by replace
    unit_mark = "U" * len(open_unit)
    batch_texts = {
        "begin": json.dumps({"id": 1, "op": "begin", "broker": "B"}),
        "put": json.dumps(
            {"id": 2, "op": "put", "broker": "B", "queue": "P", "transaction": unit_mark, "bodies": "none"}
            | {"messages": [{"body": "x" * 1024, "persistence": "persistent"}] * 100}
        ),
        "get": json.dumps({"id": 2, "op": "get", "broker": "B", "queue": "G", "transaction": unit_mark, "batch": 100}),
        "commit": json.dumps({"id": 3, "op": "commit", "transaction": unit_mark}),
    }

    def applied(text: str) -> dict:
        """A request as the session's thread applies it: decoded, checked, validated,
        performed, its reply encoded; the reply's body."""
        fields, storable = json_request_loads(text)
        re_id = fields.pop("id")
        operation = SESSION_OPERATIONS[fields.pop("op")]
        if not storable:
            json_storable(fields)
        operation.permitted_first(user, fields)
        status, body = operation.perform(user, operation.parse(fields))
        reply_text({"re": re_id, "status": status, **operation.checked(status, body)})
        return body

    def one() -> None:
        if scenario == "put":
            message_put(broker="B", queue="P", transaction_id=open_unit, messages=[MessageInput(body=_BODY)])
        elif scenario in ("put-unit", "put-100-unit"):
            unit = transaction_begin(broker="B", timeout_ms=600_000).id
            count = 100 if scenario == "put-100-unit" else 1
            message_put(broker="B", queue="P", transaction_id=unit, messages=[MessageInput(body=_BODY)] * count)
            transaction_commit(transaction_id=unit)
        elif scenario in ("get-unit", "get-100-unit"):
            unit = transaction_begin(broker="B", timeout_ms=600_000).id
            count = 100 if scenario == "get-100-unit" else 1
            if len(message_get(broker="B", queue="G", transaction_id=unit, batch=count).messages) != count:
                raise InstructionsError("the get found too few messages")
            transaction_commit(transaction_id=unit)
        elif scenario in ("session-put-100-unit", "session-get-100-unit"):
            unit = applied(batch_texts["begin"])["id"]
            taken = applied(batch_texts[scenario.split("-")[1]].replace(unit_mark, unit))
            if scenario == "session-get-100-unit" and len(taken["messages"]) != 100:
                raise InstructionsError("the get found too few messages")
            if applied(batch_texts["commit"].replace(unit_mark, unit))["state"] != "committed":
                raise InstructionsError("the unit of work did not commit")
        else:  # session-put: as brokers/api/session.py's thread reads, performs and replies
            fields, _ = json_request_loads(request)
            re_id = fields.pop("id")
            fields.pop("op")
            put.permitted_first(user, fields)
            status, body = put.perform(user, put.parse(fields))
            reply_text({"re": re_id, "status": status, **put.checked(status, body)})

    for _ in range(calls):
        one()


# --- the command ----------------------------------------------------------------------------


def _counted(template: Path, scenario: str, calls: int, scratch: Path) -> int:
    """Instructions of a fresh interpreter making ``calls`` calls on a copy of ``template``."""
    copy = scratch / f"{scenario}-{calls}"
    shutil.copytree(template, copy)
    try:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                "--cachegrind-out-file=/dev/null",
                sys.executable,
                "-m",
                "bench.instructions",
                "--child",
                "run",
                str(copy),
                scenario,
                str(calls),
            ],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            env=os.environ | {"PYTHONHASHSEED": "0"},
        )
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    found = _I_REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise InstructionsError(f"{scenario} with {calls} calls failed:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def run(*, scenarios: list[str], calls: tuple[int, int]) -> list[dict]:
    """Instructions per call of each scenario (``calls``: the smaller and larger runs)."""
    if shutil.which("valgrind") is None:
        raise InstructionsError("Valgrind is not installed (Debian: apt-get install valgrind).")
    low, high = calls
    results = []
    with tempfile.TemporaryDirectory(prefix="baton-instructions-") as scratch:
        scratch_dir = Path(scratch)
        template = scratch_dir / "template"
        template.mkdir()
        subprocess.run(
            [sys.executable, "-m", "bench.instructions", "--child", "prepare", str(template)],
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        for scenario in scenarios:
            fewer = _counted(template, scenario, low, scratch_dir)
            more = _counted(template, scenario, high, scratch_dir)
            results.append(
                {
                    "scenario": scenario,
                    "calls": [low, high],
                    "instructions": [fewer, more],
                    "per_call": round((more - fewer) / (high - low)),
                }
            )
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        if argv[1] == "prepare":
            _prepare(argv[2])
        else:
            _run(argv[2], argv[3], int(argv[4]))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenarios", default="put,put-unit,get-unit,session-put", help=f"comma-separated, of {', '.join(SCENARIOS)}"
    )
    parser.add_argument("--calls", default="100,600", help="the two runs' numbers of calls (default 100,600)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenarios {', '.join(unknown)}; the scenarios are {', '.join(SCENARIOS)}")
    try:
        low, high = (int(n) for n in args.calls.split(","))
    except ValueError:
        parser.error("--calls takes two numbers, the smaller first: 100,600")
    # each scenario runs on its own copy of the prepared database
    batched = any(s in scenarios for s in ("get-100-unit", "session-get-100-unit"))
    taken = high * (100 if batched else 1 if "get-unit" in scenarios else 0)
    if not 0 < low < high or taken > _STOCK:
        parser.error(f"--calls: 0 < smaller < larger, the gets taking at most {_STOCK} messages")
    try:
        results = run(scenarios=scenarios, calls=(low, high))
    except InstructionsError as exc:
        print(f"bench.instructions: {exc}", file=sys.stderr)
        return 2
    for result in results:
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{result['scenario']:<22} {result['per_call']:>12,} instructions per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
