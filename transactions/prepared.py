"""PostgreSQL: the hot path's statements prepared once per connection, then run as
``EXECUTE``, so that the server plans each of them once instead of at every call
(docs/performance.md, "Prepared statements on PostgreSQL").

The hot path writes its statements with ``%s`` placeholders and sends several in one
simple query (``queries.deferred``), which the driver fills in on the client: the server
saw a new text each time and planned it again. Planning was most of the server's work: for
the commit's look at its messages, 0.46 ms of server CPU a call as text against 0.15 ms as
the ``EXECUTE`` of a statement prepared with a generic plan (the connection's
``plan_cache_mode`` is ``force_generic_plan``: config/settings/database.py).

Here each statement the hot path sends is, the first time this connection sees its text,
``PREPARE``d under a name drawn from the text, and from then on replaced by ``EXECUTE
name(%s, ...)`` with the same parameters, still filled in by the driver and still sent
with the others in one round trip. What it does and answers is the statement's own; only
the planning moves. A text that cannot be prepared (the server cannot tell a parameter's
type, or it is not a plain ``SELECT``/``INSERT``/``UPDATE``/``DELETE``/``WITH``) is sent
as text, as before. A ``PREPARE`` made inside an open database transaction is made under a
savepoint, so that its failure leaves the transaction as it was. At most
``PREPARED_MAX`` texts are prepared per connection; later new texts are sent as text.
``BATON_PG_PREPARED=0`` sends every text as text (a pooler that spreads one client's
statements over several server connections would lose the prepared ones).
Whether Django logs queries (``CaptureQueriesContext``, DEBUG) changes nothing here: the
log records each statement's own text (``queries.statements_logged``), not its ``EXECUTE``,
and not the ``PREPARE`` a connection makes once per text.
"""

from __future__ import annotations

import hashlib
import re
import weakref

import psycopg
from django.conf import settings
from psycopg.pq import TransactionStatus

#: Texts prepared per connection, at most (the rest are sent as text).
PREPARED_MAX = 512

_PLACEHOLDER = re.compile(r"%%|%s")
_KINDS = ("select", "insert", "update", "delete", "with")
_UNSEEN = object()

#: Per driver connection: statement text -> the name it is prepared under (or None) and its
#: number of placeholders, counted once.
_names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def prepared_sql(raw, sql: str, params) -> tuple[str, list]:
    """``sql`` (statements joined by ``"; "``) and ``params`` as they are to be sent on the
    driver connection ``raw``: each statement prepared there replaced by its ``EXECUTE``."""
    params = list(params)
    if not settings.BATON_PG_PREPARED:
        return sql, params
    names = _names.get(raw)
    if names is None:
        names = _names[raw] = {}
    parts = sql.split("; ")
    out: list[str] = []
    at = 0
    for part in parts:
        known = names.get(part, _UNSEEN)
        if known is _UNSEEN:
            count = _placeholders(part)
            name = _prepare(raw, part, count) if len(names) < PREPARED_MAX else None
            names[part] = (name, count)
        else:
            name, count = known
        if name is None:
            out.append(part)
        elif count:
            out.append(f"EXECUTE {name}({', '.join(['%s'] * count)})")
        else:
            out.append(f"EXECUTE {name}")
        at += count
    if at != len(params):  # not a text this module understands: leave it alone
        return sql, params
    return "; ".join(out), params


def _placeholders(sql: str) -> int:
    return sum(1 for match in _PLACEHOLDER.finditer(sql) if match.group() == "%s")


def _prepare(raw, sql: str, count: int) -> str | None:
    """Prepare ``sql`` on ``raw``; its name, or None when it is not prepared."""
    if not sql.lstrip()[:6].lower().startswith(_KINDS):
        return None
    numbers = iter(range(1, count + 1))
    text = _PLACEHOLDER.sub(lambda m: "%" if m.group() == "%%" else f"${next(numbers)}", sql)
    name = "baton_" + hashlib.blake2b(sql.encode(), digest_size=8).hexdigest()
    status = raw.info.transaction_status
    if status not in (TransactionStatus.IDLE, TransactionStatus.INTRANS):
        return None
    cursor = psycopg.Cursor(raw)  # no client-side placeholders: the text goes as it is
    try:
        if status == TransactionStatus.IDLE:
            try:
                cursor.execute(f"PREPARE {name} AS {text}")
            except psycopg.Error:
                return None
            return name
        cursor.execute("SAVEPOINT baton_prepare")
        try:
            cursor.execute(f"PREPARE {name} AS {text}")
        except psycopg.Error:
            cursor.execute("ROLLBACK TO SAVEPOINT baton_prepare")
            cursor.execute("RELEASE SAVEPOINT baton_prepare")
            return None
        cursor.execute("RELEASE SAVEPOINT baton_prepare")
        return name
    finally:
        cursor.close()
