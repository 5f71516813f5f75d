"""What a STOMP connection keeps (``stomp_server/protocol.py``): its subscriptions, the
messages it was sent and has not acknowledged, its transactions, and its held COMMITs."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from .frames import Frame

#: Bytes queued for the client above which subscriptions stop getting until it reads.
HIGH_WATER = 1024 * 1024
#: Seconds a subscription waits for a message before looking again (renewing its locks).
SUBSCRIPTION_WAIT_S = 10.0


@dataclass(eq=False)
class Pending:
    """A message sent on a client-acknowledged subscription, not yet acknowledged."""

    ack_id: str
    msg_id: str
    #: The lock token of a peek-locked message; None for a pre-emptive delivery.
    token: str | None
    subscription: Subscription
    #: The transaction a pre-emptive delivery was got under (None: peek-locked).
    txn: Txn | None = None
    #: When its lock was last taken or renewed (time.monotonic()).
    locked_at: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class Subscription:
    id: str
    destination: str
    broker: str
    queue: str
    ack: str
    prefetch: int
    key: str
    #: The queue's id (0: not known yet).
    queue_id: int = 0
    #: The queue's lock duration (s): unacknowledged messages' locks are renewed well before.
    lock_s: float = 30.0
    #: The topic subscription's name (its queue's too), for /topic/ destinations.
    topic_name: str | None = None
    durable: bool = False
    #: x-baton-preemptive: while a transaction is open, deliveries are pre-emptive gets under it.
    preemptive: bool = False
    pending: OrderedDict[str, Pending] = field(default_factory=OrderedDict)  # by msg_id, in delivery order
    stopped: bool = False
    #: Its pump (``StompConnection._pump``): submitted to the pool and not yet done; running
    #: (by the thread ``runner``); to look again (something may have come, or room was made);
    #: to make a full look (a get, not first the cheap look); its locks to be renewed.
    scheduled: bool = False
    running: bool = False
    runner: int = 0
    dirty: bool = False
    full_look: bool = False
    renew_due: bool = False
    #: Woken by another's commit on the queue since its last look (something may have come).
    woken: bool = False
    #: Its last look found the queue with nothing to take (a get took fewer than it asked
    #: for, or the look before a get said so), and nothing but room made has kicked it since:
    #: on a queue whose gets are not ordered, room made by acknowledging (which only takes
    #: messages away) gives it nothing to get, so it does not look.
    starved: bool = False
    #: The wake-up keys it watches, and the callback they call (None: not watching).
    keys: list[str] = field(default_factory=list)
    watcher: Any = None


@dataclass(eq=False)
class Txn:
    """A STOMP transaction: the unit of work it is, and the locks it acknowledged.

    Its unit of work is begun when first needed (docs/stomp.md, "Transactions"): by its
    first SEND's put, in the same database transaction; by a pre-emptive get under it; or
    by a COMMIT with acknowledgements to complete under it. Until then ``id`` is None and
    its ACKs wait in ``deferred``: a transaction that only acknowledged commits them as one
    durable completion."""

    name: str
    id: str | None = None
    #: Peek-locked deliveries it acknowledged, completed at its COMMIT (their locks renewed meanwhile).
    deferred: list[Pending] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)  # lock tokens completed under it
    abandoned: list[str] = field(default_factory=list)  # lock tokens NACKed under it
    discarded: list[str] = field(default_factory=list)  # ... with requeue:false: dead-lettered at COMMIT
    #: Pre-emptive deliveries got under it, by msg_id; and those ACKed under it (COMMIT needs all).
    delivered: dict[str, Pending] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)
    #: Pre-emptive gets under it in progress; once ``ending``, no more begin.
    getting: int = 0
    ending: bool = False
    #: A get under it found it no longer active (backed out by an upstream rollback).
    gone: bool = False


@dataclass(eq=False)
class HeldCommit:
    """A COMMIT held until its upstream units of work commit; its look, as a subscription's
    pump (submitted, to look again, ended)."""

    txn: Txn
    frame: Frame
    keys: list[str]
    watcher: Any = None
    scheduled: bool = False
    dirty: bool = False
    done: bool = False
