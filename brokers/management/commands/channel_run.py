import os
import socket

from django.core.management.base import BaseCommand, CommandError

from brokers.services.channel_sender import CRASH_POINTS, channel_agent_run
from config.errors import BatonError


class Command(BaseCommand):
    help = "Run a channel's sender agent in this process (the worker fleet normally does this)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--once", action="store_true", help="Stop after one batch.")
        parser.add_argument("--seconds", type=float, default=50, help="Run at most this long.")
        parser.add_argument("--crash-at", choices=CRASH_POINTS,
                            help="Kill this process (SIGKILL) at a step of the batch protocol (for recovery tests).")

    def handle(self, *args, name, once, seconds, crash_at, **options):
        holder = f"{socket.gethostname()}:{os.getpid()}:cli"
        try:
            outcome = channel_agent_run(name=name, holder=holder, max_seconds=seconds, once=once, crash_at=crash_at)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(outcome)
