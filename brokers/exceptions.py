"""Errors of brokers, queues and messages: the shared hierarchy's (:mod:`baton_client.errors`)
and the server's more specific not-founds."""

from baton_client.errors import Conflict, NotFound

__all__ = ["BrokerNotFound", "ClosedByOperator", "ConnectionNotFound", "QueueNotFound", "StompConnectionNotFound"]


class BrokerNotFound(NotFound):
    """No such broker."""


class QueueNotFound(NotFound):
    """No such queue."""


class ConnectionNotFound(NotFound):
    """No such connection."""


class StompConnectionNotFound(NotFound):
    """No such STOMP connection."""


class ClosedByOperator(Conflict):
    """Closed by an operator."""
