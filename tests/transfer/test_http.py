"""A channel between two platform instances (two processes, two databases) over a session
(one WebSocket per agent, requests pipelined), run by the real worker fleet that each
platform starts; the receiving web server is killed and restarted mid-window."""

from __future__ import annotations

import pytest

from tests.integration.servers import Platform, free_port, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    a = Platform(tmp_path_factory.mktemp("platform-a"))
    b = Platform(tmp_path_factory.mktemp("platform-b"))
    try:
        a.start()
        b.start()
        yield a, b
    finally:
        a.stop()
        b.stop()


def ok(response, status: int = 200):
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def channel_started(ha, hb, b: Platform, *, source: str, target: str, channel: str, **options) -> None:
    """Broker ``target`` with queue IN on platform B; broker ``source`` on A with a remote queue
    RQ leading there over ``channel`` (to B's URL, with B's token), started."""
    ok(hb.post("/api/brokers/", json={"name": target}), 201)
    ok(hb.post(f"/api/brokers/{target}/queues/", json={"name": "IN"}), 201)
    ok(ha.post("/api/brokers/", json={"name": source}), 201)
    ok(ha.post(f"/api/brokers/{source}/queues/", json={"name": target, "usage": "transmission"}), 201)
    ok(
        ha.post(
            f"/api/brokers/{source}/queues/",
            json={
                "name": "RQ",
                "kind": "remote",
                "remote_broker": target,
                "remote_queue": "IN",
                "transmission_queue": target,
            },
        ),
        201,
    )
    ok(
        ha.post(
            "/api/channels/",
            json={
                "name": channel,
                "source_broker": source,
                "transmission_queue": target,
                "target_broker": target,
                "target_url": b.url,
                "target_token": b.token,
                **options,
            },
        ),
        201,
    )
    ok(ha.post(f"/api/channels/{channel}/start/"))


def test_messages_cross_platforms_exactly_once_and_channel_reports_status(pair):
    a, b = pair
    with a.client() as ha, b.client() as hb:
        channel_started(ha, hb, b, source="QMA", target="QMB", channel="A.TO.B", batch_size=10, preemptive=True)
        sent = ok(
            ha.post("/api/brokers/QMA/queues/RQ/messages/", json={"messages": [{"body": f"m{i}"} for i in range(25)]}),
            201,
        )["messages"]
        poll_until(
            lambda: ok(hb.get("/api/brokers/QMB/queues/IN/"))["depth"] == 25,
            timeout=60,
            what="25 messages on platform B",
            diagnostics=lambda: a.logs() + b.logs(),
        )
        got = ok(hb.post("/api/brokers/QMB/queues/IN/get/", json={"batch": 100}))["messages"]
        assert sorted(m["msg_id"] for m in got) == sorted(m["msg_id"] for m in sent)
        status = poll_until(
            lambda: (s := ok(ha.get("/api/channels/A.TO.B/")))["messages_sent"] == 25 and s,
            timeout=30,
            what="the channel's counters",
        )
        assert status["state"] == "running" and status["batches_committed"] >= 3 and status["last_error"] is None

        # a producer's uncommitted batch crosses at once; the consumer on B is held until it commits
        producer = ok(ha.post("/api/brokers/QMA/transactions/", json={}), 201)["id"]
        ok(ha.post("/api/brokers/QMA/queues/RQ/messages/", json={"body": "early", "transaction": producer}), 201)
        consumer = ok(hb.post("/api/brokers/QMB/transactions/", json={}), 201)["id"]
        early = poll_until(
            lambda: ok(
                hb.post(
                    "/api/brokers/QMB/queues/IN/get/", json={"transaction": consumer, "preemptive": True, "wait": 1}
                )
            )["messages"],
            timeout=30,
            what="the provisional message on B",
        )
        assert [m["body"] for m in early] == ["early"]
        held = hb.post(f"/api/transactions/{consumer}/commit/", json={})
        assert held.status_code == 202 and held.json()["state"] == "commit_held"
        ok(ha.post(f"/api/transactions/{producer}/commit/", json={}))
        poll_until(
            lambda: ok(hb.get(f"/api/transactions/{consumer}/"))["state"] == "committed",
            timeout=30,
            what="the held consumer on B to commit after the producer on A committed",
        )


def test_unreachable_target_makes_the_channel_retry_with_its_error(pair):
    a, _ = pair
    with a.client() as ha:
        ok(ha.post("/api/brokers/", json={"name": "QMX"}), 201)
        ok(ha.post("/api/brokers/QMX/queues/", json={"name": "FAR", "usage": "transmission"}), 201)
        ok(
            ha.post(
                "/api/brokers/QMX/queues/",
                json={
                    "name": "RQ",
                    "kind": "remote",
                    "remote_broker": "FAR",
                    "remote_queue": "IN",
                    "transmission_queue": "FAR",
                },
            ),
            201,
        )
        ok(
            ha.post(
                "/api/channels/",
                json={
                    "name": "X.TO.NOWHERE",
                    "source_broker": "QMX",
                    "transmission_queue": "FAR",
                    "target_broker": "FAR",
                    "target_url": f"http://127.0.0.1:{free_port()}",
                    "target_token": "x",
                },
            ),
            201,
        )
        ok(ha.post("/api/channels/X.TO.NOWHERE/start/"))
        ok(ha.post("/api/brokers/QMX/queues/RQ/messages/", json={"body": "stuck"}), 201)
        status = poll_until(
            lambda: (s := ok(ha.get("/api/channels/X.TO.NOWHERE/")))["state"] == "retrying" and s,
            timeout=30,
            what="the channel to report retrying",
        )
        assert "cannot open a session" in status["last_error"] and status["retry_count"] >= 1
        assert ok(ha.get("/api/brokers/QMX/queues/FAR/"))["depth"] == 1  # nothing lost
        stopped = ok(ha.post("/api/channels/X.TO.NOWHERE/stop/"))
        assert stopped["enabled"] is False


def test_the_receiver_restarting_mid_window_loses_and_duplicates_nothing(pair):
    """Four provisional batches are held on B when B's web server is SIGKILLed; more traffic
    comes while it is down and the producer commits; B starts again: the agent reconnects,
    asks about the batches in doubt, resends what B never got, and every message is on B
    exactly once."""
    a, b = pair
    with a.client() as ha, b.client() as hb:
        channel_started(
            ha,
            hb,
            b,
            source="QMS",
            target="QMR",
            channel="S.TO.R",
            batch_size=5,
            batch_interval_ms=20,
            window=8,
            preemptive=True,
        )
        producer = ok(ha.post("/api/brokers/QMS/transactions/", json={"timeout_ms": 600_000}), 201)["id"]
        sent = ok(
            ha.post(
                "/api/brokers/QMS/queues/RQ/messages/",
                json={"messages": [{"body": f"p{i}"} for i in range(20)], "transaction": producer},
            ),
            201,
        )["messages"]
        logs = lambda: a.logs() + b.logs()  # noqa: E731
        poll_until(
            lambda: ok(hb.get("/api/brokers/QMR/queues/IN/"))["uncommitted_puts"] == 20,
            timeout=60,
            what="20 provisional messages held on B",
            diagnostics=logs,
        )
        window = ok(ha.get("/api/channels/S.TO.R/"))
        assert window["batches_in_flight"] == 4 and window["batches_committed"] == 0, window

        b.web_kill()
        sent += ok(
            ha.post("/api/brokers/QMS/queues/RQ/messages/", json={"messages": [{"body": f"c{i}"} for i in range(10)]}),
            201,
        )["messages"]
        ok(ha.post(f"/api/transactions/{producer}/commit/", json={}))
        retrying = poll_until(
            lambda: (s := ok(ha.get("/api/channels/S.TO.R/")))["state"] == "retrying" and s,
            timeout=60,
            what="the channel to notice that B is gone",
            diagnostics=logs,
        )
        assert retrying["batches_in_flight"] >= 4 and retrying["last_error"], retrying

        b.web_restart()
        with b.client() as hb2:
            poll_until(
                lambda: ok(hb2.get("/api/brokers/QMR/queues/IN/"))["depth"] == 30,
                timeout=120,
                what="30 messages committed on B",
                diagnostics=logs,
            )
            done = poll_until(
                lambda: (
                    (s := ok(ha.get("/api/channels/S.TO.R/")))["messages_sent"] == 30
                    and s["batches_in_flight"] == 0
                    and s
                ),
                timeout=60,
                what="the window to drain",
                diagnostics=logs,
            )
            assert done["state"] == "running" and done["last_error"] is None, done
            got = ok(hb2.post("/api/brokers/QMR/queues/IN/get/", json={"batch": 1000}))["messages"]
            assert sorted(m["msg_id"] for m in got) == sorted(m["msg_id"] for m in sent)  # each exactly once
            assert ok(hb2.get("/api/brokers/QMR/queues/IN/"))["depth"] == 0
            dlq = ok(hb2.get("/api/brokers/QMR/"))["dead_letter_queue"]
            assert ok(hb2.get(f"/api/brokers/QMR/queues/{dlq}/"))["depth"] == 0
        assert ok(ha.get("/api/brokers/QMS/queues/QMR/"))["depth"] == 0  # nothing left behind on A
