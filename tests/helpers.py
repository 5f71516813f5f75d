"""Assertions the test suites share."""

from __future__ import annotations


def assert_error(response, status: int, code: str) -> dict:
    """An error answer: the ``status``, and the JSON body every error has, ``{"code", "message",
    ...details}``, with ``code``; returns the body."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert body["code"] == code, body
    assert isinstance(body.get("message"), str) and body["message"], body
    return body


def wakeup_listener():
    """PostgreSQL: a connection of its own that ``LISTEN``s on the wake-up channel, as another
    process's listener would (a context manager; ``listener.notifies(...)`` to hear)."""
    import psycopg
    from django.db import connection

    from transactions.queries import WAKEUP_CHANNEL

    params = connection.get_connection_params()
    for key in ("context", "cursor_factory", "prepare_threshold"):
        params.pop(key, None)
    listener = psycopg.connect(**params, autocommit=True)
    listener.execute(f"LISTEN {WAKEUP_CHANNEL}")
    return listener
