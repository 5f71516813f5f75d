"""Moving or resubmitting selected messages of a dead-letter or backout queue, as a
background job on the worker fleet (``dashboard.tasks.move_job``).

A job handles its messages in the source queue's put order, in batches of
``BATON_DASHBOARD_MOVE_BATCH``. Each batch is one database transaction that moves its
messages *and* advances the job's ``position``: a worker that dies mid-batch leaves neither
(the batch is redone by the next run), so no message is lost or moved twice. A message
moves as the message store moves a message to a backout queue: its row leaves the source
and a new row, with the same msg_id and everything else, is put at the end of the target
(``msg_unique_per_queue`` refuses a second copy there). A message that cannot move (gone,
under a unit of work, locked, expired, too long, already on the target) is skipped with
its reason; a target that cannot take more (full, puts inhibited) stops the job there, so
messages never overtake each other, and the job may be resumed once there is room.

Locking (docs/concurrency.md): the job's row, then the queues' rows in id order, then the
message rows.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db
from django.utils import timezone

from brokers import permissions as may
from baton_client.errors import PutInhibited, QueueFull
from brokers.models import Message, Queue, QueueKind, put_open_flag
from brokers.selectors import queue_get
from brokers.services.store import queue_release, queue_reserve, queues_lock, queues_woken
from config.celery import task_send
from baton_client.errors import Conflict, InvalidInput, NotFound
from transactions.durability import engine_step
from transactions.journal import journal_event, journal_record
from transactions.models import JournalKind

from ..access import require_queue_action, require_queue_seen
from ..models import OPEN_JOB_STATES, JobState, MoveAction, MoveJob

_MSG_ID = re.compile(r"^[0-9a-f]{48}$")
_PROBLEMS_KEPT = 100

#: The Celery task that runs a move job (dashboard/tasks.py).
MOVE_JOB_TASK = "dashboard.tasks.move_job"


class _Stop(Exception):
    """The target cannot take the next message: the job stops before it."""


def move_source_kind(*, queue: Queue) -> str | None:
    """``dead-letter`` for the broker's dead-letter queue, ``backout`` for a queue another
    queue of its broker names as its backout queue, else None (moves start only there)."""
    if queue.name == queue.broker.dead_letter_queue:
        return "dead-letter"
    if Queue.objects.filter(broker_id=queue.broker_id, backout_queue=queue.name).exclude(pk=queue.pk).exists():
        return "backout"
    return None


def _target_checked(*, source: Queue, name: str) -> Queue:
    if not name:
        raise InvalidInput("Name the queue to move the messages to.", errors={"target_queue": ["Required."]})
    target = queue_get(broker=source.broker.name, name=name)
    if target.kind != QueueKind.LOCAL:
        raise InvalidInput(
            f"Queue {name!r} is a {target.kind} queue; messages move to local queues.",
            errors={"target_queue": ["Not a local queue."]},
        )
    if target.pk == source.pk:
        raise InvalidInput("The messages are on that queue already.", errors={"target_queue": ["Same as the source."]})
    return target


def _selection(*, source: Queue, msg_ids, everything: bool) -> list[str]:
    """The msg_ids to handle, in the source's put order (ids no longer there last, so the
    job reports them as gone)."""
    limit = settings.BATON_DASHBOARD_MOVE_MAX
    if everything:
        ids = list(Message.objects.filter(queue=source).order_by("id").values_list("msg_id", flat=True)[: limit + 1])
    else:
        ids = []
        for value in msg_ids or []:
            value = str(value).strip().lower()
            if not _MSG_ID.match(value):
                raise InvalidInput(
                    f"{value[:60]!r} is not a message id (48 hexadecimal characters).",
                    errors={"msg_ids": ["Not a message id."]},
                )
            if value not in ids:
                ids.append(value)
        order = dict(Message.objects.filter(queue=source, msg_id__in=ids).values_list("msg_id", "id"))
        ids.sort(key=lambda i: (i not in order, order.get(i, 0)))
    if not ids:
        raise InvalidInput("Select at least one message.", errors={"msg_ids": ["Empty."]})
    if len(ids) > limit:
        raise InvalidInput(f"A job moves at most {limit} messages.", errors={"msg_ids": ["Too many."]})
    return ids


def _dispatch(job: MoveJob) -> None:
    db.on_commit(lambda: _move_job_send_on_commit(job.pk))


def _move_job_send_on_commit(job_id: int) -> None:
    """``on_commit`` hook: hand the job to the worker fleet (its task by name)."""
    task_send(MOVE_JOB_TASK, job_id)


def move_job_submit(
    *, user, broker: str, queue: str, action: str, msg_ids=(), everything: bool = False, target_queue: str = ""
) -> MoveJob:
    """Check that ``user`` may get from the dead-letter or backout queue and put where the
    messages go (operators and admins may), record the job and hand it to the worker fleet
    once recorded. ``everything``: every message on the queue now, not only ``msg_ids``."""
    require_queue_seen(user, broker=broker, queue=queue)
    require_queue_action(user, "get", broker=broker, queue=queue)
    if action not in MoveAction.values:
        raise InvalidInput(f"Unknown action {action!r}; use move or resubmit.", errors={"action": ["Invalid choice."]})
    with db.atomic():
        source = queue_get(broker=broker, name=queue)
        if move_source_kind(queue=source) is None:
            raise Conflict(
                f"Queue {queue!r} is not a dead-letter or backout queue; messages are moved or "
                "resubmitted from those only.",
                broker=broker,
                queue=queue,
            )
        ids = _selection(source=source, msg_ids=msg_ids, everything=everything)
        if action == MoveAction.MOVE:
            target = _target_checked(source=source, name=target_queue)
            require_queue_action(user, "put", broker=broker, queue=target.name)
            targets = [target.name]
        else:
            target_queue = ""
            targets = sorted(
                set(
                    Message.objects.filter(queue=source, msg_id__in=ids)
                    .exclude(dead_letter_queue="")
                    .values_list("dead_letter_queue", flat=True)
                )
            )
        for name in targets:
            require_queue_action(user, "put", broker=broker, queue=name)
            may.require_reached(user, "put", broker=broker, queue=name)  # an alias's target too (docs/permissions.md)
        job = MoveJob.objects.create(
            broker=broker,
            source_queue=queue,
            action=action,
            target_queue=target_queue,
            msg_ids=ids,
            user=user if user.pk else None,
            username=user.get_username(),
        )
        _dispatch(job)
    return job


def move_job_resume(*, user, job_id: int) -> MoveJob:
    """Queue a failed job again (or one whose worker went silent for
    ``BATON_DASHBOARD_MOVE_STALL_S``); it goes on from the messages it has not handled."""
    with db.atomic():
        job = MoveJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"No job {job_id}.")
        require_queue_action(user, "get", broker=job.broker, queue=job.source_queue)
        if job.target_queue:
            require_queue_action(user, "put", broker=job.broker, queue=job.target_queue)
        stalled = job.updated_at < timezone.now() - timedelta(seconds=settings.BATON_DASHBOARD_MOVE_STALL_S)
        if job.state == JobState.SUCCEEDED or (job.state in OPEN_JOB_STATES and not stalled):
            raise Conflict(f"Job {job_id} is {job.state}; only a failed or stalled job is resumed.", job=job_id)
        MoveJob.objects.filter(pk=job.pk).update(
            state=JobState.QUEUED, error="", finished_at=None, updated_at=timezone.now()
        )
        _dispatch(job)
    return MoveJob.objects.get(pk=job_id)


# --- the worker's side ----------------------------------------------------------------------


def _skip(job: MoveJob, msg_id: str, code: str, message: str) -> None:
    job.skipped += 1
    if len(job.problems) < _PROBLEMS_KEPT:
        job.problems = [*job.problems, {"msg_id": msg_id, "code": code, "message": message}]


def _target_of(job: MoveJob, m: Message, queues: dict[str, Queue]) -> Queue | None:
    name = job.target_queue if job.action == MoveAction.MOVE else m.dead_letter_queue
    return queues.get(name)


def _move_one(job: MoveJob, *, source: Queue, msg_id: str, queues: dict[str, Queue], now) -> None:
    """Move one message, or skip it saying why; raise _Stop when the target cannot take it."""
    m = (
        Message.objects.select_for_update()
        .filter(queue=source, msg_id=msg_id)
        .annotate(put_open=put_open_flag())
        .first()
    )
    if m is None:
        return _skip(job, msg_id, "gone", f"No longer on {source.name} (gotten, expired or moved by someone else).")
    held = (
        "uncommitted_put" if m.put_open else "in_flight" if m.get_transaction_id else "locked" if m.lock_token else None
    )
    if held:
        return _skip(job, msg_id, held, f"It is {held.replace('_', ' ')}; only available messages move.")
    if m.expires_at is not None and m.expires_at <= now:
        return _skip(job, msg_id, "expired", "It has expired.")
    target = _target_of(job, m, queues)
    if target is None and job.action == MoveAction.MOVE:
        raise _Stop(f"Queue {job.target_queue!r} no longer exists on {job.broker} (or is no local queue).")
    if target is None:
        original = m.dead_letter_queue
        return _skip(
            job,
            msg_id,
            "no_target",
            f"Its original queue {original!r} does not exist on {job.broker}."
            if original
            else "It records no queue it was dead-lettered from.",
        )
    if target.pk == source.pk:
        return _skip(job, msg_id, "no_target", f"It came from {source.name} itself.")
    if not target.put_enabled:
        raise _Stop(PutInhibited(f"Puts are inhibited on queue {target.name!r}.").message)
    limit = min(target.max_message_length, source.broker.max_message_length, settings.BATON_MAX_MESSAGE_LENGTH)
    if len(m.body) > limit:
        return _skip(job, msg_id, "message_too_large", f"{len(m.body)} bytes; {target.name} accepts at most {limit}.")
    if Message.objects.filter(queue=target, msg_id=m.msg_id).exists():
        return _skip(job, msg_id, "already_there", f"A message with this id is on {target.name} already.")
    try:
        base = queue_reserve(queue=target, count=1, commit_count=1)
    except QueueFull as exc:  # the conditional UPDATE changed nothing
        raise _Stop(exc.message) from None
    Message.objects.filter(pk=m.pk).delete()
    queue_release(counts={source.pk: 1})
    m.pk = m.id = None
    m.queue, m.commit_seq, m.lapsed_lock_token = target, base, None
    if job.action == MoveAction.RESUBMIT:
        m.backout_count = m.delivery_count = 0
        m.dead_letter_reason = m.dead_letter_queue = ""
    m.save(force_insert=True)
    journal_record(
        events=[
            journal_event(
                JournalKind.GET,
                broker=job.broker,
                queue=source.name,
                msg_id=msg_id,
                at=now,
                put_time=m.put_time.isoformat(),
                moved_to=target.name,
                job=job.pk,
            ),
            journal_event(
                JournalKind.PUT,
                broker=job.broker,
                queue=target.name,
                msg_id=msg_id,
                at=now,
                persistent=m.persistent,
                bytes=len(m.body),
                moved_from=source.name,
                job=job.pk,
            ),
        ]
    )
    queues_woken([target.pk])
    job.moved += 1


def _batch(job_id: int, size: int, crash_at: int | None) -> int | None:
    """Handle the job's next batch in one durable database transaction; return how many
    messages it handled, or None when the job is over (finished, failed, or no longer this
    worker's to run). ``crash_at``: raise before the batch's message of that index."""
    with engine_step(durable=True):
        job = MoveJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.state != JobState.RUNNING:
            return None
        now = timezone.now()
        if job.position >= job.total:
            job.state, job.finished_at = JobState.SUCCEEDED, now
            job.save()
            return None
        source = Queue.objects.select_related("broker").filter(broker__name=job.broker, name=job.source_queue).first()
        if source is None:
            job.state, job.finished_at, job.error = (
                JobState.FAILED,
                now,
                f"Queue {job.source_queue!r} no longer exists.",
            )
            job.save()
            return None
        ids = job.msg_ids[job.position : job.position + size]
        names = (
            {job.target_queue}
            if job.action == MoveAction.MOVE
            else set(Message.objects.filter(queue=source, msg_id__in=ids).values_list("dead_letter_queue", flat=True))
        )
        queues = {
            q.name: q
            for q in Queue.objects.select_related("broker").filter(
                broker_id=source.broker_id, name__in=names - {""}, kind=QueueKind.LOCAL
            )
        }
        queues_lock(queue_ids=[source.pk, *(q.pk for q in queues.values())])
        for done, msg_id in enumerate(ids):
            if done == crash_at:
                raise RuntimeError(f"interrupted after {done} messages of a batch (a test's crash point)")
            try:
                _move_one(job, source=source, msg_id=msg_id, queues=queues, now=now)
            except _Stop as stop:
                job.state, job.finished_at = JobState.FAILED, now
                job.error = f"Stopped before message {job.position + 1} of {job.total}: {stop}"[:500]
                job.save()
                return None
            job.position += 1
        job.save()
        return len(ids)


def move_job_run(*, job_id: int, interrupt_after: int | None = None) -> MoveJob:
    """Run a queued job to its end (the worker's task). Safe to run twice at once or again
    after a crash: each batch re-reads the job's position under its row lock.
    ``interrupt_after`` (tests only) raises after this run handled that many messages,
    inside a batch, as a worker dying there would."""
    with db.atomic():
        job = MoveJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"No job {job_id}.")
        if job.state not in OPEN_JOB_STATES:
            return job
        MoveJob.objects.filter(pk=job_id).update(
            state=JobState.RUNNING, started_at=job.started_at or timezone.now(), updated_at=timezone.now()
        )
    size = settings.BATON_DASHBOARD_MOVE_BATCH
    try:
        budget = interrupt_after
        while handled := _batch(job_id, size, budget if budget is not None and budget < size else None):
            budget = None if budget is None else budget - handled
    except Exception as exc:  # noqa: BLE001  (any error ends the job as failed, saying why)
        MoveJob.objects.filter(pk=job_id, state=JobState.RUNNING).update(
            state=JobState.FAILED,
            finished_at=timezone.now(),
            updated_at=timezone.now(),
            error=f"{type(exc).__name__}: {exc}"[:500],
        )
    return MoveJob.objects.get(pk=job_id)
