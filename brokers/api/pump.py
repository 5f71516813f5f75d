"""The pump of one connection, whatever it speaks (the session's JSON, STOMP's frames): what
the event loop received is applied in order by a pool thread, and what that thread (or any
other) sends goes back to the loop in batches and out in order (docs/api.md, "Sessions";
docs/stomp.md, "How it is served").

- **Inbox.** The event loop hands over what it received (:meth:`Pump.received`); a task on the
  pool (:class:`Pool`) applies it in the order received, through the connection's
  ``applied(item)``, and gives its thread back when there is no more (a connection holds no
  thread while it waits). ``applied`` may take more that waits (:meth:`Pump.take_nowait`) to
  apply together, and hand back one it took but does not apply (applied next). After
  ``TURN`` items the task lets the pool's other tasks have a turn. The last item
  (:meth:`Pump.ended`) calls the connection's ``end()``, on the pool.
- **Back-pressure.** More than ``max_pending`` items received and not yet applied: ``room``
  (an ``asyncio.Event``) is cleared, and set again once half of them are applied; the
  transport reads no more meanwhile (STOMP), or refuses what comes (the session: 429).
- **Replies.** What the connection sends (:meth:`Pump.send`, from any thread) is handed to
  the loop in batches: one wake-up of the loop for all that was sent since the last; with
  ``hold`` (more items in hand) none until there are none or the batch is large. The loop
  makes the batch into writes (the connection's ``writes(items)``: frames joined into one
  write, replies into one JSON array), sends each at once if the transport takes it, and
  else through a writer task that sends the rest in order, each within ``send_timeout_s``.
- **Holds.** :meth:`Pump.held` holds back what the connection sends from then on until the
  function it returns is called (a durable commit's replies until its sync, on another
  thread: ``transactions.durability.durability_deferred``); then it goes, in order.
- **Bounds.** More than ``send_buffer`` bytes sent and not yet written (a client that does
  not read): the connection is given up (``given_up(why)``, on the loop); it holds up no one.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from django.db import close_old_connections, connections

log = logging.getLogger(__name__)

#: Items a connection applies before letting the pool's other tasks have a turn.
TURN = 64
#: Most items, and bytes, held back while the connection's thread has more in hand.
HOLD_MAX = 64
HOLD_BYTES = 64 * 1024
#: A pool thread that has had nothing to do for this long ends (closing its database connections).
IDLE_S = 5.0

#: The inbox's last item: the connection ended.
_END = object()
#: In the outbox: close the transport once what is before it was written.
CLOSE = object()
_NOTHING = object()
#: A pool thread's pool and the tasks submitted ``here`` by its current task.
_local = threading.local()


class Pool:
    """Threads shared by the connections of a process, at most ``size()`` of them; they make
    the blocking calls (database work). A thread that has had nothing to do for ``IDLE_S``
    ends, closing its database connections (an idle server holds neither)."""

    def __init__(self, name: str, size: Callable[[], int]) -> None:
        self.name = name
        self.size = size
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = 0
        self.idle = 0  # threads waiting for a task
        self.blocked = 0  # threads in a long wait (:meth:`blocking`): not counted in ``size()``

    def submit(self, task: Callable[[], None], *, here: bool = False) -> None:
        """Run ``task`` on one of the threads. ``here``: from one of this pool's threads, on
        this thread at its current task's next safe point (:meth:`ran_here`: when a
        connection has applied the items in hand and sent their replies) or once it has
        ended: no other thread is woken for it, nor the interpreter lock handed over (a
        subscription's look kicked by a frame's commit follows the frame, whose reply has
        gone; kicks while more items are in hand merge into one look); from any other
        thread, as without it."""
        if here:
            after = getattr(_local, "after", None)
            if after is not None and _local.pool is self:
                after.append(task)
                return
        self.tasks.put(task)
        self._grown()

    def _grown(self) -> None:
        """A thread more when a task waits, no thread is idle and fewer than ``size()`` are
        working (those in :meth:`blocking` not counted)."""
        with self.lock:
            if self.tasks.qsize() <= self.idle or self.threads - self.blocked >= max(1, self.size()):
                return  # a waiting thread takes it, or the next one free does
            self.threads += 1
        threading.Thread(target=self._run, name=self.name, daemon=True).start()

    @contextmanager
    def blocking(self) -> Iterator[None]:
        """(A task of this pool, about to wait long: a password's hash, say.) Meanwhile this
        thread does not count toward ``size()``: another may take the tasks that wait."""
        with self.lock:
            self.blocked += 1
        try:
            self._grown()
            yield
        finally:
            with self.lock:
                self.blocked -= 1

    def _run(self) -> None:
        _local.pool, _local.after = self, []
        try:
            while True:
                with self.lock:
                    self.idle += 1
                try:
                    task = self.tasks.get(timeout=IDLE_S)
                except queue.Empty:
                    with self.lock:
                        self.idle -= 1
                        if not self.tasks.empty():
                            continue
                        self.threads -= 1
                    return
                with self.lock:
                    self.idle -= 1
                self._ran(task)
                self.ran_here()
        finally:
            _local.after = None
            connections.close_all()

    def ran_here(self) -> None:
        """(A task of this pool, at a point where it holds nothing another task needs.) Run
        the tasks submitted ``here`` so far, in order."""
        after = getattr(_local, "after", None)
        if after is None or _local.pool is not self or getattr(_local, "running_here", False):
            return
        _local.running_here = True
        try:
            while after:
                self._ran(after.pop(0))
        finally:
            _local.running_here = False

    def _ran(self, task: Callable[[], None]) -> None:
        try:
            task()
        except Exception:  # a task's own errors are its own; this thread goes on
            log.exception("a %s task failed", self.name)
            close_old_connections()


class Applier(Protocol):
    """What a pump asks of the side of its connection that applies what it received."""

    def applied(self, item: Any) -> tuple[int, Any]:
        """(On the pool.) Apply ``item`` (and what it takes to apply with it); how many items
        were applied, and one taken but not applied (or ``NOTHING``)."""

    def end(self) -> None:
        """(On the pool.) The connection ended: its last item."""


class Link(Protocol):
    """What a pump asks of the side of its connection that writes to the client."""

    def writes(self, items: list[Any]) -> list[tuple[Any, int]]:
        """(On the loop.) Items sent together, as the writes to make: (what to write, its size
        as counted when sent)."""

    def write_nowait(self, item: Any) -> Awaitable | None:
        """(On the loop.) Start writing ``item``: None when it is written, else what to await
        until it is. Raises OSError (or RuntimeError) when it cannot be."""

    def written(self, size: int) -> None:
        """(Any thread.) ``size`` more bytes went (a hook; may do nothing)."""

    def idle(self) -> bool:
        """(Any thread.) Nothing the loop handed to the transport waits to be written."""

    #: ``write_direct(data)``, when the link has it (a byte stream whose socket any thread may
    #: write to): write what it can of ``data`` at once, from the calling thread, without
    #: blocking; how many bytes went. Raises OSError when it cannot.
    write_direct: Callable[[Any], int] | None

    def given_up(self, why: str) -> None:
        """(On the loop.) End the connection at once, what was not written dropped."""

    async def close(self) -> None:
        """End the connection after what was written."""


NOTHING = _NOTHING


class Pump:
    """One connection's inbox and outbox (see the module's docstring). Made on the event loop."""

    def __init__(
        self,
        applier: Applier,
        link: Link,
        *,
        pool: Pool,
        max_pending: int,
        send_buffer: int,
        send_timeout_s: float,
    ) -> None:
        self.applier = applier
        self.link = link
        self.pool = pool
        self.loop = asyncio.get_running_loop()
        self.max_pending = max_pending
        self.send_buffer = send_buffer
        self.send_timeout_s = send_timeout_s
        self.lock = threading.Lock()
        # --- the inbox
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.pending = 0  # items received, not yet applied
        self.paused = False  # ``room`` was cleared: the client's bytes wait
        self.room = asyncio.Event()
        self.room.set()
        self.scheduled = False  # a pool task applies the inbox (or is submitted to)
        self.ahead: Any = _NOTHING  # an item taken while gathering, applied next
        self.done = False  # the last item was applied
        self.drainer = 0  # the thread applying the inbox (0: none)
        #: The connection's thread has more in hand: what it sends is held back until it has none.
        self.hold = False
        # --- the outbox
        self.made: list[Any] = []  # sent by the connection's threads, for the loop's next take
        self.made_bytes = 0
        self.asked = False  # the loop is asked to take them
        self.unsent = 0  # bytes sent, not yet written
        self.closing = False
        #: Writes from the thread that sends, where the link can (else the loop writes).
        self.write_direct = getattr(link, "write_direct", None)
        self.loop_thread = threading.get_ident()
        self.writer: asyncio.Task | None = None  # writes while a write must wait
        self.backlog: collections.deque[Any] = collections.deque()  # behind it, in order
        #: Holds handed out (:meth:`held`) and not released: what is sent waits in ``behind``.
        self.holds = 0
        self.behind: list[Any] = []
        self.behind_bytes = 0

    # --- the inbox -------------------------------------------------------------------------

    def full(self) -> bool:
        return self.pending >= self.max_pending

    def received(self, items: list[Any]) -> bool:
        """(On the loop.) Hand ``items`` over to be applied in order; whether the client may
        send more now (else once ``room`` is set)."""
        with self.lock:
            self.pending += len(items)
            # the connection's thread sets ``room`` again once it has caught up (and only
            # then wakes the loop for it: not once per item)
            if self.pending >= self.max_pending:
                self.paused = True
            paused = self.paused
        if paused:
            self.room.clear()
        for item in items:
            self.inbox.put(item)
        self._schedule()
        return not paused

    def counted(self, n: int) -> None:
        """``n`` more items are in hand than were received (an array's requests, read later)."""
        with self.lock:
            self.pending += n

    def ended(self) -> None:
        """(Any thread.) No more items: the connection's ``ended()`` is applied after those before."""
        self.inbox.put(_END)
        self._schedule()

    def _schedule(self) -> None:
        with self.lock:
            if self.scheduled:
                return
            self.scheduled = True
        self.pool.submit(self._drain)

    def more(self) -> bool:
        """Whether more items are in hand."""
        return self.ahead is not _NOTHING or not self.inbox.empty()

    def take_nowait(self) -> Any:
        """(The connection's thread.) The next item, if there is one in hand (else ``NOTHING``);
        an ending is left for the pump (``NOTHING``)."""
        try:
            item = self.inbox.get_nowait()
        except queue.Empty:
            return _NOTHING
        if item is _END:
            self.ahead = _END
            return _NOTHING
        return item

    def _drain(self) -> None:
        """Apply the items received, in order, then give the thread back."""
        if self.done:
            return
        self.drainer = threading.get_ident()
        try:
            self._drained()
        finally:
            self.drainer = 0

    def _drained(self) -> None:
        turn = 0
        while True:
            if self.ahead is not _NOTHING:
                item, self.ahead = self.ahead, _NOTHING
            else:
                try:
                    item = self.inbox.get_nowait()
                except queue.Empty:
                    with self.lock:
                        if self.inbox.empty():
                            self.scheduled = False
                            break
                    continue
            if item is _END:
                self.done = True
                try:
                    self.applier.end()
                finally:
                    self.flush()
                return
            count = 1
            try:
                self.hold = not self.inbox.empty()
                count, ahead = self.applier.applied(item)
                if ahead is not _NOTHING:
                    self.ahead = ahead
            except Exception:
                log.exception("a connection's item failed")
                close_old_connections()
            finally:
                with self.lock:
                    self.pending -= count
                    resume = self.paused and self.pending <= self.max_pending // 2
                    if resume:
                        self.paused = False
                if resume:  # after the loop's clear(): the loop runs this after that callback
                    self.loop.call_soon_threadsafe(self.room.set)
            if not self.more():  # what was held back goes now, and what applying it kicked
                self.hold = False  # (a subscription's look: kicks while more are in hand merge)
                self.flush()
                self.pool.ran_here()
            turn += count
            if turn >= TURN and self.ahead is _NOTHING:
                self.flush()
                self.pool.submit(self._drain)  # still scheduled: the next turn goes on
                return
        self.hold = False
        self.flush()

    # --- the outbox (from any thread) ---------------------------------------------------------

    def send(self, item: Any, size: int, *, hold: bool | None = None) -> bool:
        """Send ``item`` (``size`` bytes) after what was sent before; False when the
        connection is given up for it (more than ``send_buffer`` unwritten) or closing.
        ``hold`` (by default: the connection's thread has more in hand): hand it to the loop
        with what follows."""
        with self.lock:
            if self.closing:
                return False
            self.unsent += size
            if self.unsent > self.send_buffer:
                self.closing = True
                over = True
            else:
                over = False
                if self.holds:  # after what a commit's sync holds back, in order
                    self.behind.append(item)
                    self.behind_bytes += size
                    return True
                self.made.append(item)
                self.made_bytes += size
                if hold is None:  # the connection's thread, with more in hand
                    hold = self.hold and self.drainer == threading.get_ident()
                if self.asked or (hold and len(self.made) < HOLD_MAX and self.made_bytes < HOLD_BYTES):
                    return True  # a taker is already writing them, or more follow at once
                self.asked = True
        if over:  # the client does not read what it asked for: cut it off, it holds up no one
            self.loop.call_soon_threadsafe(self.link.given_up, f"more than {self.send_buffer} bytes unread")
            return False
        self._hand_over()
        return True

    def close_after_sending(self) -> None:
        """Close once what was sent before is written."""
        with self.lock:
            if self.holds:
                self.behind.append(CLOSE)
                return
            self.made.append(CLOSE)
            if self.asked:
                return
            self.asked = True
        self._hand_over()

    def held(self) -> Callable[[BaseException | None], None]:
        """(Any thread.) What is sent from now on waits until the function returned is called
        (and every one returned before it): a durable commit's replies until its sync
        (``transactions.durability.durability_deferred``). Called with an error, the
        connection is given up: what waits cannot say that the commit is on disk."""
        with self.lock:
            self.holds += 1
        return self._released

    def _released(self, error: BaseException | None) -> None:
        if error is not None:
            log.error("a commit's sync failed: %s", error)
            self.loop.call_soon_threadsafe(self.give_up, f"the database's sync failed ({type(error).__name__})")
            return
        with self.lock:
            self.holds -= 1
            if self.holds or not self.behind:
                return
            self.made += self.behind
            self.made_bytes += self.behind_bytes
            self.behind, self.behind_bytes = [], 0
            if self.asked:  # a taker is writing: it writes these too, in order
                return
            self.asked = True
        self._hand_over()

    def flush(self) -> None:
        """Hand what was held back to the loop."""
        with self.lock:
            if self.asked or not self.made:
                return
            self.asked = True
        self._hand_over()

    def _hand_over(self) -> None:
        """(The taker: whoever set ``asked``; until it is cleared, whatever is sent is only
        added to ``made``, and the taker writes it too, in order.) Write what was made: from
        this thread, when the link writes directly and nothing waits to be written on the
        loop (no wake-up of the loop, no hand-over of the interpreter lock to it); else, or
        for what the socket did not take at once, on the loop."""
        if self.write_direct is None or threading.get_ident() == self.loop_thread:
            self.loop.call_soon_threadsafe(self._take)
            return
        went = 0
        with self.lock:  # held while writing: the transport ends (``stopped``) only after
            try:
                went = self._written_direct()
            finally:
                if self.made and not self.closing:
                    self.loop.call_soon_threadsafe(self._take)  # the rest, on the loop (``asked`` stays)
                else:
                    self.made, self.made_bytes, self.asked = [], 0, False
        if went:
            self.link.written(went)

    def _written_direct(self) -> int:
        """(Under ``lock``, the taker.) Write from ``made`` what the socket takes now, up to a
        close (the loop's); what is left stays in ``made`` (the part of a write not taken
        first). How many bytes went."""
        went = 0
        while self.made and not self.closing:
            if self.writer is not None or self.backlog or not self.link.idle():
                break  # the loop is still writing: behind it
            cut = self.made.index(CLOSE) if CLOSE in self.made else len(self.made)
            if cut == 0:
                break
            run, self.made = self.made[:cut], self.made[cut:]
            writes = self.link.writes(run)
            for i, (data, size) in enumerate(writes):
                try:
                    n = self.write_direct(data)
                except BlockingIOError:
                    n = 0
                except OSError as exc:
                    self.closing = True
                    self.loop.call_soon_threadsafe(self.give_up, f"a frame could not be sent ({type(exc).__name__})")
                    return went
                went += n
                self.unsent -= n
                if n < size:  # the socket is full: the rest after the loop's wait
                    self.made[:0] = [data[n:], *(rest for rest, _ in writes[i + 1 :])]
                    return went
        return went

    # --- the outbox (on the loop) ---------------------------------------------------------------

    def _take(self) -> None:
        """(On the loop, the taker.) Write what was made, and what is made meanwhile."""
        while True:
            with self.lock:
                made, self.made = self.made, []
                self.made_bytes = 0
                if not made:
                    self.asked = False
                    return
            self._made_written(made)

    def _made_written(self, made: list[Any]) -> None:
        run: list[Any] = []
        for item in made:
            if item is CLOSE:
                if run:
                    for data, size in self.link.writes(run):
                        self.write(data, size)
                    run = []
                self.write(CLOSE, 0)
            else:
                run.append(item)
        if run:
            for data, size in self.link.writes(run):
                self.write(data, size)

    def send_now(self, item: Any, size: int) -> None:
        """(On the loop.) Write ``item`` (one write) after what is being written, without the
        batching of :meth:`send` (an answer the loop itself makes)."""
        with self.lock:
            if self.closing:
                return
            self.unsent += size
            over = self.unsent > self.send_buffer
            if not over and self.holds:
                self.behind.append(item)
                self.behind_bytes += size
                return
            if not over:
                self.made.append(item)
                self.made_bytes += size
                if self.asked:  # a taker is writing: it writes this too, in order
                    return
                self.asked = True
        if over:
            self.give_up(f"more than {self.send_buffer} bytes unread")
            return
        self._take()

    def write(self, item: Any, size: int) -> None:
        """(On the loop.) Write ``item`` (a write as ``writes`` made it, or ``CLOSE``) now if
        nothing waits before it, else behind what does."""
        if self.writer is not None:  # a write is waiting: keep the order
            self.backlog.append((item, size))
            return
        if item is CLOSE:
            self.writer = self.loop.create_task(self._write(None, item, 0))
            return
        try:
            waiting = self.link.write_nowait(item)
        except (OSError, RuntimeError) as exc:
            self.give_up(f"a frame could not be sent ({type(exc).__name__})")
            return
        if waiting is None:
            self._written(size)
            return
        self.writer = self.loop.create_task(self._write(waiting, item, size))

    def _written(self, size: int) -> None:
        with self.lock:
            self.unsent -= size
        self.link.written(size)

    async def _write(self, waiting: Awaitable | None, item: Any, size: int) -> None:
        """The writer while writes must wait: finish the one begun, then those behind it, in
        order, each within ``send_timeout_s``."""
        try:
            while True:
                if item is CLOSE:
                    self.closing = True
                    try:
                        await self.link.close()
                    except Exception:  # already gone
                        pass
                    return
                try:
                    async with asyncio.timeout(self.send_timeout_s):
                        if waiting is None:
                            waiting = self.link.write_nowait(item)
                        if waiting is not None:
                            await waiting
                except (TimeoutError, OSError, RuntimeError) as exc:
                    self.give_up(f"a frame could not be sent in time ({type(exc).__name__})")
                    return
                finally:
                    self._written(size)
                waiting = None
                if not self.backlog:
                    return
                item, size = self.backlog.popleft()
        finally:
            if self.writer is asyncio.current_task():
                self.writer = None

    def give_up(self, why: str) -> None:
        """(On the loop.) End the connection at once."""
        with self.lock:
            self.closing = True
        self.backlog.clear()
        self.link.given_up(why)

    def stopped(self) -> None:
        """(On the loop.) The transport is gone: nothing more is written."""
        with self.lock:
            self.closing = True
        self.backlog.clear()
        if self.writer is not None:
            self.writer.cancel()
        self.room.set()  # whatever waits to read more stops waiting: there is no more
