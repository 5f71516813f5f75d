"""The link-graph lock, where the database needs one (``dialect().LINK_GRAPH_LOCKED``).

Linking two transactions (a pre-emptive get of an uncommitted message) must not interleave
with the upstream's commit or rollback, or a rollback could miss a consumer that linked
itself a moment earlier. On PostgreSQL every commit and rollback therefore takes a
transaction-scoped advisory lock: shared when the transaction has no links (so unlinked
units of work commit in parallel), exclusive when it has links; a pre-emptive get that
takes an uncommitted message takes it exclusively. Lock order: the graph lock, then
transaction rows, then queue rows, then message rows.

On SQLite, IMMEDIATE transactions already serialise every writer; nothing is taken.
"""

from __future__ import annotations

from .dialects import dialect
from .queries import LINK_GRAPH_LOCK_KEY

__all__ = ["LINK_GRAPH_LOCK_KEY", "link_graph_lock", "link_graph_locking"]


def link_graph_locking() -> bool:
    return dialect().LINK_GRAPH_LOCKED


def link_graph_lock(*, exclusive: bool) -> None:
    """Take the link-graph lock until the current database transaction ends.
    Caller holds an open database transaction and no transaction, queue or message rows."""
    dialect().link_graph_lock(exclusive=exclusive)
