"""What the dashboard shows: reads only, through the brokers' and the transaction
manager's selectors where they exist. Nothing here changes a message's state."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import BinaryField, Count, F, Func, Q, Sum, Value
from django.db.models.functions import Length, TruncMinute, TruncSecond
from django.utils import timezone

from brokers.models import Broker, Channel, Message, Queue, put_committed_q, put_open_flag, put_open_q
from brokers.operating.traffic import traffic_totals
from brokers.selectors import broker_get, broker_list, queue_get
from brokers.services.message_filter import MessageFilter, message_filter_apply
from transactions.models import OPEN_STATES, JournalEvent, Link, Transaction
from transactions.selectors import journal_first_id_since
from workflows.exceptions import InstanceNotFound
from workflows.models import InstanceHistory
from workflows.selectors import instance_get, instance_view, workflow_list, workflow_view

from baton_client.errors import InvalidInput, NotFound

from .access import Acting, Visibility
from .models import DepthSample, MoveJob, ProcessBeat, QueueDepthSample
from .preview import PREVIEW_BYTES, body_preview

#: Rate windows offered by the overview's charts: seconds -> bucket.
RATE_WINDOWS = {60: "second", 600: "second", 3600: "minute", 86400: "minute"}
RATE_KINDS = ("put", "get", "commit", "rollback")
DEPTH_PARTS = ("available", "uncommitted_puts", "in_flight", "locked")
PAGE_SIZE = 25


# --- queues and depths ---------------------------------------------------------------------


def queue_counts(*, queue_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per queue, messages split by state: ``available`` (committed, not in flight, not
    locked), ``uncommitted_puts``, ``in_flight`` (gotten under a unit of work, pre-emptive
    gets of uncommitted puts included), ``locked`` (peek-locked); ``depth`` as the API has it
    (committed messages, available or in flight)."""
    rows = (
        Message.objects.filter(queue_id__in=queue_ids)
        .values("queue_id")
        .annotate(
            depth=Count("id", filter=put_committed_q()),
            available=Count("id", filter=put_committed_q() & Q(get_transaction__isnull=True, lock_token__isnull=True)),
            uncommitted_puts=Count("id", filter=put_open_q()),
            in_flight=Count("id", filter=Q(get_transaction__isnull=False)),
            locked=Count("id", filter=Q(lock_token__isnull=False, get_transaction__isnull=True)),
        )
    )
    zero = {"depth": 0, "available": 0, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    counts = {qid: dict(zero) for qid in queue_ids}
    for row in rows:
        counts[row.pop("queue_id")].update(row)
    return counts


def _channel_row(c: Channel) -> dict[str, Any]:
    return {
        "name": c.name,
        "source_broker": c.source_broker.name,
        "target_broker": c.target_broker,
        "transmission_queue": c.transmission_queue,
        "remote": bool(c.target_url),
        "state": c.state,
        "enabled": c.enabled,
        "preemptive": c.preemptive,
        "batch_size": c.batch_size,
        "batch_interval_ms": c.batch_interval_ms,
        "window": c.window,
        "in_doubt_seq": c.in_doubt_seq or None,
        "batches_committed": c.batches_committed,
        "batches_backed_out": c.batches_backed_out,
        "messages_sent": c.messages_sent,
        "last_batch_seq": c.last_batch_seq,
        "last_error": c.last_error or None,
    }


def channel_rows() -> list[dict[str, Any]]:
    return [_channel_row(c) for c in Channel.objects.select_related("source_broker").order_by("name")]


def journal_position() -> int:
    return JournalEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def stomp_rows() -> list[dict[str, Any]]:
    """Every live STOMP connection as the overview lists it (what the serving processes
    last wrote, without the time they wrote it: a push follows a change, not a heartbeat)."""
    from stomp_server.selectors import stomp_clients

    return [
        {"name": c.session, "broker": c.broker, **_stomp_row(c)}
        for c in sorted(stomp_clients(brokers=None), key=lambda c: (c.broker, c.connected_at, c.session))
    ]


def process_rows() -> list[dict[str, Any]]:
    """The processes' last heartbeats (``dashboard.ProcessBeat``), web, worker and beat in
    that order: the page judges each alive or silent by its age against ``interval_s``."""
    from django.conf import settings

    order = {"web": 0, "worker": 1, "beat": 2}
    rows = ProcessBeat.objects.values_list("kind", "name", "host", "pid", "started_at", "seen_at")
    return [
        {
            "key": f"{kind}/{name}",
            "kind": kind,
            "name": name,
            "host": host,
            "pid": pid,
            "started_at": started.isoformat(),
            "seen_at": seen.isoformat(),
            "interval_s": settings.BATON_DASHBOARD_HEARTBEAT_S,
        }
        for kind, name, host, pid, started, seen in sorted(rows, key=lambda r: (order.get(r[0], 9), r[1]))
    ]


def overview() -> dict[str, Any]:
    """Every broker, queue and channel with counts: what the follower pushes to every
    overview socket; each socket keeps only what its user may see (:func:`overview_for`)."""
    brokers = list(broker_list())
    queues = list(Queue.objects.select_related("broker").order_by("broker__name", "name"))
    counts = queue_counts(queue_ids=[q.pk for q in queues])
    return {
        "journal_position": journal_position(),
        "channels": channel_rows(),
        "stomp": stomp_rows(),
        "processes": process_rows(),
        "brokers": [
            {
                "name": b.name,
                "description": b.description,
                "queues": [
                    {
                        "name": q.name,
                        "kind": q.kind,
                        "usage": q.usage,
                        "put_enabled": q.put_enabled,
                        "get_enabled": q.get_enabled,
                        **counts[q.pk],
                    }
                    for q in queues
                    if q.broker_id == b.pk
                ],
            }
            for b in brokers
        ],
    }


def topology() -> tuple[list, list]:
    """Every broker and queue as the overview and broker pages list them: the follower
    pushes a fresh overview when this changes (an object defined, altered or deleted)."""
    return (
        list(Broker.objects.order_by("name").values_list("name", "description")),
        list(
            Queue.objects.order_by("broker__name", "name").values_list(
                "broker__name", "name", "kind", "usage", "put_enabled", "get_enabled"
            )
        ),
    )


def overview_for(data: dict[str, Any], seen: Visibility) -> dict[str, Any]:
    """``data`` from :func:`overview` cut down to what ``seen`` allows."""
    if seen.everything:
        return data
    brokers = [
        {**b, "queues": [q for q in b["queues"] if seen.queue(b["name"], q["name"])]}
        for b in data["brokers"]
        if seen.broker(b["name"])
    ]
    channels = [c for c in data["channels"] if seen.channel(c["source_broker"])]  # as REST lists them
    stomp = [c for c in data.get("stomp", []) if c["broker"] in seen.brokers]  # brokers seen whole
    # processes: host names and pids are the operator's business (superusers)
    return {**data, "brokers": brokers, "channels": channels, "stomp": stomp, "processes": []}


def broker_page(
    *, broker: str, seen: Visibility, name: str = "", kind: str = "", sort: str = "name", page: int = 1, size: int = 50
) -> dict[str, Any]:
    """The broker page: the broker, one page of its queues the user sees (``name``: contains,
    ``kind``, ``sort``: a field, '-' first for largest first; counts for that page only unless
    sorted by a count, which counts the filtered queues in one grouped read), open units of
    work and channels. ``total``: queues matching; ``pages``."""
    b = broker_get(name=broker)
    rows = Queue.objects.filter(broker=b)
    if name:
        rows = rows.filter(name__contains=name)
    if kind:
        rows = rows.filter(kind=kind)
    if not (seen.everything or broker in seen.brokers):
        rows = rows.filter(name__in=[q for bb, q in seen.queues if bb == broker])
    key = sort.lstrip("-")
    if key in ("name", "kind"):
        total = rows.count()
        queues = list(rows.order_by(key, "name")[(page - 1) * size : page * size])
        counts = queue_counts(queue_ids=[q.pk for q in queues])
    else:
        every = list(rows.order_by("name"))
        total = len(every)
        counts = queue_counts(queue_ids=[q.pk for q in every])
        every.sort(key=lambda q: -counts[q.pk][key])  # stable: by name within equal counts
        queues = every[(page - 1) * size : page * size]
    open_units = Transaction.objects.filter(broker=broker, state__in=["active", "commit_held"]).count()
    channels = [
        c
        for c in channel_rows()
        if broker in (c["source_broker"], c["target_broker"]) and seen.channel(c["source_broker"])
    ]
    return {
        "broker": b,
        "queues": [{"queue": q, **counts[q.pk]} for q in queues],
        "total": total,
        "page": page,
        "pages": max(1, -(-total // size)),
        "open_units": open_units,
        "channels": channels,
    }


def _stomp_row(c) -> dict[str, Any]:
    return {
        "session": c.session,
        "username": c.username,
        "peer": c.peer,
        "transport": c.transport,
        "version": c.version,
        "connected_at": c.connected_at.isoformat(),
        "subscriptions": c.subscriptions,
        "open_transactions": c.open_transactions,
        "closing": c.close_requested_at is not None,
    }


def queue_consumers(*, broker: str, queue: str) -> dict[str, Any]:
    """Who is taking messages from a queue now: the STOMP subscriptions to ``/queue/{queue}``
    (with their connections), the channels whose agents read it (its transmission queue),
    and the units of work holding its messages in flight, counted per owner. Plain data
    (what the follower pushes to the queue page, ``ConnectionsConsumer``)."""
    from stomp_server.selectors import stomp_clients

    destination = f"/queue/{queue}"
    stomp = [
        {
            **_stomp_row(c),
            "name": f"{c.session}/{s.get('id', '')}",
            "subscription": s.get("id", ""),
            "ack": s.get("ack", ""),
            "unacknowledged": s.get("unacknowledged", 0),
        }
        for c in sorted(stomp_clients(brokers=frozenset({broker})), key=lambda c: (c.connected_at, c.session))
        for s in c.subscriptions
        if s.get("destination") == destination
    ]
    channels = [
        {"name": c["name"], "state": c["state"], "target_broker": c["target_broker"]}
        for c in channel_rows()
        if c["source_broker"] == broker and c["transmission_queue"] == queue
    ]
    held = (
        Message.objects.filter(queue__broker__name=broker, queue__name=queue, get_transaction__isnull=False)
        .values("get_transaction__owner", "get_transaction__user__username")
        .annotate(units=Count("get_transaction", distinct=True), messages=Count("id"))
        .order_by("-messages", "get_transaction__user__username", "get_transaction__owner")
    )
    units = [
        {
            "name": f"{row['get_transaction__user__username'] or ''}/{row['get_transaction__owner'] or ''}",
            "owner": row["get_transaction__user__username"] or "",
            "agent": row["get_transaction__owner"] or "",
            "units": row["units"],
            "messages": row["messages"],
        }
        for row in held[:50]
    ]
    return {"stomp": stomp, "channels": channels, "units": units}


def broker_connections(*, broker: str) -> dict[str, Any]:
    """A broker's open application connections (sessions: client name, owner, since, its
    unit of work), its STOMP connections and the agents of the channels that send from it.
    Plain data (what the follower pushes to the broker page, ``ConnectionsConsumer``)."""
    from brokers.models import Connection
    from stomp_server.selectors import stomp_clients

    sessions = [
        {
            "name": row["conn_id"],
            "conn_id": row["conn_id"],
            "client_name": row["client_name"],
            "username": row["user__username"] or "",
            "created_at": row["created_at"].isoformat(),
            "current_transaction_id": row["current_transaction_id"] or "",
        }
        for row in Connection.objects.filter(broker__name=broker, closed_at__isnull=True)
        .order_by("created_at", "conn_id")
        .values("conn_id", "client_name", "user__username", "created_at", "current_transaction_id")[:200]
    ]
    stomp = [
        {**_stomp_row(c), "name": c.session}
        for c in sorted(stomp_clients(brokers=frozenset({broker})), key=lambda c: (c.connected_at, c.session))
    ]
    channels = [
        {
            "name": c["name"],
            "state": c["state"],
            "transmission_queue": c["transmission_queue"],
            "target_broker": c["target_broker"],
        }
        for c in channel_rows()
        if c["source_broker"] == broker
    ]
    return {"sessions": sessions, "stomp": stomp, "channels": channels}


# --- publish/subscribe ---------------------------------------------------------------------


def topics_page(*, broker: str) -> dict[str, Any]:
    """A broker's topic objects and retained publications."""
    from pubsub.selectors import retained_all, topic_list

    retained = []
    for row in retained_all(broker=broker):
        body = bytes(row.body)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        retained.append(
            {
                "topic": row.topic,
                "msg_id": row.msg_id,
                "published_at": row.published_at,
                "body": text,
                "length": len(body),
            }
        )
    return {"broker": broker_get(name=broker), "topics": topic_list(broker=broker), "retained": retained}


def topics_fingerprint(*, broker: str) -> tuple:
    """What changes when the topics page would: the topic objects' attributes and the
    retained publications' count and latest publication (a cheap read each follower tick)."""
    from django.db.models import Max

    from pubsub.models import RetainedPublication, Topic

    topics = tuple(
        Topic.objects.filter(broker__name=broker)
        .order_by("topic_string")
        .values_list("name", "topic_string", "conflation_interval_ms", "durable_subscriptions", "description")
    )
    retained = RetainedPublication.objects.filter(broker__name=broker)
    retained = retained.aggregate(n=Count("id"), last=Max("published_at"))
    return topics, retained["n"], retained["last"]


def topics_live(*, broker: str) -> dict[str, Any]:
    """The topics page's tables as its socket pushes them, sizes and durations in words."""
    from .templatetags.baton import duration_ms, size

    data = topics_page(broker=broker)
    return {
        "topics": [
            {
                "name": t.name,
                "topic_string": t.topic_string,
                "conflation": duration_ms(t.conflation_interval_ms) if t.conflation_interval_ms else "—",
                "durable": "allowed" if t.durable_subscriptions else "not allowed",
                "description": t.description,
            }
            for t in data["topics"]
        ],
        "retained": [
            {
                "name": r["topic"],
                "published_at": r["published_at"].isoformat(),
                "size": size(r["length"]),
                "body": None if r["body"] is None else r["body"][:120],
            }
            for r in data["retained"]
        ],
    }


def subscriptions_page(*, broker: str, seen: Visibility) -> dict[str, Any]:
    """A broker's subscriptions whose queues the user may see."""
    from pubsub.selectors import subscription_list

    subs = [s for s in subscription_list(broker=broker) if seen.queue(broker, s.queue.name)]
    return {"broker": broker_get(name=broker), "subscriptions": subs}


def queue_names_seen(*, broker: str, seen: Visibility) -> list[str]:
    """The broker's queues the user sees, by name (the graph page's queue filter)."""
    return [
        name
        for name in Queue.objects.filter(broker__name=broker).order_by("name").values_list("name", flat=True)
        if seen.queue(broker, name)
    ]


# --- the message browser -------------------------------------------------------------------


def message_state(m: Message, now) -> str:
    if m.expires_at is not None and m.expires_at <= now:
        return "expired"
    if m.put_open and m.get_transaction_id:
        return "uncommitted_put, in_flight"
    if m.put_open:
        return "uncommitted_put"
    if m.get_transaction_id:
        return "in_flight"
    if m.lock_token:
        return "locked"
    return "available"


def _browse_cursor(position: int, direction: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([direction, position]).encode()).decode().rstrip("=")


def _browse_cursor_read(cursor: str | None) -> tuple[str, int]:
    if not cursor:
        return "after", 0
    try:
        direction, position = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"==="))
        if direction not in ("after", "before") or not isinstance(position, int) or position < 0:
            raise ValueError(cursor)
    except (ValueError, TypeError, UnicodeEncodeError):
        return "after", 0
    return direction, position


def message_page(
    *, broker: str, queue: str, cursor: str | None = None, limit: int = PAGE_SIZE, filter: MessageFilter | None = None
) -> dict[str, Any]:
    """One page of a queue's messages in put order, in every state (uncommitted puts, in
    flight, locked and expired ones included), with the units of work that hold them and a
    preview of each body (its first bytes only are read: dashboard/preview.py); only those
    ``filter`` matches, if given (brokers/services/message_filter.py). A read: it changes
    nothing. Cursors page both ways, within the filter."""
    q = queue_get(broker=broker, name=queue)
    direction, position = _browse_cursor_read(cursor)
    rows = (
        Message.objects.filter(queue=q)
        .defer("body")
        .annotate(
            put_open=put_open_flag(),
            size=Length("body"),
            head=Func(F("body"), Value(1), Value(PREVIEW_BYTES), function="substr", output_field=BinaryField()),
        )
    )
    if filter is not None:
        rows = message_filter_apply(rows, filter)
    if direction == "after":
        page = list(rows.filter(id__gt=position).order_by("id")[: limit + 1])
        more_after, page = len(page) > limit, page[:limit]
        more_before = bool(page) and rows.filter(id__lt=page[0].id).exists() or (not page and position > 0)
    else:
        page = list(rows.filter(id__lt=position).order_by("-id")[: limit + 1])
        more_before, page = len(page) > limit, list(reversed(page[:limit]))
        more_after = bool(page) and rows.filter(id__gt=page[-1].id).exists()
    now = timezone.now()
    return {
        "queue": q,
        "rows": [
            {"m": m, "state": message_state(m, now), "preview": body_preview(m.head or b"", m.size or 0)} for m in page
        ],
        "next": _browse_cursor(page[-1].id, "after") if page and more_after else None,
        "previous": _browse_cursor(page[0].id, "before") if page and more_before else None,
    }


def message_detail(*, broker: str, queue: str, msg_id: str) -> dict[str, Any]:
    """One message with its body shown as text (when UTF-8), pretty JSON (when JSON), hex
    and base64."""
    q = queue_get(broker=broker, name=queue)
    if not isinstance(msg_id, str) or len(msg_id) != 48:
        raise InvalidInput("A message id is 48 hexadecimal characters.")
    m = Message.objects.filter(queue=q, msg_id=msg_id.lower()).annotate(put_open=put_open_flag()).first()
    if m is None:
        raise NotFound(f"No message {msg_id} on queue {queue!r}.", broker=broker, queue=queue)
    body = bytes(m.body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    pretty = None
    if text is not None:
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pretty = None
    shown = body[:65536]
    hex_lines = [f"{i:08x}  {shown[i : i + 16].hex(' ')}" for i in range(0, len(shown), 16)]
    return {
        "queue": q,
        "m": m,
        "state": message_state(m, timezone.now()),
        "length": len(body),
        "text": text,
        "json": pretty,
        "hex": "\n".join(hex_lines),
        "hex_cut": len(body) > len(shown),
        "base64": base64.b64encode(body).decode("ascii"),
        "body": body,
    }


def purge_count(*, broker: str, queue: str) -> int:
    """Messages a purge would remove: the committed ones that are available now."""
    q = queue_get(broker=broker, name=queue)
    return Message.objects.filter(
        put_committed_q(), queue=q, get_transaction__isnull=True, lock_token__isnull=True
    ).count()


# --- the transaction graph -----------------------------------------------------------------


#: Past cascades the graph opens with: rollbacks that cascaded within this many seconds, at
#: most ``GRAPH_CASCADES`` of them (the latest).
GRAPH_CASCADE_WINDOW_S = 3600
GRAPH_CASCADES = 20


def graph_snapshot(*, broker: str) -> dict[str, Any]:
    """The live part of a broker's transaction graph: its open units of work, every unit of
    work linked to them (on any broker, resolved or not), and its recent cascades (the
    rollbacks of the last hour that backed out others, at most ``GRAPH_CASCADES``: each
    root with the units of work it cascaded to, whose ``cause`` names it; the links a
    cascade went along are gone, the cause stays). Resolved units of work related to
    neither are left out. Each node has its queues, owner and cause (``graph_delta``).
    ``taken_at``: when it began; a page drops a later delta's news of a unit of work that
    resolved before then and that the snapshot left out."""
    taken_at = timezone.now()
    open_ids = set(Transaction.objects.filter(broker=broker, state__in=OPEN_STATES).values_list("id", flat=True))
    since = taken_at - timedelta(seconds=GRAPH_CASCADE_WINDOW_S)
    roots: list[str] = []
    members = (
        Transaction.objects.filter(cause__isnull=False, broker=broker, resolved_at__gte=since)  # txn_cause
        .order_by("-resolved_at")
        .values_list("cause_id", flat=True)[: GRAPH_CASCADES * 20]
    )
    for root in members:
        if root not in roots and len(roots) < GRAPH_CASCADES:
            roots.append(root)
    cascaded = set(Transaction.objects.filter(cause_id__in=roots).values_list("id", flat=True)) if roots else set()
    fields = ("upstream_id", "downstream_id", "resource_ref")
    links = sorted(  # each side on its own index (link_unique leads with the upstream)
        set(Link.objects.filter(upstream_id__in=open_ids).values_list(*fields))
        | set(Link.objects.filter(downstream_id__in=open_ids).values_list(*fields))
    )
    ids = open_ids | set(roots) | cascaded | {u for u, _, _ in links} | {d for _, d, _ in links}
    nodes = _graph_nodes(ids)
    queues = units_queues(nodes=nodes)
    for node in nodes:
        node["queues"] = queues.get(node["id"], [])
    return {
        "broker": broker,
        "taken_at": taken_at.isoformat(),
        "nodes": nodes,
        "edges": [{"upstream": u, "downstream": d, "resource": r} for u, d, r in links],
    }


def _graph_nodes(ids: set[str]) -> list[dict[str, Any]]:
    """The graph's view of these units of work: state, times, ``cause`` (the unit of work
    whose rollback cascaded to it), ``owner`` (the user who began it; empty for system
    code), ``agent`` (the connection or channel that began it) and ``user_id`` (for
    ``graph_for``'s ``yours``, which drops it)."""
    rows = (
        Transaction.objects.filter(pk__in=ids)
        .order_by("created_at")
        .values_list("id", "broker", "state", "reason", "created_at", "resolved_at", "cause_id", "owner", "user_id")
    )
    rows = list(rows)
    names = dict(
        get_user_model().objects.filter(pk__in={r[8] for r in rows if r[8] is not None}).values_list("pk", "username")
    )
    return [
        {
            "id": tid,
            "broker": broker,
            "state": state,
            "reason": reason or None,
            "created_at": created.isoformat(),
            "resolved_at": resolved.isoformat() if resolved else None,
            "cause": cause,
            "owner": names.get(user_id, ""),
            "agent": agent,
            "user_id": user_id,
        }
        for tid, broker, state, reason, created, resolved, cause, agent, user_id in rows
    ]


def graph_for(graph: dict[str, Any], seen: Visibility, acts: Acting) -> dict[str, Any]:
    """A graph snapshot or delta cut down to what ``seen`` allows: units of work on brokers
    the user does not see (linked to one of this broker's) are left out, with their links.
    Each node says whether the user may roll it back (``yours``, from ``acts``)."""
    hidden = set() if seen.everything else {n["id"] for n in graph["nodes"] if not seen.broker(n["broker"])}
    nodes = [
        {**{k: v for k, v in n.items() if k != "user_id"}, "yours": acts.may(n)}
        for n in graph["nodes"]
        if n["id"] not in hidden
    ]
    edges = [e for e in graph["edges"] if e["upstream"] not in hidden and e["downstream"] not in hidden]
    return {**graph, "nodes": nodes, "edges": edges}


def units_queues(*, nodes: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Queue names each unit of work put to or got from. Units of work do not record their
    queues: an open one's are those of the messages it holds (indexed by put and get
    transaction); a resolved one's come from the journal's put and get events since the
    oldest of them began (a range of the journal's time index)."""
    open_ids = [n["id"] for n in nodes if n["state"] in ("active", "commit_held")]
    resolved = [n for n in nodes if n["state"] not in ("active", "commit_held")]
    found: dict[str, set[str]] = {}
    if open_ids:
        held: list[tuple[str, int]] = []
        for field in ("put_transaction_id", "get_transaction_id"):  # each on its partial index, no join
            held += Message.objects.filter(**{f"{field}__in": open_ids}).values_list(field, "queue_id").distinct()
        names = dict(Queue.objects.filter(pk__in={q for _, q in held}).values_list("pk", "name"))
        for tid, queue_id in held:
            found.setdefault(tid, set()).add(names[queue_id])
    if resolved:
        # an operation's events may carry a time taken just before it began its unit of work
        since = datetime.fromisoformat(min(n["created_at"] for n in resolved)) - timedelta(seconds=1)
        rows = (
            JournalEvent.objects.filter(
                at__gte=since, kind__in=("put", "get"), transaction_id__in=[n["id"] for n in resolved]
            )
            .values_list("transaction_id", "queue")
            .distinct()
        )
        for tid, name in rows:
            found.setdefault(tid, set()).add(name)
    return {tid: sorted(names) for tid, names in found.items()}


def graph_delta(*, transaction_ids: set[str], queues: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """The current state of these units of work and of every link touching them (and the
    nodes at the far ends of those links). ``touched``: the ids whose links are complete
    here, so a client drops links of theirs that are missing (a downstream rollback
    removes its link). A node's ``queues``: queues it was seen putting to or getting from
    in the events behind this delta (``queues``), which the client adds to what it knows."""
    queues = queues or {}
    links = sorted(
        set(
            Link.objects.filter(Q(upstream_id__in=transaction_ids) | Q(downstream_id__in=transaction_ids)).values_list(
                "upstream_id", "downstream_id", "resource_ref"
            )
        )
    )
    ids = set(transaction_ids) | {u for u, _, _ in links} | {d for _, d, _ in links}
    nodes = _graph_nodes(ids)
    for node in nodes:
        node["queues"] = sorted(queues.get(node["id"], ()))
    return {
        "nodes": nodes,
        "edges": [{"upstream": u, "downstream": d, "resource": r} for u, d, r in links],
        "touched": sorted(transaction_ids),
    }


# --- the journal, for the follower and the charts ------------------------------------------


def journal_after(*, position: int, limit: int = 5000) -> list[tuple[int, str, str, str, str, int]]:
    """(id, kind, broker, transaction_id, queue, count) of the journal events after
    ``position``: ``count`` is how many messages a step's put, get or lock was about."""
    return list(
        JournalEvent.objects.filter(id__gt=position)
        .order_by("id")
        .values_list("id", "kind", "broker", "transaction_id", "queue", "count")[:limit]
    )


def depth_history(*, window_s: int, seen: Visibility) -> list[dict[str, Any]]:
    """The depth samples of the last ``window_s`` seconds, summed over the brokers the user
    sees whole (a broker seen only queue by queue has no history: its sums would show the
    hidden queues' messages)."""
    since = timezone.now() - timedelta(seconds=window_s)
    rows = DepthSample.objects.filter(at__gte=since)
    if not seen.everything:
        rows = rows.filter(broker__in=sorted(seen.brokers))
    points: dict[int, dict[str, int]] = {}
    for s in rows.order_by("at"):
        point = points.setdefault(int(s.at.timestamp()), dict.fromkeys(DEPTH_PARTS, 0))
        for part in DEPTH_PARTS:
            point[part] += getattr(s, part)
    return [{"t": t, **v} for t, v in sorted(points.items())]


#: The queue page's windows: seconds -> bucket (the per-queue samples are kept an hour).
QUEUE_WINDOWS = {600: 10, 3600: 60}


def queue_rates(*, broker: str, queue: str, window_s: int) -> dict[str, Any]:
    """One queue over the last ``window_s`` seconds, from its samples (``QueueDepthSample``,
    taken with its broker's every ``BATON_DASHBOARD_DEPTH_SAMPLE_S``): puts and gets per
    bucket (``points`` [{t, put, get}], counts per bucket of ``bucket`` seconds) as the
    differences of consecutive samples' put and get totals, which are ``/metrics``'
    counters (``baton_messages_put_total``, ``baton_messages_got_total``); and its depth at
    each sample (``depth``; zeros where the queue was empty). The first rate is taken from
    the sample just before the window (or from 0 for a queue made in the window); the last
    from the last sample to the totals now, so puts made since it show at once. The caller
    checks that the user sees the queue."""
    bucket = QUEUE_WINDOWS.get(window_s)
    if bucket is None:
        raise InvalidInput(f"window must be one of {', '.join(map(str, QUEUE_WINDOWS))} seconds.")
    now = timezone.now()
    since = now - timedelta(seconds=window_s)
    moments = DepthSample.objects.filter(broker=broker)
    # the base of the first rate: a sample shortly before the window (older ones' queue rows are gone)
    base = (
        moments.filter(at__lt=since, at__gte=since - timedelta(minutes=5))
        .order_by("-at")
        .values_list("at", flat=True)
        .first()
    )
    start = base or since
    samples = QueueDepthSample.objects.filter(broker=broker, queue=queue, at__gte=start)  # queuedepth_queue_at
    held = {s.at: s for s in samples}  # keyed by the sample's moment, which its broker's row shares
    series: dict[int, dict[str, int]] = {}
    depth = []

    def moved(at: datetime, totals: tuple[int, int], before: tuple[int, int]) -> None:
        t = int(at.timestamp())
        point = series.setdefault(t - t % bucket, {"put": 0, "get": 0})
        for key, later, earlier in zip(("put", "get"), totals, before):
            point[key] += later - earlier if later >= earlier else later  # lower: counted again from 0

    previous: tuple[int, int] | None = None
    made = Queue.objects.filter(broker__name=broker, name=queue).values_list("created_at", flat=True).first()
    if made is not None and made >= start:
        previous = (0, 0)  # made in the window: its totals started from 0
    for at in moments.filter(at__gte=start).order_by("at").values_list("at", flat=True):
        sample = held.get(at)
        totals = (sample.puts, sample.gets) if sample else (0, 0)
        if previous is not None:
            moved(at, totals, previous)
        previous = totals
        if at >= since:
            depth.append({"t": at.timestamp(), **{p: getattr(sample, p) if sample else 0 for p in DEPTH_PARTS}})
    if previous is not None:  # since the last sample: the totals now
        current = traffic_totals(brokers=frozenset({broker})).get((broker, queue), {"puts": 0, "gets": 0})
        moved(now, (current["puts"], current["gets"]), previous)
    return {
        "window": window_s,
        "bucket": bucket,
        "points": [{"t": t, **v} for t, v in sorted(series.items())],
        "depth": depth,
    }


def journal_rates(*, window_s: int, seen: Visibility) -> dict[str, Any]:
    """Puts, gets, commits and rollbacks per bucket (a second or a minute) over the last
    ``window_s`` seconds, on the brokers the user sees."""
    bucket = RATE_WINDOWS.get(window_s)
    if bucket is None:
        raise InvalidInput(f"window must be one of {', '.join(map(str, RATE_WINDOWS))} seconds.")
    since = timezone.now() - timedelta(seconds=window_s)
    trunc = TruncSecond if bucket == "second" else TruncMinute
    first = journal_first_id_since(since=since)  # ``at`` has no index: the id range bounds the scan
    rows = JournalEvent.objects.filter(id__gte=first if first is not None else 0, at__gte=since, kind__in=RATE_KINDS)
    if not seen.everything:
        rows = rows.filter(broker__in=sorted(seen.brokers | {b for b, _ in seen.queues}))
    # a step's put or get of several messages is one row: its ``count`` says how many
    rows = rows.annotate(t=trunc("at")).values("t", "kind").annotate(n=Sum("count")).order_by("t")
    series: dict[int, dict[str, int]] = {}
    for row in rows:
        series.setdefault(int(row["t"].timestamp()), dict.fromkeys(RATE_KINDS, 0))[row["kind"]] = row["n"]
    return {
        "window": window_s,
        "bucket": 1 if bucket == "second" else 60,
        "points": [{"t": t, **v} for t, v in sorted(series.items())],
        "depth": depth_history(window_s=window_s, seen=seen),
    }


#: The channels page's history: this many seconds, in buckets of ``CHANNEL_BUCKET_S``.
CHANNEL_WINDOW_S = 600
CHANNEL_BUCKET_S = 10


def channel_rates(*, seen: Visibility) -> dict[str, Any]:
    """Messages the channels the user sees took from their transmission queues over the last
    ten minutes, from the journal (a channel agent's gets there are its sends; a batch it
    backs out is counted again when resent): ``points`` [{t, rate}] per 10-second bucket,
    summed over the channels, and each channel's rate over the last minute (``channels``)."""
    since = timezone.now() - timedelta(seconds=CHANNEL_WINDOW_S)
    chans = [c for c in channel_rows() if seen.channel(c["source_broker"])]
    of = {(c["source_broker"], c["transmission_queue"]): c["name"] for c in chans}
    points: dict[int, int] = {}
    recent: dict[str, int] = dict.fromkeys((c["name"] for c in chans), 0)
    if of:
        first = journal_first_id_since(since=since)
        where = Q(pk__in=[])
        for broker, queue in of:
            where |= Q(broker=broker, queue=queue)
        rows = (
            JournalEvent.objects.filter(where, id__gte=first or 0, at__gte=since, kind="get")
            .annotate(t=TruncSecond("at"))
            .values("t", "broker", "queue")
            .annotate(n=Sum("count"))
        )
        minute_ago = timezone.now().timestamp() - 60
        for row in rows:
            t = int(row["t"].timestamp())
            points[t - t % CHANNEL_BUCKET_S] = points.get(t - t % CHANNEL_BUCKET_S, 0) + row["n"]
            if t >= minute_ago:
                recent[of[(row["broker"], row["queue"])]] += row["n"]
    return {
        "bucket": CHANNEL_BUCKET_S,
        "points": [{"t": t, "rate": n / CHANNEL_BUCKET_S} for t, n in sorted(points.items())],
        "channels": {name: n / 60 for name, n in recent.items()},
    }


def channel_backlogs(data: dict[str, Any]) -> dict[str, int | None]:
    """Each channel's backlog (the committed messages on its transmission queue) from an
    overview's counts: None where the user does not see that queue."""
    depth = {(b["name"], q["name"]): q["depth"] for b in data["brokers"] for q in b["queues"]}
    return {c["name"]: depth.get((c["source_broker"], c["transmission_queue"])) for c in data["channels"]}


# --- move and resubmit jobs ----------------------------------------------------------------


def move_job_row(job: MoveJob) -> dict[str, Any]:
    """A job as the job page and its socket show it."""
    return {
        "id": job.pk,
        "broker": job.broker,
        "source_queue": job.source_queue,
        "action": job.action,
        "target_queue": job.target_queue or None,
        "state": job.state,
        "total": job.total,
        "position": job.position,
        "moved": job.moved,
        "skipped": job.skipped,
        "problems": job.problems,
        "error": job.error or None,
        "username": job.username,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at and job.started_at.isoformat(),
        "finished_at": job.finished_at and job.finished_at.isoformat(),
    }


def move_job_get(*, job_id: int, broker: str, queue: str) -> MoveJob:
    job = MoveJob.objects.filter(pk=job_id, broker=broker, source_queue=queue).first()
    if job is None:
        raise NotFound(f"No job {job_id} on queue {queue!r} of broker {broker!r}.", job=job_id)
    return job


def move_job_row_or_none(*, job_id: int) -> dict[str, Any] | None:
    job = MoveJob.objects.filter(pk=job_id).first()
    return None if job is None else move_job_row(job)


def move_jobs_of_queue(*, broker: str, queue: str, limit: int = 10) -> list[MoveJob]:
    return list(MoveJob.objects.filter(broker=broker, source_queue=queue).defer("msg_ids").order_by("-id")[:limit])


def move_jobs_changed(*, since) -> list[dict[str, Any]]:
    """Jobs changed at or after ``since``: what the journal follower pushes to job sockets."""
    return [move_job_row(j) for j in MoveJob.objects.filter(updated_at__gte=since).order_by("id")]


def move_panel(*, broker: str, queue: Queue, user) -> dict[str, Any] | None:
    """On a dead-letter or backout queue, for a user who may get from it: where selected
    messages may go (the broker's other local queues they may put to)."""
    from .access import may
    from .services.moves import move_source_kind

    kind = move_source_kind(queue=queue)
    if kind is None or not may(user, "get", broker=broker, queue=queue.name):
        return None
    targets = [
        q.name
        for q in Queue.objects.filter(broker_id=queue.broker_id, kind="local").exclude(pk=queue.pk).order_by("name")
        if may(user, "put", broker=broker, queue=q.name)
    ]
    return {"kind": kind, "targets": targets, "jobs": move_jobs_of_queue(broker=broker, queue=queue.name)}


def workflow_rows(*, broker: str) -> list[dict[str, Any]]:
    """A broker's workflows as its page lists them (name, version, instances per state)."""
    try:
        return [
            {"name": v["name"], "version": v["version"], "instances": v["instances"]}
            for v in map(workflow_view, workflow_list(broker=broker))
        ]
    except NotFound:  # the broker is gone
        return []


def workflow_history_position() -> int:
    """The latest workflow instance history row's id (0: none): the follower looks at the
    watched instances again when it moves."""
    return InstanceHistory.objects.order_by("-id").values_list("id", flat=True).first() or 0


def workflow_instance_or_none(*, instance_id: str) -> dict[str, Any] | None:
    """A workflow instance as its page shows it (workflows.selectors.instance_view), or
    None when it is gone."""
    try:
        return instance_view(instance_get(instance_id=instance_id))
    except InstanceNotFound:
        return None
