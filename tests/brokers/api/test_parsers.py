"""The session's request decoding: ``json_request_loads`` decodes as ``json_strict_loads``
does, and says a request needs no ``json_storable`` walk only when the walk would find
nothing (brokers/api/parsers.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from brokers.api.parsers import MAX_DEPTH, json_request_loads, json_storable, json_strict_loads
from baton_client.errors import InvalidInput

pytestmark = pytest.mark.once

texts = st.text(alphabet=st.characters(codec=None, categories=None), max_size=20) | st.sampled_from(
    ["", "a\x00b", "\ud800", "x\udfff", "\\u0000", "plain"]
)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4), max_leaves=40
)


def _walk_passes(data) -> bool:
    try:
        json_storable(data)
    except (InvalidInput, RecursionError):
        return False
    return True


@given(value=values, ensure_ascii=st.booleans(), big=st.sampled_from([None, "1e400", "-1e999", "1.5e308"]))
def test_a_request_skips_the_walk_only_when_the_walk_would_pass(value, ensure_ascii, big):
    text = json.dumps({"v": value, "n": 0}, ensure_ascii=ensure_ascii)
    if big is not None:
        text = text.replace('"n": 0', f'"n": {big}')
    data, storable = json_request_loads(text)
    assert data == json_strict_loads(text)
    if storable:
        assert _walk_passes(data)


@pytest.mark.parametrize(
    "text",
    [
        '{"body": "\\u0000"}',  # NUL in a body: storable (as bytes), but only the walk knows
        '{"format": "\\u0000"}',
        '{"body": "\\ud800"}',
        '{"wait": 1e400}',
        '{"wait": -1e400}',
        "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2),
        '{"id": 1, "k": "\ud800"}',
    ],
)
def test_text_that_may_hold_what_no_database_stores_is_walked(text):
    _, storable = json_request_loads(text)
    assert storable is False


def test_plain_requests_are_not_walked():
    text = json.dumps({"id": 1, "op": "put", "broker": "B", "queue": "Q", "body": "x" * 1024, "wait": 0.5})
    assert json_request_loads(text) == (json.loads(text), True)


@pytest.mark.parametrize("text", ["NaN", '{"wait": Infinity}', "[-Infinity]", "{", ""])
def test_what_is_not_json_is_refused_alike(text):
    with pytest.raises(ValueError):
        json_strict_loads(text)
    with pytest.raises(ValueError):
        json_request_loads(text)


@pytest.mark.parametrize("body", ["x" * 1024, "na\u00efve \u2713 \U0001f600 " * 30, "back\\slash"])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_a_batch_is_not_walked(body, ensure_ascii):
    """A put of 100 messages has over a hundred brackets but nests three deep: no walk,
    whether its text is ASCII or not, unless it escapes a character as ``\\u``."""
    request = {"id": 1, "op": "put", "messages": [{"body": body, "properties": {"k": [1]}}] * 100}
    text = json.dumps(request, ensure_ascii=ensure_ascii)
    escaped = "\\u" in text
    assert json_request_loads(text) == (request, not escaped)
    assert escaped == (ensure_ascii and not body.isascii())


def _nest(depth: int, leaf, siblings: int) -> object:
    """``leaf`` at ``depth`` (the outermost value at 0) inside lists, each list with
    ``siblings`` empty objects beside it, so the text has many brackets at any depth."""
    value = leaf
    for _ in range(depth):
        value = [value] + [{} for _ in range(siblings)]
    return value


@given(
    depth=st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3),
    leaf=st.sampled_from([0, "s", [], {}, [1], {"k": None}]),
    siblings=st.integers(min_value=0, max_value=3),
)
def test_deep_batches_skip_the_walk_only_when_the_walk_would_pass(depth, leaf, siblings):
    text = json.dumps(_nest(depth, leaf, siblings))
    data, storable = json_request_loads(text)
    assert data == json.loads(text)
    assert storable == _walk_passes(data)
