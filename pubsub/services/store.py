"""The resource manager for publication effects under units of work, registered with the
transaction manager (pubsub.apps). A unit of work that published nothing with effects
carries no ``pubsub`` mark, and costs this manager no statement at commit or rollback."""

from __future__ import annotations

from brokers.models import Broker

from ..models import PendingEffect
from ..tree import tree_for
from .effects import effects_apply
from .publications import MARK_PUBSUB
from .stored import message_loaded


class PublicationStore:
    def resources_commit(self, *, transaction_ids: list[str], marks: set[str]) -> None:
        """Apply the effects of these units of work's publications in publication order:
        retained publications change, subscriptions switch on or off (newly active ones
        receive their retained publications, committed with the group)."""
        if MARK_PUBSUB not in marks:
            return
        pending = list(PendingEffect.objects.filter(transaction_id__in=transaction_ids).order_by("pk"))
        brokers = {b.pk: b for b in Broker.objects.filter(pk__in={p.broker_id for p in pending})}
        for effect in pending:
            effects_apply(
                broker=brokers[effect.broker_id],
                tree=tree_for(broker_id=effect.broker_id),
                topic=effect.topic,
                msg=message_loaded(effect.body, effect.message),
                msg_id=effect.msg_id,
                retain=effect.retain,
                at=effect.published_at,
                strict=False,
            )
        PendingEffect.objects.filter(transaction_id__in=transaction_ids).delete()

    def resources_rollback(self, *, transaction_id: str, reason: str, marks: set[str]) -> None:
        """A rolled-back publication has no effect: its copies vanish with the unit of
        work's puts (brokers' message store), its pending effects here."""
        if MARK_PUBSUB in marks:
            PendingEffect.objects.filter(transaction_id=transaction_id).delete()
