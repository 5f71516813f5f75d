"""The API's JSON parser: JSON as DRF parses it, refusing strings that no database can store.

JSON may carry ``\\u0000`` and unpaired surrogate escapes (``\\ud800``). A lone surrogate
cannot be encoded as UTF-8 at all (SQLite and PostgreSQL both fail, as does turning a
message body into bytes), and PostgreSQL refuses NUL in text and in jsonb. Without this
they surface as 500s deep in the services; here they are 400 ``invalid`` naming the field.
So is JSON nested deeper than ``MAX_DEPTH`` (the decoder itself would fail with a RecursionError),
and a number that is not finite: ``NaN`` and ``Infinity`` are not JSON (:func:`json_strict_loads`
refuses them), and ``1e400`` decodes as infinity.
A message's ``body`` (top level, or in ``messages``) may hold NUL: it is stored as bytes.
An object that names a key twice is 400 ``invalid`` too (``DuplicateKey``): the JSON
specification leaves its meaning open, and a proxy that keeps the first where the decoder
keeps the last would read another request than the one applied. REST bodies and session
frames both decode through :func:`json_strict_loads` / :func:`json_request_loads`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from baton_client.errors import InvalidInput

_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL_OR_SURROGATE = re.compile("[\x00\ud800-\udfff]")


def _problem(text: str, *, nul_allowed: bool) -> str | None:
    found = (_SURROGATE if nul_allowed else _NUL_OR_SURROGATE).search(text)
    if found is None:
        return None
    return "Must not contain NUL characters." if found.group() == "\x00" else "Not valid Unicode (a lone surrogate)."


#: Deepest nesting of arrays and objects a request may have (the API's own bodies go three
#: deep); deeper JSON is 400 ``invalid``, as is JSON too deep for the decoder itself.
MAX_DEPTH = 32


def _too_deep() -> InvalidInput:
    return InvalidInput(
        f"The request body nests arrays and objects more than {MAX_DEPTH} levels deep.",
        errors={"body": ["Nested too deeply."]},
    )


def _checked(value: Any, where: str, errors: dict[str, list[str]], *, body: bool = False, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _too_deep()
    if isinstance(value, str):
        if problem := _problem(value, nul_allowed=body):
            errors.setdefault(where or "body", []).append(problem)
    elif isinstance(value, float):
        if not math.isfinite(value):  # 1e400 decodes as infinity: not a number JSON has
            errors.setdefault(where or "body", []).append("Must be a finite number.")
    elif isinstance(value, dict):
        top = where == ""
        for key, item in value.items():
            name = f"{where}.{key}" if where else key
            if problem := _problem(key, nul_allowed=False):
                # named with the bad characters escaped: the error body must itself be UTF-8
                shown = name.encode("utf-8", "backslashreplace").decode()
                errors.setdefault(shown, []).append(f"Field name: {problem}")
                continue
            is_body = key == "body" and (top or re.fullmatch(r"messages\[\d+\]", where) is not None)
            _checked(item, name, errors, body=is_body, depth=depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _checked(item, f"{where}[{index}]", errors, depth=depth + 1)


class DuplicateKey(InvalidInput, ValueError):
    """A JSON object names a key twice. An ``InvalidInput`` (400 ``invalid``) that is also
    a ValueError, as every other fault of the JSON text is to its decoder's callers."""


def _pairs_unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The decoder's ``object_pairs_hook``: the object, unless a key comes twice. One
    dict() and one len() in C per object, about 0.5 us each (measured on a loaded 2-core
    machine: a one-put session frame decodes in 4.3 us against 3.3 us without the check, a
    one-get frame 4.4 against 4.1, a 100-message put frame with a property each 151 against
    41 us, beside the milliseconds its put takes)."""
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    seen: set[str] = set()
    twice = next(key for key, _ in pairs if key in seen or seen.add(key))
    shown = twice.encode("utf-8", "backslashreplace").decode()  # the error body must itself be UTF-8
    raise DuplicateKey(
        f"A JSON object names {shown!r} more than once: each key may be given once.",
        errors={shown: ["Given more than once."]},
    )


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _NotFinite(Exception):
    """A number too large for a float (``1e400``): the text needs :func:`json_storable`."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite
    return value


# made once: ``json.loads`` with arguments builds a decoder per call
_STRICT = json.JSONDecoder(parse_constant=_not_json, object_pairs_hook=_pairs_unique)
_STRICT_FINITE = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite_float, object_pairs_hook=_pairs_unique)


def json_strict_loads(text: str | bytes) -> Any:
    """``json.loads`` refusing ``NaN``, ``Infinity`` and ``-Infinity`` (ValueError), as
    strict JSON does, and an object naming a key twice (``DuplicateKey``); the finite check
    on numbers is :func:`json_storable`'s."""
    if isinstance(text, (bytes, bytearray)):
        return json.loads(text, parse_constant=_not_json, object_pairs_hook=_pairs_unique)
    return _STRICT.decode(text)


def json_request_loads(text: str) -> tuple[Any, bool]:
    """:func:`json_strict_loads`, and whether the result is known to pass :func:`json_storable`
    without walking it. It is when the text has no ``\\u`` escape (the only way JSON text
    writes NUL or a lone surrogate into a string), no NUL or surrogate of its own, no number
    too large for a float, and it nests at most ``MAX_DEPTH`` deep, counted on what it
    decoded by looking at its arrays and objects only (a batch of 100 messages has over a
    hundred, two or three deep), at no string.
    Otherwise the caller runs :func:`json_storable`, which names what is wrong."""
    if _may_hold_unstorable(text):
        return json_strict_loads(text), False
    try:
        data = _STRICT_FINITE.decode(text)
    except _NotFinite:
        return json_strict_loads(text), False
    if not _shallow(data):
        return data, False
    return data, True


def _may_hold_unstorable(text: str) -> bool:
    """Whether JSON text may write NUL or a lone surrogate into a string: it has a ``\\u``
    escape, or such a character of its own. Each look is a scan in C: a text held as ASCII
    (which Python knows without looking) has no surrogate, and one with no backslash has
    no escape; the character class is searched only in text that is not ASCII (a
    regular expression over 100 KiB took 0.7 ms)."""
    if "\\" in text and "\\u" in text:
        return True
    if text.isascii():
        return "\x00" in text
    return _NUL_OR_SURROGATE.search(text) is not None


def _shallow(data: Any) -> bool:
    """Whether decoded JSON nests no deeper than :func:`json_storable` allows: no value
    below depth ``MAX_DEPTH`` (the outermost value is at depth 0), so every array or object
    at that depth is empty."""
    level = [data] if isinstance(data, (dict, list)) else []
    for _ in range(MAX_DEPTH):
        if not level:
            return True
        inner: list[Any] = []
        for value in level:
            for item in value.values() if isinstance(value, dict) else value:
                if isinstance(item, (dict, list)):
                    inner.append(item)
        level = inner
    return not any(level)


def json_storable(data: Any) -> Any:
    """``data`` as parsed, or InvalidInput naming every string that cannot be stored."""
    errors: dict[str, list[str]] = {}
    _checked(data, "", errors)
    if errors:
        raise InvalidInput("The request holds text that cannot be stored.", errors=errors)
    return data


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with this module's decoder: strict, one value per key."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json_strict_loads(stream.read().decode(encoding))
        except InvalidInput:
            raise
        except RecursionError:  # nested deeper than the decoder goes: not a 500
            raise _too_deep() from None
        except ValueError as exc:  # not JSON, not text in its encoding
            raise ParseError(f"JSON parse error - {exc}") from None
        return json_storable(data)
