"""Topic strings and topic filters, by MQTT 3.1.1's rules (§4.7) as docs/api.md states them.

- A topic string is 1-1024 characters, levels separated by ``/``, case-sensitive; empty
  levels are levels (``/finance`` has two: ``""`` and ``finance``). A published topic has no
  ``+``, ``#`` or NUL.
- In a filter, ``+`` is one whole level and matches any one level, an empty one too; ``#``
  is the whole last level and matches the parent level and everything below it (``a/#``
  matches ``a``, ``a/`` and ``a/b/c``). A filter whose first level is ``+`` or ``#`` does not
  match a topic whose first character is ``$``.
"""

from __future__ import annotations

from .models import TOPIC_MAX

SEPARATOR = "/"
ONE = "+"
REST = "#"


def topic_problems(topic: object) -> list[str]:
    """Why ``topic`` is not a topic string one may publish to (empty list: it is)."""
    if not isinstance(topic, str):
        return ["Must be a string."]
    if not 1 <= len(topic) <= TOPIC_MAX:
        return [f"Must be 1 to {TOPIC_MAX} characters."]
    if "\x00" in topic:
        return ["May not contain NUL."]
    if ONE in topic or REST in topic:
        return ["A topic string may not contain the wildcards + or #."]
    return []


def filter_problems(topic_filter: object) -> list[str]:
    """Why ``topic_filter`` is not a valid filter (empty list: it is)."""
    if not isinstance(topic_filter, str):
        return ["Must be a string."]
    if not 1 <= len(topic_filter) <= TOPIC_MAX:
        return [f"Must be 1 to {TOPIC_MAX} characters."]
    if "\x00" in topic_filter:
        return ["May not contain NUL."]
    levels = topic_filter.split(SEPARATOR)
    for index, level in enumerate(levels):
        if REST in level and (level != REST or index != len(levels) - 1):
            return ["# must be a whole level, and the last one."]
        if ONE in level and level != ONE:
            return ["+ must be a whole level."]
    return []


def has_wildcards(topic_filter: str) -> bool:
    return ONE in topic_filter or REST in topic_filter


def literal_prefix(topic_filter: str) -> str:
    """The levels of a filter before its first wildcard (the topic string a subscription is
    administered by)."""
    levels = []
    for level in topic_filter.split(SEPARATOR):
        if level in (ONE, REST):
            break
        levels.append(level)
    return SEPARATOR.join(levels)


def matches(topic_filter: str, topic: str) -> bool:
    """Does ``topic_filter`` match the topic string ``topic``? (The plain rule; pubsub.tree
    does the same for many filters at once.)"""
    f_levels = topic_filter.split(SEPARATOR)
    t_levels = topic.split(SEPARATOR)
    if topic.startswith("$") and f_levels[0] in (ONE, REST):
        return False
    for index, level in enumerate(f_levels):
        if level == REST:
            return True  # the rest, the parent included (index == len(t_levels))
        if index >= len(t_levels):
            return False
        if level != ONE and level != t_levels[index]:
            return False
    return len(f_levels) == len(t_levels)


def ancestors(topic: str) -> list[str]:
    """The topic string and every string above it, nearest first: ``a/b/c``, ``a/b``, ``a``."""
    levels = topic.split(SEPARATOR)
    return [SEPARATOR.join(levels[:n]) for n in range(len(levels), 0, -1)]
