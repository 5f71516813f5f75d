"""One journal follower per process: it reads the journal (and the channels' rows) every
``BATON_DASHBOARD_FOLLOW_S`` seconds while at least one dashboard socket is open, and fans
what changed out to channel-layer groups. Brokers and queues defined, altered or deleted
(which the journal does not record) are noticed by comparing their list with the last
read. Sockets never poll the database themselves.

Groups: ``dash.job.<id>`` gets a move or resubmit job whenever its row changed (the
worker writes its progress there; the follower reads the jobs changed lately);
``dash.overview`` gets a fresh overview (every broker; each socket cuts it down to
what its user sees) and per-broker event counts for the rate charts; ``dash.graph.<hex of
the broker name>`` gets the units of work that changed on that broker, with their links;
``dash.connections.<sha-256 of broker and queue>`` gets a broker page's connections (sessions,
STOMP connections, channel agents) or a queue page's consumers whenever they changed, for the
pages this process's sockets watch;
``dash.workflow.<sha-256 of the instance id>`` gets a workflow instance's view (steps as their units of
work stand, held edges, compensation path, history) when it changed, for the instances
this process's sockets watch: looked at again after any journal event (gets, holds,
commits and rollbacks move steps) or any new instance history row.
With several web processes on Redis each process follows on its own; what they send is
idempotent (snapshots and upserts). While it runs, the follower also writes its web
process's heartbeat (``services.heartbeats``), which the overview shows.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone

from . import selectors
from .alerts import alerts_open
from .services.heartbeats import process_beat

log = logging.getLogger(__name__)
OVERVIEW_GROUP = "dash.overview"


def graph_group(broker: str) -> str:
    return "dash.graph." + broker.encode().hex()


def job_group(job_id: int) -> str:
    return f"dash.job.{job_id}"


def workflow_group(instance_id: str) -> str:
    return "dash.workflow." + hashlib.sha256(instance_id.encode()).hexdigest()


def workflows_group(broker: str) -> str:
    return "dash.workflows." + broker.encode().hex()


def topics_group(broker: str) -> str:
    return "dash.topics." + broker.encode().hex()


def connections_group(broker: str, queue: str = "") -> str:
    """A broker page's connections (``queue`` ""), or a queue page's consumers."""
    return "dash.connections." + hashlib.sha256(f"{broker}\0{queue}".encode()).hexdigest()


def connections_read(broker: str, queue: str = "") -> dict:
    """What a broker page's (``queue`` "") or a queue page's connections list shows."""
    if queue:
        return selectors.queue_consumers(broker=broker, queue=queue)
    return selectors.broker_connections(broker=broker)


#: Seconds the follower reads back before its last read of the jobs, so that a batch
#: that committed after that read (its ``updated_at`` taken before its commit) is not missed.
JOBS_OVERLAP_S = 5.0


class Follower:
    def __init__(self) -> None:
        self.subscribers = 0
        self.task: asyncio.Task | None = None
        self.jobs_sent: dict[int, dict] = {}
        #: Workflow instances watched by this process's sockets (how many each), and the
        #: view last sent for each.
        self.instances: Counter = Counter()
        self.instances_sent: dict[str, dict | None] = {}
        self.history_position: int | None = None
        #: Brokers whose workflow list this process's sockets watch, and the list last sent.
        self.workflow_lists: Counter = Counter()
        self.workflow_lists_sent: dict[str, list | None] = {}
        #: Brokers whose topics page this process's sockets watch, and what was last read.
        self.topic_pages: Counter = Counter()
        self.topic_pages_seen: dict[str, tuple | None] = {}
        #: (broker, queue) whose connections this process's sockets watch (queue "": the
        #: broker page's), and what was last sent for each.
        self.connection_pages: Counter = Counter()
        self.connection_pages_sent: dict[tuple[str, str], dict] = {}

    def subscribe(self) -> None:
        self.subscribers += 1
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    def unsubscribe(self) -> None:
        self.subscribers = max(0, self.subscribers - 1)

    def watch(self, instance_id: str, view: dict | None) -> None:
        """A socket follows this instance; ``view`` is what it was just sent."""
        self.instances[instance_id] += 1
        self.instances_sent.setdefault(instance_id, view)
        self.history_position = None  # the next read looks again: a change may fall between

    def unwatch(self, instance_id: str) -> None:
        self.instances[instance_id] -= 1
        if self.instances[instance_id] <= 0:
            del self.instances[instance_id]
            self.instances_sent.pop(instance_id, None)

    def watch_list(self, broker: str, rows: list) -> None:
        """A socket follows the broker's workflow list; ``rows`` is what it was just sent."""
        self.workflow_lists[broker] += 1
        self.workflow_lists_sent.setdefault(broker, rows)
        self.history_position = None

    def unwatch_list(self, broker: str) -> None:
        self.workflow_lists[broker] -= 1
        if self.workflow_lists[broker] <= 0:
            del self.workflow_lists[broker]
            self.workflow_lists_sent.pop(broker, None)

    def watch_topics(self, broker: str, fingerprint: tuple) -> None:
        self.topic_pages[broker] += 1
        self.topic_pages_seen.setdefault(broker, fingerprint)

    def unwatch_topics(self, broker: str) -> None:
        self.topic_pages[broker] -= 1
        if self.topic_pages[broker] <= 0:
            del self.topic_pages[broker]
            self.topic_pages_seen.pop(broker, None)

    def watch_connections(self, key: tuple[str, str], data: dict) -> None:
        self.connection_pages[key] += 1
        self.connection_pages_sent.setdefault(key, data)

    def unwatch_connections(self, key: tuple[str, str]) -> None:
        self.connection_pages[key] -= 1
        if self.connection_pages[key] <= 0:
            del self.connection_pages[key]
            self.connection_pages_sent.pop(key, None)

    async def _connections(self, layer) -> None:
        """Push the watched connection lists that changed (sessions, STOMP connections as
        their serving processes last wrote them, channel agents, units of work holding a
        queue's messages: none of it all in the journal, so read again each tick)."""
        for key in list(self.connection_pages):
            data = await database_sync_to_async(connections_read)(*key)
            if key in self.connection_pages and data != self.connection_pages_sent.get(key):
                self.connection_pages_sent[key] = data
                await layer.group_send(connections_group(*key), {"type": "connections.changed", "data": data})

    async def _topics(self, layer) -> None:
        """Push the watched brokers' topics pages whose topic objects or retained
        publications changed (neither is in the journal: a cheap read each tick)."""
        for broker in list(self.topic_pages):
            fingerprint = await database_sync_to_async(selectors.topics_fingerprint)(broker=broker)
            if broker in self.topic_pages and fingerprint != self.topic_pages_seen.get(broker):
                self.topic_pages_seen[broker] = fingerprint
                data = await database_sync_to_async(selectors.topics_live)(broker=broker)
                await layer.group_send(topics_group(broker), {"type": "topics.changed", "topics": data})

    async def _workflows(self, layer, *, journal_moved: bool) -> None:
        """Push the watched instances, and the watched brokers' workflow lists, that changed."""
        if not self.instances and not self.workflow_lists:
            return
        position = await database_sync_to_async(selectors.workflow_history_position)()
        moved = journal_moved or position != self.history_position
        self.history_position = position
        if not moved:
            return
        for instance_id in list(self.instances):
            view = await database_sync_to_async(selectors.workflow_instance_or_none)(instance_id=instance_id)
            if instance_id in self.instances and view != self.instances_sent.get(instance_id):
                self.instances_sent[instance_id] = view
                await layer.group_send(workflow_group(instance_id), {"type": "workflow.changed", "instance": view})
        for broker in list(self.workflow_lists):
            rows = await database_sync_to_async(selectors.workflow_rows)(broker=broker)
            if broker in self.workflow_lists and rows != self.workflow_lists_sent.get(broker):
                self.workflow_lists_sent[broker] = rows
                await layer.group_send(workflows_group(broker), {"type": "workflows.changed", "workflows": rows})

    async def _run(self) -> None:
        layer = get_channel_layer()
        position = await database_sync_to_async(selectors.journal_position)()
        objects = None
        while self.subscribers > 0:
            try:
                position, objects = await self._tick(layer, position, objects)
            except asyncio.CancelledError:
                raise
            except Exception:  # a database hiccup must not end the follower
                log.exception("dashboard journal follower")
            await asyncio.sleep(settings.BATON_DASHBOARD_FOLLOW_S)

    async def _jobs(self, layer) -> None:
        """Push the move and resubmit jobs that changed since the last read to their groups."""
        since = timezone.now() - timedelta(seconds=JOBS_OVERLAP_S + settings.BATON_DASHBOARD_FOLLOW_S)
        rows = await database_sync_to_async(selectors.move_jobs_changed)(since=since)
        sent, self.jobs_sent = self.jobs_sent, {row["id"]: row for row in rows}
        for row in rows:
            if sent.get(row["id"]) != row:
                await layer.group_send(job_group(row["id"]), {"type": "job.changed", "job": row})

    async def _tick(self, layer, position: int, objects: Any) -> tuple[int, Any]:
        await database_sync_to_async(process_beat)(kind="web")  # this web process's heartbeat
        await self._jobs(layer)
        await self._topics(layer)
        await self._connections(layer)
        events = await database_sync_to_async(selectors.journal_after)(position=position)
        await self._workflows(layer, journal_moved=bool(events))
        current = await database_sync_to_async(_objects)()
        if not events and current == objects:
            return position, objects
        counts: dict[str, Counter] = {}
        per_queue: dict[str, dict[str, Counter]] = {}  # broker -> queue -> puts and gets
        changed: dict[str, set[str]] = {}
        queues: dict[str, set[str]] = {}
        for _, kind, broker, transaction_id, queue, count in events:
            if kind in selectors.RATE_KINDS:
                counts.setdefault(broker, Counter())[kind] += count
            if queue and kind in ("put", "get"):
                per_queue.setdefault(broker, {}).setdefault(queue, Counter())[kind] += count
            if transaction_id:
                changed.setdefault(broker, set()).add(transaction_id)
                if queue and kind in ("put", "get"):
                    queues.setdefault(transaction_id, set()).add(queue)
        data = await database_sync_to_async(selectors.overview)()
        await layer.group_send(
            OVERVIEW_GROUP,
            {
                "type": "overview.changed",
                "data": data,
                "alerts": current[-1],
                "counts": {b: dict(c) for b, c in counts.items()},
                "queues": {b: {q: dict(c) for q, c in qs.items()} for b, qs in per_queue.items()},
            },
        )
        for broker, ids in changed.items():
            delta = await database_sync_to_async(selectors.graph_delta)(
                transaction_ids=ids, queues={t: queues[t] for t in ids if t in queues}
            )
            await layer.group_send(graph_group(broker), {"type": "graph.changed", "delta": delta})
        return (events[-1][0] if events else position), current


def _objects() -> tuple:
    """What besides the journal makes the follower push: the channels' rows, the brokers
    and queues (defined, altered or deleted since its last read), the STOMP connections, the
    processes' heartbeats and the open alerts (last: pushed with the overview)."""
    return (
        selectors.channel_rows(),
        selectors.topology(),
        selectors.stomp_rows(),
        selectors.process_rows(),
        alerts_open(),
    )


#: This process's follower.
FOLLOWER = Follower()
