"""Publishing: copies to every active subscription whose filter matches, the retained
publication, conflation, activation topics (docs/api.md, "Publish/subscribe").

Locking: the unit of work's row (if any, ``transaction_for_operation``), then the topic's
conflation row (if its topic object conflates), then each subscriber queue's row as its
copy is put (``message_put``), then the retained publication and subscription rows the
effects change. Everything is one database transaction: a publication that fails (a
durable subscriber's full queue) leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from brokers.definitions import broker_cached, definitions_checked
from brokers.ids import ids_new
from brokers.models import Persistence
from brokers.services.message_input import MessageInput
from baton_client.errors import InvalidInput, MessageTooLarge
from transactions.durability import engine_step
from transactions.manager import transaction_for_operation, transaction_mark, transaction_timeouts_applied

from .. import queries
from ..models import PendingEffect
from ..tree import tree_for
from .conflation import conflation_admit
from .delivery import copies_deliver
from .effects import effects_apply, effects_wanted
from .stored import message_stored

#: The transaction mark of a unit of work with publication effects waiting for its commit.
MARK_PUBSUB = "pubsub"


@dataclass
class PublicationResult:
    msg_id: str
    topic: str
    matched: int  # subscriptions a copy was put for
    retained: bool  # kept as the topic's retained publication (under a unit of work: when it commits)
    held: bool = False  # held by conflation, delivered when the interval ends
    transaction_id: str | None = None


def publication_publish(
    *, broker: str, topic: str, message: MessageInput, retain: bool = False, transaction_id: str | None = None
) -> PublicationResult:
    """Publish ``message`` on ``topic``: a copy on the queue of every active subscription
    whose filter matches (under the unit of work ``transaction_id`` if given: its
    uncommitted puts), keep it as the retained publication if ``retain``, and switch the
    subscriptions whose activation or deactivation topic it is. A full queue of a durable
    subscription fails the whole publication (``queue_full``); publishing with no subscriber
    succeeds. ``topic`` is a topic string already (``PublicationPublish.Input`` parsed it
    where it entered: no wildcards)."""
    if message.refers_to is not None:
        raise InvalidInput("A publication cannot be a reactive message.", errors={"refers_to": ["Not allowed."]})
    durable = transaction_id is None and message.persistence != Persistence.NON_PERSISTENT
    with transaction_timeouts_applied(), engine_step(durable=durable):
        now = timezone.now()
        definitions, tree_version = queries.versions()
        definitions_checked(definitions)
        owner = broker_cached(name=broker)
        limit = min(owner.max_message_length, settings.BATON_MAX_MESSAGE_LENGTH)
        if len(message.body) > limit:  # (each copy's put checks its queue's limit too)
            raise MessageTooLarge(
                f"The publication is {len(message.body)} bytes; broker {broker!r} accepts at most {limit}.",
                length=len(message.body),
                max_message_length=limit,
            )
        txn = transaction_for_operation(transaction_id=transaction_id, broker=owner.name) if transaction_id else None
        tree = tree_for(broker_id=owner.pk, version=tree_version)
        msg_id = ids_new(1)[0]
        interval, _ = tree.topic_attributes(topic)
        deliver = (
            txn is not None
            or not interval
            or conflation_admit(
                broker=owner,
                topic=topic,
                msg=message,
                msg_id=msg_id,
                interval_ms=interval,
                at=now,
            )
        )
        matched = 0
        if deliver:
            matched = copies_deliver(
                broker=owner,
                subscriptions=tree.active(tree.match(topic)),
                topic=topic,
                msg=message,
                msg_id=msg_id,
                transaction_id=transaction_id,
            )
        if effects_wanted(tree=tree, topic=topic, retain=retain):
            if txn is None:
                effects_apply(broker=owner, tree=tree, topic=topic, msg=message, msg_id=msg_id, retain=retain, at=now)
            else:
                body, fields = message_stored(message)
                PendingEffect.objects.create(
                    transaction=txn,
                    broker=owner,
                    topic=topic,
                    retain=retain,
                    msg_id=msg_id,
                    body=body,
                    message=fields,
                    published_at=now,
                )
                transaction_mark(transaction=txn, mark=MARK_PUBSUB)
    return PublicationResult(
        msg_id=msg_id, topic=topic, matched=matched, retained=retain, held=not deliver, transaction_id=transaction_id
    )
