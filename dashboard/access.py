"""What a dashboard user may see and do, read from the brokers' grants.

The dashboard shows a user the brokers and queues they may *browse* or *administer*
(superusers: everything), and offers the buttons their grants allow. Roles are names
for sets of grants (see docs/dashboard.md):

=========  ==========================  ==============================================
role       grant actions               the dashboard then offers
=========  ==========================  ==============================================
viewer     browse                      pages, message browser, the transaction graph
operator   browse, put, get            + put a message; move or resubmit from a
                                       dead-letter or backout queue (get there, put
                                       where the messages go)
admin      browse, put, get, admin     + purge a queue
=========  ==========================  ==============================================

Channels are started and stopped by superusers only, as in the REST API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brokers.models import Grant
from brokers.permissions import ANY
from baton_client.errors import PermissionDenied

ROLES: dict[str, tuple[str, ...]] = {
    "viewer": ("browse",),
    "operator": ("browse", "put", "get"),
    "admin": ("browse", "put", "get", "admin"),
}
SEEING = ("browse", "admin")


@dataclass(frozen=True)
class Visibility:
    """The brokers and queues a user sees. ``everything`` for superusers; otherwise
    ``brokers``: broker names seen whole (a broker-wide grant), ``queues``: (broker,
    queue) pairs seen one by one."""

    everything: bool
    brokers: frozenset[str] = frozenset()
    queues: frozenset[tuple[str, str]] = frozenset()
    #: Brokers the user holds any grant on: the channels they see are those whose source
    #: broker is one of these, as in the REST API (``brokers.permissions.channels_visible``).
    granted: frozenset[str] = frozenset()

    def broker(self, name: str) -> bool:
        return self.everything or name in self.brokers or any(b == name for b, _ in self.queues)

    def queue(self, broker: str, name: str) -> bool:
        return self.everything or broker in self.brokers or (broker, name) in self.queues

    def channel(self, source_broker: str) -> bool:
        return self.everything or source_broker in self.granted


@dataclass(frozen=True)
class Acting:
    """Whose units of work a user may act on (roll back) from the graph: their own, those
    of the brokers they administer, or all (superusers), as ``brokers.permissions``'s
    ownership rule says; the rollback itself checks again."""

    everything: bool
    user_id: int | None = None
    administered: frozenset[str] = frozenset()

    def may(self, node: dict[str, Any]) -> bool:
        if self.everything or node["broker"] in self.administered:
            return True
        return node.get("user_id") is not None and node.get("user_id") == self.user_id


def acting(user) -> Acting:
    if getattr(user, "is_superuser", False):
        return Acting(everything=True)
    administered = Grant.objects.filter(user=user, queue="", may_admin=True).values_list("broker", flat=True)
    return Acting(everything=False, user_id=user.pk, administered=frozenset(administered))


def _grants(user, actions) -> list[tuple[str, str]]:
    from django.db.models import Q

    condition = Q(pk__in=[])
    for action in actions:
        condition |= Q(**{f"may_{action}": True})
    return list(Grant.objects.filter(condition, user=user).values_list("broker", "queue"))


def visibility(user) -> Visibility:
    if getattr(user, "is_superuser", False):
        return Visibility(everything=True)
    rows = _grants(user, ANY)  # monitor (metrics only) shows no object, as in the REST API
    seeing = set(_grants(user, SEEING)) if rows else set()
    return Visibility(
        everything=False,
        brokers=frozenset(b for b, q in seeing if not q),
        queues=frozenset((b, q) for b, q in seeing if q),
        granted=frozenset(b for b, _ in rows),
    )


def may(user, action: str, *, broker: str, queue: str) -> bool:
    """Does the user hold ``action`` on the queue (by a queue or a broker-wide grant)?"""
    if getattr(user, "is_superuser", False):
        return True
    return Grant.objects.filter(user=user, broker=broker, queue__in=["", queue], **{f"may_{action}": True}).exists()


def require_broker_seen(user, *, broker: str) -> None:
    if not visibility(user).broker(broker):
        raise PermissionDenied(
            f"You may not see broker {broker!r}: it needs browse or admin permission.", broker=broker
        )


def require_queue_seen(user, *, broker: str, queue: str) -> None:
    if not visibility(user).queue(broker, queue):
        raise PermissionDenied(
            f"You may not see queue {queue!r} of broker {broker!r}: it needs browse or admin permission.",
            broker=broker,
            queue=queue,
        )


def require_queue_action(user, action: str, *, broker: str, queue: str) -> None:
    if not may(user, action, broker=broker, queue=queue):
        raise PermissionDenied(
            f"You may not do that: it needs {action} permission on queue {queue!r}.",
            broker=broker,
            queue=queue,
            actions=[action],
        )


def require_superuser(user) -> None:
    if not getattr(user, "is_superuser", False):
        raise PermissionDenied("Only a superuser may do that.")
