"""``manage.py stomp_serve``: the STOMP server on TCP (``BATON_STOMP_PORT`` at
``BATON_HOST``), as ./platform/up runs it."""

from __future__ import annotations

import asyncio
import os
import signal

from django.conf import settings
from django.core.management.base import BaseCommand

from config.running import platform_lock_hold
from stomp_server.tcp import stomp_serve


class Command(BaseCommand):
    help = "Serve STOMP 1.0/1.1/1.2 on TCP (BATON_STOMP_PORT at BATON_HOST)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("BATON_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=settings.BATON_STOMP_PORT)

    def handle(self, *args, host: str, port: int, **options) -> None:
        if port == 0:
            self.stdout.write("STOMP over TCP is off (BATON_STOMP_PORT=0).")
            return
        # while it serves, `manage.py baton restore` refuses; while a restore runs, it waits (config/running.py)
        platform_lock_hold()

        async def main() -> None:
            loop = asyncio.get_running_loop()
            started = loop.create_future()
            task = asyncio.create_task(stomp_serve(host=host, port=port, started=started))
            # SIGTERM (platform/up's stop) and Ctrl-C end the connections as if their clients had
            # left: open transactions rolled back, unacknowledged messages given back at once
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, task.cancel)
            bound = await started
            self.stdout.write(f"STOMP listening on {host}:{bound}", ending="\n")
            self.stdout.flush()
            try:
                await task
            except asyncio.CancelledError:
                pass

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            pass
