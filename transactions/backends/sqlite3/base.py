"""Django's SQLite backend, with every write transaction queued on the database's writer
lock (:mod:`transactions.sqlite_writer`) before ``BEGIN IMMEDIATE``, released at its
``COMMIT``, ``ROLLBACK`` or the connection's close."""
from __future__ import annotations

from django.db.backends.sqlite3 import base

from ...sqlite_writer import connection_writer


class DatabaseWrapper(base.DatabaseWrapper):
    def writer_acquire(self) -> None:
        lock, timeout_s = connection_writer(self)  # the engine's own steps take the same lock
        lock.acquire(timeout_s=timeout_s)
        self._writer_held = lock

    def writer_release(self) -> None:
        lock, self._writer_held = getattr(self, "_writer_held", None), None
        if lock is not None:
            lock.release()

    def _start_transaction_under_autocommit(self):
        self.writer_acquire()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self.writer_release()
            raise

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self.writer_release()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self.writer_release()

    def _close(self):
        try:
            return super()._close()
        finally:
            self.writer_release()
