"""The resource-manager interface.

A resource manager (the message store in ``brokers``) carries the effects of units of
work. The transaction manager calls it inside the database transaction that changes the
transactions' states, so effects and states change together or not at all.

On PostgreSQL a unit of work without marks or links commits and rolls back in one call of
the database's own function (``transactions.dialects.postgresql``), which carries the
message store's part of it: the managers are called only for a unit of work with marks or
links (a rollback: also one whose gets came from a queue with a backout threshold). A
manager that acts on anything else than its marks must therefore have its part in those
functions (brokers migration 0021) or mark the units of work it concerns.
"""

from __future__ import annotations

from typing import Protocol


class ResourceManager(Protocol):
    def resources_commit(self, *, transaction_ids: list[str], marks: set[str]) -> None:
        """Make the effects of these transactions permanent (they commit as one group).
        ``marks`` is the union of their marks (see ``transaction_mark``): kinds of effect a
        resource manager only needs to look for when one of them says so.

        Caller holds: an open database transaction and the rows of these transactions."""

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
