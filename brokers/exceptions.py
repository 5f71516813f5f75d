"""Errors of brokers, queues and messages."""
from config.errors import AlreadyExists, BatonError, Conflict, InvalidInput, MessageTooLarge, NotFound, OptionsConflict

__all__ = [
    "AlreadyExists", "BrokerNotFound", "ConnectionNotFound", "GetInhibited", "InvalidInput", "MessageTooLarge",
    "NotEmpty", "OptionsConflict", "PutInhibited", "QueueFull", "QueueNotFound",
]


class BrokerNotFound(NotFound):
    """No such broker."""


class QueueNotFound(NotFound):
    """No such queue."""


class ConnectionNotFound(NotFound):
    """No such connection."""


class PutInhibited(BatonError):
    """Puts are disabled on this queue."""

    code = "put_inhibited"
    status = 409


class GetInhibited(BatonError):
    """Gets are disabled on this queue."""

    code = "get_inhibited"
    status = 409


class QueueFull(BatonError):
    """The queue is at its maximum depth."""

    code = "queue_full"
    status = 409


class QueueInUse(BatonError):
    """Another consumer holds the queue for exclusive input."""

    code = "queue_in_use"
    status = 409


class NotEmpty(Conflict):
    """The object still holds messages or open units of work."""

    code = "not_empty"
