"""Several processes of producers and consumers with pre-emptive gets, against the real
database (SQLite file, or PostgreSQL when DATABASE_URL says so)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brokers.services.messages import message_get
from tests.conftest import database_url
from transactions.manager import transactions_time_out
from transactions.models import Transaction

pytestmark = [pytest.mark.linked, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def test_producers_and_preemptive_consumers_in_separate_processes(queue, tmp_path):
    env = dict(os.environ, DATABASE_URL=database_url(), PYTHONPATH=str(ROOT))
    workers = []
    for seed, role in enumerate(["producer", "producer", "consumer", "consumer", "consumer"], start=1):
        out = tmp_path / f"{role}-{seed}.jsonl"
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.linked.pipeline_worker", role, str(seed), "25", str(out)],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        workers.append((proc, out))
    for proc, _ in workers:
        try:
            _, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("a worker process did not finish within 240 s")
        assert proc.returncode == 0, f"worker failed:\n{err}"

    records = [json.loads(line) for _, out in workers for line in out.read_text().splitlines()]
    # Whatever is still open (held consumers whose producer finished) resolves by timeout.
    Transaction.objects.filter(state__in=["active", "commit_held"]).update(deadline_at="2000-01-01T00:00:00Z")
    transactions_time_out()
    states = dict(Transaction.objects.values_list("id", "state"))
    assert not [t for t, s in states.items() if s in ("active", "commit_held")]

    produced = {b: r["txn"] for r in records if r["role"] == "producer" for b in r["bodies"]}
    committed_produced = {b for b, t in produced.items() if states[t] == "committed"}
    consumed_committed: list[str] = []
    for r in records:
        if r["role"] == "consumer" and states[r["txn"]] == "committed":
            consumed_committed.extend(r["bodies"])
    # no committed consumer holds a rolled-back message
    assert set(consumed_committed) <= committed_produced
    # every message of a committed producer is consumed at most once
    assert len(consumed_committed) == len(set(consumed_committed))
    # nothing lost: the rest is still on the queue
    left = []
    while batch := message_get(broker="QM1", queue="Q1", batch=100).messages:
        left.extend(bytes(m.body).decode() for m in batch)
    assert sorted(left + consumed_committed) == sorted(committed_produced)
    assert any(r["role"] == "consumer" and r["bodies"] for r in records), "no consumer got anything"
