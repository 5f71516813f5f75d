"""Units of work, the links between them, and the journal.

The transaction manager knows nothing about queues: a transaction is scoped to a broker
by name only, and resource managers (``transactions.resources``) carry the effects.
"""

import uuid

from django.conf import settings
from django.db import models


def transaction_id_new() -> str:
    return uuid.uuid4().hex


class TransactionState(models.TextChoices):
    #: Open: operations may still be added; nothing it did is visible to others yet.
    ACTIVE = "active"
    #: Its owner asked to commit, but an upstream transaction has not resolved yet;
    #: the upstream's commit commits it, the upstream's rollback backs it out.
    COMMIT_HELD = "commit_held"
    #: Resolved: every effect is permanent.
    COMMITTED = "committed"
    #: Resolved: every effect was undone; ``reason`` says why.
    ROLLED_BACK = "rolled_back"


OPEN_STATES = (TransactionState.ACTIVE, TransactionState.COMMIT_HELD)


class RowIdField(models.BigAutoField):
    """A big auto primary key that is, on SQLite, the table's rowid without ``AUTOINCREMENT``:
    a new row's id is one more than the largest present, with no write to
    ``sqlite_sequence`` (one more page in every database transaction that inserts). For an
    append-only table whose newest row is never deleted, ids stay strictly increasing and are
    never reused, as with ``AUTOINCREMENT``; for a table whose ids nothing refers to (links,
    queue releases), a reused id is harmless. Elsewhere the same as ``BigAutoField``."""

    def db_type_suffix(self, connection):
        if connection.vendor == "sqlite":
            return None
        return super().db_type_suffix(connection)


class Transaction(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=transaction_id_new, editable=False)
    broker = models.CharField(max_length=48, db_index=True, help_text="Name of the broker the unit of work runs on.")
    state = models.CharField(max_length=16, choices=TransactionState.choices, default=TransactionState.ACTIVE)
    reason = models.CharField(max_length=200, blank=True, help_text="Why it was rolled back.")
    cause = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # txn_cause below: only the rows that have one
        help_text="The upstream transaction whose rollback cascaded to this one.",
    )
    owner = models.CharField(max_length=100, blank=True, help_text="Connection id or channel that began it, if any.")
    marks = models.JSONField(
        default=list, blank=True, help_text="What kinds of effects resource managers must look for at its resolution."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    deadline_at = models.DateTimeField(null=True, blank=True, help_text="Rolled back if still open at this time.")
    commit_requested_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        # no index: every unit of work would write one, for the rare deletion of a user
        # (which then reads the table once to clear its units of work's user)
        db_index=False,
        help_text="The user who began it, who alone (with superusers and the broker's admins) may act on it; "
        "empty for units of work begun by channel agents and other system code.",
    )

    class Meta:
        indexes = [
            models.Index(
                fields=["deadline_at"],
                name="txn_open_deadline",
                condition=models.Q(state__in=["active", "commit_held"]),
            ),
            # written by cascaded rollbacks only: no entry for the units of work without a cause
            models.Index(fields=["cause"], name="txn_cause", condition=models.Q(cause__isnull=False)),
            # retention (brokers/operating/retention.py) finds the units of work resolved
            # longest ago from this index's oldest end; an open one has no entry
            models.Index(fields=["resolved_at"], name="txn_resolved", condition=models.Q(resolved_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.state})"

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES


class Link(models.Model):
    """Upstream (producer of an uncommitted message) → downstream (its pre-emptive getter).
    Nothing refers to a link's id (``RowIdField``: no ``sqlite_sequence`` write at each
    pre-emptive get). ``link_unique`` leads with the upstream: it serves the look-ups by
    upstream, so ``upstream`` has no index of its own (one b-tree fewer per link)."""

    id = RowIdField(primary_key=True)
    upstream = models.ForeignKey(Transaction, on_delete=models.CASCADE, related_name="downstream_links", db_index=False)
    downstream = models.ForeignKey(Transaction, on_delete=models.CASCADE, related_name="upstream_links")
    resource_ref = models.CharField(max_length=120, help_text="What made the link (a message id, a channel batch).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["upstream", "downstream", "resource_ref"], name="link_unique"),
        ]


class JournalKind(models.TextChoices):
    #: A unit of work began.
    BEGIN = "begin"
    #: A message was put (immediately, or under a unit of work).
    PUT = "put"
    #: A message was gotten (removed, or taken under a unit of work).
    GET = "get"
    #: A unit of work committed.
    COMMIT = "commit"
    #: A unit of work rolled back.
    ROLLBACK = "rollback"
    #: A message returned to its queue after a rollback, its backout count raised.
    BACKOUT = "backout"
    #: A message expired and was removed.
    EXPIRE = "expire"
    #: A message moved to a backout or dead-letter queue.
    DEAD_LETTER = "dead_letter"
    #: A pre-emptive get linked two transactions.
    LINK = "link"
    #: A commit was held on an unresolved upstream.
    HOLD = "hold"
    #: A held commit was released by its upstream's commit.
    RELEASE = "release"
    #: A rollback cascaded to a downstream transaction.
    CASCADE = "cascade"
    #: A message was peek-locked.
    LOCK = "lock"
    #: A batch moved over a channel.
    TRANSFER = "transfer"
    #: A non-persistent message was discarded at a broker restart.
    DISCARD = "discard"
    #: A reactive message acted (or could not act) on an earlier message.
    REACT = "react"


class JournalEvent(models.Model):
    """Append-only record of what happened; feeds the dashboard and the analytics jobs. Its
    newest row is never deleted (ids are export watermarks: see ``RowIdField``).

    ``at`` has no index: every event would write an index entry for the one reader that
    looks by time (the dashboard's rates), which finds its first id by a binary search over
    ids instead (``transactions.selectors.journal_first_id_since``): ids grow with ``at``.

    One row per step, not per message: a put, get or lock of several messages in one
    operation is one event whose ``count`` is their number, ``msg_id`` empty and
    ``detail["messages"]`` one object per message (its ``msg_id`` and its own details).
    Readers that want an event per message expand it (``transactions.journal.journal_messages``);
    the analytics export does."""

    id = RowIdField(primary_key=True)
    at = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=JournalKind.choices)
    broker = models.CharField(max_length=48)
    queue = models.CharField(max_length=48, blank=True)
    transaction_id = models.CharField(max_length=32, blank=True)
    msg_id = models.CharField(max_length=48, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    count = models.PositiveIntegerField(
        default=1, help_text="How many events of its kind the row stands for: a step's put, get or lock's messages."
    )

    class Meta:
        ordering = ["id"]
