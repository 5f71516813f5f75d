"""Errors of the transaction manager: the shared hierarchy's (:mod:`baton_client.errors`)
and the server's not-found for a unit of work."""

from baton_client.errors import BatonError, NotFound, TransactionBackedOut, TransactionNotActive

__all__ = ["BatonError", "NotFound", "TransactionBackedOut", "TransactionNotActive", "TransactionNotFound"]


class TransactionNotFound(NotFound):
    """No such transaction."""
