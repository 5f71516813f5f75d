"""Channel events on a real platform (its Celery beat running the operating housekeeping
every half second): a channel whose target does not answer runs, goes retrying, then is
stopped (in doubt: its batch unconfirmed); each change puts one event message on the source
broker's SYSTEM.ADMIN.CHANNEL.EVENT."""

from __future__ import annotations

import json

import pytest

from .servers import free_port, platform_started, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def ok(response, status: int = 200):
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def test_a_channel_retrying_then_stopped_puts_one_event_each(tmp_path):
    with platform_started(tmp_path, extra_env={"BATON_OPERATING_INTERVAL_S": "0.5"}) as platform:
        with platform.client() as http:
            ok(http.post("/api/brokers/", json={"name": "QMX"}), 201)
            ok(http.post("/api/brokers/QMX/queues/", json={"name": "FAR", "usage": "transmission"}), 201)
            remote = {
                "name": "RQ",
                "kind": "remote",
                "remote_broker": "FAR",
                "remote_queue": "IN",
                "transmission_queue": "FAR",
            }
            ok(http.post("/api/brokers/QMX/queues/", json=remote), 201)
            channel = {
                "name": "X.TO.NOWHERE",
                "source_broker": "QMX",
                "transmission_queue": "FAR",
                "target_broker": "FAR",
                "target_url": f"http://127.0.0.1:{free_port()}",
                "target_token": "x",
            }
            ok(http.post("/api/channels/", json=channel), 201)
            # the housekeeping notes the stopped channel before it starts (no event for that)
            events: list[dict] = []

            def got() -> list[dict]:
                response = http.post("/api/brokers/QMX/queues/SYSTEM.ADMIN.CHANNEL.EVENT/get/", json={"batch": 50})
                if response.status_code == 200:
                    events.extend(json.loads(m["body"]) for m in response.json()["messages"])
                return events

            ok(http.post("/api/brokers/QMX/queues/", json={"name": "MARK", "max_depth": 10, "depth_high_pct": 10}), 201)
            ok(http.post("/api/brokers/QMX/queues/MARK/messages/", json={"body": "x"}), 201)
            # a queue event shows that a housekeeping pass has run since the channel was defined
            # (a pass evaluates the channels first: the channel was noted stopped)
            poll_until(
                lambda: http.get("/api/brokers/QMX/queues/SYSTEM.ADMIN.PERFM.EVENT/").status_code == 200,
                timeout=60,
                what="an operating housekeeping pass",
                diagnostics=platform.logs,
            )
            ok(http.post("/api/channels/X.TO.NOWHERE/start/"))
            ok(http.post("/api/brokers/QMX/queues/RQ/messages/", json={"body": "stuck"}), 201)
            poll_until(
                lambda: any(e["event"] == "channel_retrying" for e in got()),
                timeout=60,
                what=f"a channel_retrying event (events so far: {events})",
                diagnostics=platform.logs,
            )
            ok(http.post("/api/channels/X.TO.NOWHERE/stop/"))
            # stopped with its batch unconfirmed: in doubt (stopped when nothing is in flight);
            # the agent's next run may have begun in doubt before the stop (its batch unconfirmed),
            # so an in-doubt event alone does not mean the stop was seen: the last event must be
            # the state the channel is in now

            def stop_seen() -> bool:
                now = ok(http.get("/api/channels/X.TO.NOWHERE/"))["state"]
                kinds = [e["event"] for e in got()]
                return now in ("stopped", "in_doubt") and kinds[-1:] == [f"channel_{now}"]

            poll_until(
                stop_seen,
                timeout=60,
                what="the stopped channel's event, last",
                diagnostics=lambda: f"events {events}; channel {ok(http.get('/api/channels/X.TO.NOWHERE/'))}",
            )
            final = ok(http.get("/api/channels/X.TO.NOWHERE/"))["state"]
            kinds = [e["event"] for e in events]
            # running may last less than an evaluation interval, and go unseen
            assert kinds[0] in ("channel_running", "channel_retrying") and kinds[-1] == f"channel_{final}", kinds
            assert kinds.count("channel_retrying") >= 1 and final in ("stopped", "in_doubt")
            retrying = next(e for e in events if e["event"] == "channel_retrying")
            assert retrying["channel"] == "X.TO.NOWHERE" and retrying["broker"] == "QMX"
            assert (
                retrying["previous_state"] in ("stopped", "running", "in_doubt")  # in doubt: a run that began so
                and "cannot open a session" in retrying["last_error"]
            )
            assert all(a["state"] != b["state"] for a, b in zip(events, events[1:]))  # one event per change
            assert all(b["previous_state"] == a["state"] for a, b in zip(events, events[1:]))
