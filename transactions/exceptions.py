"""Errors of the transaction manager."""
from config.errors import BatonError, NotFound


class TransactionNotFound(NotFound):
    """No such transaction."""


class TransactionNotActive(BatonError):
    """The transaction is no longer active."""

    code = "transaction_not_active"
    status = 409


class TransactionBackedOut(BatonError):
    """The transaction was rolled back."""

    code = "transaction_backed_out"
    status = 409
