"""The wheel, installed with the ``scaled`` extra into a fresh virtual environment (no test
extras), holds every app and starts from outside the source tree: ``migrate`` and ``check``
pass, and every transport and backend the scaled-out form configures imports."""

from __future__ import annotations

import json
import subprocess
import textwrap
import zipfile
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

pytestmark = [pytest.mark.once, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def project_apps() -> list[str]:
    """The INSTALLED_APPS that live in this repository (not third-party packages, even when the
    virtual environment they are installed in lies inside the repository, as ``.venv`` does)."""
    return [
        app.name
        for app in apps.get_app_configs()
        if Path(app.path).resolve().is_relative_to(ROOT) and "site-packages" not in Path(app.path).parts
    ]


def run_outside(user_venv, args: list[str], cwd: Path, **env: str) -> str:
    done = subprocess.run(
        [str(user_venv.python), *args], cwd=cwd, env=user_venv.env(**env), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stderr[-6000:]}\n{done.stdout[-2000:]}"
    return done.stdout


def test_the_wheel_holds_every_app_its_templates_and_static_files(user_venv):
    names = zipfile.ZipFile(user_venv.wheel).namelist()
    missing = [app for app in project_apps() if f"{app.replace('.', '/')}/apps.py" not in names]
    assert missing == [], names[:50]
    assert "dashboard/templates/dashboard/base.html" in names
    assert "dashboard/static/dashboard/dashboard.css" in names
    assert "brokers/templates/brokers/session_docs.html" in names
    assert not [name for name in names if name.startswith(("tests/", "docs/", "bench/", "dashboard/frontend/"))]


def test_the_installed_wheel_migrates_and_checks_outside_the_source_tree(user_venv, tmp_path):
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "BATON_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'baton.sqlite3'}",
    }
    run_outside(user_venv, ["-m", "django", "migrate", "--noinput", "-v0"], tmp_path, **env)
    assert "no issues" in run_outside(user_venv, ["-m", "django", "check"], tmp_path, **env)
    where = json.loads(
        run_outside(
            user_venv,
            [
                "-c",
                textwrap.dedent("""
        import json, django
        django.setup()
        from django.apps import apps
        print(json.dumps({app.name: app.path for app in apps.get_app_configs()}))
    """),
            ],
            tmp_path,
            **env,
        )
    )
    site = user_venv.root.resolve()
    for app in project_apps():
        assert Path(where[app]).resolve().is_relative_to(site), (app, where[app])


def test_the_scaled_out_forms_transports_and_backends_import(user_venv, tmp_path):
    """What the README's scaled-out settings select: Celery's Redis transport (kombu), the
    Redis channel layer and the Redis wake-up bus; nothing connects."""
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "BATON_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": "postgres://baton:baton@127.0.0.1:9/baton",
        "CELERY_BROKER_URL": "redis://127.0.0.1:9/0",
        "BATON_REDIS_URL": "redis://127.0.0.1:9/1",
    }
    out = run_outside(
        user_venv,
        [
            "-c",
            textwrap.dedent("""
        import django
        django.setup()
        from django.conf import settings
        from django.utils.module_loading import import_string
        from config.celery import app
        transport = app.connection_for_write().transport_cls
        from kombu.transport import resolve_transport
        transport_class = resolve_transport(transport)
        layer = import_string(settings.CHANNEL_LAYERS["default"]["BACKEND"])
        from transactions.wakeup_redis import RedisBus
        import redis, channels_redis.core, kombu.transport.redis, psycopg
        print(transport_class.__module__, layer.__module__, RedisBus.__module__)
    """),
        ],
        tmp_path,
        **env,
    )
    assert out.split() == ["kombu.transport.redis", "channels_redis.core", "transactions.wakeup_redis"], out


def test_the_test_settings_name_the_same_apps():
    """The apps the checks above look for are those of the settings under test."""
    assert {
        "brokers",
        "pubsub",
        "transactions",
        "dashboard",
        "ingest",
        "analytics",
        "stomp_server",
        "workflows",
    } <= set(project_apps())
    assert set(project_apps()) <= {app.split(".")[0] for app in settings.INSTALLED_APPS}
