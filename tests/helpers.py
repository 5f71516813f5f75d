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
