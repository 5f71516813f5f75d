"""The database, chosen once: what the engine's message and queue statements
(``brokers.queries``) do differently on SQLite and on PostgreSQL, one module each
(``sqlite``, ``postgresql``), as ``transactions.dialects`` does for the transaction side.
Each module holds its statements as named constants, with the locks each takes beside it,
and the operations whose sequence of statements differs as functions of the same name;
a ``{...}`` field in a constant is filled only with a true variable-length list (an IN
list, VALUES rows). Shared functions in ``brokers.queries`` ask ``dialect()``, never which
database they run on."""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

from transactions.seam import default_db


class Dialect(Protocol):
    #: A get's first statement under a named unit of work (``brokers.queries.get_start``),
    #: that unit of work's row locked until the database transaction ends.
    GET_START_NAMED: str
    #: Release rows per queue (``QueueRelease``): one per thread, taken in turn.
    RELEASE_STRIPES: int
    #: Housekeeping's fold: the queue's row, then its release rows in stripe order, locked.
    QUEUE_ROW_LOCKED: str
    RELEASES_LOCKED: str
    #: What an unordered get's choice ends with (PostgreSQL: the chosen rows locked, others'
    #: locked rows skipped).
    CHOOSE_LOCKS: str
    #: What the look-up of messages by their lock tokens ends with when it locks them.
    BY_LOCK_TOKENS_LOCKS: str
    #: An unordered destructive get (not pre-emptive, without a connection) as one call of
    #: the database's own function: a function giving its statement and arguments (the
    #: wake-up channel added by the caller; its rows, the messages taken). PostgreSQL:
    #: ``baton_get_v1`` (``brokers.dialects.postgresql.get_call``). None on SQLite: the get's
    #: statements (``brokers.services.messages.get._get_by_statements``) serve every get.
    get_call: Callable[..., tuple[str, list]] | None

    def definitions_check(self, *, version: int) -> None:
        """Inside a step, with its writes: ``DefinitionsChanged`` (PostgreSQL: BT106, raised
        when the step is sent) unless the definitions version is still ``version``."""

    def put(
        self,
        *,
        version: int,
        transaction_id: str | None,
        broker: str,
        user,
        now,
        queue_id: int,
        count: int,
        commit_count: int,
        joined: Callable,
    ) -> list:
        """A put's checks and reservation (``brokers.services.messages.put._put``): the
        definitions version compared with ``version`` (``DefinitionsChanged``), the named unit
        of work checked for ``user`` (SQLite: ``joined(row)``, the service's check, on the row it
        read; PostgreSQL: by the function, the same rule), room for ``count`` messages and ``commit_count`` commit
        sequences reserved (``QueueFull``). PostgreSQL: one call of ``baton_put_v1``, deferred
        (its errors raised when the step is sent); SQLite: named statements, run now. Its
        answer, read by ``put_answer``."""

    def put_answer(self, answer: list) -> tuple:
        """``(base, row)``: the first commit sequence handed out (None when none) and the named
        unit of work's row (None when none was named); PostgreSQL sends the call now if it
        has not been sent."""

    def queue_reserve(self, *, queue_id: int, count: int, commit_count: int, max_depth_checked: bool) -> int | None:
        """``brokers.queries.queue_reserve``."""

    def queues_lock(self, *, ids: list[int], even_one: bool) -> None:
        """``brokers.queries.queues_lock`` of these (sorted, distinct) queue ids."""

    def ordered_getters_lock(self, *, queue_id: int) -> None:
        """Serialise ordered gets on the queue until the database transaction ends
        (``brokers.services.ordering.ordered_getters_lock``)."""

    def messages_insert(self, *, rows: list[tuple], messages: Sequence) -> None:
        """``brokers.queries.messages_insert`` of these ``message_put_values`` tuples."""

    def messages_take(self, *, get_transaction_id: str | None, **choice) -> list:
        """``brokers.queries.messages_take``."""

    def messages_lock(self, *, locked_until, **choice) -> list:
        """``brokers.queries.messages_lock``, its rows in no order."""

    def messages_locks_lapse(self, *, queue_id: int, now) -> list[tuple[int, int]]:
        """``brokers.queries.messages_locks_lapse``."""

    def messages_commit(self, *, transaction_ids: Sequence[str]) -> list[str]:
        """The message store's part of the commit of a group of units of work (their rows
        held): commit sequences for commit-ordered queues' puts, the gets' room given back
        and the gets removed. The wake-up keys of the queues concerned. PostgreSQL: one call
        of ``baton_messages_commit_v1``, the function ``baton_commit_v1`` calls too."""

    def messages_rollback(self, *, transaction_id: str, removed: dict[int, int], names: dict, now) -> list[str]:
        """The message store's part of a rollback that moves no message (its row held): the
        puts gone, their room given back, the gets returned with their backout events. The
        wake-up keys of the queues the gets return to. PostgreSQL: one call of
        ``baton_messages_rollback_v1`` (``baton_rollback_v1`` calls it too)."""


_chosen: list = []


def dialect() -> Dialect:
    """The default database's dialect module, chosen at the first call."""
    try:
        return _chosen[0]
    except IndexError:
        if default_db().vendor == "postgresql":
            from . import postgresql as chosen
        else:
            from . import sqlite as chosen
        _chosen.append(chosen)
        return chosen
