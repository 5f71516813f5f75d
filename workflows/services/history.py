"""An instance's history: one row per event, written in the database transaction of what
it records."""

from __future__ import annotations

from django.utils import timezone

from ..models import Instance, InstanceHistory


def history_add(
    *, instance: Instance | str, event: str, step: str = "", transaction: str = "", detail: str = ""
) -> None:
    InstanceHistory.objects.create(
        instance_id=instance if isinstance(instance, str) else instance.pk,
        at=timezone.now(),
        event=event,
        step=step,
        transaction=transaction or "",
        detail=detail[:500],
    )
