"""The hot path's SQL for the transaction, link and journal tables: every statement that
begin, put, get, commit, rollback and the ready-check run on them, in one place, with the
locks each one takes. ``brokers.queries`` holds the message and queue side.

Django's models define these tables; the statements are written by hand because the ORM
costs more in Python per statement than the database spends running it
(docs/performance.md). They run through the engine's transaction seam
(``transactions.seam``) on Django's connection, so they join the caller's atomic block; the
path is the same whether queries are logged or not.

Row locks (``FOR UPDATE``) are taken on PostgreSQL only; on SQLite every writer holds the
database's write lock from ``BEGIN IMMEDIATE``. Lock order: link-graph lock → transaction
rows → queue rows → message rows (docs/concurrency.md).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone
from typing import Sequence

import orjson
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DEFAULT_DB_ALIAS
from django.db.models.base import ModelState

from .dialects import dialect
from .models import OPEN_STATES, JournalEvent, Link, Transaction, TransactionState
from .seam import (  # noqa: F401  (the seam's functions, as the statement modules and stores call them)
    cursor,
    default_db,
    deferred,
    deferred_flush,
    hot_setting,
    raised_as_django,
    seam,
    statements_logged,
)

#: The key of the link-graph lock (PostgreSQL's advisory lock; transactions/locks.py).
LINK_GRAPH_LOCK_KEY = 0x62_61_74_6F_6E  # "baton"

TRANSACTION = Transaction._meta.db_table
LINK = Link._meta.db_table
JOURNAL = JournalEvent._meta.db_table

TRANSACTION_COLUMNS = tuple(f.attname for f in Transaction._meta.concrete_fields)
_TXN_COLUMN_LIST = ", ".join(TRANSACTION_COLUMNS)
_JOURNAL_COLUMNS = ("at", "kind", "broker", "queue", "transaction_id", "msg_id", "detail", "count")
_DATETIMES = [i for i, name in enumerate(TRANSACTION_COLUMNS) if name.endswith("_at")]
_MARKS_AT = TRANSACTION_COLUMNS.index("marks")
_encoder = DjangoJSONEncoder()
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS


def pg_array(values) -> str:
    """PostgreSQL: ``values`` as the text form of an array, for a ``%s::type[]`` parameter.
    The driver's own adaptation of a list walks it in Python element by element (a put of
    one message sends 24 one-element arrays, one per column: about a tenth of a session
    thread's CPU per operation, docs/performance.md); this writes each element once, and
    the driver then quotes one string. Elements: None, str, int, bool, bytes (in bytea's
    escape form when ASCII without a NUL, else its hex form), aware datetimes; anything else
    is a TypeError."""
    return "{" + ",".join([_pg_element(v) for v in values]) + "}"


def _pg_element(value) -> str:
    kind = type(value)
    if kind is str:
        if '"' in value or "\\" in value:
            value = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{value}"'
    if value is None:
        return "NULL"
    if kind is bool:
        return "t" if value else "f"
    if kind is int:
        return str(value)
    if kind is bytes or kind is bytearray or kind is memoryview:
        raw = bytes(value)
        text = _bytea_escaped(raw)
        if text is None:
            return f'"\\\\x{raw.hex()}"'  # bytea's hex input, its backslash escaped
        if '"' in text or "\\" in text:
            text = text.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{text}"'
    if isinstance(value, datetime) and value.tzinfo is not None:
        return f'"{value.isoformat()}"'
    if isinstance(value, str):  # a choice (TextChoices): its value
        return _pg_element(str.__str__(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(value))
    raise TypeError(f"no array element form for {kind.__name__}")


def _bytea_escaped(value: bytes) -> str | None:
    """``bytea``'s escape input for bytes that are ASCII without a NUL (a text body, most
    often): the bytes themselves, each backslash doubled. Half the length of the hex form,
    which the server's lexer, ``array_in`` and ``byteain`` each read whole: a put of 100 1 KiB
    bodies spent about a quarter of its backend's CPU there (docs/performance.md,
    "PostgreSQL: bodies in bytea's escape form"). ASCII reads the same in every server
    encoding; anything else (a NUL, any other byte) gets the hex form (None)."""
    if not value.isascii() or b"\x00" in value:
        return None
    text = value.decode("ascii")
    return text.replace("\\", "\\\\") if "\\" in text else text


def pg_scalar(value) -> str | None:
    """PostgreSQL: one value as its text form, for a ``%s::type`` parameter, as ``pg_array``
    writes an element (a choice as its value, bytes in bytea's escape or hex form, an aware
    datetime in ISO form), unquoted: the driver quotes the string. None stays None (NULL)."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is bool:
        return "t" if value else "f"
    if kind is int:
        return str(value)
    if kind is bytes or kind is bytearray or kind is memoryview:
        raw = bytes(value)
        text = _bytea_escaped(raw)
        return "\\x" + raw.hex() if text is None else text
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.isoformat()
    if isinstance(value, str):  # a choice (TextChoices): its value
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(value))
    raise TypeError(f"no text form for {kind.__name__}")


def json_text(value) -> str:
    """A value as the JSON text a column stores (a journal event's detail, a message's
    properties): by orjson, with what it does not know itself (datetimes included, so they
    are written as Django writes them) through Django's encoder; what orjson refuses (an
    integer beyond 64 bits, a lone surrogate) by Django's encoder alone."""
    try:
        return orjson.dumps(value, default=_encoder.default, option=_ORJSON_OPTIONS).decode()
    except TypeError:
        return _encoder.encode(value)


def dt_param(value):
    """A datetime as the database takes it: naive UTC text on SQLite (as Django writes it),
    the aware value on PostgreSQL."""
    return dialect().dt_param(value)


def json_param() -> str:
    return dialect().JSON_PARAM


def aware(value):
    """A datetime read back (SQLite: naive UTC, as Django writes it) as an aware UTC one.
    Built by the constructor: ``replace(tzinfo=...)`` cost 2.1 µs here against 0.8, once
    per time column of every row a get or a commit reads."""
    if value is not None and value.tzinfo is None:
        return datetime(
            value.year,
            value.month,
            value.day,
            value.hour,
            value.minute,
            value.second,
            value.microsecond,
            dt_timezone.utc,
            fold=value.fold,
        )
    return value


def transaction_new(
    *, transaction_id: str, broker: str, owner: str, created_at, deadline_at, user_id: int | None = None
) -> Transaction:
    """The instance of a unit of work about to be begun (``transaction_insert`` writes it)."""
    return _transaction_instance(
        [
            transaction_id,
            broker,
            "active",
            "",
            None,
            owner,
            [],
            created_at,
            deadline_at,
            None,
            None,
            user_id,
        ]
    )


def model_instance(model, values: dict, fields_cache: dict | None = None):
    """A model instance from column values (attribute names), as ``from_db`` builds it but
    without the ORM's per-field work; for models without ``post_init`` receivers (Message,
    Transaction), which matters at 100 instances a call. ``values`` becomes the instance's
    own ``__dict__`` (not copied): pass a dict made for it."""
    obj = model.__new__(model)
    obj.__dict__ = values
    state = ModelState()
    state.adding, state.db = False, DEFAULT_DB_ALIAS
    if fields_cache:
        state.fields_cache = {**fields_cache}
    obj._state = state
    return obj


def _transaction_instance(values: list) -> Transaction:
    return model_instance(Transaction, dict(zip(TRANSACTION_COLUMNS, values)))


def transaction_from_row(row: Sequence) -> Transaction:
    values = list(row)
    for i in _DATETIMES:
        values[i] = aware(values[i])
    marks = values[_MARKS_AT]
    if isinstance(marks, str):  # SQLite: the text; most units of work have no marks
        values[_MARKS_AT] = [] if marks == "[]" else json.loads(marks)
    return _transaction_instance(values)


# --- transactions ---------------------------------------------------------------------------


def transaction_insert(
    *, transaction_id: str, broker: str, owner: str, created_at, deadline_at, user_id: int | None = None
) -> None:
    """A new unit of work, active, belonging to ``user_id`` (None: system code). A new row: no lock."""
    marks = json_param()
    deferred(  # nothing reads it back in this step: on PostgreSQL it travels with the next statement
        f"INSERT INTO {TRANSACTION} (id, broker, state, reason, owner, marks, created_at, deadline_at, user_id)"
        f" VALUES (%s, %s, 'active', '', %s, {marks}, %s, %s, %s)",
        [transaction_id, broker, owner, "[]", dt_param(created_at), dt_param(deadline_at), user_id],
    )


#: A unit of work's row by id. No lock.
_TRANSACTION_ROW = f"SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id = %s"


def transaction_row(*, transaction_id: str, lock: bool) -> Transaction | None:
    """A unit of work's row; ``lock``: ``FOR UPDATE`` (PostgreSQL) until the database
    transaction ends."""
    with cursor() as c:
        c.execute(dialect().TRANSACTION_ROW_LOCKED if lock else _TRANSACTION_ROW, [transaction_id])
        row = c.fetchone()
    return None if row is None else transaction_from_row(row)


def transactions_resolve(
    *, transaction_ids: Sequence[str], state: str, resolved_at, reason: str = "", cause_id: str | None = None
) -> None:
    """Set the final state of units of work whose rows the caller holds. A commit leaves the
    reason and cause alone (an open unit of work has none): on SQLite, writing the cause (a
    foreign key to the same table) rewrites the row's other index entries too."""
    marks = ", ".join(["%s"] * len(transaction_ids))
    if reason or cause_id is not None:
        columns, values = ", reason = %s, cause_id = %s", [reason, cause_id]
    else:
        columns, values = "", []
    deferred(  # nothing reads it back in this step: on PostgreSQL it travels with the next statement
        f"UPDATE {TRANSACTION} SET state = %s, resolved_at = %s{columns} WHERE id IN ({marks})",
        [state, dt_param(resolved_at), *values, *transaction_ids],
    )


def transaction_held(*, transaction_id: str, commit_requested_at) -> None:
    """A unit of work that asked to commit waits on an open upstream: ``commit_held``, with
    when it asked. Caller holds its row."""
    with cursor() as c:
        c.execute(
            f"UPDATE {TRANSACTION} SET state = %s, commit_requested_at = %s WHERE id = %s",
            [TransactionState.COMMIT_HELD, dt_param(commit_requested_at), transaction_id],
        )


def transaction_marks_set(*, transaction_id: str, marks: list[str]) -> None:
    """Rewrite a unit of work's marks. Caller holds its row."""
    param = json_param()
    with cursor() as c:
        c.execute(f"UPDATE {TRANSACTION} SET marks = {param} WHERE id = %s", [json.dumps(marks), transaction_id])


# --- links ----------------------------------------------------------------------------------


def open_upstreams(*, transaction_id: str) -> list[str]:
    """The units of work upstream of this one that are still open (the ready-check). No lock."""
    marks = ", ".join(["%s"] * len(OPEN_STATES))
    with cursor() as c:
        c.execute(
            f"SELECT DISTINCT l.upstream_id FROM {LINK} l JOIN {TRANSACTION} t ON t.id = l.upstream_id"
            f" WHERE l.downstream_id = %s AND t.state IN ({marks}) ORDER BY l.upstream_id",
            [transaction_id, *OPEN_STATES],
        )
        return [row[0] for row in c.fetchall()]


def links_upstream_ids(*, downstream_ids: Sequence[str]) -> set[str]:
    """The units of work directly upstream of these, whatever their state (a commit's walk of
    its open upstream closure, a level at a time: ``transactions.manager``). No lock: the
    caller holds the link-graph lock where there is one, and links are only added under it."""
    marks = ", ".join(["%s"] * len(downstream_ids))
    with cursor() as c:
        c.execute(f"SELECT upstream_id FROM {LINK} WHERE downstream_id IN ({marks})", list(downstream_ids))
        return {row[0] for row in c.fetchall()}


def links_downstream_ids(*, upstream_ids: Sequence[str]) -> set[str]:
    """The units of work directly downstream of these, whatever their state (those a commit
    wakes: their ready-checks wait for it). No lock."""
    marks = ", ".join(["%s"] * len(upstream_ids))
    with cursor() as c:
        c.execute(f"SELECT downstream_id FROM {LINK} WHERE upstream_id IN ({marks})", list(upstream_ids))
        return {row[0] for row in c.fetchall()}


def links_open_downstream_ids(*, upstream_ids: Sequence[str]) -> list[str]:
    """The open units of work directly downstream of these (a commit's held downstreams, a
    rollback's cascade, a level at a time), in the order of their ids. No lock (as above)."""
    marks = ", ".join(["%s"] * len(upstream_ids))
    states = ", ".join(["%s"] * len(OPEN_STATES))
    with cursor() as c:
        c.execute(
            f"SELECT DISTINCT l.downstream_id FROM {LINK} l JOIN {TRANSACTION} t ON t.id = l.downstream_id"
            f" WHERE l.upstream_id IN ({marks}) AND t.state IN ({states}) ORDER BY l.downstream_id",
            [*upstream_ids, *OPEN_STATES],
        )
        return [row[0] for row in c.fetchall()]


def transactions_locked(*, transaction_ids: Sequence[str], states: Sequence[str]) -> list[Transaction]:
    """Those of these units of work whose state is one of ``states``, their rows locked until
    the database transaction ends (PostgreSQL: ``FOR UPDATE``, in the order of their ids)."""
    if not transaction_ids:
        return []
    marks = ", ".join(["%s"] * len(transaction_ids))
    state_marks = ", ".join(["%s"] * len(states))
    with cursor() as c:
        c.execute(
            f"SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id IN ({marks}) AND state IN ({state_marks})"
            f" ORDER BY id{dialect().ROW_LOCK}",
            [*transaction_ids, *states],
        )
        return [transaction_from_row(row) for row in c.fetchall()]


def ready_checks(*, transaction_ids: Sequence[str]) -> dict[str, str]:
    """The ready-check of several units of work in one statement (a channel's window):
    ``backed_out`` if rolled back, ``pending`` while an upstream is open, else ``ready``.
    Ids with no row are left out. No lock."""
    if not transaction_ids:
        return {}
    ids = list(transaction_ids)
    marks = ", ".join(["%s"] * len(OPEN_STATES))
    with cursor() as c:
        c.execute(
            f"SELECT t.id, t.state, EXISTS (SELECT 1 FROM {LINK} l JOIN {TRANSACTION} u ON u.id = l.upstream_id"
            f" WHERE l.downstream_id = t.id AND u.state IN ({marks}))"
            f" FROM {TRANSACTION} t WHERE t.id IN ({', '.join(['%s'] * len(ids))})",
            [*OPEN_STATES, *ids],
        )
        return {
            txn_id: "backed_out" if state == "rolled_back" else "pending" if waiting else "ready"
            for txn_id, state, waiting in c.fetchall()
        }


def transactions_mark(*, transaction_ids: Sequence[str], mark: str) -> None:
    """Add ``mark`` to the marks of the units of work that lack it, in one statement.
    Locks (PostgreSQL): the rows it changes, ``FOR UPDATE`` in the order of their ids; a row
    that has the mark already is neither locked nor written. SQLite: the write lock."""
    ids = sorted(set(transaction_ids))
    if not ids:
        return
    dialect().transactions_mark(transaction_ids=ids, mark=mark)


def links_insert(*, downstream_id: str, upstream_refs: Sequence[tuple[str, str]], created_at) -> None:
    """Links from upstream units of work to a downstream one, one per ``(upstream_id,
    resource_ref)``; a link already recorded is left as it is (``link_unique``). New rows:
    no lock beyond the unique index's entries."""
    if not upstream_refs:
        return
    at = dt_param(created_at)
    params: list = []
    for upstream_id, ref in upstream_refs:
        params += (upstream_id, downstream_id, ref, at)
    deferred(
        f"INSERT INTO {LINK} (upstream_id, downstream_id, resource_ref, created_at) VALUES "
        + ", ".join(["(%s, %s, %s, %s)"] * len(upstream_refs))
        + " ON CONFLICT DO NOTHING",
        params,
    )


# --- journal --------------------------------------------------------------------------------


def journal_insert(*, events: list) -> None:
    """Append journal events (``journal.Event`` tuples) in one multi-row ``INSERT`` (one
    round trip on PostgreSQL, where ``executemany`` costs one per row). New rows."""
    if not events:
        return
    dialect().journal_insert(events=events)


# --- wake-ups (PostgreSQL) -----------------------------------------------------------------------

WAKEUP_CHANNEL = "baton_wakeups"
