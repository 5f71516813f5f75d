"""The browse filter's grammar, checked at the boundary (``MessageBrowse.Input``,
brokers/services/message_filter.py): what a filter parses to, and the 400 a bad one gets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.api.operations.messages import MessageBrowse
from brokers.services.message_filter import MessageFilter
from baton_client.errors import InvalidInput

pytestmark = pytest.mark.once

BODY_TEXT = "A body filter is 1 to 200 characters."
PROPERTY_TEXT = (
    "A property filter is name or name=value: the name 1 to 100 characters of A-Z a-z 0-9 _ . : -, "
    "the value at most 200 characters (no NUL)."
)


def parsed(**fields) -> MessageFilter:
    return MessageBrowse.parse({"broker": "QM1", "queue": "Q1", **fields}).message_filter()


def refusal(**fields) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        MessageBrowse.parse({"broker": "QM1", "queue": "Q1", **fields})
    return caught.value


names = st.text(alphabet="ABCXYZabcxyz019_.:-", min_size=1, max_size=100)
values = st.text(max_size=200).filter(lambda v: "\x00" not in v)


@given(name=names, value=values)
def test_a_property_filter_parses_to_its_name_and_value(name, value):
    assert parsed(property=f"{name}={value}") == MessageFilter(property_name=name, property_value=value)
    assert parsed(property=name) == MessageFilter(property_name=name)


@given(text=st.text(min_size=1, max_size=200))
def test_a_body_filter_is_the_utf8_bytes_of_its_text(text):
    assert parsed(body_contains=text).body_contains == text.encode("utf-8", "surrogatepass")


def test_blank_parts_are_no_filter():
    assert not parsed().active and not parsed(body_contains="", property="").active


@pytest.mark.parametrize(
    "fields",
    [{"body_contains": "x" * 201}, {"body_contains": "x" * 5000}],
)
def test_a_body_filter_too_long_is_told_so_at_any_length(fields):
    error = refusal(**fields)
    assert (error.status, error.code) == (400, "invalid")
    assert error.message == f"The message filter is not valid: {BODY_TEXT}"
    assert error.errors == {"body_contains": [BODY_TEXT]}


@pytest.mark.parametrize(
    "text", ["=1", "no such=thing", "k=a\x00b", "k=" + "v" * 201, "n" * 101, "k\n", "k\n=1", "x" * 5000]
)
def test_a_malformed_property_filter_is_told_so(text):
    error = refusal(property=text)
    assert error.message == f"The message filter is not valid: {PROPERTY_TEXT}"
    assert error.errors == {"property": [PROPERTY_TEXT]}


def test_both_parts_wrong_are_both_named_in_one_message():
    error = refusal(body_contains="x" * 201, property="=1")
    assert error.message == f"The message filter is not valid: {BODY_TEXT} {PROPERTY_TEXT}"
    assert error.errors == {"body_contains": [BODY_TEXT], "property": [PROPERTY_TEXT]}


def test_a_request_wrong_elsewhere_too_is_not_valid_and_names_every_field():
    error = refusal(property="=1", limit=0)
    assert error.message == "The request is not valid."
    assert set(error.errors) == {"property", "limit"} and error.errors["property"] == [PROPERTY_TEXT]
