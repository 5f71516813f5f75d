"""STOMP frames: an incremental parser and a writer, written against the STOMP 1.0, 1.1 and
1.2 specifications (https://stomp.github.io/).

- A frame is ``COMMAND EOL (name:value EOL)* EOL body NUL``, then any number of EOLs (heart-
  beats). EOL is LF; 1.2 also allows CRLF (the command line of the first frame, sent before
  any version is agreed, may end with CRLF too).
- Header names and values are escaped in 1.1 (``\\n``, ``\\c``, ``\\\\``) and 1.2 (also
  ``\\r``), except in CONNECT, STOMP and CONNECTED frames; 1.0 has no escaping. An undefined
  escape is an error. Values are never trimmed. Of repeated headers the first wins.
- With ``content-length`` the body is exactly that many bytes (it may hold NULs) and a NUL
  must follow; without it the body ends at the first NUL.
- Bytes may arrive split anywhere; a frame (head and body) longer than the size limit is
  refused as soon as that is known, without buffering the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Frames whose headers are never escaped.
UNESCAPED = frozenset({"CONNECT", "STOMP", "CONNECTED"})
CLIENT_COMMANDS = frozenset(
    {"CONNECT", "STOMP", "SEND", "SUBSCRIBE", "UNSUBSCRIBE", "ACK", "NACK", "BEGIN", "COMMIT", "ABORT", "DISCONNECT"}
)
SERVER_COMMANDS = frozenset({"CONNECTED", "MESSAGE", "RECEIPT", "ERROR"})
#: Longest head (command and headers) accepted, whatever the frame size limit.
MAX_HEAD = 64 * 1024
MAX_HEADERS = 1000

_ESCAPES = {
    "1.1": {"\\": "\\\\", "\n": "\\n", ":": "\\c"},
    "1.2": {"\\": "\\\\", "\n": "\\n", ":": "\\c", "\r": "\\r"},
}
_UNESCAPES = {version: {v[1]: k for k, v in table.items()} for version, table in _ESCAPES.items()}


class FrameError(Exception):
    """Bytes that are not a STOMP frame (the connection answers ERROR and closes)."""


class FrameTooLarge(FrameError):
    """A frame over the size limit."""


@dataclass
class Frame:
    command: str
    #: In order, repeated ones included (the first of a name is the one that counts).
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def get(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return default

    def __contains__(self, name: str) -> bool:
        return any(key == name for key, _ in self.headers)

    def as_dict(self) -> dict[str, str]:
        """Header name -> value, the first of repeated ones."""
        found: dict[str, str] = {}
        for key, value in self.headers:
            found.setdefault(key, value)
        return found


def _escape(text: str, version: str) -> str:
    table = _ESCAPES.get(version)
    if table is None:  # 1.0: no escaping; what cannot be written is refused
        if "\n" in text or "\r" in text:
            raise FrameError("A STOMP 1.0 header cannot hold a line break.")
        return text
    if "\\" not in text and "\n" not in text and ":" not in text and "\r" not in text:
        return text  # the usual case, checked without a loop in Python
    return "".join(table.get(c, c) for c in text)


def _unescape(text: str, version: str) -> str:
    if "\\" not in text:
        return text
    table = _UNESCAPES[version]
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            if nxt not in table:
                raise FrameError(f"Undefined escape sequence \\{nxt} in a header (STOMP {version}).")
            out.append(table[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def frame_encode(frame: Frame, *, version: str = "1.2") -> bytes:
    """The frame's bytes for ``version``. A body with a NUL, or any body, gets
    ``content-length`` unless the headers give one."""
    escaped = version in _ESCAPES and frame.command not in UNESCAPED
    lines = [frame.command]
    has_length = False
    for name, value in frame.headers:
        if name == "content-length":
            has_length = True
        if escaped:
            lines.append(f"{_escape(name, version)}:{_escape(value, version)}")
        else:
            if "\n" in name or "\n" in value or ":" in name or "\r" in name or "\r" in value:
                raise FrameError(f"The {frame.command} header {name!r} cannot be written unescaped.")
            lines.append(f"{name}:{value}")
    if frame.body and not has_length:
        lines.append(f"content-length:{len(frame.body)}")
    return ("\n".join(lines) + "\n\n").encode("utf-8") + frame.body + b"\0"


class FrameParser:
    """Feed it bytes as they arrive; it returns the frames they complete.

    ``version`` (None until negotiated) decides escaping and whether CRLF ends a line.
    ``max_frame`` bounds a frame's bytes (head and body)."""

    def __init__(self, *, max_frame: int, version: str | None = None) -> None:
        self.max_frame = max_frame
        self.version = version
        self._buf = bytearray()
        self._scan = 0  # where the search for the end of the head (or body) resumes
        self._head: tuple[str, list[tuple[str, str]], int | None] | None = None
        self._body_start = 0

    def feed(self, data: bytes) -> list[Frame]:
        """Push ``data`` and pop every frame it completes."""
        self.push(data)
        frames: list[Frame] = []
        while (frame := self.pop()) is not None:
            frames.append(frame)
        return frames

    def push(self, data: bytes) -> None:
        self._buf += data

    def pop(self) -> Frame | None:
        """The next complete frame, or None. The caller may change ``version`` between
        frames (after CONNECT)."""
        return self._next()

    def _crlf(self) -> bool:
        return self.version in (None, "1.2")

    def _next(self) -> Frame | None:
        buf = self._buf
        if self._head is None:
            # heart-beats and the EOLs that may follow a frame's NUL
            skip = 0
            while skip < len(buf):
                if buf[skip] == 0x0A:
                    skip += 1
                elif buf[skip] == 0x0D and self._crlf():
                    if skip + 1 == len(buf):
                        break
                    if buf[skip + 1] != 0x0A:
                        raise FrameError("A CR not followed by LF between frames.")
                    skip += 2
                else:
                    break
            if skip:
                del buf[:skip]
                self._scan = 0
            if not buf or (len(buf) == 1 and buf[0] == 0x0D):
                return None
            end = buf.find(b"\n\n", self._scan)
            # a head ending in CRLF counts only before the first LF LF (bounded: never a scan
            # of the frames and bodies queued behind this one)
            bound = len(buf) if end == -1 else end + 2
            end_crlf = buf.find(b"\n\r\n", self._scan, bound) if self._crlf() else -1
            if end_crlf != -1 and (end == -1 or end_crlf < end):
                head_end, body_start = end_crlf, end_crlf + 3
            elif end != -1:
                head_end, body_start = end, end + 2
            else:
                if len(buf) > min(MAX_HEAD, self.max_frame):
                    raise FrameTooLarge(f"A frame's head is longer than {min(MAX_HEAD, self.max_frame)} bytes.")
                self._scan = max(0, len(buf) - 3)
                return None
            if head_end > min(MAX_HEAD, self.max_frame):
                raise FrameTooLarge(f"A frame's head is longer than {min(MAX_HEAD, self.max_frame)} bytes.")
            self._head = self._parse_head(bytes(buf[:head_end]))
            self._body_start = body_start
            self._scan = body_start
        command, headers, length = self._head
        start = self._body_start
        if length is not None:
            if start + length > self.max_frame:
                raise FrameTooLarge(f"A frame is larger than the {self.max_frame} bytes accepted.")
            if len(buf) < start + length + 1:
                return None
            if buf[start + length] != 0:
                raise FrameError("The body is not followed by a NUL where its content-length says it ends.")
            body = bytes(buf[start : start + length])
            end = start + length + 1
        else:
            nul = buf.find(b"\0", self._scan)
            if nul == -1:
                if len(buf) > self.max_frame:
                    raise FrameTooLarge(f"A frame is larger than the {self.max_frame} bytes accepted.")
                self._scan = len(buf)
                return None
            if nul > self.max_frame:
                raise FrameTooLarge(f"A frame is larger than the {self.max_frame} bytes accepted.")
            body = bytes(buf[start:nul])
            end = nul + 1
        del buf[:end]
        self._head = None
        self._scan = 0
        return Frame(command, headers, body)

    def _parse_head(self, head: bytes) -> tuple[str, list[tuple[str, str]], int | None]:
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError("A frame's command and headers must be UTF-8.") from None
        lines = text.split("\n")
        command = lines[0]
        if command.endswith("\r"):  # the first frame's, or any in 1.2
            if self.version not in (None, "1.2"):
                raise FrameError("A CR in the command line.")
            command = command[:-1]
        if command not in CLIENT_COMMANDS and command not in SERVER_COMMANDS:
            raise FrameError(f"Unknown command {command[:40]!r}.")
        if len(lines) - 1 > MAX_HEADERS:
            raise FrameError(f"More than {MAX_HEADERS} headers.")
        escaped = self.version in _ESCAPES and command not in UNESCAPED
        crlf = self.version == "1.2" or (self.version is None and command in UNESCAPED)
        headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            if crlf and line.endswith("\r"):
                line = line[:-1]
            name, colon, value = line.partition(":")
            if not colon:
                raise FrameError(f"A header line without a colon: {line[:40]!r}.")
            if escaped:
                name, value = _unescape(name, self.version), _unescape(value, self.version)
            headers.append((name, value))
        length = None
        for name, value in headers:
            if name == "content-length":  # the first wins
                if not value.isascii() or not value.isdigit():
                    raise FrameError(f"content-length must be a whole number of bytes, not {value[:40]!r}.")
                length = int(value)
                if length > self.max_frame:
                    raise FrameTooLarge(
                        f"A frame is larger than the {self.max_frame} bytes accepted (content-length {length})."
                    )
                break
        return command, headers, length
