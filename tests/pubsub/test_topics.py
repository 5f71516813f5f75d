"""Topic strings and filters by MQTT's rules, and the subscription tree agreeing with the
plain rule (pubsub.topics, pubsub.tree)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pubsub.topics import filter_problems, matches, topic_problems
from pubsub.tree import TopicTree

pytestmark = pytest.mark.once  # pure functions: the database plays no part

CASES = [
    ("sport/#", "sport", True),  # '#' matches the parent level
    ("sport/#", "sport/", True),
    ("sport/#", "sport/tennis/player1", True),
    ("sport/#", "sports", False),
    ("sport/+", "sport/", True),  # '+' matches an empty level
    ("sport/+", "sport", False),
    ("sport/+", "sport/tennis", True),
    ("sport/+", "sport/tennis/x", False),
    ("+/+", "/finance", True),
    ("/+", "/finance", True),
    ("+", "/finance", False),
    ("+", "finance", True),
    ("#", "$SYS/x", False),  # wildcards first do not match '$' topics
    ("+/x", "$SYS/x", False),
    ("$SYS/#", "$SYS/x", True),
    ("$SYS/+", "$SYS/x", True),
    ("#", "a/b/c", True),
    ("#", "/", True),
    ("a/b", "a/b", True),
    ("a/b", "A/b", False),  # case-sensitive
    ("a//b", "a//b", True),
    ("a/+/b", "a//b", True),
    ("+/+/+", "a/b", False),
    ("a/#", "a", True),
    ("x/$y/#", "x/$y/z", True),
]


@pytest.mark.parametrize("topic_filter,topic,expected", CASES)
def test_mqtt_edge_cases(topic_filter, topic, expected):
    assert matches(topic_filter, topic) is expected
    tree = TopicTree()
    tree.add(7, topic_filter)
    assert tree.match(topic) == ([7] if expected else [])


@pytest.mark.parametrize("bad", ["a/#/b", "a#", "#a", "a/b+", "+a/b", "a/++", "", "a\x00b", "x" * 1025])
def test_bad_filters(bad):
    assert filter_problems(bad)


@pytest.mark.parametrize("good", ["#", "+", "a/+/b/#", "/", "//", "+/+", "$SYS/#", "x" * 1024])
def test_good_filters(good):
    assert filter_problems(good) == []


@pytest.mark.parametrize("bad", ["a/+", "#", "a/#", "", "a\x00", 5, None, "x" * 1025])
def test_bad_topics(bad):
    assert topic_problems(bad)


def test_good_topics():
    for topic in ["a", "/", "/finance", "a//b", "$SYS/x", "x" * 1024, "é/ü"]:
        assert topic_problems(topic) == []


levels = st.sampled_from(["", "a", "b", "$x", "ab"])
topics = st.lists(levels, min_size=1, max_size=4).map("/".join)
filter_levels = st.sampled_from(["", "a", "b", "$x", "+"])
filters = st.tuples(st.lists(filter_levels, min_size=1, max_size=4), st.booleans()).map(
    lambda t: "/".join(t[0] + (["#"] if t[1] else []))
) | st.just("#")


@settings(max_examples=300, deadline=None)
@given(st.lists(filters, min_size=1, max_size=12), topics)
def test_tree_agrees_with_plain_rule(topic_filters, topic):
    tree = TopicTree()
    for index, topic_filter in enumerate(topic_filters):
        tree.add(index, topic_filter)
    assert tree.match(topic) == [i for i, f in enumerate(topic_filters) if matches(f, topic)]
