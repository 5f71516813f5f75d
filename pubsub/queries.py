"""The SQL of a publication's hot path (the rest of pubsub uses the ORM). Each function says
the locks its statement takes. Cursors as the engine's (transactions.queries.cursor)."""

from __future__ import annotations

from transactions.queries import cursor


def versions() -> tuple[int | None, int]:
    """The definitions version (brokers/definitions.py; None when its row is missing) and the
    topic tree version (pubsub/tree.py; 0 when missing), in one statement. Takes no lock."""
    with cursor() as c:
        c.execute(
            "SELECT (SELECT version FROM brokers_definitionsversion WHERE id = 1), "
            "(SELECT version FROM pubsub_topictreeversion WHERE id = 1)"
        )
        definitions, tree = c.fetchone()
    return definitions, tree or 0


def subscriptions_active(*, ids: list[int]) -> set[int]:
    """Which of these subscriptions are active now. Takes no lock: an activation committing
    meanwhile is ordered after this publication."""
    if not ids:
        return set()
    with cursor() as c:
        c.execute(
            f"SELECT id FROM pubsub_subscription WHERE active AND id IN ({', '.join(['%s'] * len(ids))})", list(ids)
        )
        return {row[0] for row in c.fetchall()}
