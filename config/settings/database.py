"""The database. Embedded default: a SQLite file under var/ in WAL mode with IMMEDIATE
transactions (so concurrent writers queue on the busy timeout instead of failing with
"database is locked") and persistent connections. DATABASE_URL switches to PostgreSQL."""
import dj_database_url

from .env import VAR_DIR, env_int, env_str

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'baton.sqlite3'}")

_db = dj_database_url.parse(DATABASE_URL, conn_max_age=None, conn_health_checks=True)
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": env_int("BATON_SQLITE_BUSY_TIMEOUT_S", 30),
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    _db["TEST"] = {"NAME": env_str("BATON_TEST_DATABASE", str(VAR_DIR / "test.sqlite3"))}

DATABASES = {"default": _db}
