"""``manage.py baton backup`` / ``restore`` on PostgreSQL with the real tools (``pg_dump -Fc``,
``pg_restore``), each in its own process as an operator runs them: a copy of one scratch
database restored into another holds its messages; a restore while another session is
connected is refused and changes nothing; a file that is not a dump is refused; restored
over its own database, what was made after the backup is gone, a table not in the dump too;
a restore that fails half-way through changes nothing. The SQLite
form, mid-flow against a real server: tests/integration/test_backup.py."""

from __future__ import annotations

import secrets
import subprocess
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.db import connection

from tests.integration.servers import PYTHON, ROOT, base_env, manage, manage_each


@contextmanager
def scratch_database(prefix: str):
    """A fresh database on the pass's PostgreSQL server; its URL. Dropped afterwards."""
    s = connection.settings_dict
    server = {"host": s["HOST"], "port": s["PORT"], "user": s["USER"], "password": s.get("PASSWORD") or None}
    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
        yield f"postgres://{s['USER']}{password}@{s['HOST']}:{s['PORT']}/{name}"
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def failing(env: dict, *args: str) -> str:
    done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout
    return done.stderr


def test_a_dump_restored_into_another_database_holds_its_messages(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("pg_dump and pg_restore: the PostgreSQL pass")
    with scratch_database("baton_backup_a") as a, scratch_database("baton_backup_b") as b:
        env_a = {**base_env(tmp_path / "a"), "DATABASE_URL": a}
        env_b = {**base_env(tmp_path / "b"), "DATABASE_URL": b}
        manage_each(
            env_a,
            ["migrate", "--noinput", "-v0"],
            ["define_broker", "BK"],
            ["define_queue", "BK", "Q1"],
            ["put", "BK", "Q1", "one"],
            ["put", "BK", "Q1", "two"],
        )
        dump = tmp_path / "baton.dump"
        assert "backed up the postgresql database" in manage(env_a, "baton", "backup", str(dump))
        assert dump.read_bytes()[:5] == b"PGDMP"  # pg_dump's custom format

        # another session on the target (as a running platform's): refused, nothing changed
        parts = urlsplit(b)
        with psycopg.connect(urlunsplit(parts._replace(scheme="postgresql"))):
            refused = failing(env_b, "baton", "restore", str(dump))
        assert "The platform is running" in refused and "nothing was changed" in refused
        not_a_dump = tmp_path / "not-a-dump"
        not_a_dump.write_text("hello")
        assert "nothing was changed" in failing(env_b, "baton", "restore", str(not_a_dump))
        with psycopg.connect(urlunsplit(parts._replace(scheme="postgresql"))) as target:
            assert target.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0

        assert "restored" in manage(env_b, "baton", "restore", str(dump))
        got = manage_each(env_b, ["brokers_recover"], ["get", "BK", "Q1"], ["get", "BK", "Q1"])
        assert "one" in got[1] and "two" in got[2]

        # restored over the database it came from: what was made after the backup is gone,
        # a table that is not in the dump included (pg_restore --clean would leave it)
        manage(env_a, "put", "BK", "Q1", "three")
        source = urlunsplit(urlsplit(a)._replace(scheme="postgresql"))
        with psycopg.connect(source, autocommit=True) as later:
            later.execute("CREATE TABLE made_after_the_backup (n integer)")
            later.execute("CREATE INDEX made_after_the_backup_n ON made_after_the_backup (n)")
        assert "restored" in manage(env_a, "baton", "restore", str(dump))
        with psycopg.connect(source) as restored:
            tables = {row[0] for row in restored.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
            assert "made_after_the_backup" not in tables and "brokers_message" in tables
            bodies = restored.execute("SELECT body FROM brokers_message ORDER BY id").fetchall()
            assert [bytes(row[0]) for row in bodies] == [b"one", b"two"]
        manage(env_a, "migrate", "--check")  # every migration recorded as applied, as in the backup

        # a restore that fails half-way through changes nothing: a dump with a schema of its
        # own besides public, restored where that schema is (only public is replaced)
        with psycopg.connect(source, autocommit=True) as later:
            later.execute("CREATE SCHEMA side")
        side = tmp_path / "side.dump"
        manage(env_a, "baton", "backup", str(side))
        with psycopg.connect(source, autocommit=True) as later:
            later.execute("CREATE TABLE made_after_the_restore (n integer)")  # not in side.dump: kept
        refused = failing(env_a, "baton", "restore", str(side))
        assert "psql failed" in refused and "nothing was changed" in refused, refused
        with psycopg.connect(source) as kept:
            tables = {row[0] for row in kept.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
            assert {"made_after_the_restore", "brokers_message"} <= tables
            assert kept.execute("SELECT COUNT(*) FROM brokers_message").fetchone()[0] == 2
