"""API routes, made from the operations' definitions (each declares its route, method and
names). Broker and queue names may contain '/', so the name converter takes slashes and the
most specific routes come first."""

from django.urls import register_converter

from ..names import NAME_IN_PATH
from . import operations as ops
from .operations.rest import rest_urls


class NameConverter:
    regex = NAME_IN_PATH

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class IdConverter:
    """A transaction id, connection id or lock token: anything but '/' and NUL (which no
    database column holds; PostgreSQL refuses it in a query)."""

    regex = r"[^/\x00]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(NameConverter, "name")
register_converter(IdConverter, "id")

urlpatterns = rest_urls(  # the most specific routes first
    ops.MessageBrowse,
    ops.MessagePut,
    ops.MessageGet,
    ops.QueueDisplay,
    ops.QueueAlter,
    ops.QueueDelete,
    ops.QueueList,
    ops.QueueDefine,
    ops.TransactionGraph,
    ops.TransactionBegin,
    ops.ConnectionOpen,
    ops.BrokerDisplay,
    ops.BrokerAlter,
    ops.BrokerDelete,
    ops.BrokerList,
    ops.BrokerDefine,
    ops.TransactionCommit,
    ops.TransactionRollback,
    ops.TransactionCheck,
    ops.TransactionDisplay,
    ops.LockComplete,
    ops.LockAbandon,
    ops.LockRenew,
    ops.LockDeadLetter,
    ops.ConnectionDisplay,
    ops.ConnectionClose,
    ops.StompConnectionClose,
)
