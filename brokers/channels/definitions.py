"""Defining, altering, deleting, starting and stopping channels."""

from __future__ import annotations

from urllib.parse import urlparse

from django.db import IntegrityError, transaction as db

from config.celery import task_send
from baton_client.errors import AlreadyExists, Conflict, InvalidInput, NotFound

from ..models import Broker, Channel, ChannelState, Queue, QueueKind, QueueUsage

CHANNEL_FIELDS = {
    "source_broker",
    "transmission_queue",
    "target_broker",
    "target_url",
    "target_token",
    "batch_size",
    "batch_interval_ms",
    "batch_bytes",
    "window",
    "preemptive",
    "description",
}


class ChannelNotFound(NotFound):
    """No such channel."""


#: The Celery task that runs a channel's sender agent (brokers/channels/tasks.py).
CHANNEL_AGENT_TASK = "brokers.tasks.channel_agent"


def channel_get(*, name: str) -> Channel:
    try:
        return Channel.objects.select_related("source_broker").get(name=name)
    except Channel.DoesNotExist as exc:
        raise ChannelNotFound(f"No channel named {name!r}.", channel=name) from exc


def _channel_checked(channel: Channel) -> None:
    """The definition as a whole, as it would be saved (for an alteration, the stored one
    with the changes): its transmission queue and target exist, a target on another platform
    has a URL and a token."""
    errors: dict[str, list[str]] = {}
    xmitq = Queue.objects.filter(broker=channel.source_broker, name=channel.transmission_queue).first()
    if xmitq is None:
        errors["transmission_queue"] = [
            f"No queue {channel.transmission_queue!r} on broker {channel.source_broker.name!r}."
        ]
    elif xmitq.kind != QueueKind.LOCAL or xmitq.usage != QueueUsage.TRANSMISSION:
        errors["transmission_queue"] = ["Must be a local queue with usage transmission."]
    if channel.target_url:
        url = urlparse(channel.target_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            errors["target_url"] = ["Must be an http(s) URL of another Baton platform."]
        if not channel.target_token:
            errors["target_token"] = ["A channel to another platform needs that platform's API token."]
    elif not Broker.objects.filter(name=channel.target_broker).exists():
        errors["target_broker"] = [
            f"No broker {channel.target_broker!r} on this platform (give target_url for another one)."
        ]
    if errors:
        raise InvalidInput("The channel definition is not valid.", errors=errors)


def _source_broker(attributes: dict) -> None:
    if "source_broker" in attributes:
        name = attributes["source_broker"]
        broker = Broker.objects.filter(name=name).first()
        if broker is None:
            raise InvalidInput(
                "The channel definition is not valid.", errors={"source_broker": [f"No broker {name!r}."]}
            )
        attributes["source_broker"] = broker


def channel_define(*, name: str, **attributes) -> Channel:
    """Define a channel (stopped). Its transmission queue must exist on the source broker.
    ``name`` and ``attributes`` (of CHANNEL_FIELDS; source_broker, transmission_queue and
    target_broker among them) are valid already: the caller's boundary parsed them through
    ``ChannelDefine.Input``."""
    _source_broker(attributes)
    channel = Channel(name=name, **attributes)
    _channel_checked(channel)
    try:
        with db.atomic():
            channel.save()
    except IntegrityError as exc:
        raise AlreadyExists(f"A channel named {name!r} already exists.", channel=name) from exc
    return channel


def channel_alter(*, name: str, **changes) -> Channel:
    """Change a stopped channel's definition (a running agent must not see it change).
    ``changes``: valid already, as parsed by ``ChannelAlter.Input``."""
    _source_broker(changes)
    with db.atomic():
        channel = channel_get(name=name)
        if channel.enabled or channel.batches.exists():
            raise Conflict(
                f"Stop channel {name!r} (and let its batches in flight resolve) before altering it.", channel=name
            )
        for key, value in changes.items():
            setattr(channel, key, value)
        _channel_checked(channel)
        channel.save(update_fields=sorted(changes) + ["updated_at"])
    return channel


def channel_delete(*, name: str) -> None:
    with db.atomic():
        channel = channel_get(name=name)
        if channel.enabled or channel.batches.exists():
            raise Conflict(f"Channel {name!r} is running or has batches in doubt; stop it first.", channel=name)
        channel.delete()


def channel_start(*, name: str, dispatch: bool = True) -> Channel:
    """Ask the worker fleet to run the channel's agent (at most one at a time). Without
    ``dispatch`` the channel is only marked started (the supervisor or ``channel_run``
    runs its agent)."""
    with db.atomic():
        channel = channel_get(name=name)
        Channel.objects.filter(pk=channel.pk).update(enabled=True, retry_count=0, next_attempt_at=None)
        if dispatch:
            db.on_commit(lambda: channel_agent_send_on_commit(name))
    return channel_get(name=name)


def channel_agent_send_on_commit(name: str) -> None:
    """``on_commit`` hook: ask the worker fleet for the channel's agent (its task by name)."""
    task_send(CHANNEL_AGENT_TASK, name)


def channel_stop(*, name: str) -> Channel:
    """Ask the agent to stop after its current step. Batches in flight stay in doubt until
    the channel starts again."""
    with db.atomic():  # the row locked: an agent ending now sets the state, or sees the stop (sender.py)
        channel = channel_get(name=name)
        Channel.objects.select_for_update().filter(pk=channel.pk).values_list("pk").first()
        channel.refresh_from_db()
        changes = {"enabled": False}
        if not channel.lease_holder:
            changes["state"] = ChannelState.IN_DOUBT if channel.batches.exists() else ChannelState.STOPPED
        Channel.objects.filter(pk=channel.pk).update(**changes)
    return channel_get(name=name)
