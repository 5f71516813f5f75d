"""The dashboard: sign-in, the journal follower's pace, static assets built from npm."""
from .env import env_float_default

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
#: Seconds between the journal follower's reads (one follower per web process).
BATON_DASHBOARD_FOLLOW_S = env_float_default("BATON_DASHBOARD_FOLLOW_S", 0.5)
#: Serve static files straight from the apps too, so a checkout whose assets were built
#: (platform/lib.sh) but not collected still has them; collectstatic adds compression.
WHITENOISE_USE_FINDERS = True
