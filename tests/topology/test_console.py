"""The console's definitions page and download (superusers only; the import is driven by
definitions.js against the API: tests/dashboard/browser/test_definitions.py)."""

from __future__ import annotations

import json

import yaml
from django.contrib.auth import get_user_model


def _user(username: str, *, superuser: bool):
    user = get_user_model()(username=username, is_superuser=superuser, is_staff=superuser)
    user.set_password("pw-for-tests-123")
    user.save()
    return user


def test_a_superuser_downloads_the_document_and_finds_the_page_in_the_nav(client, platform):
    client.force_login(_user("root", superuser=True))
    page = client.get("/")
    assert b'href="/definitions/"' in page.content
    page = client.get("/definitions/")
    assert page.status_code == 200 and b"definitions.js" in page.content and b"<script>" not in page.content
    download = client.get("/definitions/export/")
    assert download["Content-Disposition"] == 'attachment; filename="baton-definitions.json"'
    document = json.loads(download.content)
    assert document == client.get("/api/definitions/").json()
    assert b"s3cret" not in download.content
    as_yaml = client.get("/definitions/export/", {"format": "yaml", "all": "1"})
    assert as_yaml["Content-Disposition"].endswith('baton-definitions.yaml"')
    assert yaml.safe_load(as_yaml.content)["queues"][0]["put_enabled"] is True


def test_others_are_refused_and_see_no_link(client, platform):
    client.force_login(_user("someone", superuser=False))
    assert b'href="/definitions/"' not in client.get("/").content
    assert client.get("/definitions/").status_code == 403
    assert client.get("/definitions/export/").status_code == 403
