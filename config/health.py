"""``/healthz`` and ``/readyz`` (docs/monitoring.md): what a load balancer, Docker or
an orchestrator polls. A middleware first in the chain answers them, before the host check
(``ALLOWED_HOSTS``: a container's health check asks ``127.0.0.1``), the HTTPS redirect (it
speaks plain HTTP inside the container), sessions and authentication; they show no secret,
name or count.

- ``/healthz``: the process serves requests; it touches nothing.
- ``/readyz``: the database answers (``SELECT 1``) and every migration on disk is applied
  (the latest migration of each app is recorded in ``django_migrations``: one indexed
  look-up of a dozen rows; the migration files are read once per process). 503 with what
  fails otherwise.
"""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.db.migrations.loader import MigrationLoader
from django.http import JsonResponse

HEALTH_PATHS = ("/healthz", "/readyz")
_leaves: list[tuple[str, str]] | None = None


def _migration_leaves() -> list[tuple[str, str]]:
    """The latest migration of every app, from the files (read once per process)."""
    global _leaves
    if _leaves is None:
        _leaves = sorted(MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes())
    return _leaves


def readiness_failing() -> list[str]:
    """What keeps the platform from serving: ``database`` (it does not answer) or
    ``migrations`` (one is not applied); empty when ready."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        _connection_dropped()
        return ["database"]
    leaves = _migration_leaves()
    wanted = " OR ".join(["(app = %s AND name = %s)"] * len(leaves))
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT COUNT(*) FROM django_migrations WHERE {wanted}", [part for leaf in leaves for part in leaf]
            )
            applied = cursor.fetchone()[0]
    except DatabaseError:  # no django_migrations table: nothing was migrated
        _connection_dropped()
        return ["migrations"]
    return [] if applied == len(leaves) else ["migrations"]


def _connection_dropped() -> None:
    """Close a connection that failed, so the next probe opens a new one."""
    try:
        connection.close()
    except DatabaseError:
        pass


class HealthMiddleware:
    """Answers ``GET /healthz`` and ``GET /readyz``; passes every other request on."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info == "/healthz":
            return JsonResponse({"status": "ok"})
        if request.path_info == "/readyz":
            failing = readiness_failing()
            if failing:
                return JsonResponse({"status": "unavailable", "failing": failing}, status=503)
            return JsonResponse({"status": "ready"})
        return self.get_response(request)
