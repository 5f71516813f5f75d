"""The dashboard: sign-in, the journal follower's pace, static assets built from npm."""

from django.core.exceptions import ImproperlyConfigured

from .env import env_float_default, env_int

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
#: Seconds between the journal follower's reads (one follower per web process).
BATON_DASHBOARD_FOLLOW_S = env_float_default("BATON_DASHBOARD_FOLLOW_S", 0.5)
#: Serve static files straight from the apps too, so a checkout whose assets were built
#: (platform/lib.sh) but not collected still has them; collectstatic adds compression.
WHITENOISE_USE_FINDERS = True
#: Messages a move or resubmit job handles per database transaction.
BATON_DASHBOARD_MOVE_BATCH = env_int("BATON_DASHBOARD_MOVE_BATCH", 50)
#: At most this many messages in one job.
BATON_DASHBOARD_MOVE_MAX = env_int("BATON_DASHBOARD_MOVE_MAX", 10_000)
#: A job whose worker has said nothing for this many seconds may be resumed.
BATON_DASHBOARD_MOVE_STALL_S = env_float_default("BATON_DASHBOARD_MOVE_STALL_S", 60.0)
#: Seconds between samples of every broker's depth (the overview's depth history, 24 h).
BATON_DASHBOARD_DEPTH_SAMPLE_S = env_float_default("BATON_DASHBOARD_DEPTH_SAMPLE_S", 10.0)
#: Seconds between process heartbeats (worker, beat, web: the overview's process health);
#: a process silent for three of them is shown as silent.
BATON_DASHBOARD_HEARTBEAT_S = env_float_default("BATON_DASHBOARD_HEARTBEAT_S", 10.0)
#: A Celery worker node whose heartbeat is older than this many seconds is lost: one
#: ``worker_lost`` event on every broker's SYSTEM.ADMIN.CHANNEL.EVENT, and a console alert
#: until it beats again (``worker_returned``). docs/operating.md, "Worker loss".
BATON_WORKER_LOST_S = env_float_default("BATON_WORKER_LOST_S", 3 * BATON_DASHBOARD_HEARTBEAT_S)
if BATON_WORKER_LOST_S <= BATON_DASHBOARD_HEARTBEAT_S:
    raise ImproperlyConfigured(
        f"BATON_WORKER_LOST_S ({BATON_WORKER_LOST_S:g}) must be longer than BATON_DASHBOARD_HEARTBEAT_S "
        f"({BATON_DASHBOARD_HEARTBEAT_S:g}): a worker beats once per heartbeat interval."
    )
