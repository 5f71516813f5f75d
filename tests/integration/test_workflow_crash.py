"""The workflows' crash test: workers of a three-step workflow and of its compensations
(over the Python client, as any application), instances started, some failed by their
second step and some aborted, while the web server and the Celery worker are killed with
SIGKILL at random moments and started again. Then every instance must end (completed or
compensated) and its history must show: each step committed at most once, each
compensation requested and done at most once, compensations exactly for the committed
steps and in reverse commit order, a completed instance with every step committed and
nothing compensated. ``BATON_WORKFLOW_CRASH_KILLS`` (default 6) and
``BATON_CRASH_SEED`` as for the crash test."""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
from collections import Counter

import pytest

from baton_client import Client
from baton_client.errors import BatonError, WorkflowConflict
from tests.support.live import LivePlatform

from .test_crash import PLATFORM_ENV, Killer, database_of_its_own

pytestmark = pytest.mark.integration

KILLS = int(os.environ.get("BATON_WORKFLOW_CRASH_KILLS") or 6)
SEED = int(os.environ.get("BATON_CRASH_SEED") or secrets.randbelow(10**6))
BROKER = "WFC"
STEPS = ["a", "b", "c"]
INSTANCES = 12


def _define(client: Client) -> None:
    client.define_broker(BROKER, transaction_timeout_ms=4000)
    for s in STEPS:
        client.define_queue(BROKER, s.upper())
        client.define_queue(BROKER, f"UNDO.{s.upper()}")
    client.define_workflow(
        BROKER, "w", [{"name": s, "queue": s.upper(), "compensation_queue": f"UNDO.{s.upper()}"} for s in STEPS]
    )


def _worker(url: str, token: str, stop: threading.Event, queue: str, act) -> None:
    with Client(url, token, timeout=10, transport="rest") as client:
        while not stop.is_set():
            try:
                with client.transaction(BROKER) as txn:
                    request = txn.get(queue, wait=0.5)
                    if request is None:
                        continue
                    tag = request.properties["workflow"]
                    try:
                        act(client, txn, tag, request)
                    except WorkflowConflict:
                        pass  # the instance ended meanwhile: the request is consumed
            except BatonError:
                time.sleep(0.1)  # the server is being restarted, or the unit of work was backed out


def _step(client, txn, tag, request) -> None:
    if tag["step"] == "b" and request.text.startswith("fail"):
        client.fail_step(tag["instance"], "b", "refused", transaction=txn)
    else:
        client.complete_step(tag["instance"], tag["step"], txn, output=request.text, compensation=f"undo {tag['step']}")


def _undo(client, txn, tag, request) -> None:
    assert request.text == f"undo {tag['step']}"
    client.step_compensated(tag["instance"], tag["step"], txn)


def _problems(view: dict) -> list[str]:
    events = [(h["event"], h["step"]) for h in view["history"]]
    committed = [s for e, s in events if e == "step_committed"]
    requested = [s for e, s in events if e == "compensation_requested"]
    compensated = [s for e, s in events if e == "step_compensated"]
    found = []
    for name, seen in (("committed", committed), ("compensation requested", requested), ("compensated", compensated)):
        twice = [s for s, n in Counter(seen).items() if n > 1]
        if twice:
            found.append(f"{name} more than once: {twice}")
    if view["state"] == "completed" and (sorted(committed) != STEPS or requested):
        found.append(f"completed with commits {committed} and compensations {requested}")
    if view["state"] == "compensated" and compensated != list(reversed(committed)):
        found.append(f"compensated {compensated}, committed {committed}")
    if view["state"] not in ("completed", "compensated"):
        found.append(f"did not end: {view['state']}")
    return found


def test_no_step_lost_and_no_compensation_twice_while_servers_are_killed(tmp_path):
    rng = random.Random(SEED)
    with (
        database_of_its_own(tmp_path) as database_url,
        LivePlatform(tmp_path / "var", database_url, env=PLATFORM_ENV) as platform,
    ):
        token = platform.prepare()
        platform.start()
        with Client(platform.url, token, timeout=30) as client:
            _define(client)
        stop = threading.Event()
        workers = [
            threading.Thread(target=_worker, args=(platform.url, token, stop, q, act), daemon=True)
            for q, act in [*((s.upper(), _step) for s in STEPS), *((f"UNDO.{s.upper()}", _undo) for s in STEPS)]
        ]
        for w in workers:
            w.start()
        killers = [
            Killer(platform, ["web"], KILLS - KILLS // 2, random.Random(rng.random())),
            Killer(platform, ["worker"], KILLS // 2, random.Random(rng.random())),
        ]
        for killer in killers:
            killer.start()
        started: list[str] = []
        with Client(platform.url, token, timeout=10, transport="rest") as client:
            while len(started) < INSTANCES:
                body = "fail" if len(started) % 4 == 1 else "go"
                try:
                    started.append(client.start_workflow(BROKER, "w", body)["id"])
                except BatonError:
                    time.sleep(0.2)  # an answer lost with the server: that instance may exist unseen
                    continue
                if len(started) % 4 == 2:
                    time.sleep(rng.uniform(0, 0.5))
                    try:
                        client.abort_instance(started[-1], "test")
                    except BatonError:
                        pass
        for killer in killers:
            killer.join()
        assert not [k for k in killers if k.error], platform.logs()
        views: dict[str, dict] = {}
        with Client(platform.url, token, timeout=30, transport="rest") as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                listed = client.find_instances(BROKER, "w", limit=1000)["results"]
                if all(i["state"] in ("completed", "compensated") for i in listed):
                    break
                time.sleep(0.5)  # polling interval of a bounded wait
            for i in client.find_instances(BROKER, "w", limit=1000)["results"]:
                views[i["id"]] = client.display_instance(i["id"])
        stop.set()
        for w in workers:
            w.join(15)
    problems = {i: p for i, v in views.items() if (p := _problems(v))}
    states = Counter(v["state"] for v in views.values())
    print(f"\nworkflow crash test: seed {SEED}, kills {sum(k.done for k in killers)}, instances {dict(states)}")
    assert set(started) <= set(views), "an instance the client was told of is missing"
    assert not problems, f"seed {SEED}: {problems}"
    assert states["completed"] > 0 and states["compensated"] > 0, states
