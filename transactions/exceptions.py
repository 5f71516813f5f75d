"""Errors of the transaction manager: the shared hierarchy's (:mod:`baton_client.errors`)
and the server's not-found for a unit of work."""

from baton_client.errors import NotFound

__all__ = ["TransactionNotFound"]


class TransactionNotFound(NotFound):
    """No such transaction."""
