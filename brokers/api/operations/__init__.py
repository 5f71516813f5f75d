"""Every operation of the API, defined once (input, output, perform) for REST, the session
and the OpenAPI schema. Importing this package registers the session's operations."""

from .base import SESSION_OPERATIONS, Model, Operation
from .definitions import (
    BrokerAlter,
    BrokerDefine,
    BrokerDelete,
    BrokerDisplay,
    BrokerList,
    QueueAlter,
    QueueDefine,
    QueueDelete,
    QueueDisplay,
    QueueList,
)
from .connections import ConnectionClose, ConnectionDisplay, ConnectionOpen
from .locks import LockAbandon, LockComplete, LockDeadLetter, LockRenew, LocksComplete
from .messages import MessageBrowse, MessageGet, MessagePut
from .stomp import StompConnectionClose
from .transactions import (
    TransactionBegin,
    TransactionCheck,
    TransactionCommit,
    TransactionDisplay,
    TransactionGraph,
    TransactionRollback,
)

__all__ = [
    "BrokerAlter",
    "BrokerDefine",
    "BrokerDelete",
    "BrokerDisplay",
    "BrokerList",
    "QueueAlter",
    "QueueDefine",
    "QueueDelete",
    "QueueDisplay",
    "QueueList",
    "SESSION_OPERATIONS",
    "ConnectionClose",
    "ConnectionDisplay",
    "ConnectionOpen",
    "LockAbandon",
    "LockComplete",
    "LockDeadLetter",
    "LockRenew",
    "LocksComplete",
    "MessageBrowse",
    "MessageGet",
    "MessagePut",
    "Model",
    "Operation",
    "StompConnectionClose",
    "TransactionBegin",
    "TransactionCheck",
    "TransactionCommit",
    "TransactionDisplay",
    "TransactionGraph",
    "TransactionRollback",
]
