"""The channels' Celery tasks: a channel's sender agent, and the supervisor that starts
agents. Their names stay ``brokers.tasks.…``: beat schedules and queued task messages name
them so, and ``brokers.tasks`` imports this module so that the worker registers them."""

import os
import socket

from celery import shared_task
from celery.signals import worker_shutting_down

from .definitions import CHANNEL_AGENT_TASK
from .sender import AGENTS_STOP, channel_agent_run, channels_due


@shared_task(name=CHANNEL_AGENT_TASK, ignore_result=True)
def channel_agent(name: str) -> str:
    """Run a channel's sender agent for a while; the lease keeps it to one at a time."""
    holder = f"{socket.gethostname()}:{os.getpid()}:{channel_agent.request.id or 'local'}"
    return channel_agent_run(name=name, holder=holder)


@shared_task(name="brokers.tasks.channels_supervise", ignore_result=True)
def channels_supervise() -> list[str]:
    """Start an agent for every started channel that has none (after a crash, a retry
    back-off, or the end of the previous run)."""
    names = channels_due()
    for name in names:
        channel_agent.delay(name)
    return names


@worker_shutting_down.connect
def agents_stop(**_signal) -> None:
    """The worker begins its warm shutdown (SIGTERM, SIGINT): its channel agents end their
    runs after the step under way and release their leases (sender.AGENTS_STOP)."""
    AGENTS_STOP.set()
