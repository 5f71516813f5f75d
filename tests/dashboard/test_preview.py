"""The message browser's body preview: JSON, text or hex, cut short, never a decoding error."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from dashboard.preview import PREVIEW_BYTES, PREVIEW_CHARS, PREVIEW_HEX_BYTES, body_preview

pytestmark = pytest.mark.once


def preview(body: bytes):
    return body_preview(body[:PREVIEW_BYTES], len(body))


def test_json_is_shown_compact():
    p = preview(b'{\n  "a": [1, 2],\n  "b": "\xc3\xa9"\n}')
    assert (p.kind, p.text, p.cut) == ("json", '{"a":[1,2],"b":"é"}', False)


def test_text_is_shown_on_one_line_and_cut_short():
    p = preview(b"hello\n  world")
    assert (p.kind, p.text, p.cut) == ("text", "hello world", False)
    long = preview(("x" * 1000).encode())
    assert (long.kind, long.text, long.cut) == ("text", "x" * PREVIEW_CHARS, True)


def test_a_long_json_body_read_in_part_is_text():
    p = preview(b'{"k": "' + b"v" * 1000 + b'"}')
    assert p.kind == "text" and p.text.startswith('{"k": "vvv') and p.cut


def test_binary_is_hex_and_a_prefix_cut_inside_a_character_is_still_text():
    p = preview(b"\xff\x00\x01binary")
    assert (p.kind, p.text, p.cut) == ("hex", "ff 00 01 62 69 6e 61 72 79", False)
    assert preview(b"\x00" * 100).text == " ".join(["00"] * PREVIEW_HEX_BYTES)
    # 'é' is two bytes: the prefix read ends between them
    cut = body_preview(("a" * (PREVIEW_BYTES - 1) + "é").encode()[:PREVIEW_BYTES], PREVIEW_BYTES + 1)
    assert cut.kind == "text" and cut.cut


def test_an_empty_body():
    assert preview(b"") == body_preview(b"", 0) and preview(b"").kind == "empty"


@given(st.binary(max_size=600))
def test_any_body_has_a_preview_and_no_error(body):
    p = preview(body)
    assert p.kind in ("json", "text", "hex", "empty")
    assert len(p.text) <= max(PREVIEW_CHARS, PREVIEW_HEX_BYTES * 3)
    if p.kind == "hex":
        assert bytes.fromhex(p.text.replace(" ", "")) == body[:PREVIEW_HEX_BYTES]
