"""The console's pages carry the strict Content-Security-Policy (config/csp.py); the API's
pages and JSON do not need it and keep their own. The browser test (browser/test_csp.py)
checks that no page violates it."""

from __future__ import annotations

import pytest

from config.csp import POLICY

pytestmark = pytest.mark.django_db


def test_console_pages_carry_the_policy(client, admin_user):
    assert client.get("/login/").headers["Content-Security-Policy"] == POLICY
    client.force_login(admin_user)
    page = client.get("/")
    assert page.status_code == 200 and page.headers["Content-Security-Policy"] == POLICY
    assert "script-src 'self'" in POLICY and "unsafe-inline" not in POLICY and "unsafe-eval" not in POLICY


def test_the_api_is_left_alone(client, api):
    assert "Content-Security-Policy" not in api.get("/api/brokers/").headers
    assert "Content-Security-Policy" not in client.get("/api/schema/docs/").headers
