"""What a STOMP connection asks of the engine, through the same operations as REST and the
session (``brokers.api.operations``, ``pubsub.api.operations``): the same input checks,
permission checks and ownership of units of work, with the connection's user.

Beyond them only: signing in (a password or an API token), the broker a connection uses,
the queues ``auto_define_queues`` defines, and the queue and subscription behind a SUBSCRIBE
to a topic, by the definition services with the permissions docs/stomp.md records.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import socket
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.signals import user_logged_in
from django.db import transaction as db
from django.http import HttpRequest

from brokers import permissions as may
from brokers.api.authentication import token_user
from brokers.api.operations import (
    LockAbandon,
    QueueDefine,
    LockComplete,
    LockDeadLetter,
    LockRenew,
    LocksComplete,
    MessageGet,
    MessagePut,
    TransactionBegin,
    TransactionCommit,
    TransactionRollback,
)
from brokers.definitions import broker_cached, definitions_checked, queue_cached
from baton_client.errors import AlreadyExists, InvalidInput
from brokers.exceptions import QueueNotFound
from baton_client.errors import Conflict, PermissionDenied, Throttled
from brokers.models import Broker, EnforceOrder, Message, Queue
from brokers.services.queues import queue_define, queue_delete
from brokers.services.store import queue_wakeup_key
from pubsub import permissions as pubsub_may
from pubsub.api.definitions import SubscriptionDefine
from pubsub.api.operations import PublicationPublish
from pubsub.exceptions import SubscriptionNotFound
from pubsub.services.subscriptions import subscription_define, subscription_delete

from .registry import PROCESS


class SignInLockedOut(Throttled):
    """Too many failed sign-ins for this user name or from this address: locked out."""


def user_signed_in(*, login: str | None, passcode: str | None, address: str | None = None):
    """The active user named ``login`` whose password or API token is ``passcode``, or None.

    A password sign-in goes through the dashboard's throttle (django-axes,
    config/settings/signin.py): a user name or ``address`` locked out at ``/login/`` is
    refused here (SignInLockedOut, the right password included), a wrong password counts
    toward the lock-out as a failed ``/login/`` does, and a success resets the user's count.
    API tokens are not passwords and are not counted."""
    if not login or passcode is None or len(passcode) > 4096 or len(login) > 150:
        return None
    user = token_user(passcode) if len(passcode) <= 200 else None
    if user is not None:
        return user if user.get_username() == login else None
    request = _sign_in_request(address)
    user = authenticate(request, username=login, password=passcode)
    if getattr(request, "axes_locked_out", False):
        minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
        raise SignInLockedOut(
            f"Too many failed sign-ins for this user name or from this address: locked out for {minutes} minutes "
            "(the dashboard's sign-in shares the count).",
            retry_after=int(settings.AXES_COOLOFF_TIME.total_seconds()),
        )
    if user is None or not user.is_active:
        return None
    user_logged_in.send(sender=type(user), request=request, user=user)  # resets the count, as /login/ does
    return user


def _sign_in_request(address: str | None) -> HttpRequest:
    """The request django-axes counts a STOMP sign-in by: the client's address (no user
    agent; the path names the door)."""
    request = HttpRequest()
    request.method = "POST"
    request.path = request.path_info = "/stomp/connect"
    request.META["REMOTE_ADDR"] = address or ""
    request.META["HTTP_USER_AGENT"] = "STOMP"
    return request


class NameTheBroker(InvalidInput):
    """Name the broker in the CONNECT frame's host header."""


def _an_address(host: str) -> bool:
    """Is ``host`` an address or this machine's name (what clients send by default)?"""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        pass
    return host in ("localhost", socket.gethostname(), socket.getfqdn(), os.environ.get("BATON_HOST", ""))


def broker_chosen(user, *, host: str | None) -> str:
    """The broker of a connection: ``host``; for none or ``/`` (or an address or this
    machine's name that names no broker), BATON_STOMP_DEFAULT_BROKER or else the one broker
    the user may use."""
    definitions_checked()
    if host and _an_address(host) and not Broker.objects.filter(name=host).exists():
        host = None  # a client's default (stomp.py sends the address it connected to)
    if host in (None, "", "/"):
        if settings.BATON_STOMP_DEFAULT_BROKER:
            host = settings.BATON_STOMP_DEFAULT_BROKER
        else:
            usable = may.brokers_visible(user, Broker.objects.order_by("name"))
            if len(usable) != 1:
                raise NameTheBroker(
                    "Name the broker in the host header of CONNECT: "
                    + (f"you may use {len(usable)} brokers." if usable else "you may use no broker."),
                    errors={"host": ["Required."]},
                )
            host = usable[0].name
    may.require_broker_display(user, broker=host)
    return broker_cached(name=host).name


def _queue_ensured(user, *, broker: str, queue: str, action: str) -> None:
    """The queue exists, or the broker defines it (``auto_define_queues``) for a user who may
    ``action`` on it; else QueueNotFound."""
    definitions_checked()
    try:
        queue_cached(broker=broker, name=queue)
        return
    except QueueNotFound:
        if not broker_cached(name=broker).auto_define_queues:
            raise
    (may.require_put if action == "put" else may.require_get)(user, broker=broker, queue=queue)
    QueueDefine.parse({"broker": broker, "name": queue})  # a name from the client: checked as REST checks it
    try:
        queue_define(broker=broker, name=queue)
    except AlreadyExists:
        pass
    definitions_checked()


def _body(body: bytes) -> dict[str, str]:
    try:
        return {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(body).decode("ascii")}


def message_send(
    user,
    *,
    broker: str,
    queue: str,
    fields: dict[str, Any],
    body: bytes,
    transaction: str | None,
    begin: bool = False,
) -> str | None:
    """One SEND: put under ``transaction``, or with ``begin`` under a unit of work the put
    begins (in the same database transaction); the unit of work's id, or None."""
    return _put(user, broker, queue, {**fields, **_body(body)}, transaction, begin)


def messages_send(
    user,
    *,
    broker: str,
    queue: str,
    messages: list[tuple[dict[str, Any], bytes]],
    transaction: str | None,
    begin: bool = False,
) -> str | None:
    """Several SENDs of one transaction to one queue: one put of them all (under
    ``transaction``, or with ``begin`` under a unit of work the put begins); the unit of
    work's id."""
    return _put(
        user, broker, queue, {"messages": [{**fields, **_body(body)} for fields, body in messages]}, transaction, begin
    )


def _put(user, broker: str, queue: str, request: dict[str, Any], transaction: str | None, begin: bool) -> str | None:
    request = {"broker": broker, "queue": queue, **request}
    if transaction:
        request["transaction"] = transaction
    elif begin:
        request["syncpoint"] = "yes"
    data = MessagePut.parse(request)
    try:
        return MessagePut.put(user, data).transaction_id
    except QueueNotFound:
        if not broker_cached(name=broker).auto_define_queues:
            raise
        _queue_ensured(user, broker=broker, queue=queue, action="put")
        return MessagePut.put(user, data).transaction_id


def publication_send(
    user, *, broker: str, topic: str, fields: dict[str, Any], body: bytes, transaction: str | None
) -> None:
    request = {"broker": broker, "topic": topic, **fields, **_body(body)}
    if transaction:
        request["transaction"] = transaction
    PublicationPublish.run(user, request)


def queue_subscribed(user, *, broker: str, queue: str) -> tuple[str, float, int]:
    """Check that the user may get from the queue (defining it if the broker says so); its
    wake-up key, lock duration (seconds) and id."""
    may.require_get(user, broker=broker, queue=queue)
    _queue_ensured(user, broker=broker, queue=queue, action="get")
    return queue_key(broker=broker, queue=queue)


def queue_key(*, broker: str, queue: str) -> tuple[str, float, int]:
    found = queue_cached(broker=broker, name=queue)
    return queue_wakeup_key(found.pk), found.lock_duration_ms / 1000, found.pk


def queue_ordered(*, broker: str, queue: str) -> bool:
    """Whether the queue's gets are ordered (``enforce_order``: a completion may let the next
    message go), as the definitions were last checked; True when it is not known (gone)."""
    try:
        return queue_cached(broker=broker, name=queue).enforce_order == EnforceOrder.YES
    except QueueNotFound:
        return True


def subscription_name(*, user, connection: str, id: str, durable: bool) -> str:
    """The name of the queue and subscription behind a SUBSCRIBE to a topic: per user and
    ``id`` when durable (a reconnecting client finds it again), else per connection."""
    seed = f"{user.pk}\0{id}" if durable else f"{connection}\0{id}"
    return ("stomp.d." if durable else "stomp.") + hashlib.sha256(seed.encode()).hexdigest()[:32]


def topic_subscribed(user, *, broker: str, topic_filter: str, name: str, durable: bool) -> tuple[str, float, int]:
    """The queue and subscription (both named ``name``) that receive what is published on
    ``topic_filter``; a durable one already there is kept (with its messages) when its
    filter is the same. Returns the queue's wake-up key, lock duration (seconds) and id."""
    pubsub_may.require_subscribe(user, broker=broker)
    # the filter and name come from the client: checked as REST checks them, before anything is made
    SubscriptionDefine.parse(
        {"broker": broker, "name": name, "topic_filter": topic_filter, "queue": name, "durable": durable}
    )
    definitions_checked()
    try:
        queue_cached(broker=broker, name=name)
    except QueueNotFound:
        # a non-durable one names its process, so that the STOMP server's start finds those
        # a process that is gone left behind (stomp_server/orphans.py); a durable one its
        # user, whose durable subscriptions are counted (BATON_STOMP_MAX_DURABLE_PER_USER)
        owner = _durable_owner(user) if durable else f" of {PROCESS}"
        description = f"STOMP subscription{owner} to {topic_filter}"[:200]
        try:
            if durable:
                _durable_queue_defined(user, broker=broker, name=name, description=description)
            else:
                queue_define(broker=broker, name=name, description=description)
        except AlreadyExists:
            pass
        definitions_checked()
    try:
        subscription_define(broker=broker, name=name, topic_filter=topic_filter, queue=name, durable=durable)
    except AlreadyExists:
        from pubsub.models import Subscription

        existing = (
            Subscription.objects.filter(broker__name=broker, name=name).values_list("topic_filter", flat=True).first()
        )
        if existing != topic_filter:  # RabbitMQ's rule: the same id with another filter is refused
            raise AlreadyExists(
                f"The durable subscription {name!r} is to {existing!r}, not {topic_filter!r}; "
                "unsubscribe it (durable:true) first.",
                subscription=name,
            ) from None
    return queue_key(broker=broker, queue=name)


def _durable_owner(user) -> str:
    return f" of user {user.pk} ({user.get_username()[:60]})"


class TooManyDurable(Conflict):
    """Too many durable topic subscriptions."""


def _durable_queue_defined(user, *, broker: str, name: str, description: str) -> None:
    """Define a durable subscription's queue. A user who does not administer ``broker`` holds
    at most BATON_STOMP_MAX_DURABLE_PER_USER durable STOMP subscriptions on it (each is a queue
    that outlives the connection): counted and made in one database transaction that holds
    the user's row locked, so that SUBSCRIBEs at once (on any connection, in any process)
    cannot together make more (SQLite's transactions take its write lock at once)."""
    try:
        may.require_broker_admin(user, broker=broker)
        queue_define(broker=broker, name=name, description=description)
        return
    except PermissionDenied:
        pass
    limit = settings.BATON_STOMP_MAX_DURABLE_PER_USER
    owned = f"STOMP subscription{_durable_owner(user)} to "
    with db.atomic():
        list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
        held = Queue.objects.filter(
            broker__name=broker, name__startswith="stomp.d.", description__startswith=owned
        ).count()
        if held >= limit:
            raise TooManyDurable(
                f"You hold {held} durable subscriptions on broker {broker!r}, the most a user who does not administer "
                f"it may hold ({limit}); unsubscribe one (UNSUBSCRIBE with durable:true) first.",
                limit=limit,
            )
        queue_define(broker=broker, name=name, description=description)


def topic_unsubscribed(*, broker: str, name: str) -> None:
    """Remove a STOMP subscription's subscription and queue (with what it holds)."""
    try:
        subscription_delete(broker=broker, name=name)
    except SubscriptionNotFound:
        pass
    try:
        queue_delete(broker=broker, name=name, purge=True)
    except QueueNotFound:
        pass


def messages_got(
    user, *, broker: str, queue: str, mode: str, batch: int, transaction: str | None = None, preemptive: bool = False
) -> list[Message]:
    """Up to ``batch`` messages (as stored: the MESSAGE frame is written from them, with no
    rendering for JSON on the way); under ``transaction`` (a destructive get in that unit of
    work), ``preemptive`` also takes other units of work's uncommitted puts, linking them
    upstream of it (held commit, cascading backout)."""
    request: dict[str, Any] = {"broker": broker, "queue": queue, "mode": mode, "batch": batch}
    if transaction:
        request["transaction"] = transaction
        request["preemptive"] = preemptive
    return MessageGet.get(user, MessageGet.parse(request)).messages


def lock_completed(user, *, token: str, transaction: str | None) -> None:
    request = {"lock_token": token}
    if transaction:
        request["transaction"] = transaction
    LockComplete.run(user, request)


def locks_completed(user, *, tokens: list[str], transaction: str | None) -> None:
    """Peek-locks completed, under one unit of work or (None) at once and durably: one
    operation per BATON_MAX_BATCH of them (one database transaction each), each all or
    none; one alone as a single complete."""
    if len(tokens) == 1:
        lock_completed(user, token=tokens[0], transaction=transaction)
        return
    for start in range(0, len(tokens), settings.BATON_MAX_BATCH):
        LocksComplete.run(
            user, {"lock_tokens": tokens[start : start + settings.BATON_MAX_BATCH], "transaction": transaction}
        )


def lock_renewed(user, *, token: str) -> None:
    LockRenew.run(user, {"lock_token": token})


def lock_abandoned(user, *, token: str) -> None:
    LockAbandon.run(user, {"lock_token": token})


def lock_dead_lettered(user, *, token: str, reason: str) -> None:
    LockDeadLetter.run(user, {"lock_token": token, "reason": reason})


def transaction_begun(user, *, broker: str) -> str:
    return TransactionBegin.run(user, {"broker": broker})[1]["id"]


def transaction_committed(user, *, transaction: str, wait: float) -> dict[str, Any]:
    """{"state": "committed"} or {"state": "commit_held", "waiting_on": [...]}; raises
    TransactionBackedOut."""
    return TransactionCommit.run(user, {"transaction": transaction, "wait": wait})[1]


def transaction_rolled_back(user, *, transaction: str) -> None:
    TransactionRollback.run(user, {"transaction": transaction})
