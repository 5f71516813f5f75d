"""Spark jobs: where they run, what they read, how they reach the platform, when analytics run."""

from pathlib import Path

from .env import VAR_DIR, env_float_default, env_int, env_str

#: Spark master for every job: ``local[*]`` (embedded) or ``spark://host:7077`` (a cluster).
BATON_SPARK_MASTER = env_str("BATON_SPARK_MASTER", "")
#: Files an ingest may read: its ``source`` is a path relative to this folder, and anything
#: resolving outside it is refused. On a cluster it must be storage every executor sees.
BATON_STAGING_DIR = Path(env_str("BATON_STAGING_DIR", str(VAR_DIR / "staging")))
#: Where Spark jobs reach the platform's API (the ingest puts through it).
BATON_API_URL = env_str("BATON_API_URL", f"http://127.0.0.1:{env_int('PORT', 8000)}")
#: Partitions of an ingest that put at once (SQLite has one writer; PostgreSQL takes more).
BATON_INGEST_WRITE_PARTITIONS = env_int("BATON_INGEST_WRITE_PARTITIONS", 2)
#: Seconds between scheduled analytics runs (Celery beat); 0 turns the schedule off.
BATON_ANALYTICS_INTERVAL_S = env_float_default("BATON_ANALYTICS_INTERVAL_S", 600.0)
#: Journal exports and analytics results (under the var directory).
BATON_ANALYTICS_DIR = Path(env_str("BATON_ANALYTICS_DIR", str(VAR_DIR / "analytics")))
