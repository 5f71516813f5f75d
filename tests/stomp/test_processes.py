"""The STOMP server among the platform's processes: it holds the platform lock as the web
server does (a restore refuses while it serves), the per-user connection cap counts the
connections other STOMP servers hold (their registry rows), and the durable-subscription cap
holds when SUBSCRIBEs race."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.db import connections

from brokers.models import Queue
from brokers.services.access import api_token_issue, grant_actions
from baton_client.errors import Conflict
from config.running import platform_stopped
from stomp_server import engine
from stomp_server.models import StompClient

from .conftest import Raw

ROOT = Path(__file__).resolve().parents[2]


def test_a_restore_refuses_while_the_stomp_server_runs(tmp_path, settings):
    settings.BATON_PLATFORM_LOCK = str(tmp_path / "platform.lock")
    env = {**os.environ, "BATON_VAR_DIR": str(tmp_path), "BATON_STOMP_REGISTRY": "0"}
    env.pop("DATABASE_URL", None)  # its own SQLite file under tmp_path: nothing of the tests' touched
    with socket.socket() as probe:  # a free port (0 turns the server off)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "manage.py", "stomp_serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline()  # once it has the lock and listens
        assert line.startswith("STOMP listening on"), line
        with pytest.raises(Conflict, match="The platform is running"):
            with platform_stopped():
                pass
    finally:
        server.terminate()
        server.wait(30)
    with platform_stopped():  # the lock went with the process
        pass


def test_the_per_user_cap_counts_the_connections_of_other_servers(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_MAX_CONNECTIONS_PER_USER = 2
    # as another STOMP server's registry writes its connections
    StompClient.objects.create(
        session="e" * 32,
        process="elsewhere:1",
        transport="tcp",
        peer="10.0.0.1:4000",
        username="tester",
        broker="QM1",
        version="1.2",
        connected_at=datetime.now(timezone.utc),
    )
    first = Raw(stomp_port)
    first.connect(token)
    second = Raw(stomp_port)
    second.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:tester\npasscode:{token}\n\n\0".encode())
    got = second.closed_after()
    assert [f.command for f in got] == ["ERROR"]
    assert "has 2 connections open" in got[0].get("message")
    StompClient.objects.filter(process="elsewhere:1").delete()  # that server's connection ended
    Raw(stomp_port).connect(token)
    first.close()


def test_durable_subscriptions_made_at_once_stay_within_the_cap(stomp_broker, settings):
    settings.BATON_STOMP_MAX_DURABLE_PER_USER = 1
    api_token_issue(username="plain", create_user=True)
    grant_actions(username="plain", broker="QM1", actions=["get", "put"])
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="plain")
    racers = 4
    start = threading.Barrier(racers)
    outcomes: list[str] = []

    def subscribe(n: int) -> None:
        try:
            name = engine.subscription_name(user=user, connection="c", id=f"d{n}", durable=True)
            start.wait(30)
            try:
                engine.topic_subscribed(user, broker="QM1", topic_filter="news", name=name, durable=True)
                outcomes.append("made")
            except engine.TooManyDurable:
                outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=subscribe, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["made"] + ["refused"] * (racers - 1)
    assert Queue.objects.filter(name__startswith="stomp.d.").count() == 1
