"""The queue page's forms parsed where they enter (dashboard/forms.py): the put form's
message through ``MessageIn``, the purge form's count; what a person is told when wrong."""

from __future__ import annotations

import pytest

from baton_client.errors import InvalidInput
from dashboard.forms import purge_count, put_form

pytestmark = pytest.mark.once


def test_a_put_form_is_the_message_typed():
    message = put_form(body="héllo", priority=" 3", format=" json ", properties='{"colour": "red", "n": 1}')
    assert (message.body, message.priority, message.format) == ("héllo".encode(), 3, "json")
    assert message.properties == {"colour": "red", "n": 1} and message.persistence == "queue_default"
    blank = put_form(body="", priority=" ", format="", properties="  ")
    assert (blank.body, blank.priority, blank.format, blank.properties) == (b"", None, "", {})


@pytest.mark.parametrize(
    "fields, message, errors",
    [
        ({"priority": "high"}, "Priority must be a whole number from 0 to 9.", {"priority": ["Invalid."]}),
        ({"priority": "12"}, "The message is not valid.", {"priority": ["Must be a whole number from 0 to 9."]}),
        ({"properties": "{"}, "Properties must be a JSON object.", {"properties": ["Not JSON."]}),
        ({"properties": '{"n": NaN}'}, "Properties must be a JSON object.", {"properties": ["Not JSON."]}),
        ({"properties": "[1]"}, "The message is not valid.", None),
        ({"properties": '{"": 1}'}, "The message is not valid.", None),
        (
            {"format": "f" * 101},
            "The message is not valid.",
            {"format": ["Must be a string of at most 100 characters."]},
        ),
    ],
)
def test_a_bad_put_form_names_the_field(fields, message, errors):
    with pytest.raises(InvalidInput) as caught:
        put_form(body="x", **fields)
    assert (caught.value.status, caught.value.message) == (400, message)
    assert caught.value.errors == errors if errors else set(caught.value.errors) == {next(iter(fields))}


@pytest.mark.parametrize("text, count", [("0", 0), ("12", 12), (" 7 ", 7)])
def test_a_purge_count_is_a_whole_number_from_0(text, count):
    assert purge_count(text) == count


@pytest.mark.parametrize("text", ["-1", "many", "", "1.5"])
def test_a_purge_count_otherwise_is_refused(text):
    with pytest.raises(InvalidInput) as caught:
        purge_count(text)
    assert caught.value.message == "The count must not be negative." and caught.value.errors == {"count": ["Negative."]}
