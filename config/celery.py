"""The Celery app: channel agents and housekeeping run on its worker fleet."""

import logging
import os

from celery import Celery
from celery.signals import beat_init, before_task_publish, worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("baton")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _worker_started(**kwargs):
    from django.conf import settings

    from config.collector import collector_tuned
    from config.memtrace import memtrace_start
    from config.running import platform_lock_hold
    import dashboard.services.heartbeats  # noqa: F401 - its STARTED: the node's start, before the pool forks

    platform_lock_hold()  # while it runs, `manage.py baton restore` refuses (config/running.py)
    memtrace_start(process="worker")  # off unless BATON_TRACEMALLOC names a directory
    collector_tuned(settings.BATON_GC_THRESHOLD)  # before the pool starts: its processes inherit it


@worker_ready.connect
def _worker_heartbeat(sender=None, **kwargs):
    """A worker node's first heartbeat, as it starts taking tasks (then the heartbeat task's)."""
    try:
        from dashboard.services.heartbeats import process_beat

        process_beat(kind="worker", name=getattr(sender, "hostname", None))
    except Exception:  # the overview says "no heartbeat yet"; the task writes it later
        logging.getLogger(__name__).exception("worker heartbeat")


_beat = False


@beat_init.connect
def _memtrace_beat(**kwargs):
    from config.memtrace import memtrace_start
    from config.running import platform_lock_hold

    platform_lock_hold()
    global _beat
    _beat = True  # this process is beat: its publishes are its heartbeat
    memtrace_start(process="beat")


@before_task_publish.connect
def _beat_heartbeat(**kwargs):
    """Beat's heartbeat (``dashboard.ProcessBeat``): written when it sends a task, at most
    twice per ``BATON_DASHBOARD_HEARTBEAT_S``; never in other processes. A failed write
    must not stop the schedule."""
    if not _beat:
        return
    try:
        from dashboard.services.heartbeats import process_beat

        process_beat(kind="beat")
    except Exception:  # the database may be away for a moment; the next send tries again
        logging.getLogger(__name__).exception("beat heartbeat")


def task_send(name: str, *args) -> None:
    """Send the task registered as ``name`` to the worker fleet. Services hand work to the
    fleet with this, by the task's name, from hooks named ``..._on_commit``: they never
    import a tasks module (the tasks import the services)."""
    app.send_task(name, args=list(args))


@app.on_after_finalize.connect
def _schedule_housekeeping(sender, **kwargs):
    from django.conf import settings

    sender.add_periodic_task(
        settings.BATON_HOUSEKEEPING_INTERVAL_S,
        sender.signature("brokers.tasks.housekeeping"),
        name="housekeeping",
    )
    sender.add_periodic_task(
        settings.BATON_HOUSEKEEPING_INTERVAL_S,
        sender.signature("brokers.tasks.channels_supervise"),
        name="channels-supervise",
    )
    sender.add_periodic_task(  # held conflated publications whose interval has ended
        settings.BATON_HOUSEKEEPING_INTERVAL_S,
        sender.signature("pubsub.tasks.conflation_sweep"),
        name="conflation-sweep",
    )
    sender.add_periodic_task(  # workflow deadlines; sagas left between a commit and their next step
        settings.BATON_HOUSEKEEPING_INTERVAL_S,
        sender.signature("workflows.tasks.sweep"),
        name="workflows-sweep",
    )
    sender.add_periodic_task(  # metrics' totals, retention, queue events (docs/operating.md)
        settings.BATON_OPERATING_INTERVAL_S,
        sender.signature("brokers.tasks.operating_housekeep"),
        name="operating-housekeep",
    )
    sender.add_periodic_task(  # the worker's heartbeat (and, sending it, beat's)
        settings.BATON_DASHBOARD_HEARTBEAT_S,
        sender.signature("dashboard.tasks.heartbeat"),
        name="dashboard-heartbeat",
    )
    sender.add_periodic_task(
        settings.BATON_DASHBOARD_DEPTH_SAMPLE_S,
        sender.signature("dashboard.tasks.depth_sample"),
        name="dashboard-depth-sample",
    )
    if settings.BATON_ANALYTICS_INTERVAL_S > 0:
        sender.add_periodic_task(
            settings.BATON_ANALYTICS_INTERVAL_S,
            sender.signature("analytics.tasks.analytics_scheduled"),
            name="analytics",
        )
