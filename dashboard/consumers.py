"""WebSocket consumers. The overview consumer follows the journal: whenever it has grown,
it pushes a fresh overview, so changes made by any process (web or worker) show up."""
import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .selectors import overview

FOLLOW_INTERVAL_S = 0.5


class OverviewConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        await self.accept()
        self._task = asyncio.create_task(self._follow())

    async def disconnect(self, code: int) -> None:
        task = getattr(self, "_task", None)
        if task is not None:
            task.cancel()

    async def _follow(self) -> None:
        position = None
        while True:
            data = await database_sync_to_async(overview)()
            fingerprint = (data["journal_position"], [tuple(sorted(c.items())) for c in data["channels"]])
            if fingerprint != position:
                position = fingerprint
                await self.send_json({"type": "overview", "data": data})
            await asyncio.sleep(FOLLOW_INTERVAL_S)
