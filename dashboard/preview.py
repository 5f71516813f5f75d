"""The message browser's preview of a body: its first bytes shown as JSON, text or hex, cut
short. Only a prefix of the body is read (``PREVIEW_BYTES``, by the database); nothing is
decoded that could fail: a body that is not UTF-8 text (or holds control characters) is
shown as hex."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: The bytes of a body read for its preview.
PREVIEW_BYTES = 256
#: Characters of text or JSON shown; bytes shown as hex.
PREVIEW_CHARS = 80
PREVIEW_HEX_BYTES = 24

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Preview:
    kind: str  # json | text | hex | empty
    text: str
    #: Whether the preview shows less than the whole body.
    cut: bool


def _text(prefix: bytes, whole: bool) -> str | None:
    """The prefix as UTF-8 text, or None. A prefix cut inside a character loses that
    character's first bytes, not the verdict."""
    for drop in range(1 if whole else 4):
        try:
            return prefix[: len(prefix) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def body_preview(prefix: bytes, size: int) -> Preview:
    """The preview of a body of ``size`` bytes whose first bytes are ``prefix``."""
    prefix = bytes(prefix)
    if size == 0:
        return Preview("empty", "", False)
    whole = len(prefix) >= size
    text = _text(prefix, whole)
    if text is None or _CONTROL.search(text):
        shown = prefix[:PREVIEW_HEX_BYTES]
        return Preview("hex", shown.hex(" "), size > len(shown))
    kind = "text"
    if whole and text.lstrip()[:1] in ("{", "[", '"') or whole and text.strip() in ("true", "false", "null"):
        try:
            text = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
            kind = "json"
        except ValueError:
            pass
    text = _SPACE.sub(" ", text).strip()
    cut = not whole or len(text) > PREVIEW_CHARS
    return Preview(kind, text[:PREVIEW_CHARS], cut)
