"""The embedded Celery transport: kombu's filesystem transport with each message written
atomically.

Kombu's own writes a message file in place (create, lock, write), and its reader renames
and reads any file named ``*.<queue>.msg`` without taking that lock. On a busy machine the
reader can take a file before its content is written, fail to parse the empty payload, and
the worker stops ("Unrecoverable error: JSONDecodeError"): channels and housekeeping stop
with it. Found by ``manage.py soak``. Here a message is written under a name the reader
ignores (it has no dot) and renamed into place, which is atomic within one filesystem."""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


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


class Transport(filesystem.Transport):
    Channel = Channel
