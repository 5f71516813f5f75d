"""The client's ``baton`` command, installed from its wheel into a fresh virtual environment
(tests/packaging/user_venv.py) and run as a user runs it, against a live server: put, get,
browse, publish and display over REST; exit codes 0, 1 (no message) and 2 (an error)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from brokers.services.access import api_token_issue

pytestmark = [pytest.mark.once, pytest.mark.integration]


@pytest.fixture
def baton(user_venv, live_server, queue, tmp_path):
    """Run ``baton ARGS`` from the virtual environment's bin/, outside the source tree, with
    BATON_URL and BATON_TOKEN set as a user sets them."""
    token = api_token_issue(username="cli", create_user=True, superuser=True)

    def run(*args: str, stdin: bytes | None = None, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(user_venv.root / "bin" / "baton"), *args],
            input=stdin,
            cwd=tmp_path,
            env=user_venv.env(**{"BATON_URL": live_server.url, "BATON_TOKEN": token, **env}),
            capture_output=True,
            timeout=120,
        )

    return run


def test_put_browse_get_publish_and_display(baton):
    put = baton("put", "QM1", "Q1", "hello", "--priority", "7", "--property", "order=42")
    assert put.returncode == 0, put.stderr
    msg_id = put.stdout.decode().strip()
    assert re.fullmatch(r"[0-9a-f]{48}", msg_id)
    assert baton("put", "QM1", "Q1", stdin=b"\xff\x00").returncode == 0  # no body: stdin, as bytes

    browsed = baton("browse", "QM1", "Q1", "--json")
    assert browsed.returncode == 0, browsed.stderr
    first, second = [json.loads(line) for line in browsed.stdout.decode().splitlines()]
    assert (first["msg_id"], first["body"], first["priority"], first["properties"]) == (
        msg_id,
        "hello",
        7,
        {"order": "42"},
    )
    assert (second["body"], second["body_base64"]) == (None, "/wA=")

    assert json.loads(baton("display", "queue", "QM1", "Q1").stdout)["depth"] == 2
    got = baton("get", "QM1", "Q1")
    assert (got.returncode, got.stdout) == (0, b"hello\n")
    assert json.loads(baton("get", "QM1", "Q1", "--json").stdout)["body_base64"] == "/wA="
    none = baton("get", "QM1", "Q1")
    assert none.returncode == 1 and b"No message available" in none.stderr and none.stdout == b""

    published = baton("publish", "QM1", "prices/eur", "1.08", "--retain")
    assert published.returncode == 0, published.stderr
    assert published.stdout.decode().endswith(" matched 0\n")
    assert "QM1" in [b["name"] for b in json.loads(baton("display", "broker").stdout)]


def test_errors_name_their_code_and_exit_2(baton):
    missing = baton("get", "QM1", "NOPE")
    assert missing.returncode == 2 and b"not_found" in missing.stderr
    refused = baton("put", "QM1", "Q1", "x", BATON_TOKEN="0" * 40)
    assert refused.returncode == 2 and b"not_authenticated" in refused.stderr
    bad = baton("put", "QM1", "Q1", "x", "--priority", "12")
    assert bad.returncode == 2 and b"invalid" in bad.stderr
    usage = baton("frobnicate")
    assert usage.returncode == 2 and b"usage: baton" in usage.stderr
