"""Errors of the transaction manager: the shared hierarchy's (:mod:`baton_client.errors`)
and the server's not-found for a unit of work."""

from baton_client.errors import NotFound

__all__ = ["DefinitionsChanged", "SettleFirst", "TransactionNotFound"]


class TransactionNotFound(NotFound):
    """No such transaction."""


class DefinitionsChanged(Exception):
    """Not an API error: an engine function found the definitions version other than the one
    the caller's cache holds (``baton_put_v1``); the caller reads them again and calls again."""


class SettleFirst(Exception):
    """Not an API error: an engine function found something its caller settles before it
    calls again (``baton_get_v1``): ``what`` is ``overdue`` (a unit of work past its deadline,
    ``transaction_id``, holds the queue's messages: rolled back for its timeout), ``lapsed``
    (peek-locks on the queue ran out: released) or ``reports`` (a message taken asks for
    reports: the call again, its answer read before the commit)."""

    def __init__(self, what: str, transaction_id: str = "") -> None:
        super().__init__(what, transaction_id)
        self.what = what
        self.transaction_id = transaction_id
