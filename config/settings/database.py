"""The database. Embedded default: a SQLite file under var/ in WAL mode with IMMEDIATE
transactions (so concurrent writers queue on the busy timeout instead of failing with
"database is locked") and persistent connections. DATABASE_URL switches to PostgreSQL.

Durability (docs/performance.md): a reply that says committed means on disk. SQLite runs
with ``synchronous=FULL`` (the WAL is synced at every commit) and PostgreSQL with
``synchronous_commit=on``; database transactions whose commit promises nothing (a begin,
an uncommitted put, a get under a unit of work) switch that off for themselves
(``transactions.durability``), and the next durable commit's sync covers them.
``BATON_SKIP_COMMIT_SYNC=1`` trades that away: commits are answered before they reach the
disk, so a power failure (not a process crash) can lose the last committed messages."""

import dj_database_url

from .env import VAR_DIR, env_bool, env_int, env_str

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'baton.sqlite3'}")

#: Off by default. On: commits are not synced to disk before the reply (faster; a power
#: failure can lose recently committed messages).
BATON_SKIP_COMMIT_SYNC = env_bool("BATON_SKIP_COMMIT_SYNC", False)

#: PostgreSQL: a persistent connection counts as healthy this many seconds after it was
#: opened or last checked (Django's CONN_HEALTH_CHECKS would check it at every request).
BATON_DB_HEALTH_CHECK_S = env_int("BATON_DB_HEALTH_CHECK_S", 10)

#: PostgreSQL: the hot path's statements are prepared once per connection and run as
#: EXECUTE (transactions/prepared.py). Off for a pooler that hands one client's statements
#: to several server connections (PgBouncer in transaction mode).
BATON_PG_PREPARED = env_bool("BATON_PG_PREPARED", True)

#: SQLite: a thread per process copies the write-ahead log into the database file once this
#: many pages wait (transactions/wal_checkpoint.py), instead of the commit that crosses
#: SQLite's own threshold doing it under the writer lock. 0 (the default): SQLite's own
#: checkpoints; under steady writes the thread's passive checkpoints never let the log
#: start over (docs/performance.md, "SQLite's checkpoints off the steps").
BATON_SQLITE_CHECKPOINT_PAGES = env_int("BATON_SQLITE_CHECKPOINT_PAGES", 0)

_db = dj_database_url.parse(DATABASE_URL, conn_max_age=None, conn_health_checks=True)
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _sync = "NORMAL" if BATON_SKIP_COMMIT_SYNC else "FULL"
    # Django's backend with every write transaction queued on the database's writer lock
    # across threads and processes (transactions/sqlite_writer.py).
    _db["ENGINE"] = "transactions.backends.sqlite3"
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": env_int("BATON_SQLITE_BUSY_TIMEOUT_S", 30),
        "init_command": f"PRAGMA journal_mode=WAL; PRAGMA synchronous={_sync};",
    }
    _db["TEST"] = {"NAME": env_str("BATON_TEST_DATABASE", str(VAR_DIR / "test.sqlite3"))}
elif _db["ENGINE"].startswith("django.db.backends.postgresql"):
    # Django's backend with the connection health check made once per window, not per
    # request (transactions/backends/postgresql).
    _db["ENGINE"] = "transactions.backends.postgresql"
    _commit = "off" if BATON_SKIP_COMMIT_SYNC else "on"
    # the hot path's prepared statements keep one plan (transactions/prepared.py)
    _plans = " -c plan_cache_mode=force_generic_plan" if BATON_PG_PREPARED else ""
    _db.setdefault("OPTIONS", {})["options"] = f"-c synchronous_commit={_commit}{_plans}"

DATABASES = {"default": _db}
