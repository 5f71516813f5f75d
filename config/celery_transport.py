"""The embedded Celery transport: kombu's filesystem transport with each message written
atomically.

Kombu's own writes a message file in place (create, lock, write), and its reader renames
and reads any file named ``*.<queue>.msg`` without taking that lock. On a busy machine the
reader can take a file before its content is written, fail to parse the empty payload, and
the worker stops ("Unrecoverable error: JSONDecodeError"): channels and housekeeping stop
with it. Found by ``manage.py soak``. Here a message is written under a name the reader
ignores (it has no dot) and renamed into place, which is atomic within one filesystem.

The exchange tables (which queues each exchange routes to, one file per exchange in the
control folder) had the same race: the first process to bind a queue created the file
empty and only then locked and wrote it, so another process starting at the same moment
could lock it first, read nothing and stop with the same error (two workers of a test's
platform, started together, 2026-11-27). Here a table is changed under a lock file of its
own and written whole by a rename; an empty table file reads as no bindings."""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put ``payload`` on ``queue``: written whole, then made visible by a rename."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        partial = os.path.join(self.data_folder_out, f"partial_{uuid.uuid4().hex}")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise ChannelError(f"Cannot add a message file for {queue!r} to {self.data_folder_out!r}.") from exc

    def get_table(self, exchange):
        """The queues ``exchange`` routes to: none while its table file is missing or empty."""
        file = self._exchange_file(exchange)
        try:
            with file.open("rb") as f:
                filesystem.lock(f, filesystem.LOCK_SH)
                try:
                    return _table(f.read())
                finally:
                    filesystem.unlock(f)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._table_change(exchange, lambda queues: queues if entry in queues else [entry, *queues])

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)  # its messages
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._table_change(exchange, lambda queues: [q for q in queues if q != entry])

    def _table_change(self, exchange, change) -> None:
        """Apply ``change`` (bindings -> bindings) to ``exchange``'s table: under the lock
        file beside it, read whole, written whole under a name without a dot and renamed
        into place."""
        file = self._exchange_file(exchange)
        try:
            self.control_folder.mkdir(exist_ok=True)
            with open(f"{file}.lock", "ab") as guard:
                filesystem.lock(guard, filesystem.LOCK_EX)
                try:
                    try:
                        queues = _table(file.read_bytes())
                    except FileNotFoundError:
                        queues = None
                    changed = change(queues or [])
                    if changed != queues:
                        partial = self.control_folder / f"partial_{uuid.uuid4().hex}"
                        partial.write_bytes(str_to_bytes(dumps(changed)))
                        os.replace(partial, file)
                finally:
                    filesystem.unlock(guard)
        except OSError as exc:
            raise ChannelError(f"Cannot change {file}") from exc


def _table(content: bytes) -> list:
    text = bytes_to_str(content)
    return [filesystem.exchange_queue_t(*q) for q in loads(text)] if text.strip() else []


class Transport(filesystem.Transport):
    Channel = Channel
