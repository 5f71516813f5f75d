"""The TCP door cannot be held open (docs/stomp.md, "Bounds"): password sign-ins share the
dashboard's throttle and lock-out (django-axes; API tokens are not counted); a connection
that has not completed CONNECT in BATON_STOMP_CONNECT_TIMEOUT_S is closed with ERROR; the
connections (in all, per user), the subscriptions of a connection and the durable topic
subscriptions of a user who does not administer the broker are bounded, each refusal an
ERROR that says which bound and how to get under it, with nothing half-made."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from brokers.models import Queue
from brokers.services.access import api_token_issue, grant_actions
from stomp_server.frames import FrameParser
from stomp_server.protocol import LIVE

from .conftest import Raw, bye, connected, until

PASSWORD = "pw-for-stomp-123"


@pytest.fixture
def throttle(settings):
    settings.AXES_FAILURE_LIMIT = 3
    # a fast hasher: the throttle is what is tested, not the password hashing's cost
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def password_user(name: str, *, superuser: bool = True):
    User = get_user_model()
    make = User.objects.create_superuser if superuser else User.objects.create_user
    return make(username=name, password=PASSWORD)


def stomp_sign_in(port: int, login: str, passcode: str):
    """CONNECT with a password: the server's first frame (CONNECTED, or ERROR then close)."""
    raw = Raw(port)
    raw.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:{login}\npasscode:{passcode}\n\n\0".encode())
    frame = raw.next()
    if frame.command == "ERROR":
        assert raw.closed_after() == []
    raw.close()
    return frame


def web_sign_in(login: str, password: str, address: str) -> int:
    return Client().post("/login/", {"username": login, "password": password}, REMOTE_ADDR=address).status_code


def test_a_user_locked_out_at_login_is_refused_over_stomp(stomp_port, stomp_broker, throttle):
    password_user("alice")
    assert stomp_sign_in(stomp_port, "alice", PASSWORD).command == "CONNECTED"
    for n in range(3):
        web_sign_in("alice", "wrong", f"10.0.0.{n + 1}")
    assert web_sign_in("alice", PASSWORD, "10.0.0.9") == 429  # locked out at /login/
    refused = stomp_sign_in(stomp_port, "alice", PASSWORD)  # the right password, another door
    assert refused.command == "ERROR"
    assert "locked out" in refused.get("message")
    assert refused.get("x-baton-code") == "throttled"


def test_failed_stomp_passwords_count_toward_the_lockout(stomp_port, stomp_broker, throttle):
    password_user("bob")
    for _ in range(2):
        frame = stomp_sign_in(stomp_port, "bob", "wrong")
        assert frame.command == "ERROR" and "Bad login or passcode" in frame.get("message")
    assert web_sign_in("bob", "wrong", "10.0.0.7") == 429  # the third failure, at /login/: the limit
    assert web_sign_in("bob", PASSWORD, "10.0.0.8") == 429
    assert "locked out" in stomp_sign_in(stomp_port, "bob", PASSWORD).get("message")


def test_an_address_that_fails_over_stomp_is_locked_out_for_every_user(stomp_port, stomp_broker, throttle):
    password_user("carol")
    for name in ("x1", "x2", "x3"):
        stomp_sign_in(stomp_port, name, "wrong")
    assert "locked out" in stomp_sign_in(stomp_port, "carol", PASSWORD).get("message")
    assert web_sign_in("carol", PASSWORD, "127.0.0.1") == 429  # the same address at /login/
    assert web_sign_in("carol", PASSWORD, "10.0.0.2") == 302  # elsewhere: signed in


def test_a_success_resets_the_count_and_tokens_are_not_counted(stomp_port, stomp_broker, throttle, token):
    password_user("dave")
    for _ in range(2):
        stomp_sign_in(stomp_port, "dave", "wrong")
    assert stomp_sign_in(stomp_port, "dave", PASSWORD).command == "CONNECTED"  # resets dave's count
    for _ in range(2):
        stomp_sign_in(stomp_port, "dave", "wrong")
    assert web_sign_in("dave", PASSWORD, "10.0.0.3") == 302  # 2 failures since the reset: not locked
    for _ in range(3):
        stomp_sign_in(stomp_port, "dave", "wrong")
    assert "locked out" in stomp_sign_in(stomp_port, "dave", PASSWORD).get("message")
    # this address is locked out for passwords; an API token is no password: not counted, not refused
    conn, _ = connected(stomp_port, token)
    bye(conn)


def test_a_connection_without_connect_is_closed_in_time(stomp_port, settings):
    settings.BATON_STOMP_CONNECT_TIMEOUT_S = 0.3
    silent, partial = Raw(stomp_port), Raw(stomp_port)
    partial.send(b"CONNECT\naccept-version:1.2\nlog")
    for raw in (silent, partial):
        got = raw.closed_after()
        assert [f.command for f in got] == ["ERROR"]
        assert "No CONNECT within 0.3 s" in got[0].get("message")
    until(lambda: not LIVE, what="the connections to end")


def test_a_connection_that_connected_in_time_stays(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_CONNECT_TIMEOUT_S = 0.3
    conn, listener = connected(stomp_port, token)
    raw = Raw(stomp_port)  # the timer of a later connection has run out after this one's
    assert raw.closed_after()[0].command == "ERROR"
    conn.send("/queue/Q1", "still here", receipt="r1")
    listener.wait(lambda: "r1" in listener.receipts)
    assert not listener.errors
    bye(conn)


def test_connections_are_bounded_in_all(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_MAX_CONNECTIONS = 2
    first, second = Raw(stomp_port), Raw(stomp_port)
    first.connect(token)
    second.connect(token)
    third = Raw(stomp_port)
    got = third.closed_after()
    assert [f.command for f in got] == ["ERROR"]
    assert "BATON_STOMP_MAX_CONNECTIONS" in got[0].get("message")
    first.close()
    until(lambda: len(LIVE) < 2, what="the first connection to end")
    Raw(stomp_port).connect(token)


def test_connections_of_one_user_are_bounded(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_MAX_CONNECTIONS_PER_USER = 2
    first, second = Raw(stomp_port), Raw(stomp_port)
    first.connect(token)
    second.connect(token)
    third = Raw(stomp_port)
    third.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:tester\npasscode:{token}\n\n\0".encode())
    got = third.closed_after()
    assert [f.command for f in got] == ["ERROR"]
    assert "BATON_STOMP_MAX_CONNECTIONS_PER_USER" in got[0].get("message")
    other = api_token_issue(username="other", create_user=True, superuser=True)
    raw = Raw(stomp_port)
    raw.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:other\npasscode:{other}\n\n\0".encode())
    assert raw.next().command == "CONNECTED"  # another user is not held up
    first.close()
    until(lambda: len(LIVE) < 3, what="the first connection to end")
    Raw(stomp_port).connect(token)


def test_subscriptions_of_a_connection_are_bounded(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_MAX_SUBSCRIPTIONS = 2
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(
        b"SUBSCRIBE\nid:1\ndestination:/queue/Q1\nreceipt:r1\n\n\0"
        b"SUBSCRIBE\nid:2\ndestination:/topic/a\nreceipt:r2\n\n\0"
    )
    assert [raw.next().get("receipt-id") for _ in range(2)] == ["r1", "r2"]
    before = set(Queue.objects.values_list("name", flat=True))
    raw.send(b"SUBSCRIBE\nid:3\ndestination:/topic/b\nreceipt:r3\n\n\0")
    got = raw.closed_after()
    assert [f.command for f in got] == ["ERROR"] and got[0].get("receipt-id") == "r3"
    assert "BATON_STOMP_MAX_SUBSCRIPTIONS" in got[0].get("message")
    assert set(Queue.objects.values_list("name", flat=True)) <= before  # nothing made for it


def durable(raw: Raw, n: int, filter: str = "news") -> None:
    raw.send(
        f"SUBSCRIBE\nid:d{n}\ndestination:/topic/{filter}\ndurable:true\nauto-delete:false\nreceipt:r{n}\n\n\0".encode()
    )


def test_durable_subscriptions_of_a_user_who_does_not_administer_are_bounded(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_MAX_DURABLE_PER_USER = 2
    plain = api_token_issue(username="plain", create_user=True)
    grant_actions(username="plain", broker="QM1", actions=["get", "put"])
    raw = Raw(stomp_port)
    raw.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:plain\npasscode:{plain}\n\n\0".encode())
    assert raw.next().command == "CONNECTED"
    for n in (1, 2):
        durable(raw, n)
        assert raw.next().get("receipt-id") == f"r{n}"
    durables = set(Queue.objects.filter(name__startswith="stomp.d.").values_list("name", flat=True))
    assert len(durables) == 2
    durable(raw, 3)
    got = raw.closed_after()
    assert [f.command for f in got] == ["ERROR"] and got[0].get("receipt-id") == "r3"
    assert "the most a user who does not administer it may hold (2)" in got[0].get("message")
    assert set(Queue.objects.filter(name__startswith="stomp.d.").values_list("name", flat=True)) == durables
    # a durable subscription held already is found again (not a new one)
    again = Raw(stomp_port)
    again.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:plain\npasscode:{plain}\n\n\0".encode())
    assert again.next().command == "CONNECTED"
    durable(again, 1)
    assert again.next().get("receipt-id") == "r1"
    # a user who administers the broker is not bounded by it
    admin = Raw(stomp_port)
    admin.connect(token)
    for n in (1, 2, 3):
        durable(admin, n)
        assert admin.next().get("receipt-id") == f"r{n}"
    assert Queue.objects.filter(name__startswith="stomp.d.").count() == 5


def ws_first_frame(port: int, data: bytes | None):
    """Over /stomp/ (the door any web page can reach): send ``data`` (None: nothing) and
    return the server's first frame."""
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/stomp/", subprotocols=["v12.stomp"], open_timeout=20) as ws:
        if data is not None:
            ws.send(data)
        parser = FrameParser(max_frame=1 << 20, version="1.2")
        while True:
            got = ws.recv(timeout=20)
            frames = parser.feed(got if isinstance(got, bytes) else got.encode())
            if frames:
                return frames[0]


def test_the_websocket_door_shares_the_lockout_and_the_connect_timeout(web_port, stomp_broker, throttle, settings):
    password_user("erin")
    for n in range(3):
        web_sign_in("erin", "wrong", f"10.0.1.{n + 1}")
    connect = f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:erin\npasscode:{PASSWORD}\n\n\0".encode()
    refused = ws_first_frame(web_port, connect)
    assert refused.command == "ERROR" and "locked out" in refused.get("message")
    settings.BATON_STOMP_CONNECT_TIMEOUT_S = 0.3
    silent = ws_first_frame(web_port, None)
    assert silent.command == "ERROR" and "No CONNECT within 0.3 s" in silent.get("message")


def test_a_password_sign_in_does_not_hold_up_other_connections(stomp_port, stomp_broker, token, throttle, monkeypatch):
    """A password's hash takes a fifth of a second: while one CONNECT's hash is under way (held
    here until the test lets it go), another connection's SEND is applied and answered, on
    SQLite's one STOMP thread too (the sign-in's thread is ``blocking``)."""
    import threading

    from django.contrib.auth.hashers import MD5PasswordHasher

    password_user("slow")
    hashing, release = threading.Event(), threading.Event()
    verify = MD5PasswordHasher.verify

    def slow_verify(self, password, encoded):
        hashing.set()
        assert release.wait(20)
        return verify(self, password, encoded)

    other = Raw(stomp_port)
    other.connect(token)  # an API token: no hash
    monkeypatch.setattr(MD5PasswordHasher, "verify", slow_verify)
    signing = Raw(stomp_port)
    try:
        signing.send(f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:slow\npasscode:{PASSWORD}\n\n\0".encode())
        assert hashing.wait(10)
        other.send(b"SEND\ndestination:/queue/Q1\nreceipt:r1\n\nhello\0")
        receipt = other.next()  # within the socket's timeout, while the hash is still held
        assert receipt.command == "RECEIPT" and not release.is_set()
        release.set()
        assert signing.next().command == "CONNECTED"
    finally:
        release.set()
        signing.close()
        other.close()
