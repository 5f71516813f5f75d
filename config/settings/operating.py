"""Operating the platform (docs/operating.md): the operating
housekeeping's interval and the retention windows."""

from .env import VAR_DIR, env_float_default, env_int

#: Seconds between runs of the operating housekeeping (``manage.py baton housekeep`` runs one
#: at once): the journal's put and get events folded into the metrics' totals, retention,
#: queue performance events.
BATON_OPERATING_INTERVAL_S = env_float_default("BATON_OPERATING_INTERVAL_S", 5.0)
#: A resolved unit of work is forgotten this many seconds after it resolved.
BATON_RESOLVED_RETENTION_S = env_int("BATON_RESOLVED_RETENTION_S", 86400)
#: Journal events are kept this many seconds and until the analytics export has read them,
#: but never more than twice this.
BATON_JOURNAL_RETENTION_S = env_int("BATON_JOURNAL_RETENTION_S", 604800)
#: More messages than this reaching a broker's dead-letter queue between two operating passes
#: put one ``dead_letter_burst`` event on its SYSTEM.ADMIN.PERFM.EVENT (0: off).
BATON_DEAD_LETTER_BURST = env_int("BATON_DEAD_LETTER_BURST", 100)

#: Held (shared) by every web server, Celery worker and beat process while it runs; ``manage.py
#: baton restore`` takes it exclusively, so it refuses while the platform runs and nothing
#: starts while it restores (config/running.py).
BATON_PLATFORM_LOCK = str(VAR_DIR / "platform.lock")
