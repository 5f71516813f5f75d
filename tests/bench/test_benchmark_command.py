"""`python manage.py benchmark` runs end to end on its own scratch database and prints its
table. Only the shape of the output is checked: never a timing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import Result, json_rows, ratio_parse, ratios, scenario_messages, table, table_parse

# the benchmark makes its own databases, whatever the suite's: once, in the SQLite pass
pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parent.parent.parent
#: What every --json result line has.
RESULT_KEYS = {"kind", "scenario", "path", "operation", "clients", "batch", "messages", "seconds", "msgs_per_s"}
IN_PROCESS = [
    ("in-process put+commit", 1, 1, 20),
    ("in-process get+commit", 1, 1, 20),
    ("in-process begin+put+commit", 1, 1, 20),
    ("in-process begin+get+commit", 1, 1, 20),
    ("in-process put+commit", 1, 100, 200),
    ("in-process get+commit", 1, 100, 200),
    ("in-process begin+put+commit", 1, 100, 200),
    ("in-process begin+get+commit", 1, 100, 200),
]


def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "benchmark", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def json_lines(out: str) -> list[dict]:
    """Every stdout line is one JSON object."""
    return [json.loads(line) for line in out.splitlines()]


def pg_installed() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def test_scenario_messages_gives_every_client_whole_units_of_work():
    assert scenario_messages(20, batch=1) == 20
    assert scenario_messages(20, batch=100) == 200
    assert scenario_messages(101, batch=1, clients=8) == 104
    assert scenario_messages(20, batch=100, clients=8) == 800
    assert scenario_messages(1, batch=100, clients=8) == 800


def test_table_round_trips():
    results = [Result("in-process", "put+commit", 1, 1, 20, 0.5), Result("REST", "get+commit", 8, 100, 800, 2.0)]
    text = table(results)
    rows = table_parse(text)
    assert [(r["scenario"], r["clients"], r["batch"], r["messages"], r["rate"]) for r in rows] == [
        ("in-process put+commit", 1, 1, 20, 40.0),
        ("REST get+commit", 8, 100, 800, 400.0),
    ]
    # no plain baseline: no ratio table
    assert "Baton / plain" not in text and ratio_parse(text) == []


def test_ratios_divide_in_process_rates_by_the_plain_rate_at_the_same_batch():
    results = [
        Result("plain SQLite", "insert+commit", 1, 1, 20, 0.01),
        Result("plain SQLite", "insert+commit", 1, 100, 200, 0.01),
        Result("in-process", "put+commit", 1, 1, 20, 0.1),
        Result("in-process", "get+commit", 1, 100, 200, 0.04),
        Result("REST", "put+commit", 1, 1, 20, 1.0),
    ]
    assert [(r.scenario, r.batch, p.scenario, round(x, 6)) for r, p, x in ratios(results)] == [
        ("in-process put+commit", 1, "plain SQLite insert+commit", 0.1),
        ("in-process get+commit", 100, "plain SQLite insert+commit", 0.25),
    ]
    text = table(results)
    assert [(r["scenario"], r["batch"]) for r in table_parse(text)] == [
        ("plain SQLite insert+commit", 1),
        ("plain SQLite insert+commit", 100),
        ("in-process put+commit", 1),
        ("in-process get+commit", 100),
        ("REST put+commit", 1),
    ]
    assert re.search(r"^Baton / plain: ", text, re.M)
    assert re.search(r"^scenario\s+batch\s+msgs/s\s+plain msgs/s\s+Baton/plain$", text, re.M)
    assert ratio_parse(text) == [
        {"scenario": "in-process put+commit", "batch": 1, "rate": 200.0, "plain": 2000.0, "ratio": 0.1},
        {"scenario": "in-process get+commit", "batch": 100, "rate": 5000.0, "plain": 20000.0, "ratio": 0.25},
    ]
    rows = json_rows(results)
    assert all(RESULT_KEYS <= set(r) and r["kind"] == "result" for r in rows)
    assert [r.get("ratio_to_plain") for r in rows] == [None, None, 0.1, 0.25, None]
    assert rows[2]["plain_scenario"] == "plain SQLite insert+commit"
    assert rows[0]["msgs_per_s"] == 2000.0 and rows[0]["path"] == "plain SQLite"


def test_benchmark_command_in_process_prints_positive_rates_beside_the_plain_baseline():
    proc = run("--messages", "20", "--only", "inprocess")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "manage.py benchmark --messages 20 --only inprocess" in out
    assert re.search(r"^scenario\s+clients\s+batch\s+messages\s+seconds\s+msgs/s$", out, re.M)
    # what syncs each side's commits is said
    assert re.search(r"^  Baton:\s+journal_mode=WAL, synchronous=\w+", out, re.M)
    assert re.search(r"^  plain:\s+journal_mode=WAL, synchronous=FULL", out, re.M)

    rows = table_parse(out)
    assert [(r["scenario"], r["clients"], r["batch"], r["messages"]) for r in rows] == [
        ("plain SQLite insert+commit", 1, 1, 20),
        ("plain SQLite insert+commit", 1, 100, 200),
    ] + IN_PROCESS
    assert all(r["rate"] > 0 and r["seconds"] >= 0 for r in rows)  # (a fast baseline can print 0.000 s)
    assert "REST" not in "".join(line for line in out.splitlines() if table_parse(line))
    ratio_rows = ratio_parse(out)
    assert [(r["scenario"], r["batch"]) for r in ratio_rows] == [(s, b) for s, _, b, _ in IN_PROCESS]
    assert all(r["ratio"] > 0 and r["plain"] > 0 for r in ratio_rows)

    # It worked in a scratch directory of its own, and removed it.
    scratch = re.search(r"scratch directory (\S+)", proc.stderr)
    assert scratch, proc.stderr
    assert not Path(scratch.group(1)).exists()


def test_benchmark_phases_refuse_to_run_outside_a_scratch_environment():
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "benchmark",
            "--phase",
            "setup",
            "--result-file",
            "/dev/null",
            "--broker",
            "X",
            "--username",
            "x",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "BATON_BENCHMARK_SCRATCH"},
    )
    assert proc.returncode != 0
    assert "internal" in proc.stderr


def test_benchmark_json_prints_facts_then_one_object_per_result():
    proc = run("--messages", "20", "--only", "inprocess", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = json_lines(proc.stdout)
    facts, results = lines[0], lines[1:]
    assert facts["kind"] == "facts"
    assert "manage.py benchmark --messages 20 --only inprocess --json" in facts["command"]
    assert {"database", "machine", "load_start", "load_end", "elapsed_s", "warnings"} <= set(facts)
    assert facts["error"] is None
    assert facts["plain_durability"]["synchronous"] == "FULL"
    assert facts["plain_durability"]["wal_warmup_units"] == 1200  # measured on a WAL at its working size
    assert facts["baton_durability"]["vendor"] == "sqlite"

    assert all(r["kind"] == "result" and RESULT_KEYS <= set(r) for r in results)
    assert [(r["scenario"], r["clients"], r["batch"], r["messages"]) for r in results] == [
        ("plain SQLite insert+commit", 1, 1, 20),
        ("plain SQLite insert+commit", 1, 100, 200),
    ] + IN_PROCESS
    assert all(r["seconds"] > 0 and r["msgs_per_s"] > 0 for r in results)
    assert [r["path"] for r in results] == ["plain SQLite"] * 2 + ["in-process"] * len(IN_PROCESS)
    for r in results[2:]:
        assert r["plain_scenario"] == "plain SQLite insert+commit"
        assert r["ratio_to_plain"] > 0
    assert all("ratio_to_plain" not in r for r in results[:2])


def test_only_plain_measures_the_baseline_alone():
    proc = run("--messages", "20", "--only", "plain", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json_lines(proc.stdout)[1:]
    assert [(r["scenario"], r["batch"], r["messages"]) for r in results] == [
        ("plain SQLite insert+commit", 1, 20),
        ("plain SQLite insert+commit", 100, 200),
    ]
    assert "migrating" not in proc.stderr  # no Baton scenario: nothing to set up


def test_database_url_and_postgres_exclude_each_other():
    proc = run("--postgres", "--database-url", "sqlite:////tmp/x.sqlite3", timeout=120)
    assert proc.returncode != 0
    assert "not allowed with" in proc.stderr
    assert "scratch directory" not in proc.stderr


@pytest.mark.skipif(not pg_installed(), reason="no PostgreSQL server binaries under /usr/lib/postgresql")
def test_postgres_starts_a_durable_throwaway_server_and_compares_with_plain_postgresql():
    proc = run("--messages", "20", "--only", "inprocess", "--postgres", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = json_lines(proc.stdout)
    facts, results = lines[0], lines[1:]
    assert facts["database_kind"] == "postgres"
    assert facts["postgres"]["fsync"] == "on" and facts["postgres"]["synchronous_commit"] == "on"
    assert facts["plain_durability"]["session"]["synchronous_commit"] == "on"
    assert [(r["scenario"], r["batch"], r["messages"]) for r in results] == [
        ("plain PostgreSQL insert+commit", 1, 20),
        ("plain PostgreSQL insert+commit", 100, 200),
    ] + [(s, b, m) for s, _, b, m in IN_PROCESS]
    assert all(r["ratio_to_plain"] > 0 for r in results[2:])
    # the server is stopped and its directory removed
    started = re.search(r"PostgreSQL at \S+ \((\S+)\)", proc.stderr)
    assert started, proc.stderr
    assert not Path(started.group(1)).exists()


def test_session_scenarios_run_in_process_over_rest_and_over_sessions_side_by_side():
    proc = run("--messages", "4", "--only", "session", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = json_lines(proc.stdout)
    results = lines[1:]
    assert all(set(r) >= RESULT_KEYS and r["msgs_per_s"] > 0 for r in results)
    units = [(r["path"], r["operation"], r["clients"], r["batch"]) for r in results if r["operation"] != "put+get"]
    assert units == [
        (path, op, c, b)
        for path in ("REST", "session")
        for c in (1, 8)
        for b in (1, 100)
        for op in ("put+commit", "get+commit")
    ]
    flows = [(r["path"], r["clients"], r["batch"], r["messages"]) for r in results if r["operation"] == "put+get"]
    assert flows == [
        (path, c, b, m)
        for path in ("in-process", "REST", "session")
        for c, b, m in ((2, 1, 4), (2, 100, 100), (8, 1, 4), (8, 100, 400))
    ]


@pytest.mark.skipif(not pg_installed(), reason="no PostgreSQL server binaries under /usr/lib/postgresql")
def test_peers_are_a_plain_postgresql_queue_and_rabbitmq_when_installed():
    from bench.rabbitmq import rabbitmq_available

    proc = run("--messages", "4", "--only", "peers", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = json_lines(proc.stdout)
    facts, results = lines[0], lines[1:]
    assert facts["peer_postgres_settings"]["fsync"] == "on"
    assert "bench/flow_floor.py" in facts["flow_floor"]  # on SQLite, the flows' floor goes first
    expected = [
        (path, c, b, m)
        for path in ("session floor (bare Uvicorn + SQLite) put+get", "plain PostgreSQL queue insert+delete")
        for c, b, m in ((2, 1, 4), (2, 100, 100), (8, 1, 4), (8, 100, 400))
    ]
    if rabbitmq_available() is None:
        expected += [("RabbitMQ publish+ack", 2, 1, 4), ("RabbitMQ publish+ack", 8, 1, 4)]
        assert "publisher confirms" in facts["rabbitmq"]
    else:
        assert facts["rabbitmq"].startswith("not measured")
    assert [(r["scenario"], r["clients"], r["batch"], r["messages"]) for r in results] == expected
    assert all(r["msgs_per_s"] > 0 for r in results)
