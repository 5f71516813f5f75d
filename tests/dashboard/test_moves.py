"""Moving and resubmitting messages of dead-letter and backout queues as jobs: the service
run in-process (the worker's task calls the same function). Nothing lost, nothing twice —
also when a job stops half way or dies inside a batch."""

from __future__ import annotations

import pytest
from django.test import override_settings

from brokers.models import Message
from brokers.services.access import grant_actions
from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_alter, queue_define
from baton_client.errors import Conflict, InvalidInput, PermissionDenied
from dashboard.models import JobState, MoveJob
from dashboard.services import move_job_resume, move_job_run, move_job_submit
from transactions.manager import transaction_rollback
from transactions.models import JournalEvent

from .conftest import make_user


@pytest.fixture
def backed_out(db):
    """Broker BO: APP (backout threshold 1, backout queue APP.BACKOUT) whose 8 messages were
    rolled back once each and so moved to APP.BACKOUT; an empty OTHER queue."""
    broker_define(name="BO", transaction_timeout_ms=60_000)
    queue_define(broker="BO", name="APP.BACKOUT")
    queue_define(broker="BO", name="APP", backout_threshold=1, backout_queue="APP.BACKOUT")
    queue_define(broker="BO", name="OTHER")
    message_put(
        broker="BO",
        queue="APP",
        messages=[MessageInput(body=f"m{i}".encode(), properties={"n": i}, correl_id=f"{i:048x}") for i in range(8)],
        syncpoint="no",
    )
    got = message_get(broker="BO", queue="APP", syncpoint="yes", batch=8)
    transaction_rollback(transaction_id=got.transaction_id)
    return [m.msg_id for m in Message.objects.filter(queue__name="APP.BACKOUT").order_by("id")]


def on(queue: str) -> list[Message]:
    return list(Message.objects.filter(queue__broker__name="BO", queue__name=queue).order_by("id"))


@pytest.fixture
def operator(db):
    user = make_user("op")
    grant_actions(username="op", broker="BO", actions=["browse", "put", "get"])
    return user


def test_resubmit_puts_each_message_back_where_it_came_from_as_a_fresh_delivery(backed_out, operator):
    before = {m.msg_id: m for m in on("APP.BACKOUT")}
    assert before and all(m.dead_letter_queue == "APP" and m.backout_count == 1 for m in before.values())
    job = move_job_submit(user=operator, broker="BO", queue="APP.BACKOUT", action="resubmit", msg_ids=backed_out[:5])
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.position, job.moved, job.skipped) == ("succeeded", 5, 5, 0)
    back = on("APP")
    assert [m.msg_id for m in back] == backed_out[:5]  # in their order
    for m in back:
        old = before[m.msg_id]
        assert (m.body, m.properties, m.correl_id, m.put_time) == (
            old.body,
            old.properties,
            old.correl_id,
            old.put_time,
        )
        assert (m.backout_count, m.delivery_count, m.dead_letter_reason, m.dead_letter_queue) == (0, 0, "", "")
    assert [m.msg_id for m in on("APP.BACKOUT")] == backed_out[5:]
    assert JournalEvent.objects.filter(kind="put", queue="APP", detail__job=job.pk).count() == 5
    # the moved messages are ordinary messages there now
    assert message_get(broker="BO", queue="APP").messages[0].msg_id == backed_out[0]


def test_move_keeps_the_message_as_it_is(backed_out, operator):
    job = move_job_submit(
        user=operator, broker="BO", queue="APP.BACKOUT", action="move", target_queue="OTHER", everything=True
    )
    assert job.total == 8
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.moved) == ("succeeded", 8)
    moved = on("OTHER")
    assert [m.msg_id for m in moved] == backed_out and on("APP.BACKOUT") == []
    assert all(m.backout_count == 1 and m.dead_letter_queue == "APP" and m.dead_letter_reason for m in moved)


def test_a_full_target_stops_the_job_in_order_and_a_resume_finishes_it(backed_out, operator):
    queue_alter(broker="BO", name="OTHER", max_depth=3)
    job = move_job_submit(
        user=operator, broker="BO", queue="APP.BACKOUT", action="move", target_queue="OTHER", msg_ids=backed_out
    )
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.position, job.moved) == ("failed", 3, 3)
    assert "full" in job.error and "message 4 of 8" in job.error
    assert [m.msg_id for m in on("OTHER")] == backed_out[:3]
    assert [m.msg_id for m in on("APP.BACKOUT")] == backed_out[3:]  # the rest untouched
    queue_alter(broker="BO", name="OTHER", max_depth=100)
    assert move_job_resume(user=operator, job_id=job.pk).state == "queued"
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.position, job.moved, job.skipped) == ("succeeded", 8, 8, 0)
    assert [m.msg_id for m in on("OTHER")] == backed_out and on("APP.BACKOUT") == []


@override_settings(BATON_DASHBOARD_MOVE_BATCH=3)
def test_a_worker_dying_inside_a_batch_loses_nothing_and_moves_nothing_twice(backed_out, operator):
    job = move_job_submit(
        user=operator, broker="BO", queue="APP.BACKOUT", action="move", target_queue="OTHER", msg_ids=backed_out
    )
    # the first batch (3 messages) commits; the second dies after 2 moves inside its transaction
    job = move_job_run(job_id=job.pk, interrupt_after=5)
    assert job.state == "failed" and "interrupted" in job.error
    assert (job.position, job.moved) == (3, 3)
    assert [m.msg_id for m in on("OTHER")] == backed_out[:3]
    assert [m.msg_id for m in on("APP.BACKOUT")] == backed_out[3:]
    move_job_resume(user=operator, job_id=job.pk)
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.position, job.moved) == ("succeeded", 8, 8)
    assert [m.msg_id for m in on("OTHER")] == backed_out and on("APP.BACKOUT") == []


def test_a_target_deleted_before_the_job_runs_stops_it_saying_so(backed_out, operator):
    from brokers.services.queues import queue_delete

    job = move_job_submit(
        user=operator, broker="BO", queue="APP.BACKOUT", action="move", target_queue="OTHER", msg_ids=backed_out
    )
    queue_delete(broker="BO", name="OTHER")
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.position, job.moved) == ("failed", 0, 0) and "'OTHER' no longer exists" in job.error
    assert [m.msg_id for m in on("APP.BACKOUT")] == backed_out


def test_messages_that_cannot_move_are_skipped_with_the_reason(backed_out, operator):
    message_get(broker="BO", queue="APP.BACKOUT", msg_id=backed_out[1])  # gone before the job runs
    taken = message_get(broker="BO", queue="APP.BACKOUT", msg_id=backed_out[2], syncpoint="yes")  # in flight
    message_put(broker="BO", queue="OTHER", messages=[MessageInput(body=b"x")], syncpoint="no")
    job = move_job_submit(
        user=operator, broker="BO", queue="APP.BACKOUT", action="move", target_queue="OTHER", msg_ids=backed_out[:4]
    )
    job = move_job_run(job_id=job.pk)
    assert (job.state, job.moved, job.skipped) == ("succeeded", 2, 2)
    assert {p["msg_id"]: p["code"] for p in job.problems} == {backed_out[1]: "gone", backed_out[2]: "in_flight"}
    transaction_rollback(transaction_id=taken.transaction_id)
    # running it again changes nothing: every message is accounted for once
    assert move_job_run(job_id=job.pk).moved == 2


def test_who_may_start_a_job_and_from_where(backed_out, operator):
    viewer = make_user("viewer")
    grant_actions(username="viewer", broker="BO", actions=["browse"])
    with pytest.raises(PermissionDenied):
        move_job_submit(user=viewer, broker="BO", queue="APP.BACKOUT", action="resubmit", msg_ids=backed_out)
    picky = make_user("picky")
    grant_actions(username="picky", broker="BO", actions=["browse", "get"])
    grant_actions(username="picky", broker="BO", queue="OTHER", actions=["put"])
    with pytest.raises(PermissionDenied):  # no put on APP, where a resubmit would go
        move_job_submit(user=picky, broker="BO", queue="APP.BACKOUT", action="resubmit", msg_ids=backed_out)
    assert (
        move_job_submit(
            user=picky, broker="BO", queue="APP.BACKOUT", action="move", target_queue="OTHER", msg_ids=backed_out
        ).total
        == 8
    )
    with pytest.raises(Conflict, match="not a dead-letter or backout queue"):
        move_job_submit(user=operator, broker="BO", queue="OTHER", action="resubmit", everything=True)
    with pytest.raises(InvalidInput, match="Select at least one"):
        move_job_submit(user=operator, broker="BO", queue="APP.BACKOUT", action="resubmit", msg_ids=[])
    with pytest.raises(InvalidInput, match="not a message id"):
        move_job_submit(user=operator, broker="BO", queue="APP.BACKOUT", action="resubmit", msg_ids=["nope"])
    with pytest.raises(InvalidInput, match="already"):
        move_job_submit(
            user=operator,
            broker="BO",
            queue="APP.BACKOUT",
            action="move",
            target_queue="APP.BACKOUT",
            msg_ids=backed_out,
        )
    job = MoveJob.objects.filter(state=JobState.QUEUED).first()
    with pytest.raises(Conflict, match="only a failed or stalled job"):
        move_job_resume(user=operator, job_id=job.pk)
