"""put, get and browse from the shell, run in-process."""

from __future__ import annotations

import base64
import io
import json
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from brokers.models import Message, put_open_q
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import msgs
from transactions.models import Transaction, TransactionState

from .conftest import run

CORREL = "ab" * 24


def on_queue(name: str = "Q1") -> list[bytes]:
    return [bytes(m.body) for m in Message.objects.filter(queue__name=name).order_by("id")]


# --- put --------------------------------------------------------------------------------


def test_put_body_argument_prints_its_msg_id(queue):
    ran = run("put", "QM1", "Q1", "hello")
    [msg_id] = ran.lines
    m = Message.objects.get()
    assert (m.msg_id, bytes(m.body), m.put_transaction_id, m.put_application) == (
        msg_id,
        b"hello",
        None,
        "manage.py put",
    )


def test_put_reads_stdin_bytes_as_they_are(queue, monkeypatch):
    raw = b"\x00\xffbinary\r\nline\n"
    run("put", "QM1", "Q1", stdin=io.BytesIO(raw))  # absent body: stdin
    run("put", "QM1", "Q1", "-", stdin=io.BytesIO(b"dash"))  # '-': stdin
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xfe\xfftext\n")))
    run("put", "QM1", "Q1")  # sys.stdin's byte buffer, not its text
    assert on_queue() == [raw, b"dash", b"\xfe\xfftext\n"]


def test_put_descriptor_options(queue):
    [msg_id] = run(
        "put",
        "QM1",
        "Q1",
        "body",
        "--priority",
        "7",
        "--persistence",
        "non_persistent",
        "--expiry-ms",
        "60000",
        "--correl-id",
        CORREL.upper(),
        "--format",
        "text/plain",
        "--reply-to-queue",
        "REPLY",
        "--reply-to-broker",
        "QM2",
        "--msg-type",
        "request",
        "--property",
        "colour=blue",
        "--property",
        "size=",
        "--property",
        "eq=a=b",
        "--report",
        "coa,cod",
        "--report",
        "expiry",
    ).lines
    m = Message.objects.get(msg_id=msg_id)
    assert (m.priority, m.persistent, m.correl_id, m.format, m.reply_to_queue, m.reply_to_broker, m.msg_type) == (
        7,
        False,
        CORREL,
        "text/plain",
        "REPLY",
        "QM2",
        "request",
    )
    assert m.expires_at is not None
    assert m.properties == {"colour": "blue", "size": "", "eq": "a=b"}
    assert m.report == ["coa", "cod", "expiry"]


def test_put_count_puts_copies(queue):
    ids = run("put", "QM1", "Q1", "copy", "--count", "3", "--property", "k=v").lines
    assert len(ids) == len(set(ids)) == 3
    assert sorted(Message.objects.values_list("msg_id", flat=True)) == sorted(ids)
    assert on_queue() == [b"copy"] * 3


def test_put_syncpoint_commits_one_unit_of_work(queue):
    ids = run("put", "QM1", "Q1", "uow", "--count", "2", "--syncpoint").lines
    assert len(ids) == 2
    assert not Message.objects.filter(put_open_q()).exists()
    [txn] = Transaction.objects.all()
    assert txn.state == TransactionState.COMMITTED
    assert on_queue() == [b"uow", b"uow"]


def test_put_more_than_a_batch_is_all_or_nothing(broker, settings):
    settings.BATON_MAX_BATCH = 2
    queue_define(broker="QM1", name="SMALL", max_depth=4)
    with pytest.raises(CommandError, match=r"\[queue_full\]"):
        run("put", "QM1", "SMALL", "x", "--count", "5")  # the third call would not fit
    assert on_queue("SMALL") == []
    assert Transaction.objects.get().state == TransactionState.ROLLED_BACK
    assert len(run("put", "QM1", "SMALL", "x", "--count", "4").lines) == 4
    assert on_queue("SMALL") == [b"x"] * 4


@pytest.mark.parametrize(
    "args, error",
    [
        (["--priority", "12"], r"priority: Must be a whole number from 0 to 9. \[invalid\]"),
        (["--correl-id", "nothex"], r"correl_id: Must be 48 hexadecimal characters"),
        (["--persistence", "forever"], r"persistence: Must be persistent, non_persistent or queue_default"),
        (["--report", "coa"], r"reply_to_queue: Reports need a reply-to queue"),
        (["--property", "novalue"], r"--property takes key=value, not 'novalue'"),
        (["--count", "0"], r"--count must be at least 1"),
    ],
)
def test_put_refuses_bad_options_and_puts_nothing(queue, args, error):
    with pytest.raises(CommandError, match=error) as exc:
        run("put", "QM1", "Q1", "body", *args)
    assert "\n" not in str(exc.value)
    assert not Message.objects.exists()


def test_put_refusals_from_the_queue(queue):
    queue_define(broker="QM1", name="OFF", put_enabled=False)
    with pytest.raises(CommandError, match=r"Puts are disabled on queue 'OFF'. \[put_inhibited\]"):
        run("put", "QM1", "OFF", "x")
    with pytest.raises(CommandError, match=r"No queue 'NOPE' on broker 'QM1'. \[not_found\]"):
        run("put", "QM1", "NOPE", "x")
    queue_define(broker="QM1", name="TINY", max_message_length=3)
    with pytest.raises(CommandError, match=r"\[message_too_large\]"):
        run("put", "QM1", "TINY", "four")
    assert not Message.objects.exists()


# --- get --------------------------------------------------------------------------------


def test_get_prints_bodies_and_removes_them(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("one", "two\n", "three"))
    assert run("get", "QM1", "Q1").out == "one\n"
    assert run("get", "QM1", "Q1", "--batch", "5").out == "two\nthree\n"
    assert not Message.objects.exists()
    assert Transaction.objects.filter(state=TransactionState.COMMITTED).count() == 2


def test_get_empty_queue_exits_1_with_the_reason(queue):
    with pytest.raises(CommandError) as exc:
        run("get", "QM1", "Q1", "--wait", "0.1")
    assert exc.value.returncode == 1
    assert str(exc.value) == "No message available on queue 'Q1' on broker 'QM1' after waiting 0.1 s. [empty]"


def test_get_errors_exit_2(queue):
    with pytest.raises(CommandError, match=r"No queue 'NOPE'") as exc:
        run("get", "QM1", "NOPE")
    assert exc.value.returncode == 2
    with pytest.raises(CommandError, match=r"batch: Ensure this value is greater than or equal to 1") as exc:
        run("get", "QM1", "Q1", "--batch", "0")
    assert exc.value.returncode == 2


@pytest.mark.parametrize(
    "args, error",
    [
        (["--wait", "-1"], r"wait: Ensure this value is greater than or equal to 0\."),
        (["--batch", "1001"], r"batch: At most 1000"),
        (["--correl-id", "nothex"], r"correl_id: Must be 48 hexadecimal characters"),
        (["--msg-id", "0" * 49], r"msg_id: Must be 48 hexadecimal characters"),
    ],
)
def test_get_refuses_bad_options_as_rest_does(queue, args, error):
    message_put(broker="QM1", queue="Q1", messages=msgs("stays"))
    with pytest.raises(CommandError, match=error + r".* \[invalid\]$") as exc:
        run("get", "QM1", "Q1", *args)
    assert exc.value.returncode == 2
    assert on_queue() == [b"stays"]
    assert not Transaction.objects.exists()


def test_get_matches_an_id_given_in_upper_case(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("plain"))
    [wanted] = run("put", "QM1", "Q1", "reply", "--correl-id", CORREL.upper()).lines
    assert run("get", "QM1", "Q1", "--msg-id", wanted.upper()).out == "reply\n"


def test_get_json_and_base64(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("text", priority=3))
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"\x00\xff")])
    lines = run("get", "QM1", "Q1", "--json").lines
    [data] = [json.loads(line) for line in lines]
    assert (data["body"], data["priority"], data["queue"], data["broker"]) == ("text", 3, "Q1", "QM1")
    assert base64.b64decode(run("get", "QM1", "Q1", "--base64").out.strip()) == b"\x00\xff"
    with pytest.raises(CommandError):
        run("get", "QM1", "Q1", "--json", "--base64")


def test_get_matching_ids(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("plain"))
    [wanted] = run("put", "QM1", "Q1", "reply", "--correl-id", CORREL).lines
    assert run("get", "QM1", "Q1", "--correl-id", CORREL).out == "reply\n"
    with pytest.raises(CommandError, match=r"matches the ids given. \[no_match\]") as exc:
        run("get", "QM1", "Q1", "--msg-id", wanted)
    assert exc.value.returncode == 1
    [other] = Message.objects.values_list("msg_id", flat=True)
    assert run("get", "QM1", "Q1", "--msg-id", other).out == "plain\n"


def test_get_leaves_a_body_it_cannot_print_as_text_on_the_queue(queue):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"\xff\xfe")])
    with pytest.raises(CommandError, match="not UTF-8 text; get it with --base64 or --json") as exc:
        run("get", "QM1", "Q1")
    assert exc.value.returncode == 2
    m = Message.objects.get()
    assert (m.get_transaction_id, m.backout_count) == (None, 1)


class BrokenPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError("reader went away")


def test_get_puts_messages_back_when_printing_fails(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("keep"))
    with pytest.raises(BrokenPipeError):
        call_command("get", "QM1", "Q1", stdout=BrokenPipe(), stderr=io.StringIO())
    m = Message.objects.get()
    assert (bytes(m.body), m.get_transaction_id) == (b"keep", None)
    assert run("get", "QM1", "Q1").out == "keep\n"


# --- browse -----------------------------------------------------------------------------


def test_browse_shows_without_removing(queue):
    ids = [m.msg_id for m in message_put(broker="QM1", queue="Q1", messages=msgs("first", "two\nlines")).messages]
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"\xff")])
    lines = run("browse", "QM1", "Q1").lines
    assert lines[0].split() == ["MSG_ID", "PRIORITY", "PERSISTENCE", "PUT_TIME", "LENGTH", "BODY"]
    assert [line.split()[0] for line in lines[1:3]] == ids
    assert lines[1].split()[-2:] == ["5", "first"]
    assert lines[2].split()[-2:] == ["9", "two\\nlines"]
    assert lines[3].split()[-2:] == ["1", "<binary>"]

    data = [json.loads(line) for line in run("browse", "QM1", "Q1", "--json").lines]
    assert [d["body_base64"] for d in data] == [
        base64.b64encode(b).decode() for b in (b"first", b"two\nlines", b"\xff")
    ]
    assert Message.objects.count() == 3


def test_browse_limit_pages_and_says_when_more_follow(queue, settings):
    settings.BATON_MAX_BATCH = 2
    for body in "abcde":
        message_put(broker="QM1", queue="Q1", messages=msgs(body))
    four = run("browse", "QM1", "Q1", "--limit", "4", "--json")
    assert [json.loads(line)["body"] for line in four.lines] == ["a", "b", "c", "d"]
    assert "More messages follow" in four.err
    every = run("browse", "QM1", "Q1", "--limit", "5", "--json")
    assert len(every.lines) == 5 and every.err == ""


def test_browse_ordered_includes_in_flight_messages(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    message_get(broker="QM1", queue="Q1", syncpoint="yes")  # a: in flight
    assert [json.loads(line)["body"] for line in run("browse", "QM1", "Q1", "--json").lines] == ["b"]
    assert [json.loads(line)["body"] for line in run("browse", "QM1", "Q1", "--ordered", "--json").lines] == ["a", "b"]


def test_browse_filters_as_rest_does_and_refuses_a_bad_filter_with_its_reason(queue):
    message_put(
        broker="QM1",
        queue="Q1",
        messages=[MessageInput(body=f"order {i}".encode(), properties={"n": i}) for i in range(4)],
    )
    assert run("browse", "QM1", "Q1", "--property", "n=2", "--json").lines == [
        line for line in run("browse", "QM1", "Q1", "--json").lines if json.loads(line)["body"] == "order 2"
    ]
    matched = run("baton", "browse", "QM1", "Q1", "--body-contains", "der 3", "--property", "n", "--json")
    assert [json.loads(line)["body"] for line in matched.lines] == ["order 3"]
    none = run("browse", "QM1", "Q1", "--body-contains", "nowhere")
    assert none.out == "" and "No message on queue 'Q1' of broker 'QM1' matches the filter." in none.err
    with pytest.raises(CommandError) as caught:
        run("browse", "QM1", "Q1", "--property", "=1")
    assert str(caught.value) == (
        "The message filter is not valid: A property filter is name or name=value: the name 1 to 100 characters "
        "of A-Z a-z 0-9 _ . : -, the value at most 200 characters (no NUL). [invalid]"
    )
    with pytest.raises(CommandError, match=r"^The message filter is not valid: A body filter is 1 to 200 characters. "):
        run("browse", "QM1", "Q1", "--body-contains", "x" * 201)


def test_browse_empty_and_errors(queue):
    ran = run("browse", "QM1", "Q1")
    assert ran.out == "" and "No messages to browse on queue 'Q1'" in ran.err
    with pytest.raises(CommandError, match=r"No queue 'NOPE'"):
        run("browse", "QM1", "NOPE")
    with pytest.raises(CommandError, match="--limit must be at least 1"):
        run("browse", "QM1", "Q1", "--limit", "0")
    with pytest.raises(CommandError, match=r"queue: Ensure this value has at most 48 characters. \[invalid\]"):
        run("browse", "QM1", "Q" * 49)  # as REST refuses the name, not as an unknown queue
