"""What a STOMP connection waits for, without a thread (docs/stomp.md, "How it is served"):
its subscriptions' messages and its held COMMITs. Each waits on the engine's wake-ups
(``transactions.wakeups.wakeup_watch``) and a timer on the event loop, which submit a look
to the STOMP pool (``stomp_server/pool.py``); a look already submitted or running is not
submitted again, and looks once more before it stops. A mix-in of
:class:`~stomp_server.protocol.StompConnection`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from brokers.models import Message
from brokers.services.room import queue_put_wakeup_key
from baton_client.errors import BatonError
from baton_client.errors import TransactionBackedOut, TransactionNotActive
from transactions.exceptions import TransactionNotFound
from transactions.wakeup_bus import wakeup_bus
from transactions.wakeups import POLL_MAX_S, wakeup_unwatch, wakeup_watch

from . import engine
from .frames import Frame
from .pool import stomp_pool
from .selectors import queue_may_have_messages
from .state import HIGH_WATER, SUBSCRIPTION_WAIT_S, HeldCommit, Subscription, Txn

log = logging.getLogger(__name__)


#: The connection whose own commit this thread is making (an ACK's completion, a
#: subscription's get), which only takes messages away: the wake-up it gives that
#: connection's subscriptions is room made, not something come.
_own = threading.local()


class Waiting:
    """Subscriptions' deliveries and held COMMITs of a connection (``self``: a StompConnection)."""

    @contextmanager
    def own_commits(self) -> Iterator[None]:
        """Within: this thread's commits are this connection's ACKs or gets (see ``_own``)."""
        _own.connection = self
        try:
            yield
        finally:
            _own.connection = None

    def _stop(self, sub: Subscription) -> None:
        """No more gets for ``sub``; one under way has sent what it got."""
        with self.lock:
            sub.stopped = True
            watcher, sub.watcher = sub.watcher, None
            if sub.runner != threading.get_ident():
                self.lock.wait_for(lambda: not sub.running)
        if watcher is not None:
            wakeup_unwatch(sub.keys, watcher)

    def _room(self, sub: Subscription) -> int:
        """How many messages the subscription may get now (under ``self.lock``)."""
        if self.unsent >= HIGH_WATER:
            return 0
        if sub.ack == "auto":
            return min(sub.prefetch, 100)
        return sub.prefetch - len(sub.pending)

    # --- deliveries: each subscription waits without a thread -------------------------------

    def _watched(self, sub: Subscription) -> None:
        """Start ``sub``'s deliveries: the queue's wake-ups (a pre-emptive subscription's
        also its uncommitted puts') call :meth:`_kick`; a timer on the event loop looks
        again and renews locks at intervals; a first look now."""
        sub.keys = [sub.key, queue_put_wakeup_key(sub.queue_id)] if sub.preemptive else [sub.key]
        sub.watcher = lambda: self._kick(sub, woken=getattr(_own, "connection", None) is not self)
        wakeup_bus().listen()  # other processes' commits reach this one's wake-ups
        wakeup_watch(sub.keys, sub.watcher)  # before the first look: no commit after it is missed
        self.loop.call_soon_threadsafe(self._tick_armed, sub)
        self._kick(sub, full=True)

    def _tick_armed(self, sub: Subscription) -> None:
        """(On the loop.) The next periodic look: a third of the queue's lock duration (at most
        ``SUBSCRIPTION_WAIT_S``), or ``POLL_MAX_S`` while this process hears no commits of
        other processes (its wake-up listener is not listening)."""
        if sub.stopped or self.closed:
            return
        every = min(SUBSCRIPTION_WAIT_S, sub.lock_s / 3)
        if not getattr(wakeup_bus(), "listening", False):
            every = min(every, POLL_MAX_S)
        self.loop.call_later(every, self._tick, sub)

    def _tick(self, sub: Subscription) -> None:
        if sub.stopped or self.closed:
            return
        sub.renew_due = True
        self._kick(sub, full=True)
        self._tick_armed(sub)

    def _kick(self, sub: Subscription, *, full: bool = False, woken: bool = False) -> None:
        """(Any thread.) ``sub`` should look again: its pump runs on a pool thread unless it
        is submitted or running already (then it looks again before it stops). ``woken``:
        by a commit on its queue that may have brought something (not only room made)."""
        with self.lock:
            if sub.stopped or self.closed:
                return
            sub.dirty = True
            sub.full_look = sub.full_look or full
            if woken or full:
                sub.woken, sub.starved = True, False
            if sub.scheduled:
                return
            sub.scheduled = True
        stomp_pool().submit(lambda: self._pump(sub), here=True)

    def _pump(self, sub: Subscription) -> None:
        """Get and send while there is room and something may have come; then give the
        thread back (the next wake-up, ACK, read by the client or tick calls it again)."""
        with self.lock:
            if sub.stopped or self.closed:
                sub.scheduled = False
                return
            sub.running, sub.runner = True, threading.get_ident()
        try:
            while True:
                if sub.renew_due:
                    sub.renew_due = False
                    self._locks_renewed(sub)
                with self.lock:
                    if sub.stopped or self.closed or not sub.dirty:
                        break
                    room = self._room(sub)
                    if room <= 0:  # prefetch-count reached, or the client is not reading:
                        break  # an ACK, a NACK or the client's reading kicks it again
                    sub.dirty = False
                    full, sub.full_look = sub.full_look, False
                    woken, sub.woken = sub.woken, False
                    if sub.starved and not (woken or sub.preemptive) and not self._ordered(sub):
                        continue  # only room made: nothing to get since the queue was found empty
                if self._looked(sub, room, full):
                    with self.lock:
                        sub.dirty = True  # a full batch: there may be more
        except BatonError as exc:  # the queue was deleted, a grant withdrawn, ...
            if not (sub.stopped or self.closed):
                self.error(exc, None)
        except Exception:
            log.exception("a STOMP subscription failed")
            close_old_connections()
            if not (sub.stopped or self.closed):
                self.error(BatonError("The server failed to deliver to the subscription."), None)
        finally:
            with self.lock:
                sub.running, sub.runner = False, 0
                sub.scheduled = False
                again = sub.dirty and not (sub.stopped or self.closed) and self._room(sub) > 0
                self.lock.notify_all()
            if again:  # kicked while it was finishing
                self._kick(sub)

    def _looked(self, sub: Subscription, room: int, full: bool) -> bool:
        """Get what there is room for and send it; whether to look again at once (a full
        batch: there may be more). ``full``: a get whatever; else, first a look without
        the write lock a get takes, whether a get could take anything (woken by a commit
        that left nothing to get: an ACK's, a get's). The periodic look is a get, which also
        settles what only a get settles (a unit of work overdue on the queue)."""
        batch = min(room, settings.BATON_MAX_BATCH)
        if sub.preemptive:
            delivered = self._preemptive_delivered(sub, batch)
            if delivered is not None:  # under a transaction: only that way
                return bool(delivered)
        if not full and not queue_may_have_messages(queue_id=sub.queue_id, now=timezone.now()):
            sub.starved = True
            return False
        mode = "destructive" if sub.ack == "auto" else "peek_lock"
        with self.own_commits():
            got = engine.messages_got(self.user, broker=sub.broker, queue=sub.queue, mode=mode, batch=batch)
        sub.starved = len(got) < batch
        try:
            for message in got:
                self._send_message(sub, message)
        finally:
            self.pump.flush()
        # fewer than asked: the queue had no more when this get looked, and a commit since
        # then has kicked the pump already; getting again at once would find nothing
        return len(got) >= batch

    def _ordered(self, sub: Subscription) -> bool:
        return engine.queue_ordered(broker=sub.broker, queue=sub.queue)

    def _preemptive_delivered(self, sub: Subscription, room: int) -> bool | None:
        """While the connection has an open transaction, get pre-emptively under the most
        recently begun one and send what was got (with a ``transaction`` header): whether it
        got any (True too when the transaction is found gone: look again). None when there is
        none open (the subscription then gets committed messages, peek-locked)."""
        with self.lock:
            txn = next((t for t in reversed(self.transactions.values()) if not (t.ending or t.gone)), None)
            if txn is None:
                return None
            txn.getting += 1
        try:
            try:
                got = engine.messages_got(
                    self.user,
                    broker=sub.broker,
                    queue=sub.queue,
                    mode="destructive",
                    batch=room,
                    transaction=self._begun(txn),
                    preemptive=True,
                )
            except (TransactionBackedOut, TransactionNotActive, TransactionNotFound):  # backed out upstream
                txn.gone = True
                return True
            try:
                for message in got:
                    self._send_message(sub, message, txn=txn)
            finally:
                self.pump.flush()
            return bool(got)
        finally:
            with self.lock:
                txn.getting -= 1
                self.lock.notify_all()

    def _locks_renewed(self, sub: Subscription) -> None:
        """Keep the locks of what the client holds unacknowledged (a slow consumer keeps its
        messages, as long as its connection lives)."""
        now = time.monotonic()
        with self.lock:
            held = [*sub.pending.values()]
            held += [p for t in self.transactions.values() for p in t.deferred if p.subscription is sub]
            due = [p for p in held if p.token is not None and now - p.locked_at > sub.lock_s / 3]
        for item in due:
            try:
                engine.lock_renewed(self.user, token=item.token)
                item.locked_at = now
            except BatonError:  # acknowledged meanwhile, or already lost
                pass

    def _send_message(self, sub: Subscription, message: Message, txn: Txn | None = None) -> None:
        self.send(self.machine.message(sub, message, txn), hold=True)  # the batch's go together

    # --- held COMMITs ----------------------------------------------------------------------

    def _commit_held(self, txn: Txn, frame: Frame) -> None:
        """A COMMIT held until its upstream units of work commit: it waits without a thread,
        on its unit of work's wake-ups (and a timer), and is looked at again (a commit that
        does not wait) when they come; the RECEIPT when it has committed, ERROR if it was
        backed out."""
        held = HeldCommit(txn=txn, frame=frame, keys=[f"txn:{txn.id}"])
        held.watcher = lambda: self._held_kick(held)
        with self.lock:
            self.held.append(held)
        wakeup_watch(held.keys, held.watcher)  # before the first look: no commit after it is missed
        self.loop.call_soon_threadsafe(self._held_tick_armed, held)
        self._held_kick(held)

    def _held_tick_armed(self, held: HeldCommit) -> None:
        if held.done or self.closed:
            return
        every = SUBSCRIPTION_WAIT_S if getattr(wakeup_bus(), "listening", False) else POLL_MAX_S
        self.loop.call_later(every, self._held_tick, held)

    def _held_tick(self, held: HeldCommit) -> None:
        self._held_kick(held)
        self._held_tick_armed(held)

    def _held_kick(self, held: HeldCommit) -> None:
        with self.lock:
            if held.done:
                return
            held.dirty = True
            if held.scheduled:
                return
            held.scheduled = True
        stomp_pool().submit(lambda: self._held_look(held))

    def _held_look(self, held: HeldCommit) -> None:
        txn, frame = held.txn, held.frame
        try:
            while True:
                with self.lock:
                    if held.done or not held.dirty:
                        held.scheduled = False
                        return
                    held.dirty = False
                if self.closed:  # the client is gone: the unit of work's fate is its upstream's
                    self._held_done(held)
                    return
                try:
                    outcome = engine.transaction_committed(self.user, transaction=txn.id, wait=0)
                except BatonError as exc:
                    self._held_done(held)
                    self._give_back(txn.completed + txn.abandoned + txn.discarded)
                    self.error(exc, frame)
                    return
                if outcome["state"] == "committed":
                    self._held_done(held)
                    self._nacked_settled(txn)
                    self.receipt(frame)
                    return
        except Exception:
            log.exception("a held STOMP commit failed")
            close_old_connections()
            self._held_done(held)

    def _held_done(self, held: HeldCommit) -> None:
        with self.lock:
            if held.done:
                return
            held.done = True
            held.scheduled = False
            if held in self.held:
                self.held.remove(held)
        wakeup_unwatch(held.keys, held.watcher)
