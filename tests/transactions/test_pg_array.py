"""``transactions.queries.pg_array``: the text form of an array the hot path sends for a
``%s::type[]`` parameter on PostgreSQL instead of the driver's own list adaptation, and
``pg_scalar``, the same for one value and a ``%s::type`` parameter (a put's shared columns).
What the server reads back must be the values given, whatever characters they hold."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection

from transactions.models import JournalKind
from transactions.queries import pg_array, pg_scalar

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's array input"),
]


@pytest.fixture(params=["array", "scalar"])
def _read(request):
    """The values read back through one array, or one scalar each."""

    def read(sql_type: str, values: list):
        with connection.cursor() as c:
            if request.param == "array":
                c.execute(f"SELECT %s::{sql_type}[]", [pg_array(values)])
                return c.fetchone()[0]
            got = []
            for value in values:
                c.execute(f"SELECT %s::{sql_type}", [pg_scalar(value)])
                got.append(c.fetchone()[0])
            return got

    return read


def test_text_reads_back_as_given(_read):
    values = ['"quoted"', "back\\slash", "{braces},comma", "naïve ünïcode", "NULL", "", " spaced ", None, "'single'"]
    assert _read("text", values) == values


def test_a_choice_is_written_as_its_value(_read):
    assert _read("text", [JournalKind.BEGIN]) == ["begin"]


def test_numbers_and_flags_read_back_as_given(_read):
    assert _read("bigint", [0, -1, 2**62, None]) == [0, -1, 2**62, None]
    assert _read("boolean", [True, False, None]) == [True, False, None]


def test_bytes_read_back_as_given(_read):
    values = [b"", b"\x00\xff\\\"'", bytes(range(256)) * 4, None]
    assert [None if v is None else bytes(v) for v in _read("bytea", values)] == values


def test_ascii_bytes_read_back_as_given_whatever_their_backslashes_and_quotes(_read):
    """ASCII without a NUL goes in bytea's escape form (the bytes themselves, backslashes
    doubled); a value that looks like the hex form or an octal escape stays itself."""
    values = [
        b"plain text body",
        b"\\x41\\x42",  # the hex form's prefix, as text
        b"\\101 octal, \\\\ two, \\ one",
        b"\"quoted\", {braces}, comma, 'single'",
        b"\x01\x1f\x7f\ttab\nnewline\r",
        b"\\",
        b"ends with a backslash \\",
        b"NULL",
        b" ",
    ]
    assert [bytes(v) for v in _read("bytea", values)] == values
    # sent as the bytes themselves (half the hex form's length)
    assert pg_array([b"abc"]) == '{"abc"}' and pg_scalar(b"a\\b") == "a\\\\b"
    assert pg_scalar(b"caf\xc3\xa9") == "\\x636166c3a9"  # not ASCII: the hex form


def test_aware_times_read_back_as_the_same_instant(_read):
    now = datetime(2026, 11, 27, 18, 30, 1, 123456, tzinfo=timezone.utc)
    other = now.astimezone(timezone(timedelta(hours=-5)))
    assert _read("timestamptz", [now, other, None]) == [now, now, None]


def test_json_text_reads_back_as_the_same_document(_read):
    read = _read("jsonb", ['{"a": "x\\"y", "b": [1, 2]}', "[]", None])  # Django reads jsonb as its text
    assert [None if v is None else json.loads(v) if isinstance(v, str) else v for v in read] == [
        {"a": 'x"y', "b": [1, 2]},
        [],
        None,
    ]


def test_what_it_has_no_form_for_is_refused():
    with pytest.raises(TypeError):
        pg_array([1.5])
    with pytest.raises(TypeError):
        pg_array([datetime(2026, 1, 1)])  # naive: no instant
    with pytest.raises(TypeError):
        pg_scalar(1.5)
    with pytest.raises(TypeError):
        pg_scalar(datetime(2026, 1, 1))
