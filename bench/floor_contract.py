"""The contract's message in the PostgreSQL flow's floor (``bench/flow_floor_pg.py``,
``writes="contract"``): what any server that keeps docs/api.md's promises about a message
must store, choose by and answer, and nothing more.

A message is stored with every field a client may give it and the ones the server gives it
(``msg_id``, ``put_time``, the counts), its body as bytes (a body need not be text); a get
takes the queue's messages in its default delivery sequence (higher priority first, then put
order: an index on both) and skips expired ones; a put answers each message as stored (its
descriptor, without the body, as ``bodies: none`` asks), a get each message's descriptor and
its body (``bodies: one``). Beside them the engine's writes (the room, the journal) as
``writes="engine"`` makes them. Messages of one put that differ in anything but their bodies
are refused (the flows never send them; a server would send those fields as arrays too).

No validation beyond that, no permission, no unit of work, no wake-up for other processes:
what this floor does not reach, no server on this stack that keeps the contract's message,
a queue's limit and a journal reaches either.
"""

from __future__ import annotations

import base64
import datetime
import json

#: The columns of a message, in the order the statements below use.
COLUMNS = (
    "msg_id",
    "correl_id",
    "group_id",
    "msg_type",
    "priority",
    "persistent",
    "expires_at",
    "format",
    "reply_to_queue",
    "reply_to_broker",
    "report",
    "properties",
    "put_time",
    "backout_count",
    "delivery_count",
    "body",
)

#: A queue's messages (``{table}``): every column a message's descriptor needs.
TABLE = (
    "CREATE TABLE {table} (id bigserial PRIMARY KEY, msg_id text NOT NULL, correl_id text, group_id text,"
    " msg_type text NOT NULL, priority smallint NOT NULL, persistent boolean NOT NULL, expires_at timestamptz,"
    " format text NOT NULL, reply_to_queue text NOT NULL, reply_to_broker text NOT NULL, report jsonb NOT NULL,"
    " properties jsonb NOT NULL, put_time timestamptz NOT NULL, backout_count int NOT NULL,"
    " delivery_count int NOT NULL, body bytea NOT NULL)"
)
#: The default delivery sequence's index.
INDEX = "CREATE INDEX {table}_order ON {table} (priority DESC, id)"

#: The put: its messages (the fields they share once, the ids and bodies as arrays), its
#: journal row and its room (last: the counter row stays locked to the end of the commit).
INSERT = (
    "WITH m AS (INSERT INTO {table} (" + ", ".join(COLUMNS) + ")"
    " SELECT i, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 0, 0, b FROM unnest(%s::text[], %s::bytea[]) AS u(i, b)"
    " RETURNING msg_id),"
    " j AS (INSERT INTO {table}_journal (kind, msg_ids, count) SELECT 'put', array_agg(msg_id), count(*) FROM m)"
    " UPDATE {table}_room SET reserved = reserved + %s WHERE id = 1"
    " AND reserved + %s - (SELECT COALESCE(SUM(released), 0) FROM {table}_released) <= max_depth RETURNING 1"
)
#: The get: the first unexpired messages in the delivery sequence, the room they give back
#: (on the connection's own row) and its journal row, in one statement.
DELETE = (
    "WITH d AS (DELETE FROM {table} WHERE id IN (SELECT id FROM {table}"
    " WHERE expires_at IS NULL OR expires_at > now() ORDER BY priority DESC, id FOR UPDATE SKIP LOCKED LIMIT %s)"
    " RETURNING id, " + ", ".join(COLUMNS) + "),"
    " r AS (INSERT INTO {table}_released (stripe, released) SELECT %s, count(*) FROM d HAVING count(*) > 0"
    " ON CONFLICT (stripe) DO UPDATE SET released = {table}_released.released + excluded.released),"
    " j AS (INSERT INTO {table}_journal (kind, msg_ids, count) SELECT 'get', array_agg(msg_id), count(*) FROM d"
    " HAVING count(*) > 0)"
    " SELECT * FROM d ORDER BY priority DESC, id"
)

_MSG_TYPES = ("datagram", "request", "reply", "report")


class Refused(ValueError):
    """A request this floor does not serve (the reply's message)."""


def put_fields(messages: list[dict], *, now: datetime.datetime) -> tuple[list, list[bytes]]:
    """The shared fields of a put's messages (``INSERT``'s scalars, in its order) and their
    bodies as bytes. Refused: messages that differ in anything but their bodies, or fields
    out of their ranges."""
    first = {k: v for k, v in messages[0].items() if k not in ("body", "body_base64")}
    for m in messages[1:]:
        if {k: v for k, v in m.items() if k not in ("body", "body_base64")} != first:
            raise Refused("This floor takes messages that differ only in their bodies.")
    msg_type = first.get("msg_type", "datagram")
    priority = first.get("priority", 0)
    if msg_type not in _MSG_TYPES or not isinstance(priority, int) or not 0 <= priority <= 9:
        raise Refused("msg_type or priority out of range.")
    expiry_ms = first.get("expiry_ms")
    expires_at = None if expiry_ms is None else now + datetime.timedelta(milliseconds=int(expiry_ms))
    shared = [
        first.get("correl_id"),
        first.get("group_id"),
        msg_type,
        priority,
        first.get("persistence", "persistent") != "non_persistent",
        expires_at,
        first.get("format") or "",
        first.get("reply_to_queue") or "",
        first.get("reply_to_broker") or "",
        json.dumps(first.get("report") or []),
        json.dumps(first.get("properties") or {}),
        now,
    ]
    bodies = [m["body"].encode() if "body" in m else base64.b64decode(m.get("body_base64", "")) for m in messages]
    return shared, bodies


def put_descriptors(ids: list[str], shared: list, *, queue: str, broker: str) -> list[dict]:
    """Each message of a put as stored (``bodies: none``)."""
    row = dict(zip(COLUMNS[1:-1], [*shared, 0, 0]))
    row["report"], row["properties"] = json.loads(row["report"]), json.loads(row["properties"])
    times: dict = {}
    return [descriptor({**row, "msg_id": msg_id}, queue=queue, broker=broker, times=times) for msg_id in ids]


def get_descriptors(rows: list[tuple], *, queue: str, broker: str) -> list[dict]:
    """Each message a get took (``DELETE``'s rows) as answered: its descriptor and its body
    (``bodies: one``), its delivery counted."""
    times: dict = {}
    out = []
    for row in rows:
        values = dict(zip(COLUMNS, row[1:]))
        values["delivery_count"] += 1
        body = values["body"]
        message = descriptor(values, queue=queue, broker=broker, times=times)
        try:
            message["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            message["body_base64"] = base64.b64encode(body).decode("ascii")
        out.append(message)
    return out


def descriptor(v: dict, *, queue: str, broker: str, times: dict) -> dict:
    """A message's fields as docs/api.md answers them (times written once per instant)."""
    expires_at = v["expires_at"]
    return {
        "msg_id": v["msg_id"],
        "correl_id": v["correl_id"],
        "group_id": v["group_id"],
        "msg_type": v["msg_type"],
        "priority": v["priority"],
        "persistence": "persistent" if v["persistent"] else "non_persistent",
        "expires_at": None if expires_at is None else _iso(expires_at, times),
        "expiry_ms": None
        if expires_at is None
        else max(0, int((expires_at - datetime.datetime.now(datetime.timezone.utc)).total_seconds() * 1000)),
        "format": v["format"] or None,
        "reply_to_queue": v["reply_to_queue"] or None,
        "reply_to_broker": v["reply_to_broker"] or None,
        "report": v["report"] or None,
        "properties": v["properties"] or None,
        "refers_to": None,
        "put_time": _iso(v["put_time"], times),
        "backout_count": v["backout_count"],
        "delivery_count": v["delivery_count"],
        "queue": queue,
        "broker": broker,
    }


def _iso(value: datetime.datetime, times: dict) -> str:
    text = times.get(value)
    if text is None:
        text = times[value] = value.isoformat()
    return text
