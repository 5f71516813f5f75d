"""The client without a server: it imports without Django, and error bodies map to the
exception classes by their stable code (through httpx's MockTransport)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from baton_client import (
    AlreadyExists,
    BatonClientError,
    Client,
    Conflict,
    GetInhibited,
    InvalidInput,
    LockLost,
    MessageTooLarge,
    NotAuthenticated,
    NotFound,
    OptionsConflict,
    PermissionDenied,
    PutInhibited,
    QueueFull,
    QueueInUse,
    ServerError,
    Throttled,
    TransactionBackedOut,
    TransactionNotActive,
)

pytestmark = pytest.mark.once  # once: imports and the client's own code; no database

ROOT = Path(__file__).resolve().parents[2]


def test_the_client_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import baton_client; assert 'django' not in sys.modules, "
            "sorted(m for m in sys.modules if m.startswith('django'))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def _client_answering(status: int, body=None, *, text: str | None = None, headers=None) -> Client:
    def handler(request: httpx.Request) -> httpx.Response:
        if text is not None:
            return httpx.Response(status, text=text, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return Client("http://baton.invalid", "tok", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    "status, code, cls",
    [
        (400, "invalid", InvalidInput),
        (401, "not_authenticated", NotAuthenticated),
        (403, "permission_denied", PermissionDenied),
        (404, "not_found", NotFound),
        (409, "transaction_backed_out", TransactionBackedOut),
        (409, "transaction_not_active", TransactionNotActive),
        (409, "put_inhibited", PutInhibited),
        (409, "get_inhibited", GetInhibited),
        (409, "queue_full", QueueFull),
        (409, "options_conflict", OptionsConflict),
        (409, "already_exists", AlreadyExists),
        (409, "queue_in_use", QueueInUse),
        (410, "lock_lost", LockLost),
        (413, "message_too_large", MessageTooLarge),
        (429, "throttled", Throttled),
        (500, "server_error", ServerError),
    ],
)
def test_error_codes_map_to_classes(status, code, cls):
    with _client_answering(status, {"code": code, "message": "m", "extra": 1}) as client:
        with pytest.raises(cls) as info:
            client.list_brokers()
    error = info.value
    assert type(error) is cls and isinstance(error, BatonClientError)
    assert (error.code, error.message, error.status, error.details) == (code, "m", status, {"extra": 1})


def test_conflicts_share_a_base_class_and_details_are_exposed():
    body = {
        "code": "transaction_backed_out",
        "message": "rolled back",
        "transaction": "T1",
        "reason": "cascade from T0",
    }
    with _client_answering(409, body) as client, pytest.raises(Conflict) as info:
        client.display_transaction("T1")
    assert isinstance(info.value, TransactionBackedOut)
    assert info.value.reason == "cascade from T0" and info.value.transaction == "T1"


def test_unknown_codes_and_foreign_bodies():
    with _client_answering(418, {"code": "teapot", "message": "short and stout"}) as client:
        with pytest.raises(BatonClientError) as info:
            client.list_brokers()
    assert type(info.value) is BatonClientError and info.value.code == "teapot" and info.value.status == 418
    with _client_answering(502, text="<html>bad gateway</html>") as client, pytest.raises(ServerError) as info:
        client.list_brokers()
    assert info.value.status == 502 and "bad gateway" in info.value.message
    with _client_answering(429, {"code": "throttled", "message": "slow"}, headers={"Retry-After": "7"}) as client:
        with pytest.raises(Throttled) as info:
            client.list_brokers()
    assert info.value.retry_after == 7
