"""PostgreSQL: a persistent connection is health-checked once per window
(``BATON_DB_HEALTH_CHECK_S``), not at every request; a connection that broke is replaced
at the next request after the one that met it."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started
from django.db import OperationalError, connection, connections

from transactions.backends.postgresql import base as backend

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pg(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    now = [1000.0]
    monkeypatch.setattr(backend, "monotonic", lambda: now[0])
    checks = []
    db = connections["default"]
    real = type(db).is_usable
    monkeypatch.setattr(db, "is_usable", lambda: checks.append(now[0]) or real(db))
    db.close()
    return now, checks


def request(sql: str = "SELECT 1") -> None:
    """What Django does around a request: its connection checks, then the view's statement."""
    request_started.send(sender=None)
    try:
        with connection.cursor() as c:
            c.execute(sql)
    finally:
        request_finished.send(sender=None)


def test_requests_within_the_window_are_not_checked(pg, settings):
    now, checks = pg
    settings.BATON_DB_HEALTH_CHECK_S = 10
    for _ in range(5):
        request()
        now[0] += 1
    assert checks == []  # opened at 1000: healthy until 1010
    now[0] = 1010
    request()
    request()
    assert checks == [1010]  # checked once, good for another window
    now[0] = 1020
    request()
    assert checks == [1010, 1020]


def test_a_broken_connection_fails_one_request_and_the_next_gets_a_new_one(pg, settings):
    assert pg  # the window's clock, and the health checks counted
    settings.BATON_DB_HEALTH_CHECK_S = 10
    request()
    pid = connection.connection.info.backend_pid
    killer = type(connections["default"])(connection.settings_dict, alias="killer")
    try:
        with killer.cursor() as c:
            c.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        killer.close()
    with pytest.raises(OperationalError):
        request()
    request()  # Django saw the error: it checked and replaced the connection
    assert connection.connection.info.backend_pid != pid
