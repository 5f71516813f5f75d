"""Errors of the transaction manager: the shared hierarchy's (:mod:`baton_client.errors`)
and the server's not-found for a unit of work."""

from baton_client.errors import NotFound

__all__ = ["DefinitionsChanged", "TransactionNotFound"]


class TransactionNotFound(NotFound):
    """No such transaction."""


class DefinitionsChanged(Exception):
    """Not an API error: an engine function found the definitions version other than the one
    the caller's cache holds (``baton_put_v1``); the caller reads them again and calls again."""
