"""The embedded Celery transport (config/celery_transport.py): a message file becomes
visible to the worker only whole, so a reader can never take one half-written; an exchange's
table of bindings likewise, and an empty one (what kombu's own writer leaves for a moment)
reads as no bindings instead of stopping the worker."""

from __future__ import annotations

import json
from queue import Empty

import pytest
from kombu import Connection


@pytest.fixture
def connection(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    with Connection("filesystem://", transport="config.celery_transport:Transport", transport_options=options) as conn:
        yield conn, folder


def test_a_message_goes_through_whole_and_leaves_no_partial_file(connection):
    conn, folder = connection
    queue = conn.SimpleQueue("tasks")
    queue.put({"task": "housekeeping", "n": 1})
    assert [p.name.endswith(".tasks.msg") for p in folder.iterdir()] == [True]
    message = queue.get(timeout=1)
    assert message.payload == {"task": "housekeeping", "n": 1}
    message.ack()
    assert list(folder.iterdir()) == []
    queue.close()


def test_a_file_still_being_written_is_not_read(connection):
    conn, folder = connection
    queue = conn.SimpleQueue("tasks")
    (folder / "partial_0123456789abcdef").write_bytes(b"")  # what a writer holds before its rename
    with pytest.raises(Empty):
        queue.get(timeout=0.2)
    assert (folder / "partial_0123456789abcdef").exists()
    queue.close()


def test_an_empty_exchange_table_is_read_as_no_bindings_and_a_bind_writes_it_whole(connection, tmp_path):
    # kombu keeps the bindings it made in a process-wide state: a queue name of its own
    conn, _ = connection
    control = tmp_path / "control"
    control.mkdir()
    (control / "emptied.exchange").write_bytes(b"")  # created, not yet written, by another process
    queue = conn.SimpleQueue("emptied")  # declares the queue and binds it to its exchange
    queue.put({"n": 1})
    assert queue.get(timeout=1).payload == {"n": 1}
    assert json.loads((control / "emptied.exchange").read_text()) == [["emptied", "", "emptied"]]
    assert not [p.name for p in control.iterdir() if p.name.startswith("partial_")]
    queue.close()


def test_deleting_a_queue_unbinds_it(connection, tmp_path):
    conn, _ = connection
    queue = conn.SimpleQueue("deleted")
    assert json.loads((tmp_path / "control" / "deleted.exchange").read_text()) == [["deleted", "", "deleted"]]
    conn.default_channel.queue_delete("deleted")
    assert json.loads((tmp_path / "control" / "deleted.exchange").read_text()) == []
    queue.close()
