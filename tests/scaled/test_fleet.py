"""The scaled-out platform at work: a waiting get in one web process woken by a put made
through the other, a dashboard connected to one seeing changes made through the other,
and a channel's agent on the Celery fleet — held by exactly one worker while both run,
taken over by the other when its worker is killed."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import threading
import time

import httpx
import pytest
from channels_redis.core import RedisChannelLayer
from websockets.asyncio.client import connect

from dashboard.follower import OVERVIEW_GROUP
from tests.integration.servers import poll_until
from tests.integration.test_dashboard import queue_depth, session_login

pytestmark = [pytest.mark.integration, pytest.mark.scaled]

_names = itertools.count(1)


def fresh_broker(http: httpx.Client, *queues: str) -> str:
    name = f"SC{next(_names)}"
    assert http.post("/api/brokers/", json={"name": name, "transaction_timeout_ms": 60_000}).status_code == 201
    for queue in queues:
        response = http.post(f"/api/brokers/{name}/queues/", json={"name": queue})
        assert response.status_code == 201, response.text
    return name


def test_both_web_processes_serve_one_platform(scaled):
    with scaled.client(0) as first, scaled.client(1) as second:
        broker = fresh_broker(first, "Q1")
        assert broker in [b["name"] for b in second.get("/api/brokers/").json()["results"]]


def test_a_get_waiting_in_one_web_process_is_woken_by_a_put_through_the_other(scaled):
    with scaled.client(0) as first, scaled.client(1) as second:
        broker = fresh_broker(first, "Q1")
        answer: dict = {}

        def wait() -> None:
            with scaled.client(0, timeout=60) as waiter:
                answer["response"] = waiter.post(f"/api/brokers/{broker}/queues/Q1/get/", json={"wait": 30})

        thread = threading.Thread(target=wait)
        thread.start()
        try:
            put = second.post(f"/api/brokers/{broker}/queues/Q1/messages/", json={"body": "across processes"})
            assert put.status_code == 201, put.text
        finally:
            thread.join(60)
        response = answer["response"]
        assert response.status_code == 200, response.text
        assert [m["body"] for m in response.json()["messages"]] == ["across processes"]


def test_a_dashboard_on_one_web_process_sees_a_put_through_the_other(scaled):
    with scaled.client(1) as second:
        broker = fresh_broker(second, "Q1")
        client = session_login(scaled)  # web process 0
        session_id = client.cookies["sessionid"]
        client.close()

        async def follow() -> int:
            async with connect(
                f"{scaled.ws_url}/ws/overview/",
                open_timeout=15,
                additional_headers={"Cookie": f"sessionid={session_id}", "Origin": scaled.url},
            ) as ws:
                first = json.loads(await asyncio.wait_for(ws.recv(), 15))
                assert queue_depth(first, broker, "Q1") == 0, first
                put = await asyncio.to_thread(
                    second.post,
                    f"/api/brokers/{broker}/queues/Q1/messages/",
                    json={"body": "for the other process's dashboard"},
                )
                assert put.status_code == 201, put.text
                deadline = time.monotonic() + 30
                while True:
                    remaining = deadline - time.monotonic()
                    assert remaining > 0, "the dashboard on web process 0 never showed the put made through 1"
                    update = json.loads(await asyncio.wait_for(ws.recv(), remaining))
                    if update.get("type") == "overview" and queue_depth(update, broker, "Q1") == 1:
                        break
                # the socket's group lives in Redis: a message any process sends to it arrives
                layer = RedisChannelLayer(hosts=[scaled.extra_env["BATON_REDIS_URL"]])
                await layer.group_send(
                    OVERVIEW_GROUP,
                    {
                        "type": "overview.changed",
                        "data": first["data"],
                        "alerts": [],
                        "counts": {broker: {"put": 4242}},
                    },
                )
                while True:
                    remaining = deadline - time.monotonic()
                    assert remaining > 0, "a message sent to the dashboard's group through Redis never arrived"
                    update = json.loads(await asyncio.wait_for(ws.recv(), remaining))
                    if update.get("counts", {}).get(broker) == {"put": 4242}:
                        return 1

        assert asyncio.run(follow()) == 1


def channel_between(http: httpx.Client) -> tuple[str, str, str]:
    """Broker A's remote queue RQ leads to broker B's IN over channel A.TO.B; started."""
    source = fresh_broker(http)
    target = fresh_broker(http, "IN")
    for body in (
        {"name": target, "usage": "transmission"},
        {"name": "RQ", "kind": "remote", "remote_broker": target, "remote_queue": "IN", "transmission_queue": target},
    ):
        response = http.post(f"/api/brokers/{source}/queues/", json=body)
        assert response.status_code == 201, response.text
    name = f"{source}.TO.{target}"
    response = http.post(
        "/api/channels/",
        json={
            "name": name,
            "source_broker": source,
            "transmission_queue": target,
            "target_broker": target,
            "batch_size": 10,
        },
    )
    assert response.status_code == 201, response.text
    assert http.post(f"/api/channels/{name}/start/").status_code == 200
    return name, source, target


def put_and_receive(http: httpx.Client, source: str, target: str, bodies: list[str]) -> list[str]:
    for body in bodies:
        response = http.post(f"/api/brokers/{source}/queues/RQ/messages/", json={"body": body})
        assert response.status_code == 201, response.text
    received: list[str] = []
    deadline = time.monotonic() + 60
    while len(received) < len(bodies):
        assert time.monotonic() < deadline, f"only {received} of {bodies} crossed the channel"
        got = http.post(f"/api/brokers/{target}/queues/IN/get/", json={"wait": 5, "batch": 100})
        assert got.status_code == 200, got.text
        received += [m["body"] for m in got.json()["messages"]]
    return received


def agent_pid(http: httpx.Client, channel: str) -> int | None:
    agent = http.get(f"/api/channels/{channel}/").json()["agent"]
    return int(agent.split(":")[1]) if agent else None


def test_a_channel_agent_runs_on_one_worker_and_the_other_takes_over_when_it_dies(scaled):
    workers = {server.proc.pid: server for server in scaled.named("worker")}
    assert len(workers) == 2 and all(server.alive() for server in workers.values())
    with scaled.client(0) as http:
        channel, source, target = channel_between(http)
        holder = poll_until(lambda: agent_pid(http, channel), timeout=30, what=f"an agent to take channel {channel}")
        assert holder in workers, f"the agent runs in pid {holder}, not in a worker {sorted(workers)}"

        # while both workers run, one agent holds the channel: every message crosses exactly once
        first = [f"before {n}" for n in range(20)]
        assert sorted(put_and_receive(http, source, target, first)) == sorted(first)
        assert agent_pid(http, channel) == holder

        # kill the holder's worker outright: the other takes the channel over when the lease runs out
        os.killpg(holder, signal.SIGKILL)
        poll_until(lambda: not workers[holder].alive(), timeout=15, what=f"worker {holder} to die")
        survivor = next(pid for pid in workers if pid != holder)
        second = [f"after {n}" for n in range(20)]
        assert sorted(put_and_receive(http, source, target, second)) == sorted(second)
        assert agent_pid(http, channel) == survivor
        assert http.get(f"/api/brokers/{target}/queues/IN/").json()["depth"] == 0
        http.post(f"/api/channels/{channel}/stop/")
    scaled.worker_start(len(scaled.named("worker")))  # a replacement, for the tests after this one
