"""The client's errors say what to fix: an ``invalid`` answer's message names the first bad
field and its reason (all of them stay in ``errors``)."""

from __future__ import annotations

from baton_client.errors import InvalidInput, error_from_body

NAME = "Use 1 to 48 characters of A-Z a-z 0-9 . _ / % -."


def test_invalid_names_the_first_field_and_reason():
    body = {"code": "invalid", "message": "The request is not valid.", "errors": {"name": [NAME], "max_depth": ["x"]}}
    error = error_from_body(400, body)
    assert isinstance(error, InvalidInput)
    assert str(error) == error.message == f"The request is not valid. name: {NAME}"
    assert error.errors == body["errors"]


def test_a_message_that_already_says_it_is_kept():
    body = {"code": "invalid", "message": f"Bad. name: {NAME}", "errors": {"name": [NAME]}}
    assert error_from_body(400, body).message == f"Bad. name: {NAME}"
    assert error_from_body(404, {"code": "not_found", "message": "No queue 'Q'."}).message == "No queue 'Q'."
