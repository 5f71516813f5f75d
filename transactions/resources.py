"""The resource-manager interface.

A resource manager (the message store in ``brokers``) carries the effects of units of
work. The transaction manager calls it inside the database transaction that changes the
transactions' states, so effects and states change together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class AtOnce:
    """What a resource manager adds to a commit or rollback sent whole in one round trip,
    before it has read anything (PostgreSQL: ``transactions.manager``'s ``_commit_at_once``
    and ``_rollback_at_once``), each piece
    SQL with its ``%s`` parameters: common table expressions the guard reads them from
    (``name AS (...)``, a look taken once), conditions that must all hold (else the commit is
    undone and runs the careful way), the wake-up keys its effects concern (a ``text[]``
    expression), and its writes, in the order they run."""

    ctes: tuple[tuple[str, list], ...] = ()
    require: tuple[tuple[str, list], ...] = ()
    keys: tuple[str, list] | None = None
    writes: tuple[tuple[str, list], ...] = ()


class ResourceManager(Protocol):
    def resources_commit(self, *, transaction_ids: list[str], marks: set[str]) -> None:
        """Make the effects of these transactions permanent (they commit as one group).
        ``marks`` is the union of their marks (see ``transaction_mark``): kinds of effect a
        resource manager only needs to look for when one of them says so.

        Caller holds: an open database transaction and the rows of these transactions."""

    def resources_commit_read(self, *, transaction_id: str) -> tuple[str, list] | None:
        """A read its ``resources_commit`` of this unit of work alone will make first, as
        ``(sql, params)``, or None. On PostgreSQL the commit sends it in the round trip that
        locks the unit of work's row and hands its rows back when the manager runs the same
        statement before any other (``transactions.seam.Seam.taken_ahead``). It must take no
        lock and read only what that row lock keeps still."""

    def resources_commit_at_once(self, *, transaction_id: str) -> AtOnce | None:
        """What this manager's ``resources_commit`` of this unit of work alone does, as SQL
        that needs no answer first (``AtOnce``); None when it cannot say without reading.
        Asked only of a unit of work the commit's guard finds without marks and links, so a
        manager that acts only on its marks has nothing to add (``AtOnce()``).

        Caller holds (when the SQL runs): the link-graph lock, shared, and the unit of
        work's row."""

    def resources_rollback_at_once(self, *, transaction_id: str, now) -> AtOnce | None:
        """What this manager's ``resources_rollback`` of this unit of work does, as SQL that
        needs no answer first (``AtOnce``), ``now`` the rollback's time; None when it cannot
        say without reading. Asked, as ``resources_commit_at_once`` is, only of a unit of
        work without marks and links.

        Caller holds (when the SQL runs): the link-graph lock, shared, and the unit of
        work's row."""

    def resources_rollback(self, *, transaction_id: str, reason: str, marks: set[str]) -> None:
        """Undo the effects of this transaction.

        Caller holds: an open database transaction and this transaction's row."""


_managers: list[ResourceManager] = []


def resource_manager_register(manager: ResourceManager, *, first: bool = False) -> None:
    """``first``: called before the managers registered so far (one that must see a unit of
    work's effects before the others undo them)."""
    if not any(type(m) is type(manager) for m in _managers):
        if first:
            _managers.insert(0, manager)
        else:
            _managers.append(manager)


def resource_managers() -> list[ResourceManager]:
    return list(_managers)
