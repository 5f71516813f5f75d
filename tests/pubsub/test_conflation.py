"""Conflation: the first publication after a quiet interval at once, the latest of those
within the interval when it ends, delivered by the sweeper once — also when the process
that held it has gone (the sweeper runs in a fresh process)."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from pubsub.models import Conflation, RetainedPublication
from pubsub.services.conflation import conflation_sweep
from pubsub.services.subscriptions import subscription_define
from pubsub.services.topics import topic_alter, topic_define
from tests.conftest import database_url

from .conftest import publish, received

pytestmark = pytest.mark.django_db

HOUR = 3_600_000


@pytest.fixture
def conflated(queues):
    topic_define(broker="QM1", name="PRICES", topic_string="prices", conflation_interval_ms=HOUR)
    subscription_define(broker="QM1", name="a", topic_filter="prices/#", queue="S1")
    subscription_define(broker="QM1", name="b", topic_filter="prices/+", queue="S2")


def bodies(queue: str) -> list[str]:
    return [b for _, b, _ in received(queue)]


def interval_ended() -> None:
    Conflation.objects.update(
        last_delivered_at=timezone.now() - timedelta(hours=2), due_at=timezone.now() - timedelta(hours=1)
    )


def test_first_at_once_then_latest_held_until_the_interval_ends(conflated):
    assert publish("prices/eur", "1").matched == 2
    held = [publish("prices/eur", str(n)) for n in (2, 3, 4)]
    assert all(r.held and r.matched == 0 for r in held)
    assert bodies("S1") == ["1"]
    assert conflation_sweep().delivered == 0  # not due yet
    interval_ended()
    outcome = conflation_sweep()
    assert (outcome.delivered, outcome.copies) == (1, 2)
    assert bodies("S1") == ["1", "4"] and bodies("S2") == ["1", "4"]
    assert conflation_sweep().delivered == 0  # never twice


def test_topics_conflate_separately_and_other_topics_not_at_all(conflated):
    subscription_define(broker="QM1", name="c", topic_filter="#", queue="S3")
    publish("prices/eur", "e1")
    publish("prices/usd", "u1")
    publish("prices/eur", "e2")
    publish("news", "n1")
    publish("news", "n2")
    assert bodies("S3") == ["e1", "u1", "n1", "n2"]


def test_retained_follows_every_publication_even_when_held(conflated):
    publish("prices/eur", "1", retain=True)
    publish("prices/eur", "2", retain=True)
    assert bytes(RetainedPublication.objects.get(topic="prices/eur").body) == b"2"


def test_publication_after_an_overdue_hold_supersedes_it(conflated):
    publish("prices/eur", "1")
    publish("prices/eur", "2")
    interval_ended()  # the sweeper has not run
    assert publish("prices/eur", "3").matched == 2
    assert conflation_sweep().delivered == 0
    assert bodies("S1") == ["1", "3"]


def test_interval_zero_turns_conflation_off(conflated):
    topic_alter(broker="QM1", name="PRICES", conflation_interval_ms=0)
    for n in "123":
        publish("prices/eur", n)
    assert bodies("S1") == ["1", "2", "3"]


@pytest.mark.django_db(transaction=True)
def test_sweeper_in_another_process_delivers_what_this_one_held(conflated):
    """A "process restart": the publisher's process holds a publication and forgets it; a
    new process's sweeper (what the beat task runs) delivers it, once."""
    publish("prices/eur", "1")
    publish("prices/eur", "held")
    interval_ended()
    script = (
        "import django; django.setup(); from pubsub.services.conflation import conflation_sweep; "
        "print(conflation_sweep().delivered)"
    )
    env = {**__import__("os").environ, "DATABASE_URL": database_url()}
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert [r.stdout.strip() for r in runs] == ["1", "0"]
    assert bodies("S1") == ["1", "held"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_sweepers_deliver_a_held_publication_once(conflated):
    """Three sweepers in three processes at once: the row lock (SKIP LOCKED on PostgreSQL,
    the write lock on SQLite) and the re-check let exactly one deliver it."""
    publish("prices/eur", "1")
    publish("prices/eur", "held")
    interval_ended()
    script = (
        "import django; django.setup(); from pubsub.services.conflation import conflation_sweep; "
        "print(conflation_sweep().delivered)"
    )
    env = {**__import__("os").environ, "DATABASE_URL": database_url()}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True) for _ in range(3)
    ]
    delivered = [int(p.communicate(timeout=120)[0].strip()) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(delivered) == 1
    assert bodies("S1") == ["1", "held"] and bodies("S2") == ["1", "held"]
