"""An instance's history: one row per event, written in the database transaction of what
it records."""

from __future__ import annotations

from django.utils import timezone

from transactions import queries as txn_queries

from ..models import Instance

#: A write nothing reads before the commit: on PostgreSQL it travels with the step's next
#: statement (``transactions.queries.deferred``).
_INSERT = (
    'INSERT INTO workflows_instancehistory (instance_id, at, event, step, "transaction", detail) '
    "VALUES (%s, %s, %s, %s, %s, %s)"
)


def history_add(
    *, instance: Instance | str, event: str, step: str = "", transaction: str = "", detail: str = ""
) -> None:
    txn_queries.deferred(
        _INSERT,
        [
            instance if isinstance(instance, str) else instance.pk,
            txn_queries.dt_param(timezone.now()),
            event,
            step,
            transaction or "",
            detail[:500],
        ],
    )
