"""Django's PostgreSQL backend, with its connection health check (``CONN_HEALTH_CHECKS``)
made once per reuse window instead of once per request.

Django checks a persistent connection before its first statement of every request (a
``SELECT 1`` round trip: one more per REST call). Here a connection counts as healthy for
``BATON_DB_HEALTH_CHECK_S`` seconds (10) after it was opened or last checked, and is checked
again only after that. A statement that fails on a broken connection marks it
(``errors_occurred``): Django then checks it at the start of the next request and opens a new
one, so a connection broken inside the window (the server restarted) costs the one request
that meets it, as it would have if it broke between the check and the request's statement."""

from __future__ import annotations

import time

from django.conf import settings
from django.db.backends.postgresql import base

#: The clock of the window (tests move it).
monotonic = time.monotonic


class DatabaseWrapper(base.DatabaseWrapper):
    checked_at: float | None = None

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        self.checked_at = monotonic()
        return connection

    def close_if_health_check_failed(self):
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        window = getattr(settings, "BATON_DB_HEALTH_CHECK_S", 10.0)
        if self.checked_at is not None and monotonic() - self.checked_at < window:
            self.health_check_done = True  # checked, or opened, within the window
            return
        super().close_if_health_check_failed()
        if self.connection is not None:
            self.checked_at = monotonic()
