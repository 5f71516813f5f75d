"""Sign-in throttling (django-axes; docs/dashboard.md, "Signing in"): failed password sign-ins
(the dashboard, the admin) are counted per user name and, separately, per client address;
after ``BATON_SIGNIN_FAILURE_LIMIT`` failures either is locked out for
``BATON_SIGNIN_COOLOFF_MIN`` minutes (429, the right password included). A success resets
the user's count. API tokens are not passwords: token requests have their own rate limit."""

from datetime import timedelta

from .env import env_int

AUTHENTICATION_BACKENDS = [
    "config.signin.SignInThrottleBackend",  # first: refuses a locked-out user before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
#: Failed sign-ins (per user name, and per address) before a lock-out.
AXES_FAILURE_LIMIT = env_int("BATON_SIGNIN_FAILURE_LIMIT", 10)
#: Minutes a lock-out lasts (each further failure during it starts it again).
AXES_COOLOFF_TIME = timedelta(minutes=env_int("BATON_SIGNIN_COOLOFF_MIN", 15))
#: By user name, and separately by client address (REMOTE_ADDR: behind a proxy, set
#: AXES_IPWARE_PROXY_COUNT and AXES_IPWARE_META_PRECEDENCE_ORDER in a settings override).
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
