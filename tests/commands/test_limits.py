"""Limits where input enters from the shell: each refusal names its error code, exits
non-zero and changes nothing (a put of many copies is all or none)."""

from __future__ import annotations

import io

import pytest
from django.core.management.base import CommandError
from django.test import override_settings

from brokers.models import Message
from brokers.services.queues import queue_alter
from transactions.models import Transaction

from .conftest import run

pytestmark = pytest.mark.django_db


def refused(code: str, *args, **options) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args, **options)
    assert str(caught.value).endswith(f"[{code}]"), str(caught.value)
    return str(caught.value)


@override_settings(BATON_MAX_MESSAGE_LENGTH=64)
def test_a_body_over_the_longest_message_is_message_too_large(queue):
    class Endless(io.RawIOBase):  # standard input that never ends: read only as far as the limit
        served = 0

        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[:] = b"x" * len(buffer)
            Endless.served += len(buffer)
            return len(buffer)

    refused("message_too_large", "put", "QM1", "Q1", stdin=io.BufferedReader(Endless()))
    assert Endless.served < 64 * 1024
    refused("message_too_large", "put", "QM1", "Q1", "y" * 65)
    assert run("put", "QM1", "Q1", "z" * 64).lines
    assert Message.objects.count() == 1


def test_too_many_copies_for_the_queue_puts_none(queue):
    queue_alter(broker="QM1", name="Q1", max_depth=5)
    refused("queue_full", "put", "QM1", "Q1", "many", "--count", "6")
    refused("queue_full", "put", "QM1", "Q1", "many", "--count", "2000")  # over one call: still one unit of work
    assert Message.objects.count() == 0
    assert not Transaction.objects.exclude(state="rolled_back").exists()


@override_settings(BATON_MAX_BATCH=5, BATON_MAX_WAIT_S=2)
def test_get_bounds_are_invalid_and_take_nothing(queue):
    run("put", "QM1", "Q1", "kept")
    refused("invalid", "get", "QM1", "Q1", "--batch", "6")
    refused("invalid", "get", "QM1", "Q1", "--wait", "3")
    refused("invalid", "get", "QM1", "Q1", "--msg-id", "not-hex")
    assert Message.objects.filter(get_transaction__isnull=True).count() == 1
    assert run("get", "QM1", "Q1", "--batch", "5").lines == ["kept"]


def test_definitions_out_of_range_are_invalid_and_define_nothing(broker):
    refused("invalid", "define_queue", "QM1", "BAD", "--max-depth", "-1")
    refused("invalid", "define_queue", "QM1", "BAD", "--max-depth", str(2**63))
    refused("invalid", "define_queue", "QM1", "X" * 49)
    assert "BAD" not in run("display_queue", "QM1", "*").out
