"""The step worker reports each request as soon as its function returns, in the batch's unit
of work and uncommitted, and commits with the last: a pre-emptive worker downstream takes the
next step's request before the upstream unit of work commits; an upstream rollback backs it
out, the requests are taken again, and every instance ends completed, its end told once.

Against a real platform on the suite's database: in the SQLite pass the package's platform;
in the PostgreSQL pass one of this module's own on a fresh database of the suite's server.
Nothing sleeps: each step waits for what it needs on an event the other step's function sets,
or on a get that the platform wakes."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from baton_client import Client, Output, StepRequest, StepWorker
from tests.integration.servers import platform_started
from tests.scaled.conftest import scratch_database

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def served(request, tmp_path_factory):
    """The platform the workers talk to, on the database of the suite's pass."""
    if connection.vendor != "postgresql":
        yield request.getfixturevalue("platform")
        return
    with scratch_database("baton_worker") as url:
        with platform_started(tmp_path_factory.mktemp("baton-worker"), extra_env={"DATABASE_URL": url}) as running:
            yield running


@pytest.fixture
def client(served, transport):
    with Client(served.url, served.token, timeout=30, transport=transport) as c:
        yield c


@pytest.fixture
def other_client(served, transport):
    with Client(served.url, served.token, timeout=30, transport=transport) as c:
        yield c


def _flow(client, broker: str, name: str) -> None:
    for s in "ab":
        client.define_queue(broker, f"{name}.{s}".upper(), backout_threshold=5)
        client.define_queue(broker, f"{name}.UNDO.{s}".upper())
    client.define_queue(broker, "DONE")
    client.define_workflow(
        broker,
        name,
        [{"name": s, "queue": f"{name}.{s}".upper(), "compensation_queue": f"{name}.UNDO.{s}".upper()} for s in "ab"],
    )


def _ended(client, broker: str, n: int) -> list[str]:
    ended = []
    while len(ended) < n:
        message = client.get(broker, "DONE", wait=20)
        assert message is not None, f"{len(ended)} of {n} instances ended after 20 s"
        ended.append(message.text)
    return ended


def _workers(client, other_client, broker: str, name: str, first, second):
    """Step a served by ``first`` (the two requests in one unit of work, a batch that is not
    full, each reported as soon as its function returns: ``report_every=0``), step b
    pre-emptively by ``second``, each worker with its own client."""
    upstream = StepWorker(client, broker=broker, workflow=name, batch=3, report_every=0, backoff=0.01, wait=0.5)
    downstream = StepWorker(other_client, broker=broker, workflow=name, preemptive=True, wait=0.5)
    upstream.step("a")(first)
    downstream.step("b")(second)
    return upstream, downstream


def _taken(other_client, broker: str, upstream: list[str], seen: list, taken: threading.Event):
    """Step b's function: notes its request's text and the state then of step a's latest unit
    of work (``upstream``), and tells the end on DONE under its own unit of work."""

    def serve_b(request: StepRequest) -> Output:
        seen.append((request.text, other_client.display_transaction(upstream[-1]).state))
        taken.set()
        other_client.put(broker, "DONE", request.instance, transaction=request.transaction)
        return Output()

    return serve_b


def test_a_pre_emptive_worker_takes_a_request_before_the_upstream_unit_of_work_commits(client, other_client, broker):
    _flow(client, broker, "early")
    first = client.start_workflow(broker, "early", "one")["id"]
    second = client.start_workflow(broker, "early", "two")["id"]
    taken = threading.Event()
    waited: list[bool] = []
    seen: list = []
    units: list[str] = []

    def serve_a(request: StepRequest) -> Output:
        units.append(request.transaction)
        if request.text == "two":  # the unit of work's last request: it is still open meanwhile
            waited.append(taken.wait(20))
        return Output(output=f"{request.text} after a")

    upstream, downstream = _workers(
        client, other_client, broker, "early", serve_a, _taken(other_client, broker, units, seen, taken)
    )
    with upstream, downstream:
        assert sorted(_ended(client, broker, 2)) == sorted([first, second])
    assert waited == [True]  # b took one's request while a's unit of work (holding two) was open
    assert seen[0] == ("one after a", "active")
    for instance in (first, second):
        assert client.display_instance(instance)["state"] == "completed"
    assert upstream.completed == 2 and downstream.completed == 2 and upstream.failures == 0
    assert client.get(broker, "DONE") is None  # each end told once


def test_an_upstream_rollback_backs_the_downstream_out_and_the_instances_still_complete(client, other_client, broker):
    _flow(client, broker, "undo")
    first = client.start_workflow(broker, "undo", "one")["id"]
    second = client.start_workflow(broker, "undo", "two")["id"]
    taken = threading.Event()
    seen: list = []
    units: list[str] = []

    def serve_a(request: StepRequest) -> Output:
        units.append(request.transaction)
        if request.text == "two" and request.backout_count == 0:
            assert taken.wait(20), "b never took one's request"
            raise RuntimeError("a fault after b took one's request")  # rolls a's unit of work back
        return Output(output=f"{request.text} after a")

    upstream, downstream = _workers(
        client, other_client, broker, "undo", serve_a, _taken(other_client, broker, units, seen, taken)
    )
    with upstream, downstream:
        assert sorted(_ended(client, broker, 2)) == sorted([first, second])
    assert seen[0] == ("one after a", "active")
    assert [text for text, _ in seen].count("one after a") == 2  # done again after the cascade backed it out
    assert upstream.failures == 1 and upstream.completed == 2
    for instance in (first, second):
        shown = client.display_instance(instance)
        assert shown["state"] == "completed"
        assert [s["state"] for s in shown["steps"]] == ["committed", "committed"]
    assert "step_backed_out" in [h["event"] for h in client.display_instance(first)["history"]]
    assert client.get(broker, "DONE") is None  # the backed-out b's put went with it


def test_an_early_report_refused_consumes_that_request_and_the_rest_commit(client, other_client, broker):
    """The instance of the first request is aborted while its function runs: the early
    report of it is refused (the instance no longer runs), the worker reports the rest with
    the commit, and the aborted instance's request is consumed without more."""
    _flow(client, broker, "gone")
    first = client.start_workflow(broker, "gone", "one")["id"]
    second = client.start_workflow(broker, "gone", "two")["id"]
    upstream = StepWorker(client, broker=broker, workflow="gone", batch=3, report_every=0, wait=0.5)
    downstream = StepWorker(other_client, broker=broker, workflow="gone", preemptive=True, wait=0.5)

    @upstream.step("a")
    def serve_a(request: StepRequest) -> Output:
        if request.text == "one":
            other_client.abort_instance(request.instance, "the caller gave up")
        return Output(output=f"{request.text} after a")

    @downstream.step("b")
    def serve_b(request: StepRequest) -> Output:
        other_client.put(broker, "DONE", request.instance, transaction=request.transaction)
        return Output()

    with upstream, downstream:
        assert _ended(client, broker, 1) == [second]
    assert client.display_instance(second)["state"] == "completed"
    gone = client.display_instance(first)
    assert gone["state"] == "compensated" and [s["state"] for s in gone["steps"]] == [
        "pending",
        "pending",
    ]
    assert upstream.completed == 1 and upstream.failures == 0
    assert client.get(broker, "GONE.A") is None and client.get(broker, "DONE") is None
