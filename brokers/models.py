"""Brokers, queues, messages and connections.

A message's put side and get side are two separate facts: ``put_transaction`` names the
unit of work that put it (None for a put outside one), and the put is uncommitted while
that unit of work is open: a commit flips its unit of work's row and leaves its messages as
they are (``put_committed_q``, ``put_open_q``; on a commit-ordered queue the commit still
writes each message's commit sequence, and clears the name with it). ``get_transaction``
is set while it is gotten under a unit of work not yet committed. A message whose put is
open and which has a ``get_transaction`` was pre-emptively gotten. ``available`` means a
committed put, no ``get_transaction`` and no lock: the message can be gotten by anyone.
"""

from __future__ import annotations

from django.conf import settings as _settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from transactions.models import OPEN_STATES, RowIdField, Transaction

from .names import NAME_PATTERN, name_validator  # noqa: F401  (the rule, written once: names.py)


DEFAULT_DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"

#: Words the REST API's and the dashboard's paths use after a name; a name containing one as a
#: '/'-separated part would make its URLs ambiguous.
ROUTE_WORDS = {
    "queues",
    "messages",
    "get",
    "transactions",
    "connections",
    "graph",  # REST
    "put",
    "purge",
    "move",
    "jobs",
    "ingest",
    "ingests",
    "body",
    "topics",
    "subscriptions",  # dashboard, pub/sub
    "retained",
    "publish",
    "analytics",
    "start",
    "stop",
    "resume",
    "progress",
    "define",  # dashboard: define, alter, delete pages
    "alter",
    "delete",
    "rates",  # dashboard: a queue's rates and depth history
}


def name_not_route(value: str) -> None:
    """Names may hold '/' (docs/design.md §2), as path-like names (``orders/eu``), but each
    '/'-separated part must be a plain name: not empty (no leading, trailing or double '/'),
    not ``.`` or ``..`` (a browser or proxy would resolve them as path steps: ``../../x``
    leads elsewhere), and not a word the paths use after a name."""
    parts = value.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValidationError(
            "A name may not start or end with '/', hold '//', or have . or .. as a '/'-separated part."
        )
    if len(parts) > 1 and ROUTE_WORDS & set(parts):
        raise ValidationError(
            "A name with '/' may not have %(words)s as one of its parts (the REST API's and the dashboard's "
            "paths use them).",
            params={"words": ", ".join(sorted(ROUTE_WORDS))},
        )


class Persistence(models.TextChoices):
    #: Kept across broker restarts.
    PERSISTENT = "persistent"
    #: Discarded when the broker restarts.
    NON_PERSISTENT = "non_persistent"


class Broker(models.Model):
    """A queue manager."""

    name = models.CharField(max_length=48, unique=True, validators=[name_validator, name_not_route])
    description = models.CharField(max_length=200, blank=True)
    dead_letter_queue = models.CharField(max_length=48, default=DEFAULT_DEAD_LETTER_QUEUE, validators=[name_validator])
    transaction_timeout_ms = models.PositiveIntegerField(default=120_000)
    max_message_length = models.PositiveIntegerField(default=4 * 1024 * 1024)
    default_persistence = models.CharField(max_length=16, choices=Persistence.choices, default=Persistence.PERSISTENT)
    #: A STOMP destination /queue/{name} that does not exist is defined with the defaults.
    auto_define_queues = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class QueueKind(models.TextChoices):
    #: Holds messages.
    LOCAL = "local"
    #: Names a queue on another broker and the transmission queue that leads there.
    REMOTE = "remote"
    #: Another name for a queue on the same broker.
    ALIAS = "alias"


class QueueUsage(models.TextChoices):
    #: Applications put and get here.
    NORMAL = "normal"
    #: Holds messages waiting for a channel to another broker.
    TRANSMISSION = "transmission"


class DeliverySequence(models.TextChoices):
    #: Higher priority first, then read order.
    PRIORITY = "priority"
    #: Read order only; priority is ignored.
    FIFO = "fifo"


class ReadOrder(models.TextChoices):
    #: The order in which messages were put.
    PUT = "put"
    #: The order in which their puts committed.
    COMMIT = "commit"


class EnforceOrder(models.TextChoices):
    #: Gets are unordered unless they ask to be ordered.
    NO = "no"
    #: Every get is ordered.
    YES = "yes"


class Access(models.TextChoices):
    #: Many consumers at once.
    SHARED = "shared"
    #: One consumer at a time.
    EXCLUSIVE = "exclusive"


class Queue(models.Model):
    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="queues")
    name = models.CharField(max_length=48, validators=[name_validator, name_not_route])
    kind = models.CharField(max_length=8, choices=QueueKind.choices, default=QueueKind.LOCAL)
    usage = models.CharField(max_length=16, choices=QueueUsage.choices, default=QueueUsage.NORMAL)
    description = models.CharField(max_length=200, blank=True)
    max_depth = models.PositiveIntegerField(default=5000)
    max_message_length = models.PositiveIntegerField(default=4 * 1024 * 1024)
    put_enabled = models.BooleanField(default=True)
    get_enabled = models.BooleanField(default=True)
    default_priority = models.PositiveSmallIntegerField(default=0, validators=[MaxValueValidator(9)])
    default_persistence = models.CharField(max_length=16, choices=Persistence.choices, default=Persistence.PERSISTENT)
    delivery_sequence = models.CharField(
        max_length=8, choices=DeliverySequence.choices, default=DeliverySequence.PRIORITY
    )
    read_order = models.CharField(max_length=8, choices=ReadOrder.choices, default=ReadOrder.PUT)
    enforce_order = models.CharField(max_length=4, choices=EnforceOrder.choices, default=EnforceOrder.NO)
    backout_threshold = models.PositiveIntegerField(default=0, help_text="0: never move backed-out messages.")
    backout_queue = models.CharField(max_length=48, blank=True)
    lock_duration_ms = models.PositiveIntegerField(default=30_000, validators=[MinValueValidator(1)])
    default_access = models.CharField(max_length=16, choices=Access.choices, default=Access.SHARED)
    # performance events, as IBM MQ's (brokers/operating/events.py); 0: off
    depth_high_pct = models.PositiveSmallIntegerField(
        default=0,
        db_default=0,
        validators=[MaxValueValidator(100)],
        help_text="Queue depth high event at this percent of max_depth; 0: off.",
    )
    depth_low_pct = models.PositiveSmallIntegerField(
        default=0,
        db_default=0,
        validators=[MaxValueValidator(100)],
        help_text="Queue depth low event when the depth falls to this percent of max_depth; 0: off.",
    )
    service_interval_ms = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Service interval high event once the oldest message is older than this; OK once it is not; 0: off.",
    )
    # remote and alias definitions
    remote_broker = models.CharField(max_length=48, blank=True)
    remote_queue = models.CharField(max_length=48, blank=True)
    transmission_queue = models.CharField(max_length=48, blank=True)
    target_queue = models.CharField(max_length=48, blank=True, help_text="For an alias: the queue it names.")
    # counters, changed only while the row is locked
    reserved_depth = models.PositiveIntegerField(
        default=0,
        help_text="Room taken by puts (uncommitted included) since it was last folded; less the queue's "
        "releases, the messages on it.",
    )
    # exclusive input: a lease held by one connection, renewed by its gets
    exclusive_holder = models.CharField(max_length=48, blank=True)
    exclusive_until = models.DateTimeField(null=True, blank=True)
    next_commit_seq = models.BigIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker", "name"], name="queue_unique_name")]

    def __str__(self) -> str:
        return f"{self.broker.name}/{self.name}" if self.broker_id else self.name


class MessageType(models.TextChoices):
    #: No reply expected.
    DATAGRAM = "datagram"
    #: A reply is expected on the reply-to queue.
    REQUEST = "request"
    #: Answers a request.
    REPLY = "reply"
    #: A report about another message.
    REPORT = "report"


_NOT_GOTTEN = Q(get_transaction__isnull=True)


class Message(models.Model):
    """Its ``id`` is the put sequence: strictly increasing, so increasing per queue in put order."""

    id = models.BigAutoField(primary_key=True)
    # Foreign keys without an index of their own: the partial indexes below serve every
    # look-up, and each index costs every put and commit (docs/performance.md).
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="messages", db_index=False)
    msg_id = models.CharField(max_length=48, help_text="Kept when a channel moves the message on.")
    correl_id = models.CharField(max_length=48, null=True, blank=True)
    group_id = models.CharField(max_length=48, null=True, blank=True)
    msg_type = models.CharField(max_length=8, choices=MessageType.choices, default=MessageType.DATAGRAM)
    priority = models.PositiveSmallIntegerField(default=0)
    persistent = models.BooleanField(default=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    format = models.CharField(max_length=100, blank=True)
    reply_to_queue = models.CharField(max_length=48, blank=True)
    reply_to_broker = models.CharField(max_length=48, blank=True)
    report = models.JSONField(default=list, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    put_time = models.DateTimeField()
    put_application = models.CharField(max_length=100, blank=True)
    backout_count = models.PositiveIntegerField(default=0)
    delivery_count = models.PositiveIntegerField(default=0)
    dead_letter_reason = models.CharField(max_length=200, blank=True)
    dead_letter_queue = models.CharField(max_length=48, blank=True, help_text="Queue it was moved from.")
    transmission_header = models.JSONField(
        null=True, blank=True, help_text="Destination broker and queue, on a transmission queue."
    )
    body = models.BinaryField()
    commit_seq = models.BigIntegerField(null=True, blank=True)
    put_transaction = models.ForeignKey(
        "transactions.Transaction",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        help_text="The unit of work that put it; the put is uncommitted while that unit of work is open.",
    )
    get_transaction = models.ForeignKey(
        "transactions.Transaction",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        help_text="Set while it is gotten under a unit of work not yet committed.",
    )
    lock_token = models.CharField(
        max_length=32, null=True, blank=True, help_text="Set while the message is peek-locked."
    )
    locked_until = models.DateTimeField(null=True, blank=True)
    lapsed_lock_token = models.CharField(
        max_length=32, null=True, blank=True, help_text="The last lock that expired, so its holder hears lock_lost."
    )
    feedback = models.CharField(max_length=16, blank=True, help_text="On a report: coa, cod, expiry or exception.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue", "msg_id"], name="msg_unique_per_queue"),
            models.UniqueConstraint(
                fields=["lock_token"], name="msg_lock_token_unique", condition=Q(lock_token__isnull=False)
            ),
        ]
        indexes = [
            # The get path, for priority and FIFO queues; pre-emptive gets walk the same index.
            # The put transaction is not in them: a commit, which clears it, then writes no
            # entry of theirs (a get reads each candidate's row anyway, for its lock and expiry).
            models.Index("queue", models.F("priority").desc(), "id", name="msg_get_priority", condition=_NOT_GOTTEN),
            models.Index("queue", "id", name="msg_get_fifo", condition=_NOT_GOTTEN),
            # commit-ordered queues: gets in priority order, and ordered gets and browses
            models.Index(
                "queue",
                models.F("priority").desc(),
                "commit_seq",
                name="msg_commit_priority",
                condition=Q(get_transaction__isnull=True, commit_seq__isnull=False),
            ),
            models.Index("queue", "commit_seq", name="msg_commit_order", condition=Q(commit_seq__isnull=False)),
            models.Index("locked_until", name="msg_lock_expiry", condition=Q(lock_token__isnull=False)),
            models.Index("queue", "correl_id", name="msg_correl", condition=Q(correl_id__isnull=False)),
            models.Index("queue", "group_id", name="msg_group", condition=Q(group_id__isnull=False)),
            models.Index("expires_at", name="msg_expiry", condition=Q(expires_at__isnull=False)),
            models.Index("put_transaction", name="msg_put_txn", condition=Q(put_transaction__isnull=False)),
            models.Index("get_transaction", name="msg_get_txn", condition=Q(get_transaction__isnull=False)),
            models.Index("persistent", name="msg_non_persistent", condition=Q(persistent=False)),
            models.Index("lapsed_lock_token", name="msg_lapsed_lock", condition=Q(lapsed_lock_token__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.msg_id


def put_committed_q() -> Q:
    """Messages whose put is committed: put outside a unit of work, or by a committed one
    (a look-up of the unit of work's row, no join: it may go with ``select_for_update``)."""
    return Q(put_transaction__isnull=True) | Q(
        models.Exists(Transaction.objects.filter(pk=models.OuterRef("put_transaction_id"), state="committed"))
    )


def put_open_flag() -> models.Exists:
    """Whether a message's put is uncommitted (its unit of work open): a condition, or an
    annotation of a message query."""
    return models.Exists(Transaction.objects.filter(pk=models.OuterRef("put_transaction_id"), state__in=OPEN_STATES))


def put_open_q() -> Q:
    """Messages whose put is uncommitted."""
    return Q(put_open_flag())


def put_units_open_only(messages: list[Message]) -> list[Message]:
    """Messages read with ``put_open`` annotated (``put_open_flag``), their
    ``put_transaction_id`` left only where the put is uncommitted, as the engine's own reads
    give it (brokers/queries.py, ``_put_open``)."""
    for message in messages:
        if not message.put_open:
            message.put_transaction_id = None
    return messages


class QueueRelease(models.Model):
    """Room given back on a queue (a get, a rollback, an expiry) and not yet folded into its
    ``reserved_depth``: a few rows per queue (``stripe``), each thread adding to its own, so
    that gets neither wait on puts nor on each other for the queue's row. A queue holds
    ``reserved_depth`` less the sum of its releases. A put reads that sum in the statement
    that takes its room on the queue's row (``brokers.queries.queue_reserve``); housekeeping
    folds the sums into ``reserved_depth`` (``queue_releases_fold``). docs/concurrency.md."""

    #: nothing refers to it (``RowIdField``): the upsert of a get's commit writes no
    #: ``sqlite_sequence`` page
    id = RowIdField(primary_key=True)
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+", db_index=False)
    stripe = models.PositiveSmallIntegerField()
    released = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["queue", "stripe"], name="queue_release_stripe")]


class DefinitionsVersion(models.Model):
    """One row whose ``version`` changes, to a new random value, in the same database
    transaction as any change to a broker, a queue's definition or a grant. Database
    triggers change it (migration 0002), so every writer, in any process, ORM or not, is
    covered; processes cache definitions and compare this value in the statement that
    starts each operation (brokers/definitions.py). Random, not counted: a rolled-back
    change must never leave a version that a later, different change takes again."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)


class Connection(models.Model):
    """An application's session with a broker. It belongs to the user who opened it (None:
    system code), as a unit of work does (docs/permissions.md, "Connections")."""

    conn_id = models.CharField(primary_key=True, max_length=48)
    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="connections")
    client_name = models.CharField(max_length=100)
    user = models.ForeignKey(
        _settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    current_transaction = models.ForeignKey(
        "transactions.Transaction",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # what the client name's session will remember once ``pending_transaction`` commits
    pending_transaction = models.ForeignKey(
        "transactions.Transaction",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    pending_put_msg_id = models.CharField(max_length=48, blank=True)
    pending_got_msg_id = models.CharField(max_length=48, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)


class ClientSession(models.Model):
    """What a client name's connections remember across reconnects: one per broker, user
    and client name (two users' clients of one name are two sessions)."""

    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="client_sessions")
    client_name = models.CharField(max_length=100)
    user = models.ForeignKey(
        _settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    last_put_msg_id = models.CharField(max_length=48, blank=True)
    last_got_msg_id = models.CharField(max_length=48, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["broker", "user", "client_name"],
                condition=models.Q(user__isnull=False),
                name="session_unique_user_client",
            ),
            models.UniqueConstraint(
                fields=["broker", "client_name"], condition=models.Q(user__isnull=True), name="session_unique_client"
            ),
        ]


class ChannelState(models.TextChoices):
    #: No agent runs it.
    STOPPED = "stopped"
    #: Its agent is moving batches.
    RUNNING = "running"
    #: The last attempt failed (see ``last_error``); the agent retries with back-off.
    RETRYING = "retrying"
    #: Batches were sent but their outcome is not known yet; resolved when the agent restarts.
    IN_DOUBT = "in_doubt"


class Channel(models.Model):
    """Moves messages from a transmission queue on a broker of this platform to the
    destination queues of a target broker (here, or on another platform over a session), in
    numbered batches."""

    name = models.CharField(max_length=48, unique=True, validators=[name_validator])
    source_broker = models.ForeignKey(Broker, on_delete=models.PROTECT, related_name="channels")
    transmission_queue = models.CharField(max_length=48, validators=[name_validator])
    target_broker = models.CharField(max_length=48, validators=[name_validator])
    target_url = models.CharField(
        max_length=300, blank=True, help_text="Another platform's base URL; blank: this platform."
    )
    target_token = models.CharField(max_length=200, blank=True)
    batch_size = models.PositiveIntegerField(default=50, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    batch_interval_ms = models.PositiveIntegerField(default=200, validators=[MaxValueValidator(60_000)])
    batch_bytes = models.PositiveIntegerField(
        default=4 * 1024 * 1024,
        validators=[MinValueValidator(1)],
        help_text="A batch stops growing at this many bytes of bodies (it always takes one message).",
    )
    window = models.PositiveIntegerField(
        default=8,
        validators=[MinValueValidator(1), MaxValueValidator(64)],
        help_text="How many provisional batches may be in flight (sent, not yet confirmed) at once.",
    )
    preemptive = models.BooleanField(default=False)
    description = models.CharField(max_length=200, blank=True)
    # what the operator asked for, and what the agent reports
    enabled = models.BooleanField(default=False, help_text="Started (True) or stopped (False) by the operator.")
    state = models.CharField(max_length=16, choices=ChannelState.choices, default=ChannelState.STOPPED)
    batches_committed = models.PositiveBigIntegerField(default=0)
    batches_backed_out = models.PositiveBigIntegerField(default=0)
    messages_sent = models.PositiveBigIntegerField(default=0)
    bytes_sent = models.PositiveBigIntegerField(default=0)
    # the recent rate of confirmed traffic: exponentially decayed (brokers.channels.rate)
    rate_messages = models.FloatField(default=0)
    rate_bytes = models.FloatField(default=0)
    rate_at = models.DateTimeField(null=True, blank=True)
    last_batch_seq = models.PositiveBigIntegerField(default=0)
    last_error = models.TextField(blank=True)
    retry_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # at most one agent across the fleet: a lease in the database
    lease_holder = models.CharField(max_length=100, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name

    @property
    def in_doubt_seq(self) -> int | None:
        """The oldest batch in flight (None: none), as the single in-doubt column that the
        window's ``ChannelBatch`` rows replaced read (the dashboard still reads it)."""
        return self.batches.order_by("seq").values_list("seq", flat=True).first()


class ChannelBatchState(models.TextChoices):
    #: Recorded with its unit of work T_s; not known to have reached the receiver.
    GATHERED = "gathered"
    #: The receiver holds it provisionally; waiting for T_s's ready-check.
    SENT = "sent"


class ChannelBatch(models.Model):
    """A batch in flight on the sending end (in doubt until confirmed or backed out): its
    number, its unit of work T_s on the source broker, and what it carries. The channel's
    window bounds how many there are; they resolve strictly in ``seq`` order."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="batches")
    seq = models.PositiveBigIntegerField()
    transaction = models.CharField(max_length=32)
    state = models.CharField(max_length=16, choices=ChannelBatchState.choices, default=ChannelBatchState.GATHERED)
    messages = models.PositiveIntegerField(default=0)
    bytes = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "seq"], name="channel_batch_unique_seq")]


class ChannelReceipt(models.Model):
    """The receiving end's record of a channel: the last batch it committed; the batches it
    holds provisionally are its ``pending`` rows."""

    channel_name = models.CharField(max_length=48)
    source_broker = models.CharField(max_length=48)
    target_broker = models.CharField(max_length=48)
    last_committed_seq = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel_name", "source_broker"], name="receipt_unique_channel")]


class ReceivedBatch(models.Model):
    """A batch the receiving end holds provisionally: its unit of work T_r, held on the
    stand-in S for the sender's T_s."""

    receipt = models.ForeignKey(ChannelReceipt, on_delete=models.CASCADE, related_name="pending")
    seq = models.PositiveBigIntegerField()
    transaction = models.CharField(max_length=32)
    standin = models.CharField(max_length=32)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["receipt", "seq"], name="received_batch_unique_seq")]


class ReactiveAction(models.TextChoices):
    #: Remove the referenced message.
    CANCEL = "cancel"
    #: Replace the referenced message's body (it keeps its place).
    REPLACE = "replace"
    #: Give the referenced message the reactive message's priority.
    REPRIORITISE = "reprioritise"


class PendingReaction(models.Model):
    """A reactive message put under a unit of work: applied when that commits, dropped if it
    rolls back."""

    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.CASCADE, related_name="+")
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+")
    msg_id = models.CharField(max_length=48)
    target_msg_id = models.CharField(max_length=48)
    action = models.CharField(max_length=16, choices=ReactiveAction.choices)
    body = models.BinaryField()
    priority = models.PositiveSmallIntegerField(null=True, blank=True)
    report = models.JSONField(default=list, blank=True)
    reply_to_queue = models.CharField(max_length=48, blank=True)
    reply_to_broker = models.CharField(max_length=48, blank=True)


class Grant(models.Model):
    """What a user may do on a broker: ``put``, ``get``, ``browse`` and ``admin`` on one of its
    queues (``queue``), or on every queue of it and on the broker itself (``queue`` blank);
    ``monitor`` (broker-wide only) lets a user scrape the broker's figures at ``/metrics``.
    Grants name their objects, as the REST API does: a grant made before a queue is defined
    applies to it once it is, and one on a deleted broker or queue stays until revoked.
    Superusers need none. See brokers.permissions for which action each request needs."""

    ACTIONS = ("put", "get", "browse", "admin", "monitor")

    user = models.ForeignKey(_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="baton_grants")
    broker = models.CharField(max_length=48, validators=[name_validator])
    queue = models.CharField(
        max_length=48,
        blank=True,
        validators=[name_validator],
        help_text="Blank: every queue of the broker, and the broker itself.",
    )
    may_put = models.BooleanField(default=False)
    may_get = models.BooleanField(default=False)
    may_browse = models.BooleanField(default=False)
    may_admin = models.BooleanField(default=False)
    may_monitor = models.BooleanField(default=False, db_default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "broker", "queue"], name="grant_unique_object")]
        # Not per broker: as MQ's set-all-context authority, it lets a user's puts carry
        # their own put_application and msg_type report (docs/permissions.md).
        permissions = [("set_context", "Can set a message's context (put_application, msg_type report)")]

    @property
    def actions(self) -> list[str]:
        return [action for action in self.ACTIONS if getattr(self, f"may_{action}")]

    def __str__(self) -> str:
        where = f"queue {self.queue} of broker {self.broker}" if self.queue else f"broker {self.broker}"
        return f"{self.user} may {', '.join(self.actions) or 'nothing'} on {where}"


class DedupKey(models.Model):
    """A put's duplicate-detection key (a message's ``dedup_key``), remembered per queue so
    that a later put with the same key is skipped (Service Bus duplicate detection, SQS
    ``MessageDeduplicationId``). Kept on its own rows, not on the message's: a key outlives
    its message (consumed, expired or moved) and stays for the retention its put declared
    (``expires_at``; none: until its queue is deleted). Written
    in the same database transaction as the put; a key taken under a unit of work that
    rolls back is given back with it (``transaction_id``)."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=200)
    msg_id = models.CharField(max_length=48, help_text="The message put with this key.")
    transaction_id = models.CharField(
        max_length=32, blank=True, help_text="The unit of work that put it, if any (its rollback frees the key)."
    )
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Forgotten from this time on (the put's dedup_retention_ms); none: kept."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["queue", "key"], name="dedupkey_unique_per_queue")]
        indexes = [
            models.Index(
                fields=["transaction_id"], name="dedupkey_transaction", condition=~models.Q(transaction_id="")
            ),
            models.Index(fields=["expires_at"], name="dedupkey_expiry", condition=models.Q(expires_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.key} on queue {self.queue_id}"


class TrafficTotal(models.Model):
    """Messages put and gotten per queue, folded from the journal's put and get events by
    housekeeping (``brokers.operating.traffic``) so that ``/metrics`` reads totals, not the
    journal, and keeps them after retention removes the events. Names, as the journal has
    them: a deleted queue's totals stay until its name is used again."""

    broker = models.CharField(max_length=48)
    queue = models.CharField(max_length=48)
    puts = models.PositiveBigIntegerField(default=0)
    gets = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker", "queue"], name="traffic_unique_queue")]


class TrafficFold(models.Model):
    """The one row (id 1): the journal is folded into ``TrafficTotal`` up to ``last_id``."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_id = models.BigIntegerField(default=0)


class QueueEventState(models.Model):
    """Where a queue stood at the last evaluation of its performance events
    (``brokers.operating.events``), so that each crossing puts one event message. None: not
    evaluated yet."""

    queue = models.OneToOneField(Queue, on_delete=models.CASCADE, primary_key=True, related_name="+")
    depth_high = models.BooleanField(null=True, help_text="At or over depth_high_pct.")
    depth_low = models.BooleanField(null=True, help_text="At or under depth_low_pct.")
    service_high = models.BooleanField(null=True, help_text="Oldest message older than service_interval_ms.")
    depth = models.PositiveIntegerField(default=0)
    evaluated_at = models.DateTimeField(null=True, blank=True)


class DeadLetterWatch(models.Model):
    """The one row (id 1): the dead-lettering burst events (``brokers.operating.dead_letters``)
    have counted the journal up to ``last_id``, at ``evaluated_at``."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_id = models.BigIntegerField(default=0)
    evaluated_at = models.DateTimeField(null=True, blank=True)


class ChannelEventState(models.Model):
    """A channel's state at the last evaluation of the channel events
    (``brokers.operating.events``), so that each change puts one event message."""

    channel = models.OneToOneField(Channel, on_delete=models.CASCADE, primary_key=True, related_name="+")
    state = models.CharField(max_length=16, choices=ChannelState.choices)
    evaluated_at = models.DateTimeField(null=True, blank=True)
