"""The WebSocket session (/api/session/): its bounds. See brokers/api/session.py."""

from .env import env_float_default, env_int

#: Requests received on one session but not yet applied; more are answered 429 throttled.
BATON_SESSION_MAX_PENDING = env_int("BATON_SESSION_MAX_PENDING", 1000)
#: Requests of one session waiting (a get, commit or check with wait); more are answered 429.
BATON_SESSION_MAX_WAITS = env_int("BATON_SESSION_MAX_WAITS", 100)
#: Threads of the process that apply the sessions' requests, each session's in order (a
#: session holds none while it waits for requests; brokers/api/pump.py).
BATON_SESSION_THREADS = env_int("BATON_SESSION_THREADS", 16)
#: Threads of the process that hold waiting requests (each holds a database connection while
#: its request runs; waiting itself holds no database transaction).
BATON_SESSION_WAIT_THREADS = env_int("BATON_SESSION_WAIT_THREADS", 64)
#: Bytes of replies a client may leave unread before its session is closed (code 1008).
BATON_SESSION_SEND_BUFFER = env_int("BATON_SESSION_SEND_BUFFER", 64 * 1024 * 1024)
#: Seconds one reply may take to send before the session is closed (code 1008).
BATON_SESSION_SEND_TIMEOUT_S = env_float_default("BATON_SESSION_SEND_TIMEOUT_S", 30.0)

#: Requests of one user waiting at once in this process (REST and sessions together: a get,
#: commit or check whose ``wait`` holds it); more are answered 429 ``throttled`` with
#: Retry-After. Below both pools (BATON_HTTP_THREADS, BATON_SESSION_WAIT_THREADS), so no
#: single user can hold every thread that serves others.
BATON_MAX_WAITS_PER_USER = env_int("BATON_MAX_WAITS_PER_USER", 16)


def _waits_checked() -> None:
    from django.core.exceptions import ImproperlyConfigured

    from .api import BATON_HTTP_THREADS

    pools = min(BATON_HTTP_THREADS, BATON_SESSION_WAIT_THREADS)
    if not 1 <= BATON_MAX_WAITS_PER_USER < pools:
        raise ImproperlyConfigured(
            f"BATON_MAX_WAITS_PER_USER must be at least 1 and below {pools} (the smaller of "
            "BATON_HTTP_THREADS and BATON_SESSION_WAIT_THREADS)."
        )


_waits_checked()
