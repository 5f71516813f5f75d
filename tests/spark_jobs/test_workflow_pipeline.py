"""A workflow run and a backout move made through the services, exported from the database
(the journal and the workflow history), analysed by Spark."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from spark_jobs import journal_analytics, workflow_analytics
from tests.workflows.conftest import hooks, wf  # noqa: F401 - the workflow fixtures
from transactions.journal_export import journal_export
from transactions.manager import transaction_begin, transaction_rollback
from workflows.export import workflow_history_export
from workflows.services.instances import instance_start

pytestmark = pytest.mark.spark


def test_a_run_exported_and_analysed(spark, wf, tmp_path):  # noqa: F811
    instance_start(broker="WF", name="seq", message=MessageInput(body=b"go"))
    first, _ = wf.step("A", commit=False)
    second, _ = wf.step("B", preemptive=True, commit=False)
    wf.commit(second)  # held on the first
    wf.commit(first)
    wf.step("C")
    # a message backed out past its threshold moves to the backout queue, and is got there
    queue_define(broker="WF", name="APP.BACKOUT")
    queue_define(broker="WF", name="E", backout_threshold=1, backout_queue="APP.BACKOUT")
    message_put(broker="WF", queue="E", messages=[MessageInput(body=b"poison")])
    txn = transaction_begin(broker="WF", timeout_ms=60_000).id
    assert message_get(broker="WF", queue="E", transaction_id=txn).messages
    transaction_rollback(transaction_id=txn, reason="client")
    assert message_get(broker="WF", queue="APP.BACKOUT").messages

    history = workflow_history_export(path=tmp_path / "workflows.jsonl")
    assert history["events"] == 8  # started, 3 completed, 3 committed, completed
    events = journal_analytics.extract(spark, journal_export(path=tmp_path / "journal.jsonl")["path"]).cache()
    result = workflow_analytics.transform(workflow_analytics.extract(spark, history["path"]), events)

    [hour] = result.workflow_hours.collect()
    assert (hour.broker, hour.workflow, hour.started, hour.completed, hour.compensating) == ("WF", "seq", 1, 1, 0)
    steps = {r.step: r for r in result.workflow_steps.collect()}
    assert {name: (r.committed, r.backed_out, r.held) for name, r in steps.items()} == {
        "a": (1, 0, 0),
        "b": (1, 0, 1),
        "c": (1, 0, 0),
    }
    assert steps["b"].held_ms > 0 and all(r.duration_p50_ms > 0 for r in steps.values())
    assert result.compensations.count() == 0

    queues = {r.queue: r for r in journal_analytics.transform(events).queues.collect()}
    assert (queues["E"].dead_letters, queues["E"].depth) == (1, 0)
    assert (queues["APP.BACKOUT"].moved_in, queues["APP.BACKOUT"].gets, queues["APP.BACKOUT"].depth) == (1, 1, 0)
