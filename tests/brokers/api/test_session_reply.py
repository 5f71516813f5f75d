"""A session reply's text (brokers/api/session.py, ``reply_text``): the JSON the standard
library would write, compact, non-ASCII characters as themselves; what orjson refuses is
written by the standard library."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from brokers.api.session import reply_text

pytestmark = pytest.mark.once

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4))


@given(value=values)
def test_a_reply_decodes_to_what_it_encodes(value):
    body = {"re": 1, "status": 200, "value": value}
    text = reply_text(body)
    assert json.loads(text) == json.loads(json.dumps(body))


def test_a_reply_is_compact_and_keeps_non_ascii_characters():
    body = {"re": "a", "status": 201, "body": "na\u00efve \u2713 \U0001f600", "n": [1, 2.5, None, True]}
    assert reply_text(body) == '{"re":"a","status":201,"body":"na\u00efve \u2713 \U0001f600","n":[1,2.5,null,true]}'


@pytest.mark.parametrize("value", [2**70, {1: "int key"}, "lone \ud800 surrogate"])
def test_what_orjson_refuses_is_written_as_before(value):
    body = {"re": 1, "value": value}
    assert reply_text(body) == json.dumps(body, separators=(",", ":"), ensure_ascii=False)
