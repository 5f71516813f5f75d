"""define_/alter_/display_/delete_ broker and queue: they call the services, print one line,
and on any error print one line and change nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import load_command_class
from django.core.management.base import CommandError

from brokers.models import Broker, Message, Queue
from brokers.services.brokers import BROKER_FIELDS
from brokers.services.messages import message_get, message_put
from brokers.services.queues import QUEUE_FIELDS, queue_define
from tests.conftest import msgs
from transactions.manager import transaction_begin

from .conftest import run


def option_dests(command: str) -> set[str]:
    parser = load_command_class("brokers", command).create_parser("manage.py", command)
    return {action.dest for action in parser._actions if action.option_strings}


@pytest.mark.parametrize(
    "command, fields",
    [
        ("define_broker", BROKER_FIELDS),
        ("alter_broker", BROKER_FIELDS),
        ("define_queue", QUEUE_FIELDS),
        ("alter_queue", QUEUE_FIELDS),
    ],
)
def test_every_service_attribute_has_an_option(command, fields):
    assert fields <= option_dests(command)


# --- brokers ----------------------------------------------------------------------------


def test_define_broker_with_attributes(db):
    ran = run(
        "define_broker",
        "QM2",
        "--description",
        "second",
        "--dead-letter-queue",
        "DLQ",
        "--transaction-timeout-ms",
        "5000",
        "--max-message-length",
        "1000",
        "--default-persistence",
        "non_persistent",
    )
    assert ran.out == "Broker 'QM2' defined, dead-letter queue 'DLQ'.\n"
    b = Broker.objects.get(name="QM2")
    assert (
        b.description,
        b.dead_letter_queue,
        b.transaction_timeout_ms,
        b.max_message_length,
        b.default_persistence,
    ) == ("second", "DLQ", 5000, 1000, "non_persistent")
    assert list(Queue.objects.filter(broker=b).values_list("name", flat=True)) == ["DLQ"]


def test_define_broker_errors_are_one_line_and_change_nothing(broker):
    with pytest.raises(CommandError) as exc:
        run("define_broker", "QM1")
    assert str(exc.value) == "A broker named 'QM1' already exists. [already_exists]"
    assert exc.value.returncode == 1

    with pytest.raises(CommandError) as exc:
        run("define_broker", "BAD NAME!", "--default-persistence", "sometimes")
    message = str(exc.value)
    assert "\n" not in message and message.endswith("[invalid]")
    assert "name:" in message and "default_persistence:" in message
    assert list(Broker.objects.values_list("name", flat=True)) == ["QM1"]


def test_alter_broker(broker):
    ran = run("alter_broker", "QM1", "--transaction-timeout-ms=9000", "--dead-letter-queue", "NEW.DLQ")
    assert ran.out == "Broker 'QM1' altered: dead_letter_queue, transaction_timeout_ms.\n"
    b = Broker.objects.get(name="QM1")
    assert (b.transaction_timeout_ms, b.dead_letter_queue) == (9000, "NEW.DLQ")
    assert Queue.objects.filter(broker=b, name="NEW.DLQ").exists()


def test_alter_broker_refuses_nothing_to_alter_bad_values_and_unknown_brokers(broker):
    with pytest.raises(CommandError, match="Nothing to alter"):
        run("alter_broker", "QM1")
    with pytest.raises(CommandError, match=r"default_persistence: .*\[invalid\]"):
        run("alter_broker", "QM1", "--description", "changed", "--default-persistence", "sometimes")
    assert Broker.objects.get(name="QM1").description == ""  # nothing half-applied
    with pytest.raises(CommandError, match=r"No broker named 'NOPE'. \[not_found\]"):
        run("alter_broker", "NOPE", "--description", "x")
    with pytest.raises(CommandError):  # argparse: not a number
        run("alter_broker", "QM1", "--max-message-length", "lots")


def test_display_broker_table_listing_and_json(broker):
    run("define_broker", "QM2", "--description", "second")
    run("define_broker", "OTHER")

    table = run("display_broker").lines
    assert table[0].split() == [
        "NAME",
        "DEAD_LETTER_QUEUE",
        "TXN_TIMEOUT_MS",
        "MAX_MSG_LENGTH",
        "PERSISTENCE",
        "DESCRIPTION",
    ]
    assert [line.split()[0] for line in table[1:]] == ["OTHER", "QM1", "QM2"]
    assert table[3].split() == ["QM2", "SYSTEM.DEAD.LETTER.QUEUE", "120000", "4194304", "persistent", "second"]

    generic = run("display_broker", "QM*").lines
    assert [line.split()[0] for line in generic[1:]] == ["QM1", "QM2"]

    listing = dict(line.split(None, 1) for line in run("display_broker", "QM1").lines if len(line.split()) > 1)
    assert listing["name"] == "QM1" and listing["transaction_timeout_ms"] == "60000"

    data = json.loads(run("display_broker", "*", "--json").out)
    assert [b["name"] for b in data] == ["OTHER", "QM1", "QM2"]
    assert json.loads(run("display_broker", "QM2", "--json").out)[0]["description"] == "second"

    nothing = run("display_broker", "ZZ*")
    assert nothing.out == "" and "No broker matches 'ZZ*'" in nothing.err
    with pytest.raises(CommandError, match="No broker named 'ZZ'"):
        run("display_broker", "ZZ")


def test_delete_broker_needs_purge_while_it_holds_messages(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(CommandError, match=r"still holds messages.*\[not_empty\]"):
        run("delete_broker", "QM1")
    assert Broker.objects.filter(name="QM1").exists()
    assert run("delete_broker", "QM1", "--purge").out == "Broker 'QM1' deleted.\n"
    assert not Broker.objects.filter(name="QM1").exists()
    assert not Message.objects.exists()


def test_delete_broker_refused_with_an_open_unit_of_work(queue):
    transaction_begin(broker="QM1", timeout_ms=60_000)
    with pytest.raises(CommandError, match="open units of work"):
        run("delete_broker", "QM1", "--purge")
    assert Broker.objects.filter(name="QM1").exists()


# --- queues -----------------------------------------------------------------------------


def test_define_queue_with_every_kind_of_option(broker):
    ran = run(
        "define_queue",
        "QM1",
        "APP.IN",
        "--max-depth",
        "7",
        "--no-put-enabled",
        "--get-enabled",
        "no",
        "--default-priority",
        "5",
        "--delivery-sequence",
        "fifo",
        "--read-order",
        "commit",
        "--enforce-order",
        "yes",
        "--backout-threshold",
        "3",
        "--backout-queue",
        "APP.BACKOUT",
        "--lock-duration-ms",
        "1500",
        "--default-access",
        "exclusive",
        "--description",
        "input queue",
        "--usage",
        "normal",
        "--default-persistence",
        "non_persistent",
    )
    assert ran.out == "Queue 'APP.IN' (local) defined on broker 'QM1'.\n"
    q = Queue.objects.get(broker__name="QM1", name="APP.IN")
    assert (
        q.max_depth,
        q.put_enabled,
        q.get_enabled,
        q.default_priority,
        q.delivery_sequence,
        q.read_order,
        q.enforce_order,
        q.backout_threshold,
        q.backout_queue,
        q.lock_duration_ms,
        q.default_access,
        q.description,
        q.default_persistence,
    ) == (
        7,
        False,
        False,
        5,
        "fifo",
        "commit",
        "yes",
        3,
        "APP.BACKOUT",
        1500,
        "exclusive",
        "input queue",
        "non_persistent",
    )
    # Attributes not given take the defaults (the broker's where it has them).
    run("define_queue", "QM1", "PLAIN")
    plain = Queue.objects.get(name="PLAIN")
    assert (plain.max_depth, plain.put_enabled, plain.max_message_length) == (5000, True, broker.max_message_length)


def test_boolean_options_take_every_spelling(queue):
    run("alter_queue", "QM1", "Q1", "--put-enabled", "no")
    assert Queue.objects.get(name="Q1").put_enabled is False
    run("alter_queue", "QM1", "Q1", "--put-enabled")
    assert Queue.objects.get(name="Q1").put_enabled is True
    run("alter_queue", "QM1", "Q1", "--no-put-enabled")
    assert Queue.objects.get(name="Q1").put_enabled is False
    run("alter_queue", "QM1", "Q1", "--put-enabled=yes")
    assert Queue.objects.get(name="Q1").put_enabled is True
    with pytest.raises(CommandError, match="expected yes or no"):
        run("alter_queue", "QM1", "Q1", "--put-enabled", "perhaps")


def test_define_remote_and_alias_queues(queue):
    run("define_queue", "QM1", "QM2", "--usage", "transmission")
    run("define_queue", "QM1", "TO.QM2", "--kind", "remote", "--remote-broker", "QM2")
    run("define_queue", "QM1", "ALIAS.Q1", "--kind", "alias", "--target-queue", "Q1")
    remote = Queue.objects.get(name="TO.QM2")
    assert (remote.kind, remote.remote_queue, remote.transmission_queue) == ("remote", "TO.QM2", "QM2")
    assert Queue.objects.get(name="ALIAS.Q1").target_queue == "Q1"
    with pytest.raises(CommandError, match=r"target_queue: An alias names the queue it stands for.*\[invalid\]"):
        run("define_queue", "QM1", "BAD.ALIAS", "--kind", "alias")
    assert not Queue.objects.filter(name="BAD.ALIAS").exists()


def test_define_queue_errors(queue):
    with pytest.raises(CommandError) as exc:
        run("define_queue", "QM1", "Q2", "--kind", "bogus", "--max-depth", "-1")
    assert str(exc.value) == (
        "The request is not valid: kind: Value 'bogus' is not a valid choice; "
        "max_depth: Ensure this value is greater than or equal to 0. [invalid]"
    )
    with pytest.raises(CommandError, match=r"Queue 'Q1' already exists on broker 'QM1'. \[already_exists\]"):
        run("define_queue", "QM1", "Q1")
    with pytest.raises(CommandError, match=r"No broker named 'NOPE'"):
        run("define_queue", "NOPE", "Q1")
    assert list(Queue.objects.order_by("name").values_list("name", flat=True)) == ["Q1", "SYSTEM.DEAD.LETTER.QUEUE"]


def test_alter_queue_applies_all_or_nothing(queue):
    assert run("alter_queue", "QM1", "Q1", "--max-depth", "10", "--description", "x").out == (
        "Queue 'Q1' on broker 'QM1' altered: description, max_depth.\n"
    )
    with pytest.raises(CommandError, match=r"delivery_sequence: .*\[invalid\]"):
        run("alter_queue", "QM1", "Q1", "--max-depth", "20", "--delivery-sequence", "random")
    q = Queue.objects.get(name="Q1")
    assert (q.max_depth, q.delivery_sequence, q.description) == (10, "priority", "x")
    with pytest.raises(CommandError, match="Nothing to alter"):
        run("alter_queue", "QM1", "Q1")
    with pytest.raises(CommandError, match=r"No queue 'NOPE' on broker 'QM1'. \[not_found\]"):
        run("alter_queue", "QM1", "NOPE", "--max-depth", "1")


@pytest.fixture
def busy_queue(queue):
    """Q1 with 2 available messages, 1 in flight, 1 peek-locked and 1 uncommitted put."""
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c", "d"))
    message_get(broker="QM1", queue="Q1", syncpoint="yes")
    message_get(broker="QM1", queue="Q1", mode="peek_lock")
    message_put(broker="QM1", queue="Q1", messages=msgs("e"), syncpoint="yes")
    return queue


def test_display_queue_shows_depths(busy_queue):
    queue_define(broker="QM1", name="ALIAS.Q1", kind="alias", target_queue="Q1")
    lines = run("display_queue", "QM1").lines
    assert lines[0].split() == [
        "NAME",
        "KIND",
        "USAGE",
        "DEPTH",
        "UNCOMMITTED",
        "IN_FLIGHT",
        "LOCKED",
        "MAX_DEPTH",
        "PUT",
        "GET",
        "TARGET",
        "DESCRIPTION",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == {"ALIAS.Q1", "Q1", "SYSTEM.DEAD.LETTER.QUEUE"}
    assert rows["Q1"] == ["Q1", "local", "normal", "4", "1", "1", "1", "5000", "yes", "yes"]
    assert rows["ALIAS.Q1"][-1] == "Q1"  # its target

    data = json.loads(run("display_queue", "QM1", "Q1", "--json").out)
    assert len(data) == 1
    assert {k: data[0][k] for k in ("name", "broker", "depth", "uncommitted_puts", "in_flight", "locked")} == {
        "name": "Q1",
        "broker": "QM1",
        "depth": 4,
        "uncommitted_puts": 1,
        "in_flight": 1,
        "locked": 1,
    }
    assert QUEUE_FIELDS <= set(data[0])

    listing = dict(line.split(None, 1) for line in run("display_queue", "QM1", "Q1").lines if len(line.split()) > 1)
    assert (listing["depth"], listing["uncommitted_puts"], listing["max_depth"]) == ("4", "1", "5000")

    assert [q["name"] for q in json.loads(run("display_queue", "QM1", "*Q1", "--json").out)] == ["ALIAS.Q1", "Q1"]
    with pytest.raises(CommandError, match=r"No queue 'NOPE' on broker 'QM1'"):
        run("display_queue", "QM1", "NOPE")
    with pytest.raises(CommandError, match=r"No broker named 'QMX'"):
        run("display_queue", "QMX")


def test_delete_queue(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(CommandError, match=r"holds messages; delete with purge.*\[not_empty\]"):
        run("delete_queue", "QM1", "Q1")
    assert Message.objects.count() == 1
    assert run("delete_queue", "QM1", "Q1", "--purge").out == "Queue 'Q1' deleted from broker 'QM1'.\n"
    assert not Queue.objects.filter(name="Q1").exists() and not Message.objects.exists()
    with pytest.raises(CommandError, match="dead-letter queue"):
        run("delete_queue", "QM1", "SYSTEM.DEAD.LETTER.QUEUE")
    with pytest.raises(CommandError, match=r"No queue 'Q1'"):
        run("delete_queue", "QM1", "Q1")


def test_delete_queue_refused_while_a_unit_of_work_holds_its_messages(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), syncpoint="yes")
    with pytest.raises(CommandError, match="open units of work"):
        run("delete_queue", "QM1", "Q1", "--purge")
    assert Queue.objects.filter(name="Q1").exists()


def test_quiet_verbosity_prints_nothing(broker):
    assert run("define_queue", "QM1", "Q9", verbosity=0).out == ""
    assert Queue.objects.filter(name="Q9").exists()


def test_attribute_options_as_call_command_keywords(broker):
    from django.core.management import call_command

    call_command("define_queue", "QM1", "KW", max_depth=3, put_enabled=False, stdout=io.StringIO())
    q = Queue.objects.get(name="KW")
    assert (q.max_depth, q.put_enabled) == (3, False)
