"""How the transaction graph page copes with 2,000 live units of work (docs/dashboard.md
quotes the figures). Skipped unless BATON_GRAPH_MEASURE=1:

    BATON_GRAPH_MEASURE=1 .venv/bin/python -m pytest tests/dashboard/browser/test_graph_measure.py -s
"""

from __future__ import annotations

import os
import statistics
import time

import pytest
from playwright.sync_api import expect

from tests.integration.servers import manage

PAIRS = int(os.environ.get("BATON_GRAPH_MEASURE_PAIRS", "1000"))
pytestmark = pytest.mark.skipif(
    os.environ.get("BATON_GRAPH_MEASURE") != "1", reason="set BATON_GRAPH_MEASURE=1 to measure the graph page"
)

# Linked pairs made in-process with the public services: a producer's uncommitted put,
# taken pre-emptively by a consumer (each begins its own unit of work).
MAKE = """
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
ids = []
for i in range({pairs}):
    p = message_put(broker={broker!r}, queue="Q1", messages=[MessageInput(body=b"m")], syncpoint="yes")
    c = message_get(broker={broker!r}, queue="Q1", syncpoint="yes", preemptive=True)
    ids.append(p.transaction_id + " " + c.transaction_id)
print("\\n".join(ids))
"""

SNAPSHOT = """
import time
from dashboard.selectors import graph_snapshot
started = time.perf_counter()
graph_snapshot(broker={broker!r})
print(time.perf_counter() - started)
"""


def test_graph_with_2000_units_of_work(admin_page, site, api, fresh_broker):
    out = manage(site.env, "shell", "-v0", "-c", MAKE.format(pairs=PAIRS, broker=fresh_broker), timeout=600)
    pairs = [line.split() for line in out.splitlines() if len(line.split()) == 2]
    assert len(pairs) == PAIRS
    snapshot_s = float(manage(site.env, "shell", "-v0", "-c", SNAPSHOT.format(broker=fresh_broker)).split()[-1])
    page = admin_page
    started = time.monotonic()
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true", timeout=120_000)
    wall = time.monotonic() - started
    first = page.evaluate("window.batonGraph.timings.firstRenderMs")
    phases = page.evaluate("window.batonGraph.timings.phases")
    assert page.locator("#transaction-table tbody tr").count() == 2 * PAIRS

    # 100 events: 50 consumers ask to commit (held), then their 50 producers commit (released)
    for _producer, consumer in pairs[:50]:
        assert api.post(f"/api/transactions/{consumer}/commit/", json={"wait": 0}).status_code == 202
    for producer, _consumer in pairs[:50]:
        assert api.post(f"/api/transactions/{producer}/commit/", json={}).status_code == 200
    last = pairs[49][1]
    expect(page.locator(f'#transaction-table tr[data-transaction-id="{last}"]')).to_have_attribute(
        "data-state", "committed", timeout=60_000
    )
    updates = page.evaluate("window.batonGraph.timings.updatesMs")
    print(
        f"\nunits of work: {2 * PAIRS}; snapshot read on the server: {snapshot_s:.2f} s; "
        f"page load to drawn: {wall:.2f} s; snapshot to drawn: {first:.0f} ms {phases}; "
        f"updates: {len(updates)} batches, median {statistics.median(updates):.1f} ms, "
        f"p95 {sorted(updates)[int(len(updates) * 0.95)]:.1f} ms, max {max(updates):.1f} ms"
    )
    assert page.console.errors == []
