"""Django's PostgreSQL backend, with its connection health check (``CONN_HEALTH_CHECKS``)
made once per reuse window instead of once per request.

Django checks a persistent connection before its first statement of every request (a
``SELECT 1`` round trip: one more per REST call). Here a connection counts as healthy for
``BATON_DB_HEALTH_CHECK_S`` seconds (10) after it was opened or last checked, and is checked
again only after that. A statement that fails on a broken connection marks it
(``errors_occurred``): Django then checks it at the start of the next request and opens a new
one, so a connection broken inside the window (the server restarted) costs the one request
that meets it, as it would have if it broke between the check and the request's statement.

Its ``timestamptz`` values are read by psycopg's own loader (compiled, with the binary
package) rather than Django's, a Python subclass of psycopg's Python loader that parses each
value in Python and then sets its zone: 1 µs a value against 5, so a get of 100 messages
takes 0.5 ms less of the web server's CPU (docs/performance.md, "PostgreSQL: reading times").
Only when Django reads times as UTC (``USE_TZ`` without a database ``TIME_ZONE``, which sets
the connection's ``TimeZone`` to UTC): psycopg's loader then gives the same values, in
``datetime.timezone.utc``, as Django's would."""

from __future__ import annotations

import datetime
import time

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base
from psycopg.adapt import Loader
from psycopg.pq import Format

#: The clock of the window (tests move it).
monotonic = time.monotonic


#: psycopg's own ``timestamptz`` loader (the compiled one when the binary package is there).
_PSYCOPG_TZ_LOADER = psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, Format.TEXT)


class UtcTimestamptzLoader(Loader):
    """psycopg's ``timestamptz`` loader under the name Django looks for: Django compares a
    connection's loader's ``timezone`` with its own before each cursor (a cursor of its own
    registers its loader when they differ). The compiled loader cannot be subclassed, so
    each instance lends its ``load``: the driver calls it with no Python frame between."""

    timezone = datetime.timezone.utc

    def __init__(self, oid, context=None):
        super().__init__(oid, context)
        self.load = _PSYCOPG_TZ_LOADER(oid, context).load

    def load(self, data):  # replaced per instance in __init__
        raise NotImplementedError


class DatabaseWrapper(base.DatabaseWrapper):
    checked_at: float | None = None

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        self.checked_at = monotonic()
        if self.timezone is datetime.timezone.utc:
            connection.adapters.register_loader("timestamptz", UtcTimestamptzLoader)
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
