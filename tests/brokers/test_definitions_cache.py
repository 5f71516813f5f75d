"""The per-process definitions cache (brokers/definitions.py) is never stale: a change
made by any path — the services, raw SQL, another process — is seen by the next put or get,
and a rolled-back change leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.db import transaction as db

from brokers import queries
from baton_client.errors import GetInhibited, PutInhibited
from brokers.exceptions import QueueNotFound
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_alter, queue_define, queue_delete
from tests.conftest import bodies, database_url, msgs

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_change_through_the_service_is_seen_at_once(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))  # caches Q1
    queue_alter(broker="QM1", name="Q1", put_enabled=False)
    with pytest.raises(PutInhibited):
        message_put(broker="QM1", queue="Q1", messages=msgs("b"))
    queue_alter(broker="QM1", name="Q1", put_enabled=True, get_enabled=False)
    message_put(broker="QM1", queue="Q1", messages=msgs("b"))
    with pytest.raises(GetInhibited):
        message_get(broker="QM1", queue="Q1")


def test_a_change_in_raw_sql_is_seen_at_once(queue):
    """The database's triggers change the version, whoever writes."""
    message_get(broker="QM1", queue="Q1")  # caches Q1
    with connection.cursor() as cursor:
        cursor.execute("UPDATE brokers_queue SET get_enabled = %s WHERE name = 'Q1'", [False])
    with pytest.raises(GetInhibited):
        message_get(broker="QM1", queue="Q1")


def test_counters_do_not_change_the_version(queue):
    before = queries.definitions_version()
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    message_get(broker="QM1", queue="Q1")
    assert queries.definitions_version() == before
    queue_alter(broker="QM1", name="Q1", max_depth=7)
    assert queries.definitions_version() != before


def test_a_deleted_and_redefined_queue_is_the_new_one(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("old"))
    queue_delete(broker="QM1", name="Q1", purge=True)
    with pytest.raises(QueueNotFound):
        message_get(broker="QM1", queue="Q1")
    queue_define(broker="QM1", name="Q1")
    message_put(broker="QM1", queue="Q1", messages=msgs("new"))
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["new"]


def test_a_rolled_back_change_leaves_no_cached_definition(queue):
    class Undo(Exception):
        pass

    with pytest.raises(Undo), db.atomic():
        queue_alter(broker="QM1", name="Q1", put_enabled=False)
        with pytest.raises(PutInhibited):  # cached while the change was visible
            message_put(broker="QM1", queue="Q1", messages=msgs("a"))
        raise Undo
    # The next, different change must not find the rolled-back one's cache entry.
    queue_alter(broker="QM1", name="Q1", description="changed")
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]


@pytest.mark.django_db(transaction=True)
def test_a_change_made_by_another_process_is_seen_at_once(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))  # caches Q1 here
    env = {**os.environ, "DATABASE_URL": database_url()}
    proc = subprocess.run(
        [sys.executable, "manage.py", "alter_queue", "QM1", "Q1", "--no-put-enabled"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(PutInhibited):
        message_put(broker="QM1", queue="Q1", messages=msgs("b"))


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE brokers_broker SET max_message_length = 10 WHERE name = 'QM1'",
        "INSERT INTO brokers_grant (user_id, broker, queue, may_put, may_get, may_browse, may_admin, updated_at)"
        " SELECT id, 'QM1', '', %s, %s, %s, %s, CURRENT_TIMESTAMP FROM auth_user",
    ],
)
def test_every_definition_table_changes_the_version(queue, django_user_model, statement):
    django_user_model.objects.create(username="someone")
    before = queries.definitions_version()
    with connection.cursor() as cursor:
        cursor.execute(statement, [True, False, False, False] if "%s" in statement else None)
    assert queries.definitions_version() != before
