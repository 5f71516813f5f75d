"""The embedded Celery transport (config/celery_transport.py): a message file becomes
visible to the worker only whole, so a reader can never take one half-written."""

from __future__ import annotations

from queue import Empty

import pytest
from kombu import Connection


@pytest.fixture
def connection(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False}
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
