"""WebSocket consumers of the dashboard. They check who is asking, send a first snapshot,
then relay what the process's journal follower (``follower.py``) publishes, cut down to
what the user may see. Foreign origins are refused in ``routing.py``."""

from __future__ import annotations

import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from baton_client.errors import BatonError
from workflows import permissions as wmay

from . import selectors
from .access import acting, visibility
from .alerts import alerts_open, alerts_seen
from .follower import (
    FOLLOWER,
    OVERVIEW_GROUP,
    connections_group,
    connections_read,
    graph_group,
    job_group,
    topics_group,
    workflow_group,
    workflows_group,
)

#: The dashboard's sockets only push; a browser has nothing to send on them. A frame is
#: answered ``{"type": "error", "code": "invalid"}``; one over this many bytes with
#: ``message_too_large`` and the socket is closed (1009); more than ``FRAMES_PER_MINUTE``
#: frames in a minute: ``throttled`` and closed (1008). Nothing a frame says changes anything.
MAX_FRAME_BYTES = 4096
FRAMES_PER_MINUTE = 60


class _DashboardConsumer(AsyncJsonWebsocketConsumer):
    groups_joined: list[str]
    frames: list[float]

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        now = time.monotonic()
        self.frames = [t for t in getattr(self, "frames", []) if now - t < 60] + [now]
        if size > MAX_FRAME_BYTES:
            await self._refuse("message_too_large", f"A frame may have at most {MAX_FRAME_BYTES} bytes.", close=1009)
        elif len(self.frames) > FRAMES_PER_MINUTE:
            await self._refuse("throttled", f"At most {FRAMES_PER_MINUTE} frames a minute.", close=1008)
        else:
            await self._refuse("invalid", "This socket only sends; it takes no messages.")

    async def _refuse(self, code: str, message: str, *, close: int | None = None) -> None:
        await self.send_json({"type": "error", "code": code, "message": message})
        if close is not None:
            await self.close(code=close)

    async def _open(self) -> bool:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return False
        self.seen = await database_sync_to_async(visibility)(user)
        await self.accept()
        return True

    async def _join(self, group: str) -> None:
        await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined = [*getattr(self, "groups_joined", []), group]
        FOLLOWER.subscribe()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)
            FOLLOWER.unsubscribe()


class OverviewConsumer(_DashboardConsumer):
    """``/ws/overview/``: ``{"type": "overview", "data": ..., "counts": {broker: {kind: n}},
    "queues": {broker: {queue: {"put": n, "get": n}}}, "alerts": [...]}`` (the events since
    the last push; the open alerts the user may see, ``alerts.py``)."""

    async def connect(self) -> None:
        if not await self._open():
            return
        await self._join(OVERVIEW_GROUP)
        data = await database_sync_to_async(selectors.overview)()
        alerts = await database_sync_to_async(alerts_open)()
        await self.send_json(
            {
                "type": "overview",
                "data": selectors.overview_for(data, self.seen),
                "counts": {},
                "alerts": alerts_seen(alerts, self.seen),
            }
        )

    async def overview_changed(self, event: dict) -> None:
        counts = {b: c for b, c in event["counts"].items() if self.seen.broker(b)}
        queues = {
            b: {q: c for q, c in qs.items() if self.seen.queue(b, q)}
            for b, qs in event.get("queues", {}).items()
            if self.seen.broker(b)
        }
        await self.send_json(
            {
                "type": "overview",
                "data": selectors.overview_for(event["data"], self.seen),
                "counts": counts,
                "queues": queues,
                "alerts": alerts_seen(event["alerts"], self.seen),
            }
        )


class GraphConsumer(_DashboardConsumer):
    """``/ws/brokers/<broker>/transactions/``: ``{"type": "graph", ...snapshot}`` first, then
    ``{"type": "delta", "nodes", "edges", "touched"}``."""

    async def connect(self) -> None:
        if not await self._open():
            return
        broker = self.scope["url_route"]["kwargs"]["broker"]
        if not self.seen.broker(broker):
            await self.close(code=4403)
            return
        self.acts = await database_sync_to_async(acting)(self.scope["user"])
        await self._join(graph_group(broker))
        snapshot = await database_sync_to_async(selectors.graph_snapshot)(broker=broker)
        await self.send_json({"type": "graph", **selectors.graph_for(snapshot, self.seen, self.acts)})

    async def graph_changed(self, event: dict) -> None:
        await self.send_json({"type": "delta", **selectors.graph_for(event["delta"], self.seen, self.acts)})


class JobConsumer(_DashboardConsumer):
    """``/ws/jobs/<id>/``: ``{"type": "job", "job": ...}`` now and whenever the job changes."""

    async def connect(self) -> None:
        if not await self._open():
            return
        job = await database_sync_to_async(selectors.move_job_row_or_none)(
            job_id=self.scope["url_route"]["kwargs"]["job_id"]
        )
        if job is None or not self.seen.queue(job["broker"], job["source_queue"]):
            await self.close(code=4403)
            return
        await self._join(job_group(job["id"]))
        await self.send_json({"type": "job", "job": job})

    async def job_changed(self, event: dict) -> None:
        await self.send_json({"type": "job", "job": event["job"]})


class WorkflowInstanceConsumer(_DashboardConsumer):
    """``/ws/workflow-instances/<id>/``: ``{"type": "instance", "instance": ...}`` now and
    whenever the instance's view changes (``instance`` null: it was deleted). Whoever may
    see the instance's page may follow it (workflows.permissions)."""

    async def connect(self) -> None:
        if not await self._open():
            return
        instance_id = self.scope["url_route"]["kwargs"]["instance_id"]
        view = await database_sync_to_async(_instance_seen)(self.scope["user"], instance_id)
        if view is None:
            await self.close(code=4403)
            return
        self.instance_id = instance_id
        await self._join(workflow_group(instance_id))
        FOLLOWER.watch(instance_id, view)
        await self.send_json({"type": "instance", "instance": view})

    async def disconnect(self, code: int) -> None:
        if getattr(self, "instance_id", None) is not None:
            FOLLOWER.unwatch(self.instance_id)
        await super().disconnect(code)

    async def workflow_changed(self, event: dict) -> None:
        await self.send_json({"type": "instance", "instance": event["instance"]})


class WorkflowListConsumer(_DashboardConsumer):
    """``/ws/brokers/<broker>/workflows/``: ``{"type": "workflows", "workflows": [{"name",
    "version", "instances": {state: n}}]}`` now and whenever a count changes."""

    async def connect(self) -> None:
        if not await self._open():
            return
        broker = self.scope["url_route"]["kwargs"]["broker"]
        if not self.seen.broker(broker):
            await self.close(code=4403)
            return
        self.broker = broker
        await self._join(workflows_group(broker))
        rows = await database_sync_to_async(selectors.workflow_rows)(broker=broker)
        FOLLOWER.watch_list(broker, rows)
        await self.send_json({"type": "workflows", "workflows": rows})

    async def disconnect(self, code: int) -> None:
        if getattr(self, "broker", None) is not None:
            FOLLOWER.unwatch_list(self.broker)
        await super().disconnect(code)

    async def workflows_changed(self, event: dict) -> None:
        await self.send_json({"type": "workflows", "workflows": event["workflows"]})


class TopicsConsumer(_DashboardConsumer):
    """``/ws/brokers/<broker>/topics/``: ``{"type": "topics", "topics": {"topics": [...],
    "retained": [...]}}`` now and whenever a topic object or retained publication changes."""

    async def connect(self) -> None:
        if not await self._open():
            return
        broker = self.scope["url_route"]["kwargs"]["broker"]
        if not self.seen.broker(broker):
            await self.close(code=4403)
            return
        self.broker = broker
        await self._join(topics_group(broker))
        fingerprint = await database_sync_to_async(selectors.topics_fingerprint)(broker=broker)
        FOLLOWER.watch_topics(broker, fingerprint)
        data = await database_sync_to_async(selectors.topics_live)(broker=broker)
        await self.send_json({"type": "topics", "topics": data})

    async def disconnect(self, code: int) -> None:
        if getattr(self, "broker", None) is not None:
            FOLLOWER.unwatch_topics(self.broker)
        await super().disconnect(code)

    async def topics_changed(self, event: dict) -> None:
        await self.send_json({"type": "topics", "topics": event["topics"]})


class ConnectionsConsumer(_DashboardConsumer):
    """``/ws/brokers/<broker>/connections/`` (for those who see the broker whole) and
    ``/ws/brokers/<broker>/queues/<queue>/consumers/`` (for those who see the queue):
    ``{"type": "connections", "data": ...}`` (``selectors.broker_connections`` or
    ``selectors.queue_consumers``) now and whenever it changes."""

    async def connect(self) -> None:
        if not await self._open():
            return
        kwargs = self.scope["url_route"]["kwargs"]
        broker, queue = kwargs["broker"], kwargs.get("queue", "")
        if not (self.seen.queue(broker, queue) if queue else self.seen.everything or broker in self.seen.brokers):
            await self.close(code=4403)
            return
        self.key = (broker, queue)
        await self._join(connections_group(broker, queue))
        data = await database_sync_to_async(connections_read)(broker, queue)
        FOLLOWER.watch_connections(self.key, data)
        await self.send_json({"type": "connections", "data": data})

    async def disconnect(self, code: int) -> None:
        if getattr(self, "key", None) is not None:
            FOLLOWER.unwatch_connections(self.key)
        await super().disconnect(code)

    async def connections_changed(self, event: dict) -> None:
        await self.send_json({"type": "connections", "data": event["data"]})


def _instance_seen(user, instance_id: str) -> dict | None:
    """The instance's view if the user may see it, else None (unknown or not theirs alike)."""
    try:
        wmay.instance_broker(user, instance_id=instance_id)
    except BatonError:
        return None
    return selectors.workflow_instance_or_none(instance_id=instance_id)
