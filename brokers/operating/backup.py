"""``manage.py baton backup PATH`` and ``manage.py baton restore PATH`` (docs/operating.md,
"Backup and restore").

Backup, while the platform runs and serves: on SQLite, the online backup API
(``sqlite3.Connection.backup``) in one step, which reads one snapshot of the database (in
WAL mode writers go on meanwhile): every unit of work whose commit was answered before the
backup began is in it, none half. On PostgreSQL, ``pg_dump -Fc`` (one snapshot too). The copy
is written beside PATH under a temporary name, synced, then renamed over PATH: PATH is the
whole backup or is left as it was.

Restore, into a stopped platform (``config.running``: refused while a web server, worker or
beat process holds the platform lock, and on PostgreSQL while another session is connected):
the backup is checked first (SQLite: ``quick_check`` and Django's migration table; PostgreSQL:
``pg_restore --list``), then written in place (SQLite: the backup API again, into the
database file, which SQLite does atomically, its write-ahead log included; PostgreSQL: the
public schema dropped and created again and the dump's statements run, in one transaction,
so the database is exactly the backup's). Restart recovery runs at the next
start, as after a crash (``platform_prepare``: units of work left open are rolled back).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from django.db import connection

from baton_client.errors import Conflict, InvalidInput
from config.running import platform_stopped


def _sqlite_path() -> str:
    return str(connection.settings_dict["NAME"])


def _pg_environment() -> dict[str, str]:
    s = connection.settings_dict
    env = dict(os.environ)
    env.update({"PGHOST": str(s["HOST"] or ""), "PGPORT": str(s["PORT"] or ""), "PGUSER": str(s["USER"] or "")})
    env.update({"PGDATABASE": str(s["NAME"]), "PGPASSWORD": str(s.get("PASSWORD") or "")})
    return env


def _tool(name: str) -> str:
    """``name`` on the PATH, or else the newest Debian server's own (/usr/lib/postgresql/*/bin)."""
    found = shutil.which(name)
    if found is None:
        versions = sorted(
            Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
            key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
        )
        found = str(versions[-1]) if versions else None
    if found is None:
        raise Conflict(
            f"{name} is not installed: the PostgreSQL client tools are needed (apt-get install postgresql-client)."
        )
    return found


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, env=_pg_environment(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise Conflict(f"{what} failed (exit status {done.returncode}): {done.stderr.strip()[-1500:]}")


def _target_checked(path: str | os.PathLike) -> Path:
    target = Path(path).expanduser().absolute()
    problem = None
    if target.is_dir():
        problem = "it is a directory"
    elif not target.parent.is_dir():
        problem = f"{target.parent} is not a directory"
    elif not os.access(target.parent, os.W_OK | os.X_OK):
        problem = f"{target.parent} is not writable"
    if problem:
        raise InvalidInput(
            f"Cannot write the backup to {target}: {problem}. Nothing was written.", errors={"path": [problem]}
        )
    return target


def database_backup(*, path: str | os.PathLike) -> dict:
    """Write a consistent copy of the database to ``path`` (replaced whole, or left as it was)."""
    target = _target_checked(path)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    started = time.monotonic()
    try:
        if connection.vendor == "sqlite":
            source = sqlite3.connect(_sqlite_path(), timeout=30)
            copy = sqlite3.connect(temporary)
            try:
                source.backup(copy)  # one step: one snapshot, writers go on
            finally:
                copy.close()
                source.close()
        else:
            _run([_tool("pg_dump"), "--format=custom", f"--file={temporary}"], "pg_dump")
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        os.replace(temporary, target)
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as exc:
        raise InvalidInput(
            f"Cannot write the backup to {target}: {exc.strerror or exc}. Nothing was written.",
            errors={"path": [str(exc.strerror or exc)]},
        ) from exc
    finally:
        temporary.unlink(missing_ok=True)
    return {
        "path": str(target),
        "bytes": target.stat().st_size,
        "database": connection.vendor,
        "seconds": round(time.monotonic() - started, 2),
    }


def _sqlite_backup_checked(source: Path) -> sqlite3.Connection:
    try:
        backup = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        ok = backup.execute("PRAGMA quick_check").fetchone()[0]
        backup.execute("SELECT COUNT(*) FROM django_migrations").fetchone()
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(
            f"{source} is not a Baton SQLite backup ({exc}). Nothing was changed.", errors={"path": [str(exc)]}
        ) from exc
    if ok != "ok":
        raise InvalidInput(f"{source} is damaged ({ok}). Nothing was changed.", errors={"path": [ok]})
    return backup


#: Run before the dump's own statements, in the same transaction: the database is then exactly
#: the backup's (a table created after the backup does not survive, as it would
#: ``pg_restore --clean``, which drops only the dump's objects). The new public schema is the
#: restoring user's, usable by all, as a fresh database's.
PG_EMPTIED = b"DROP SCHEMA public CASCADE;\nCREATE SCHEMA public;\nGRANT USAGE ON SCHEMA public TO PUBLIC;\n"


def _pg_replace(source: Path) -> None:
    """The public schema dropped and created again, then the dump's statements (``pg_restore``
    writes them as SQL, streamed into ``psql``), all in one transaction: the backup's
    database, or, on any failure, the database as it was."""
    env = _pg_environment()
    psql_argv = [_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", "-"]
    with tempfile.TemporaryFile() as psql_err, tempfile.TemporaryFile() as restore_err:
        psql = subprocess.Popen(psql_argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=psql_err)
        script = subprocess.Popen(
            [_tool("pg_restore"), "--no-owner", "--file=-", str(source)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=restore_err,
        )
        try:
            psql.stdin.write(PG_EMPTIED)
            shutil.copyfileobj(script.stdout, psql.stdin, 1 << 20)
        except BrokenPipeError:
            pass  # psql stopped at an error: its exit status says which
        finally:
            script.stdout.close()
        if script.wait() != 0:
            psql.kill()  # its transaction is rolled back with the connection: nothing changed
            psql.wait()
            restore_err.seek(0)
            problem = restore_err.read().decode(errors="replace").strip()[-1500:]
            raise Conflict(f"pg_restore failed (exit status {script.returncode}), nothing was changed: {problem}")
        try:
            psql.stdin.close()
        except BrokenPipeError:
            pass
        if psql.wait() != 0:
            psql_err.seek(0)
            problem = psql_err.read().decode(errors="replace").strip()[-1500:]
            raise Conflict(f"psql failed (exit status {psql.returncode}), nothing was changed: {problem}")


def database_restore(*, path: str | os.PathLike) -> dict:
    """Put the backup at ``path`` in place of the stopped platform's database."""
    source = Path(path).expanduser().absolute()
    if not source.is_file():
        raise InvalidInput(f"No backup file at {source}. Nothing was changed.", errors={"path": ["No such file."]})
    started = time.monotonic()
    with platform_stopped():
        if connection.vendor == "sqlite":
            backup = _sqlite_backup_checked(source)
            try:
                database = sqlite3.connect(_sqlite_path(), timeout=30)
                try:
                    backup.backup(database)
                finally:
                    database.close()
            finally:
                backup.close()
        else:
            _run(
                [_tool("pg_restore"), "--list", str(source)],
                f"Reading {source} (pg_restore --list); nothing was changed:",
            )
            with connection.cursor() as c:
                c.execute(
                    "SELECT COUNT(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                others = c.fetchone()[0]
            connection.close()
            if others:
                raise Conflict(
                    f"The platform is running: {others} other session(s) are connected to the database. "
                    "Stop the web servers, workers and beat and run the restore again; nothing was changed."
                )
            _pg_replace(source)
    return {"path": str(source), "database": connection.vendor, "seconds": round(time.monotonic() - started, 2)}
