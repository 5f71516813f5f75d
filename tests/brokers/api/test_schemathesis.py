"""Schemathesis over every operation of the OpenAPI schema, against a live Uvicorn serving
the platform (a fresh temporary var directory and SQLite database), as a superuser.

Checks: no 5xx (``not_a_server_error``) and every response conforms to the schema
(``response_schema_conformance``). Data the schema forbids (schemathesis' negative mode:
wrong types, out-of-range numbers, unknown fields, missing required ones) must be refused
with a 4xx (``negative_data_rejection``) and must change nothing: the live database's
tables are read before and after each such request and compared. Bounded: a few examples
per operation, no shrinking, waits capped at 1 s on the server (BATON_MAX_WAIT_S), so the
run stays well under three minutes.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess

import httpx
import pytest
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402  (after importorskip)
from schemathesis.specs.openapi.checks import negative_data_rejection, response_schema_conformance  # noqa: E402

from tests.support.scratch import WS_PROTOCOL  # noqa: E402
from tests.integration.servers import PYTHON, ROOT, Server, base_env, free_port, manage, poll_until  # noqa: E402

# once: its Uvicorn runs on a SQLite database of its own whatever the pass (base_env), so the
# PostgreSQL pass would repeat the SQLite pass's run exactly (BATON_FUZZ_DATABASE_URL fuzzes
# against PostgreSQL on purpose)
pytestmark = [pytest.mark.integration, pytest.mark.once]

#: More examples or another seed for a longer hunt: BATON_FUZZ_EXAMPLES=200 BATON_FUZZ_SEED=7; and
#: BATON_FUZZ_DATABASE_URL=postgres://... to fuzz against PostgreSQL instead of SQLite.
MAX_EXAMPLES = int(os.environ.get("BATON_FUZZ_EXAMPLES", "12"))
CONFIG = {
    "seed": int(os.environ.get("BATON_FUZZ_SEED", "20251123")),
    "generation": {"max-examples": MAX_EXAMPLES, "no-shrink": True, "database": "none", "mode": "all"},
    "phases": {
        "examples": {"enabled": True},
        "fuzzing": {"enabled": True},
        "coverage": {"enabled": True},
        "stateful": {"enabled": False},
    },
    "checks": {"negative_data_rejection": {"expected-statuses": ["4XX"]}},
}

#: The tables whose rows a refused request must leave as they were (everything the API can
#: change; not sessions or tokens, which it never writes on a refusal either, but which are
#: none of its state).
STATE_TABLES = (
    "brokers_broker",
    "brokers_queue",
    "brokers_message",
    "brokers_connection",
    "brokers_clientsession",
    "brokers_grant",
    "brokers_channel",
    "transactions_transaction",
    "transactions_link",
    "transactions_journalevent",
    "workflows_workflow",
    "workflows_workflowversion",
    "workflows_instance",
    "workflows_instancestep",
    "workflows_instancehistory",
    "workflows_steprequest",
)


#: What a fuzzed PATCH may have changed on QM1 and Q1, set back before each operation.
BROKER_DEFAULTS = {"transaction_timeout_ms": 60_000, "max_message_length": 4 * 1024 * 1024}
QUEUE_DEFAULTS = {
    "kind": "local",
    "usage": "normal",
    "max_depth": 5000,
    "max_message_length": 4 * 1024 * 1024,
    "put_enabled": True,
    "get_enabled": True,
    "delivery_sequence": "priority",
    "read_order": "put",
    "enforce_order": "no",
    "backout_threshold": 0,
    "default_access": "shared",
    "lock_duration_ms": 30_000,
}


class LiveServer:
    """Uvicorn alone (no Celery: nothing here needs it), after migrate and api_token, the
    way tests/integration/servers.py starts the platform."""

    def __init__(self, var_dir) -> None:
        self.var_dir = var_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**base_env(var_dir), "BATON_MAX_WAIT_S": "1"}
        if os.environ.get("BATON_FUZZ_DATABASE_URL"):  # e.g. an empty PostgreSQL database
            self.env["DATABASE_URL"] = os.environ["BATON_FUZZ_DATABASE_URL"]
        self.server: Server | None = None
        self.token = ""

    def start(self) -> LiveServer:
        manage(self.env, "migrate", "--noinput", "-v0")
        self.token = manage(self.env, "api_token", "fuzzer", "--create-user", "--superuser").strip()
        out, err = self.var_dir / "uvicorn.out", self.var_dir / "uvicorn.err"
        proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--ws",
                WS_PROTOCOL,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--lifespan",
                "off",
                "--log-level",
                "warning",
                "--no-access-log",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=out.open("wb"),
            stderr=err.open("wb"),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.server = Server("uvicorn", proc, out, err)

        def ready() -> bool:
            if not self.server.alive():
                raise AssertionError(self.server.logs())
            return httpx.get(f"{self.url}/api/brokers/", headers=self.headers, timeout=2).status_code == 200

        poll_until(ready, timeout=60, what=f"Uvicorn to answer at {self.url}", diagnostics=self.server.logs)
        return self

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}"}

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("baton-schemathesis")).start()
    try:
        yield server
    finally:
        server.stop()


def _ok(response: httpx.Response, *statuses: int) -> httpx.Response:
    assert response.status_code in statuses, (response.request.method, response.request.url, response.text)
    return response


@pytest.fixture
def live_ids(live) -> dict[str, str]:
    """Objects the schema's examples name (broker QM1, queue Q1 with messages), made again
    for each operation since a fuzzed DELETE may remove them; and a live transaction,
    connection and peek-lock, whose ids replace the generated ones in every other case."""
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=30) as http:
        _ok(http.post("/api/brokers/", json={"name": "QM1"}), 201, 409)
        _ok(http.post("/api/brokers/QM1/queues/", json={"name": "Q1"}), 201, 409)
        _ok(http.patch("/api/brokers/QM1/", json=BROKER_DEFAULTS), 200)
        _ok(http.patch("/api/brokers/QM1/queues/Q1/", json=QUEUE_DEFAULTS), 200)
        messages = "/api/brokers/QM1/queues/Q1/messages/"
        _ok(http.post(messages, json={"messages": [{"body": f"m{i}"} for i in range(4)]}), 201)
        txn = _ok(http.post("/api/brokers/QM1/transactions/", json={}), 201).json()["id"]
        _ok(http.post(messages, json={"body": "in a unit of work", "transaction": txn}), 201)
        conn = _ok(http.post("/api/brokers/QM1/connections/", json={"client_name": "fuzz"}), 201).json()["conn_id"]
        locked = _ok(http.post("/api/brokers/QM1/queues/Q1/get/", json={"mode": "peek_lock"}), 200).json()["messages"]
        _ok(
            http.post(
                "/api/brokers/QM1/workflows/",
                json={"name": "EXPENSES", "steps": [{"name": "approve", "queue": "Q1", "compensation_queue": "Q1"}]},
            ),
            201,
            409,
        )
        instance = _ok(http.post("/api/brokers/QM1/workflows/EXPENSES/instances/", json={"body": "claim"}), 201).json()[
            "id"
        ]
    ids = {"transaction_id": txn, "conn_id": conn, "instance": instance}
    if locked:
        ids["token"] = locked[0]["lock_token"]
    return ids


def _openapi() -> dict:
    """The schema /api/schema/ serves, generated in this process (the live server runs the
    same code). Loaded at collection, since schemathesis's lazy fixture loader does not
    work with pytest 9."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


schema = schemathesis.openapi.from_dict(_openapi(), config=schemathesis.Config.from_dict(CONFIG))


def test_live_schema_is_the_one_tested(live):
    assert httpx.get(f"{live.url}/api/schema/?format=json", timeout=30).json() == _openapi()


_cases = itertools.count()
LENIENT_FLAGS = {"commit_first", "preemptive", "ordered"}


def _state(live) -> dict[str, list[tuple]] | None:
    """Every row of the state tables of the live server's database (SQLite; None when the
    fuzz runs against PostgreSQL)."""
    if live.env["DATABASE_URL"] != f"sqlite:///{live.var_dir / 'baton.sqlite3'}":
        return None
    db = sqlite3.connect(f"file:{live.var_dir / 'baton.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in STATE_TABLES}
    finally:
        db.close()


def _changed(before: dict[str, list[tuple]], after: dict[str, list[tuple]]) -> dict[str, str]:
    return {
        table: f"{len(before[table])} rows -> {len(after[table])}"
        for table in STATE_TABLES
        if before[table] != after[table]
    }


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # live_ids: made once per operation
def test_api_conforms_to_its_schema(case, live, live_ids):
    if next(_cases) % 2:
        for name, value in live_ids.items():
            if name in (case.path_parameters or {}):
                case.path_parameters[name] = value
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    before = _state(live) if negative else None
    # a get's flags also take "true"/"false" and 1/0 as earlier clients sent them (Flag in
    # brokers/api/operations/messages.py): not a refusal the schema's boolean can promise
    lenient = isinstance(case.body, dict) and any(
        name in LENIENT_FLAGS and not isinstance(value, bool) for name, value in case.body.items()
    )
    response = case.call_and_validate(
        base_url=live.url,
        headers=live.headers,
        timeout=30,
        checks=[not_a_server_error, response_schema_conformance, *([] if lenient else [negative_data_rejection])],
    )
    if before is not None and response.status_code >= 400:
        changed = _changed(before, _state(live))
        assert not changed, (
            f"{case.method} {case.formatted_path} with data the schema forbids answered {response.status_code} "
            f"but changed {changed}",
            response.text[:300],
        )


# --- as a user with grants on one broker's queues: the indirect paths ----------------------
#
# The same fuzz over the queue and message operations, as a user holding put, get and browse
# on QM1/Q1 and admin too on QM1/MINE. Whatever it sends (aliases, remote queues, reports,
# re-kinding MINE), nothing it has no grant on may change: QM1/SECRET and broker QM2.

#: Kept short (CI's time): the writes only, generated and fuzzed, without the coverage phase.
USER_CONFIG = {
    **CONFIG,
    "generation": {**CONFIG["generation"], "max-examples": max(3, MAX_EXAMPLES // 2)},
    "phases": {**CONFIG["phases"], "coverage": {"enabled": False}},
}
user_schema = schemathesis.openapi.from_dict(_openapi(), config=schemathesis.Config.from_dict(USER_CONFIG)).include(
    path_regex=r"^/api/brokers/\{broker\}/queues/", method=["POST", "PATCH"]
)


@pytest.fixture(scope="module")
def live_user(live) -> dict[str, str]:
    with httpx.Client(base_url=live.url, headers=live.headers, timeout=30) as http:
        for broker in ("QM1", "QM2"):  # the fuzz above may have made them
            _ok(http.post("/api/brokers/", json={"name": broker}), 201, 409)
        _ok(http.post("/api/brokers/QM2/queues/", json={"name": "AUDIT", "max_depth": 2}), 201, 409)
        for queue in ("Q1", "SECRET", "MINE"):
            _ok(http.post("/api/brokers/QM1/queues/", json={"name": queue}), 201, 409)
    token = manage(live.env, "api_token", "fuzz-user", "--create-user").strip().splitlines()[-1]
    manage(live.env, "grant", "fuzz-user", "--broker", "QM1", "--queue", "Q1", "--actions", "put,get,browse")
    manage(live.env, "grant", "fuzz-user", "--broker", "QM1", "--queue", "MINE", "--actions", "put,get,browse,admin")
    return {"Authorization": f"Token {token}"}


def _untouchable(live) -> tuple | None:
    """The rows of what the fuzzing user holds no grant on (SQLite only)."""
    if live.env["DATABASE_URL"] != f"sqlite:///{live.var_dir / 'baton.sqlite3'}":
        return None
    db = sqlite3.connect(f"file:{live.var_dir / 'baton.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        where = "(b.name = 'QM2' OR (b.name = 'QM1' AND q.name = 'SECRET'))"
        queues = db.execute(
            f"SELECT q.* FROM brokers_queue q JOIN brokers_broker b ON b.id = q.broker_id WHERE {where} ORDER BY q.id"
        ).fetchall()
        messages = db.execute(
            f"SELECT m.id FROM brokers_message m JOIN brokers_queue q ON q.id = m.queue_id "
            f"JOIN brokers_broker b ON b.id = q.broker_id WHERE {where} ORDER BY m.id"
        ).fetchall()
        return queues, messages
    finally:
        db.close()


@user_schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_user_reaches_nothing_it_has_no_grant_on(case, live, live_user):
    params = case.path_parameters or {}
    if "broker" in params:
        params["broker"] = "QM1"
    if "queue" in params:
        params["queue"] = ("Q1", "MINE")[next(_cases) % 2]
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    lenient = isinstance(case.body, dict) and any(
        name in LENIENT_FLAGS and not isinstance(value, bool) for name, value in case.body.items()
    )
    before = _untouchable(live)
    case.call_and_validate(
        base_url=live.url,
        headers=live_user,
        timeout=30,
        checks=[not_a_server_error, *([negative_data_rejection] if negative and not lenient else [])],
    )
    if before is not None:
        assert _untouchable(live) == before, (
            f"{case.method} {case.formatted_path} changed what the user has no grant on"
        )
