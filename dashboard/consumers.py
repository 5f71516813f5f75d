"""WebSocket consumers of the dashboard. They check who is asking, send a first snapshot,
then relay what the process's journal follower (``follower.py``) publishes, cut down to
what the user may see. Foreign origins are refused in ``routing.py``."""
from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import selectors
from .access import visibility
from .follower import FOLLOWER, OVERVIEW_GROUP, graph_group, job_group


class _DashboardConsumer(AsyncJsonWebsocketConsumer):
    groups_joined: list[str]

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
    """``/ws/overview/``: ``{"type": "overview", "data": ..., "counts": {broker: {kind: n}}}``."""

    async def connect(self) -> None:
        if not await self._open():
            return
        await self._join(OVERVIEW_GROUP)
        data = await database_sync_to_async(selectors.overview)()
        await self.send_json({"type": "overview", "data": selectors.overview_for(data, self.seen), "counts": {}})

    async def overview_changed(self, event: dict) -> None:
        counts = {b: c for b, c in event["counts"].items() if self.seen.broker(b)}
        await self.send_json({"type": "overview", "data": selectors.overview_for(event["data"], self.seen),
                              "counts": counts})


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
        await self._join(graph_group(broker))
        snapshot = await database_sync_to_async(selectors.graph_snapshot)(broker=broker)
        await self.send_json({"type": "graph", **snapshot})

    async def graph_changed(self, event: dict) -> None:
        await self.send_json({"type": "delta", **event["delta"]})


class JobConsumer(_DashboardConsumer):
    """``/ws/jobs/<id>/``: ``{"type": "job", "job": ...}`` now and whenever the job changes."""

    async def connect(self) -> None:
        if not await self._open():
            return
        job = await database_sync_to_async(selectors.move_job_row_or_none)(job_id=self.scope["url_route"]["kwargs"]["job_id"])
        if job is None or not self.seen.queue(job["broker"], job["source_queue"]):
            await self.close(code=4403)
            return
        await self._join(job_group(job["id"]))
        await self.send_json({"type": "job", "job": job})

    async def job_changed(self, event: dict) -> None:
        await self.send_json({"type": "job", "job": event["job"]})
