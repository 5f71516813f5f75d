"""Sign-in throttling (django-axes, config/settings/signin.py): failed sign-ins are counted by
user name and by address; the failure that reaches the limit and every sign-in after it is
refused (429), the right password included, and a success before then resets the user's count."""

from __future__ import annotations

import pytest
from django.test import override_settings

from .conftest import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("limit")]

PASSWORD = "pw-for-tests-123"


@pytest.fixture
def limit():
    # a fast hasher: the throttle is what is tested, not the password hashing's cost
    with override_settings(AXES_FAILURE_LIMIT=3, PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


def sign_in(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client) -> bool:
    return client.get("/").status_code == 200


def test_a_user_name_is_locked_out_after_failures_from_any_address(client):
    make_user("alice")
    for n in range(2):
        assert sign_in(client, "alice", "wrong", address=f"10.0.0.{n + 1}").status_code == 200  # the form again
    assert sign_in(client, "alice", "wrong", address="10.0.0.3").status_code == 429  # the limit: locked out
    refused = sign_in(client, "alice", PASSWORD, address="10.0.0.99")
    assert refused.status_code == 429
    assert not signed_in(client)


def test_an_address_is_locked_out_after_failures_for_any_user_name(client):
    make_user("bob")
    for name in ("x1", "x2"):
        assert sign_in(client, name, "wrong").status_code == 200
    assert sign_in(client, "x3", "wrong").status_code == 429
    assert sign_in(client, "bob", PASSWORD).status_code == 429
    assert not signed_in(client)
    assert sign_in(client, "bob", PASSWORD, address="10.0.0.2").status_code == 302  # elsewhere: signed in
    assert signed_in(client)


def test_a_success_resets_the_count(client):
    make_user("carol")
    for _ in range(2):
        sign_in(client, "carol", "wrong")
    assert sign_in(client, "carol", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        sign_in(client, "carol", "wrong", address="10.0.0.5")
    assert sign_in(client, "carol", PASSWORD, address="10.0.0.6").status_code == 302
