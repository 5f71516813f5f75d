"""The crash test: producers, pre-emptive consumers, a channel between two brokers and
peek-lock consumers (tests/support/workload.py) run against a live platform while the
web server and the Celery worker are killed with SIGKILL at random moments and started
again. Then the total-queue checker (tests/support/checker.py) judges what the clients
were told against what the queues hold: nothing lost, nothing duplicated, nothing
uncommitted visible, no unit of work stuck. See docs/testing.md.

CI runs 20 kills (about two minutes); ``BATON_CRASH_KILLS=200`` is the long mode,
``BATON_CRASH_SEED`` replays a schedule. Runs on the suite's database server: a SQLite file
of its own, or a database of its own on the PostgreSQL server the suite uses. The
scaled-out form (two web servers, two workers, PostgreSQL and Redis) runs the same test,
``crash_run``, from tests/scaled/test_soak_and_crash.py.
"""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


import pytest
from django.conf import settings

from tests.support.checker import history_checked
from tests.support.live import LivePlatform
from tests.support.workload import (
    BROKER_A,
    XQ,
    Consumer,
    Load,
    Producer,
    Settings,
    open_transactions,
    queue_contents,
    quiet,
    topology_define,
)
from baton_client import Client

from .servers import poll_until

pytestmark = pytest.mark.integration

KILLS = int(os.environ.get("BATON_CRASH_KILLS") or 20)
SEED = int(os.environ.get("BATON_CRASH_SEED") or secrets.randbelow(10**6))
#: Seconds a process runs, once ready, before it is killed: a random moment in this range.
RUN_BEFORE_KILL_S = (0.3, 2.5)
#: The environment of the platform's processes: housekeeping (timeouts, lock expiry, the
#: channel supervisor) several times a second, and a channel lease that lapses soon after
#: its agent is killed.
PLATFORM_ENV = {"BATON_HOUSEKEEPING_INTERVAL_S": "0.3", "BATON_CHANNEL_LEASE_S": "5"}


@contextmanager
def database_of_its_own(tmp_path) -> Iterator[str]:
    """A fresh database on the suite's database server, as a DATABASE_URL; dropped after."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        yield f"sqlite:///{tmp_path / 'crash.sqlite3'}"
        return
    import psycopg

    name = f"baton_crash_{os.getpid()}_{secrets.token_hex(3)}"
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    params = {
        "host": host,
        "port": port,
        "user": db["USER"],
        "password": db.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**params) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{host}:{port}/{name}"
    finally:
        with psycopg.connect(**params) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Killer(threading.Thread):
    """Kills a process of the platform (one of ``names``, chosen at random each time) with
    SIGKILL at random moments and starts it again, ``kills`` times."""

    def __init__(self, platform: LivePlatform, names: list[str], kills: int, rng: random.Random) -> None:
        super().__init__(name=f"killer-{'-'.join(names)}", daemon=True)
        self.platform, self.names, self.kills, self.rng = platform, names, kills, rng
        self.done = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for _ in range(self.kills):
                time.sleep(self.rng.uniform(*RUN_BEFORE_KILL_S))  # the fault schedule: a random moment
                name = self.rng.choice(self.names) if len(self.names) > 1 else self.names[0]
                self.platform.kill(name)
                self.done += 1
                self.platform.restart(name)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def test_no_message_lost_duplicated_or_seen_uncommitted_while_servers_are_killed(tmp_path):
    with database_of_its_own(tmp_path) as database_url:
        crash_run(tmp_path, database_url, kills=KILLS)


def crash_run(
    tmp_path, database_url: str, *, kills: int, env: dict | None = None, webs: int = 1, workers: int = 1
) -> dict:
    """The crash test on a platform of ``webs`` web servers and ``workers`` workers (the
    clients spread over the web servers), ``kills`` kills shared between the web servers
    and the workers; asserts the verdict and returns the run's numbers."""
    rng = random.Random(SEED)
    load_settings = Settings()
    with LivePlatform(
        tmp_path / "var", database_url, env={**PLATFORM_ENV, **(env or {})}, webs=webs, workers=workers
    ) as platform:
        token = platform.prepare()
        platform.start()
        with Client(platform.url, token, timeout=30) as client:
            queues = topology_define(client, load_settings)
        load = Load(url=platform.urls, token=token, settings=load_settings, seed=SEED)
        names = platform.names()
        killers = [
            Killer(
                platform, [n for n in names if n.startswith("web")], kills - kills // 2, random.Random(rng.random())
            ),
            Killer(platform, [n for n in names if n.startswith("worker")], kills // 2, random.Random(rng.random())),
        ]
        started = time.monotonic()
        load.start()
        for killer in killers:
            killer.start()
        for killer in killers:
            killer.join()
        faults_s = time.monotonic() - started
        failed = [k for k in killers if k.error]
        if failed:
            load.stop.set()
            pytest.fail(f"{failed[0].name}: {failed[0].error!r}\n{platform.logs()}")
        # producers and consumers finish their rounds; the peek-lock consumers keep taking
        # what the channel still brings until it has brought everything (or a minute has
        # passed). What they have not taken by then stays on IN: the checker counts what the
        # queues hold as it counts what was consumed.
        load.finish(Producer, Consumer)
        with Client(platform.url, token, timeout=30) as client:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and client.display_queue(BROKER_A, XQ)["depth"]:
                time.sleep(0.5)  # polling interval of a bounded loop
        load.finish()

        with Client(platform.url, token, timeout=30) as client:
            # every unit of work resolves (or times out), the channel empties its transmission
            # queue, expired locks are released
            try:
                poll_until(
                    lambda: quiet(client, queues),
                    timeout=120,
                    interval=0.5,
                    what="every unit of work to resolve and the channel to settle",
                )
                stuck = []
            except AssertionError:
                stuck = open_transactions(client)
            queued = queue_contents(client, queues)
            channel = client._request("GET", "/api/channels/SOURCE.TO.TARGET/")
        verdict = history_checked(load.history, queued)

    history = load.history
    numbers = {
        "seed": SEED,
        "kills": sum(k.done for k in killers),
        "fault_seconds": round(faults_s, 1),
        "operations": history.operations,
        "indeterminate_calls": history.indeterminate_calls,
        **verdict.numbers(),
        "stuck": len(stuck),
        "units_of_work": dict(history.units),
        "channel_batches": channel["batches_committed"],
        "channel_backed_out": channel["batches_backed_out"],
    }
    print(f"\ncrash test ({webs} web, {workers} worker): " + ", ".join(f"{k} {v}" for k, v in numbers.items()))

    assert numbers["kills"] == kills
    assert not stuck, f"units of work stuck: {stuck}"
    assert verdict.ok, f"seed {SEED}: {verdict.problems()}"
    # the load did its work through the faults
    assert verdict.acknowledged > 0 and verdict.consumed > 0 and verdict.delivered > 0, numbers
    return numbers
