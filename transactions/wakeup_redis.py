"""Wake-ups over Redis publish/subscribe (when Redis is configured): a committing thread
publishes the keys right after its commit; each process keeps one subscribed connection
that hands what it hears to its waiters. The channel is named after the database."""

from __future__ import annotations

import contextlib
import logging
import threading

import redis

from .wakeup_bus import IDLE_CHECK_S, STOP_CHECK_S, ListenerBus, payload_deliver, payload_encode

log = logging.getLogger(__name__)


class RedisBus(ListenerBus):
    name = "redis"

    def __init__(self, *, url: str, scope: str) -> None:
        super().__init__()
        self.url = url
        self.channel = f"baton:wakeups:{scope}"
        self.pubsub = None
        self._publisher: redis.Redis | None = None
        self._publisher_lock = threading.Lock()

    def publish_after_commit(self, keys: list[str]) -> None:
        if self._publisher is None:
            with self._publisher_lock:
                if self._publisher is None:
                    self._publisher = redis.Redis.from_url(self.url, socket_timeout=5, health_check_interval=30)
        try:
            self._publisher.publish(self.channel, payload_encode(keys))
        except redis.RedisError as exc:
            # the commit stands; listeners that lost Redis too are polling meanwhile
            log.warning("wake-ups (redis): publish failed: %s", exc)

    def connect(self) -> None:
        client = redis.Redis.from_url(self.url, socket_connect_timeout=10, health_check_interval=30)
        self.pubsub = client.pubsub(ignore_subscribe_messages=False)
        self.pubsub.subscribe(self.channel)
        confirmation = self.pubsub.get_message(timeout=10)
        if not confirmation or confirmation.get("type") != "subscribe":
            raise ConnectionError(f"no subscription confirmation from {self.url}: {confirmation!r}")

    def receive_forever(self) -> None:
        idle = 0.0
        while not self.stopping:
            message = self.pubsub.get_message(timeout=STOP_CHECK_S)
            idle = idle + STOP_CHECK_S if message is None else 0.0
            if idle >= IDLE_CHECK_S:
                self.pubsub.ping()  # a dead connection raises here
                idle = 0.0
            elif message is not None and message.get("type") == "message":
                data = message["data"]
                payload_deliver(data.decode() if isinstance(data, bytes) else data)

    def disconnect(self) -> None:
        if self.pubsub is not None:
            with contextlib.suppress(Exception):  # already broken
                self.pubsub.close()
            self.pubsub = None

    def describe(self) -> str:
        return f"Redis publish/subscribe on {self.channel}"
