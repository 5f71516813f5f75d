"""The STOMP frame parser and writer (stomp_server/frames.py) against the specification."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from stomp_server.frames import Frame, FrameError, FrameParser, FrameTooLarge, frame_encode

pytestmark = pytest.mark.once

MAX = 1 << 20


def parse(data: bytes, *, version: str | None = "1.2", max_frame: int = MAX) -> list[Frame]:
    return FrameParser(max_frame=max_frame, version=version).feed(data)


def test_a_plain_frame_and_its_headers():
    [frame] = parse(b"SEND\ndestination:/queue/a\nx:1\n\nhello\0")
    assert (frame.command, frame.get("destination"), frame.get("x"), frame.body) == ("SEND", "/queue/a", "1", b"hello")


def test_escapes_per_version():
    raw = b"SEND\nk\\cey:a\\nb\\\\c\\rd\n\n\0"
    assert parse(raw)[0].headers == [("k:ey", "a\nb\\c\rd")]
    with pytest.raises(FrameError, match="escape"):  # \r is 1.2's
        parse(raw, version="1.1")
    assert parse(raw, version="1.0")[0].headers == [("k\\cey", "a\\nb\\\\c\\rd")]  # 1.0: no escaping
    with pytest.raises(FrameError, match="escape"):
        parse(b"SEND\na:\\t\n\n\0")


def test_connect_headers_are_not_unescaped():
    [frame] = parse(b"CONNECT\npasscode:a\\cb\n\n\0")
    assert frame.get("passcode") == "a\\cb"


def test_content_length_carries_nuls_and_the_first_repeated_header_wins():
    body = b"a\0b\0"
    [frame] = parse(b"SEND\ncontent-length:4\nfoo:first\nfoo:second\ncontent-length:1\n\n" + body + b"\0")
    assert frame.body == body and frame.get("foo") == "first"
    assert frame.headers[1:3] == [("foo", "first"), ("foo", "second")]


def test_values_are_not_trimmed_and_crlf_ends_lines_in_1_2():
    [frame] = parse(b"SEND\r\na: b \r\n\r\nx\0")
    assert frame.get("a") == " b " and frame.body == b"x"
    [frame] = parse(b"SEND\na:b\r\n\nx\0", version="1.1")
    assert frame.get("a") == "b\r"


def test_eols_between_frames_are_heart_beats():
    frames = parse(b"\n\r\n\nSEND\n\n1\0\n\r\n\nSEND\n\n2\0\n\n")
    assert [f.body for f in frames] == [b"1", b"2"]


def test_refusals():
    with pytest.raises(FrameError, match="Unknown command"):
        parse(b"FOO\n\n\0")
    with pytest.raises(FrameError, match="colon"):
        parse(b"SEND\nnocolon\n\n\0")
    with pytest.raises(FrameError, match="content-length"):
        parse(b"SEND\ncontent-length:x\n\n\0")
    with pytest.raises(FrameError, match="NUL"):
        parse(b"SEND\ncontent-length:1\n\nab\0")
    with pytest.raises(FrameError, match="UTF-8"):
        parse(b"SEND\na:\xff\n\n\0")


def test_the_size_limit_is_enforced_before_the_frame_is_read():
    with pytest.raises(FrameTooLarge):  # announced
        parse(b"SEND\ncontent-length:2000\n\n", max_frame=1000)
    parser = FrameParser(max_frame=1000, version="1.2")
    parser.feed(b"SEND\n\n" + b"x" * 900)
    with pytest.raises(FrameTooLarge):  # no content-length: as soon as it passes the limit
        parser.feed(b"x" * 200)
    with pytest.raises(FrameTooLarge):  # a head that never ends
        FrameParser(max_frame=1000).feed(b"SEND\n" + b"a:b\n" * 300)


def test_the_writer_adds_content_length_and_refuses_what_1_0_cannot_say():
    data = frame_encode(Frame("MESSAGE", [("a", "x:y")], b"\0"), version="1.2")
    assert data == b"MESSAGE\na:x\\cy\ncontent-length:1\n\n\0\0"
    with pytest.raises(FrameError):
        frame_encode(Frame("MESSAGE", [("a", "x\ny")]), version="1.0")


# --- properties ---------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_name = _text.filter(lambda s: s != "content-length")


@st.composite
def frames(draw, version: str = "1.2") -> Frame:
    command = draw(st.sampled_from(["SEND", "MESSAGE", "SUBSCRIBE", "ACK", "ERROR", "RECEIPT"]))
    headers = draw(st.lists(st.tuples(_name, _text), max_size=5))
    body = draw(st.binary(max_size=60))
    return Frame(command, headers, body)


def _expected(frame: Frame) -> tuple:
    headers = list(frame.headers)
    if frame.body:
        headers.append(("content-length", str(len(frame.body))))
    return frame.command, headers, frame.body


@settings(max_examples=150, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=4), st.sampled_from([b"", b"\n", b"\r\n\n"]))
def test_random_frames_round_trip(sent, between):
    data = between.join(frame_encode(f, version="1.2") for f in sent)
    got = parse(data)
    assert [(f.command, f.headers, f.body) for f in got] == [_expected(f) for f in sent]


@settings(max_examples=60, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=3), st.sampled_from(["1.1", "1.2"]))
def test_a_stream_split_at_every_byte_parses_the_same(sent, version):
    sent = (
        [Frame(f.command, [(n.replace("\r", ""), v.replace("\r", "")) for n, v in f.headers], f.body) for f in sent]
        if version == "1.1"
        else sent
    )
    data = b"\n".join(frame_encode(f, version=version) for f in sent)
    whole = parse(data, version=version)
    for cut in range(len(data) + 1):
        parser = FrameParser(max_frame=MAX, version=version)
        split = parser.feed(data[:cut]) + parser.feed(data[cut:])
        assert [(f.command, f.headers, f.body) for f in split] == [(f.command, f.headers, f.body) for f in whole]
    one = FrameParser(max_frame=MAX, version=version)
    assert [(f.command, f.headers, f.body) for b in data for f in one.feed(bytes([b]))] == [
        (f.command, f.headers, f.body) for f in whole
    ]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([None, "1.0", "1.1", "1.2"]))
def test_garbage_gets_an_error_never_a_crash_or_a_hang(data, version):
    parser = FrameParser(max_frame=256, version=version)
    try:
        for frame in parser.feed(data):
            assert isinstance(frame, Frame)
    except FrameError as exc:
        assert str(exc)
