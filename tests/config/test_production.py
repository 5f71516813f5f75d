"""The production profile (``BATON_ENV=production``, config/settings/production.py): each
case starts Django in a subprocess with that environment, as a deployment would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # settings checks in subprocesses: the database plays no part

ROOT = Path(__file__).resolve().parents[2]
KEY = "k3y-" + "aB9_xZ2-qW7" * 6  # 70 characters, not the embedded key under var/
HOST = "baton.example.com"


def django(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BATON_", "DJANGO_")) and k not in ("DATABASE_URL", "CELERY_BROKER_URL")
    }
    base.update(
        {
            "BATON_VAR_DIR": str(tmp_path / "var"),
            "BATON_ENV": "production",
            "BATON_SECRET_KEY": KEY,
            "BATON_ALLOWED_HOSTS": HOST,
            **env,
        }
    )
    base = {k: v for k, v in base.items() if v is not None}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_check_deploy_gives_no_warnings(tmp_path):
    ran = django(tmp_path, "check", "--deploy", "--fail-level", "WARNING")
    assert ran.returncode == 0, ran.stderr
    assert "System check identified no issues (0 silenced)." in ran.stdout, ran.stdout + ran.stderr
    assert not (tmp_path / "var" / "secret_key").exists()  # the key came from the environment


def test_behind_a_tls_terminating_proxy_the_proxys_part_is_named_not_warned(tmp_path):
    ran = django(
        tmp_path,
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        BATON_SSL_REDIRECT="0",
        BATON_HSTS_SECONDS="0",
        BATON_PROXY_SSL_HEADER="X-Forwarded-Proto",
    )
    assert ran.returncode == 0, ran.stderr
    assert "no issues (2 silenced)" in ran.stdout, ran.stdout + ran.stderr


PROBE = """
import json
from django.conf import settings
from django.test import Client
c = Client()
plain = c.get("/login/", HTTP_HOST="{host}")
proxied = c.get("/login/", HTTP_HOST="{host}", HTTP_X_FORWARDED_PROTO="https")
foreign = c.get("/login/", HTTP_HOST="evil.example", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps({{
    "debug": settings.DEBUG, "session_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_secure": settings.CSRF_COOKIE_SECURE, "proxy": list(settings.SECURE_PROXY_SSL_HEADER or []),
    "trusted": settings.CSRF_TRUSTED_ORIGINS,
    "plain": [plain.status_code, plain.headers.get("Location")],
    "proxied": [proxied.status_code, proxied.headers.get("Strict-Transport-Security")],
    "foreign": foreign.status_code,
    "cookie_secure": bool(proxied.cookies["csrftoken"]["secure"]),
}}))
"""


def test_settings_and_what_a_request_meets(tmp_path):
    ran = django(tmp_path, "migrate", "--noinput", "-v0")
    assert ran.returncode == 0, ran.stderr
    ran = django(
        tmp_path,
        "shell",
        "-c",
        PROBE.format(host=HOST),
        BATON_PROXY_SSL_HEADER="X-Forwarded-Proto",
        BATON_CSRF_TRUSTED_ORIGINS=f"https://{HOST}",
    )
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen["debug"] is False and seen["session_secure"] and seen["csrf_secure"] and seen["cookie_secure"]
    assert seen["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"] and seen["trusted"] == [f"https://{HOST}"]
    assert seen["plain"] == [301, f"https://{HOST}/login/"]  # plain HTTP is sent to HTTPS
    assert seen["proxied"] == [200, "max-age=31536000; includeSubDomains; preload"]
    assert seen["foreign"] == 400  # a host outside BATON_ALLOWED_HOSTS


@pytest.mark.parametrize(
    "env, words",
    [
        ({"BATON_SECRET_KEY": None}, "BATON_SECRET_KEY"),
        ({"BATON_SECRET_KEY": "short"}, "at least 50"),
        ({"BATON_ALLOWED_HOSTS": None}, "BATON_ALLOWED_HOSTS"),
        ({"BATON_ALLOWED_HOSTS": "*"}, "BATON_ALLOWED_HOSTS"),
        ({"BATON_DEBUG": "1"}, "BATON_DEBUG"),
        ({"BATON_ENV": "staging"}, "BATON_ENV"),
    ],
)
def test_a_production_start_without_what_it_needs_is_refused(tmp_path, env, words):
    ran = django(tmp_path, "check", **env)
    assert ran.returncode != 0 and "ImproperlyConfigured" in ran.stderr and words in ran.stderr, ran.stderr[-800:]


def test_the_docker_compose_form_passes_check_deploy(tmp_path):
    """docker-compose.yml runs the production profile with platform/env.example's settings."""
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "BATON_ENV: production" in compose and "env_file: platform/env.example" in compose
    example = dict(
        line.split("=", 1)
        for line in (ROOT / "platform" / "env.example").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert example.pop("BATON_SECRET_KEY") == ""  # each deployment brings its own
    ran = django(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **example)
    assert ran.returncode == 0, ran.stderr
    assert "no issues (0 silenced)" in ran.stdout, ran.stdout + ran.stderr
