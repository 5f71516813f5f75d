"""Template filters for what the console shows: ids people can tell apart.

A message id (brokers/ids.py) is 48 hex characters: 16 of wall-clock nanoseconds, 16 of
the putting process's random node, 16 of that process's counter. Messages put together
share the first 32; only the counter differs. So a list shows the whole id, its three
parts set apart (``id_parts``), or a label made of the node's last 4 and the counter's
last 8 characters (``id_tail``): the parts that differ between messages of one put and
between processes."""

from __future__ import annotations

import re

from django import template
from django.utils.html import format_html

register = template.Library()
_ID = re.compile(r"^[0-9a-f]{48}$")


@register.filter
def id_parts(value) -> str:
    """The whole id, its time, node and counter each in a span (styled apart), with a line
    break allowed between them (none inside: a copied id has no spaces)."""
    text = str(value or "")
    if not _ID.match(text):
        return text
    return format_html(
        '<span class="id"><span class="id-time">{}</span><wbr><span class="id-node">{}</span><wbr>'
        '<span class="id-count">{}</span></span>',
        text[:16],
        text[16:32],
        text[32:],
    )


@register.filter
def id_tail(value) -> str:
    """A short label that differs between ids: ``…nnnn·cccccccc`` for a 48-character id,
    the first 8 characters of anything else (a random UUID differs there)."""
    text = str(value or "")
    if _ID.match(text):
        return f"…{text[28:32]}·{text[40:]}"
    return text[:8] + ("…" if len(text) > 8 else "")


# --- words, times and units -------------------------------------------------------------

#: Codes a person reads as words (the rest: underscores become spaces).
WORDS = {
    "not_found": "Not found",
    "permission_denied": "Not allowed",
    "invalid": "Not valid",
    "already_exists": "Already exists",
    "not_empty": "Not empty",
    "queue_in_use": "Queue in use",
    "non_persistent": "non-persistent",
    "message_too_large": "Message too large",
}


@register.filter
def words(value) -> str:
    """A code (``uncommitted_put``, ``not_found``) as words."""
    text = str(value if value is not None else "")
    return WORDS.get(text, text.replace("_", " "))


def _moment(value):
    from datetime import datetime

    from django.utils.dateparse import parse_datetime

    if isinstance(value, str):
        value = parse_datetime(value)
    return value if isinstance(value, datetime) else None


def _ago(seconds: float) -> str:
    later, seconds = seconds < 0, abs(seconds)
    if seconds < 5:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")):
        if seconds >= size:
            amount = f"{int(seconds // size)} {unit}"
            return f"in {amount}" if later else f"{amount} ago"
    return "just now"


@register.filter
def when(value, now=None) -> str:
    """A moment in the console's one format, ``2026-12-06 02:27:08`` (UTC), and how long
    ago, in a ``<time>`` element; "—" for none. Takes a datetime or an ISO 8601 string."""
    from django.utils import timezone

    moment = _moment(value)
    if moment is None:
        return "—" if not value else str(value)
    moment = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    now = now or timezone.now()
    return format_html(
        '<time datetime="{}" title="{} UTC">{}</time> <span class="muted ago">({})</span>',
        moment.isoformat(),
        moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        moment.strftime("%Y-%m-%d %H:%M:%S"),
        _ago((now - moment).total_seconds()),
    )


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0") if value < 100 else f"{value:.0f}"


@register.filter
def duration_ms(value) -> str:
    """Milliseconds as a person says them: 250 ms, 1.5 s, 2 min, 1 h, 7 d ("—" for none)."""
    if value in (None, ""):
        return "—"
    ms = float(value)
    for size, unit in ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s")):
        if abs(ms) >= size:
            return f"{_number(ms / size)} {unit}"
    return f"{_number(ms)} ms"


@register.filter
def size(value) -> str:
    """Bytes in binary units: 512 B, 1.5 KiB, 4 MiB, 2 GiB."""
    if value in (None, ""):
        return "—"
    count = float(value)
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if abs(count) >= 1024**power:
            return f"{_number(count / 1024**power)} {unit}"
    return f"{int(count)} B"
