"""The Celery app: channel agents and housekeeping run on its worker fleet."""

import logging
import os
import threading

from celery import Celery
from celery.signals import beat_init, before_task_publish, worker_init, worker_ready, worker_shutdown

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


_worker_stopping = threading.Event()
_beating: threading.Thread | None = None


def _worker_beat(name: str | None) -> None:
    try:
        from dashboard.services.heartbeats import process_beat

        process_beat(kind="worker", name=name)
    except Exception:  # the database may be away for a moment; the next beat tries again
        logging.getLogger(__name__).exception("worker heartbeat")


def _worker_beating(name: str | None) -> None:
    """The node's heartbeat every ``BATON_DASHBOARD_HEARTBEAT_S`` until it stops, whoever
    takes the heartbeat task: a node silent for ``BATON_WORKER_LOST_S`` is lost
    (dashboard/services/worker_loss.py)."""
    from django.conf import settings
    from django.db import connections

    while not _worker_stopping.wait(settings.BATON_DASHBOARD_HEARTBEAT_S):
        _worker_beat(name)
    connections.close_all()


@worker_ready.connect
def _worker_heartbeat(sender=None, **kwargs):
    """A worker node's first heartbeat, as it starts taking tasks, then one every interval
    from a thread of its own."""
    global _beating
    name = getattr(sender, "hostname", None)
    _worker_beat(name)
    if _beating is None:  # once (the consumer is ready again after a lost broker connection)
        _beating = threading.Thread(target=_worker_beating, args=(name,), name="baton-heartbeat", daemon=True)
        _beating.start()


@worker_shutdown.connect
def _worker_stopped(sender=None, **kwargs):
    """A node that stops cleanly takes its heartbeat away: it is not lost."""
    _worker_stopping.set()
    if _beating is not None:
        _beating.join(10)  # a beat being written lands before the row goes
    try:
        from dashboard.services.heartbeats import process_beat_forget

        process_beat_forget(kind="worker", name=getattr(sender, "hostname", None))
    except Exception:
        logging.getLogger(__name__).exception("worker heartbeat removal")


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
    twice per ``BATON_DASHBOARD_HEARTBEAT_S``, each time with an evaluation of worker loss
    (``worker_lost`` / ``worker_returned`` events); never in other processes. A failed
    write must not stop the schedule."""
    if not _beat:
        return
    try:
        from dashboard.services.heartbeats import process_beat
        from dashboard.services.worker_loss import workers_lost_evaluate

        if process_beat(kind="beat"):  # and as often, beat watches the workers' heartbeats
            workers_lost_evaluate()
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
