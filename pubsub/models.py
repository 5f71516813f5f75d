"""Topic objects, subscriptions, retained publications, held (conflated) publications and
publication effects waiting for their unit of work to commit.

Topic strings and filters follow MQTT's rules (pubsub.topics). A subscription delivers
copies of matching publications to a queue of its broker. The matching itself uses a
per-process tree of every subscription (pubsub.tree), checked against
``TopicTreeVersion`` — changed in the same database transaction as every topic object or
subscription definition change — so it is never stale.
"""

from __future__ import annotations

from django.db import models

from brokers.models import Broker, Queue, name_validator

#: Longest topic string or filter (docs/api.md).
TOPIC_MAX = 1024


class TopicTreeVersion(models.Model):
    """One row: changed with every definition of a topic object or a subscription, so that
    each process knows when its cached topic tree is out of date."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)


class Topic(models.Model):
    """A topic object: administers its topic string and every string below it (the nearest
    topic object wins)."""

    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="topics")
    name = models.CharField(max_length=48, validators=[name_validator])
    topic_string = models.CharField(max_length=TOPIC_MAX)
    conflation_interval_ms = models.PositiveIntegerField(
        default=0,
        help_text="Publications within this many ms of the last delivery are held; the latest is "
        "delivered when the interval ends (0: no conflation).",
    )
    durable_subscriptions = models.BooleanField(default=True, help_text="Whether durable subscriptions are allowed.")
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    altered_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["broker", "name"], name="topic_name_unique"),
            models.UniqueConstraint(fields=["broker", "topic_string"], name="topic_string_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.topic_string})"


class Subscription(models.Model):
    """Copies of the publications its filter matches go to its queue while it is active."""

    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="subscriptions")
    name = models.CharField(max_length=48, validators=[name_validator])
    topic_filter = models.CharField(max_length=TOPIC_MAX)
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="subscriptions")
    durable = models.BooleanField(
        default=True, help_text="Survives a platform restart; a full queue fails a publication."
    )
    activation_topic = models.CharField(max_length=TOPIC_MAX, blank=True)
    deactivation_topic = models.CharField(max_length=TOPIC_MAX, blank=True)
    new_publications_only = models.BooleanField(default=False, help_text="Do not send it the retained publications.")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker", "name"], name="subscription_name_unique")]

    def __str__(self) -> str:
        return f"{self.name} ({self.topic_filter} -> {self.queue_id})"


class StoredPublication(models.Model):
    """A publication kept for later: its body and message fields (as a MessageInput without
    its body, see pubsub.services.publication_message)."""

    msg_id = models.CharField(max_length=48)
    body = models.BinaryField()
    message = models.JSONField(default=dict)
    published_at = models.DateTimeField()

    class Meta:
        abstract = True


class RetainedPublication(StoredPublication):
    """The retained publication of one topic string."""

    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="retained_publications")
    topic = models.CharField(max_length=TOPIC_MAX)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker", "topic"], name="retained_topic_unique")]


class Conflation(models.Model):
    """Conflation of one topic string: when it last delivered, and the latest publication
    held until ``due_at`` (none held: ``held_msg_id`` empty). The row is locked by whoever
    decides to deliver or hold (a publisher, the sweeper), so a held publication is
    delivered once."""

    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="+")
    topic = models.CharField(max_length=TOPIC_MAX)
    last_delivered_at = models.DateTimeField()
    held_msg_id = models.CharField(max_length=48, blank=True)
    held_body = models.BinaryField(null=True)
    held_message = models.JSONField(null=True)
    held_at = models.DateTimeField(null=True)
    due_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker", "topic"], name="conflation_topic_unique")]
        indexes = [models.Index(fields=["due_at"], condition=models.Q(due_at__isnull=False), name="conflation_due")]


class PendingEffect(StoredPublication):
    """A publication under a unit of work whose effects on topics (replacing the retained
    publication, switching subscriptions on or off) wait for that unit of work to commit;
    removed when it commits or rolls back."""

    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.CASCADE, related_name="+")
    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="+")
    topic = models.CharField(max_length=TOPIC_MAX)
    retain = models.BooleanField(default=False)
