"""A subscription deleted by cascade (with its queue or broker) changes the topic tree
version like one deleted by subscription_delete, so no process's tree keeps it."""

from django.db.models.signals import post_delete
from django.dispatch import receiver

from .models import Subscription, Topic
from .tree import tree_version_bump


@receiver(post_delete, sender=Subscription)
@receiver(post_delete, sender=Topic)
def _definition_deleted(sender, instance, **kwargs) -> None:
    tree_version_bump()
