"""Reads on units of work and their links."""
from __future__ import annotations

from .exceptions import TransactionNotFound
from .models import Link, Transaction


def transaction_get(*, transaction_id: str) -> Transaction:
    try:
        return Transaction.objects.get(pk=transaction_id)
    except (Transaction.DoesNotExist, ValueError) as exc:
        raise TransactionNotFound(f"No transaction {transaction_id}.", transaction=transaction_id) from exc


def transaction_neighbours(*, transaction_id: str) -> tuple[list[str], list[str]]:
    """The transaction's upstream and downstream transaction ids."""
    upstream = sorted(set(Link.objects.filter(downstream_id=transaction_id).values_list("upstream_id", flat=True)))
    downstream = sorted(set(Link.objects.filter(upstream_id=transaction_id).values_list("downstream_id", flat=True)))
    return upstream, downstream
