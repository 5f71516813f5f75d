"""The threads of the STOMP connections of a process: at most ``BATON_STOMP_THREADS`` of them,
shared by every connection and subscription, which hold none while they wait (docs/stomp.md,
"How it is served"). They make the blocking engine calls (database work): a connection's
frames in order, a subscription's gets when it is woken.

A thread that has had nothing to do for ``IDLE_S`` ends, closing its database connections
(an idle server holds neither threads nor database connections)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, connections

log = logging.getLogger(__name__)
IDLE_S = 5.0


class Pool:
    def __init__(self) -> None:
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = 0
        self.idle = 0  # threads waiting for a task

    def submit(self, task: Callable[[], None]) -> None:
        self.tasks.put(task)
        with self.lock:
            if self.tasks.qsize() <= self.idle or self.threads >= max(1, settings.BATON_STOMP_THREADS):
                return  # a waiting thread takes it, or the next one free does
            self.threads += 1
        threading.Thread(target=self._run, name="stomp", daemon=True).start()

    def _run(self) -> None:
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
                try:
                    task()
                except Exception:  # a task's own errors are its own; this thread goes on
                    log.exception("a STOMP task failed")
                    close_old_connections()
        finally:
            connections.close_all()


_pool: Pool | None = None
_pool_lock = threading.Lock()


def stomp_pool() -> Pool:
    """This process's pool (made on first use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = Pool()
    return _pool
