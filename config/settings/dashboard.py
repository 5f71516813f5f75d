"""The dashboard: sign-in, the journal follower's pace, static assets built from npm."""

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
