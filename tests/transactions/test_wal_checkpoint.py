"""SQLite's checkpoints off the engine's steps (transactions/wal_checkpoint.py): the log's
state read from the wal-index header, the thread that copies the log once enough waits, and
the engine's connections that leave it to that thread."""

from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest
from django.db import connection

from brokers.services.messages import message_put
from tests.conftest import msgs
from transactions.queries import cursor as engine_cursor
from transactions.wal_checkpoint import (
    BACKSTOP,
    checkpointer_started,
    checkpointer_stopped,
    frames_pending,
    wal_checkpoint_awaited,
    wal_checkpoints,
)

WAIT_S = 30


def scratch_database(path) -> sqlite3.Connection:
    """A WAL database whose connection never checkpoints by itself."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
    return db


def inserted(db: sqlite3.Connection, rows: int) -> None:
    """``rows`` rows of 3,000 bytes in one transaction (about one page each)."""
    db.execute("BEGIN")
    db.executemany("INSERT INTO t (body) VALUES (?)", [(bytes(3000),)] * rows)
    db.execute("COMMIT")


def wal_frames(path) -> int:
    """Frames in the log file (it only grows while nothing checkpoints)."""
    size = (path.parent / f"{path.name}-wal").stat().st_size
    return (size - 32) // (4096 + 24)


def frames_copied(path: str, *, under: int, after: int) -> bool:
    """Whether, within ``WAIT_S``, a checkpoint after the ``after``-th leaves fewer than
    ``under`` frames to copy (a checkpoint counted may be another database's of this
    process, or may have run before the last commit: each one is followed by a look)."""
    deadline = time.monotonic() + WAIT_S
    seen = after
    while True:
        if not wal_checkpoint_awaited(seen, timeout_s=max(0.0, deadline - time.monotonic())):
            return False
        seen = wal_checkpoints()
        if frames_pending(path) < under:
            return True


def test_frames_pending_reads_the_wal_index_header(tmp_path):
    path = tmp_path / "scratch.sqlite3"
    assert frames_pending(str(path)) is None  # no log open
    db = scratch_database(path)
    inserted(db, 20)
    pending = frames_pending(str(path))
    assert pending == wal_frames(path) > 20
    busy, in_log, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert (busy, in_log, copied) == (0, pending, pending)
    assert frames_pending(str(path)) == 0
    db.close()


def test_the_thread_copies_the_log_once_enough_waits_and_ends_with_the_file(tmp_path):
    path = tmp_path / "scratch.sqlite3"
    db = scratch_database(path)
    try:
        before = wal_checkpoints()
        assert checkpointer_started(str(path), pages=100)
        inserted(db, 10)  # under the threshold: left alone
        assert 10 <= frames_pending(str(path)) < 100
        assert wal_checkpoints() == before
        inserted(db, 100)
        assert frames_copied(str(path), under=100, after=before)
        assert db.execute("SELECT count(*) FROM t").fetchone() == (110,)
        # the next write starts the log over: everything in it was copied
        inserted(db, 1)
        assert frames_pending(str(path)) < 5
    finally:
        db.close()
    thread = next(t for t in threading.enumerate() if t.name == "sqlite-checkpoint" and t.path == str(path))
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"scratch.sqlite3{suffix}").unlink(missing_ok=True)
    thread.join(WAIT_S)
    assert not thread.is_alive()


def test_no_thread_for_a_database_in_memory_or_when_turned_off(tmp_path):
    assert not checkpointer_started(":memory:", pages=1000)
    assert not checkpointer_started("file:x?mode=memory&cache=shared", pages=1000)
    assert not checkpointer_started(str(tmp_path / "off.sqlite3"), pages=0)


@pytest.mark.django_db(transaction=True)
def test_sqlite_checkpoints_by_default_and_the_thread_when_set(queue, settings):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's log")
    path = str(connection.settings_dict["NAME"])
    pages = settings.BATON_SQLITE_CHECKPOINT_PAGES
    with engine_cursor() as c:
        c.execute("PRAGMA wal_autocheckpoint")
        assert c.fetchone()[0] == (pages * BACKSTOP if pages else 1000)  # 1000: SQLite's own
    settings.BATON_SQLITE_CHECKPOINT_PAGES = 20  # a low threshold, for the test
    connection.close()  # the next statement opens a connection with the setting
    try:
        with engine_cursor() as c:
            c.execute("PRAGMA wal_autocheckpoint")
            assert c.fetchone()[0] == 20 * BACKSTOP  # SQLite's own only as a backstop
        assert any(getattr(t, "path", None) == os.path.abspath(path) for t in threading.enumerate())
        before = wal_checkpoints()
        message_put(broker="QM1", queue="Q1", messages=msgs(*[f"m{n:02}" * 600 for n in range(40)]), syncpoint="no")
        assert frames_copied(path, under=20, after=before)
    finally:
        connection.close()  # later tests open theirs with the setting as it was
        assert checkpointer_stopped(path)


def test_a_stopped_thread_is_started_again_by_the_next_connection(tmp_path):
    path = tmp_path / "scratch.sqlite3"
    db = scratch_database(path)
    try:
        assert checkpointer_started(str(path), pages=30)
        assert checkpointer_stopped(str(path))
        assert not any(getattr(t, "path", None) == str(path) for t in threading.enumerate())
        assert checkpointer_started(str(path), pages=30)
        assert any(getattr(t, "path", None) == str(path) for t in threading.enumerate())
    finally:
        checkpointer_stopped(str(path))
        db.close()
