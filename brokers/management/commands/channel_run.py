import os
import socket

from django.core.management.base import BaseCommand, CommandError

from brokers.channels.sender import CRASH_POINTS, channel_agent_run
from baton_client.errors import BatonError


class Command(BaseCommand):
    help = "Run a channel's sender agent in this process (the worker fleet normally does this)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--once", action="store_true", help="Stop once one batch was sent and every batch in flight settled."
        )
        parser.add_argument("--seconds", type=float, default=50, help="Run at most this long.")
        parser.add_argument(
            "--crash-at",
            metavar="STEP[@SEQ]",
            help="Kill this process (SIGKILL) at a step of the batch protocol, at the first batch "
            f"or at batch SEQ (for recovery tests); steps: {', '.join(CRASH_POINTS)}.",
        )

    def handle(self, *args, name, once, seconds, crash_at, **options):
        step, _, seq = (crash_at or "").partition("@")
        if crash_at and (step not in CRASH_POINTS or (seq and not seq.isdigit())):
            raise CommandError(f"--crash-at takes STEP or STEP@SEQ; steps: {', '.join(CRASH_POINTS)}.")
        holder = f"{socket.gethostname()}:{os.getpid()}:cli"
        try:
            outcome = channel_agent_run(name=name, holder=holder, max_seconds=seconds, once=once, crash_at=crash_at)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(outcome)
