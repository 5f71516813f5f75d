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
    """The whole id, its time, node and counter each in a span (styled apart)."""
    text = str(value or "")
    if not _ID.match(text):
        return text
    return format_html(
        '<span class="id"><span class="id-time">{}</span><span class="id-node">{}</span>'
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
