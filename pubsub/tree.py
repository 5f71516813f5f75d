"""The subscription tree: which subscriptions' filters match a topic, without looking at
every subscription.

Each broker's subscriptions are kept per process as a tree of filter levels (a trie with
``+`` and ``#`` children), built from the database the first time a broker publishes and
thrown away when ``TopicTreeVersion`` changes (every subscription or topic object
definition changes it in its own database transaction). A publication reads the version
in its database transaction first, so a definition committed before it began is always
seen. Matching a topic of L levels visits at most the tree nodes on the paths the topic
can take: literal, ``+`` and ``#`` children per level, independent of how many other
subscriptions there are.

The tree holds what does not change without a version change: names, filters, queues,
durability, activation topics and topic objects (subscriptions are never altered, only
defined and deleted; a deletion by cascade, with its queue or broker, changes the version
through the ``post_delete`` signal, pubsub.signals). Whether a subscription with an
activation or deactivation topic is active is read from its row by each publication that
matches it; one without either is always active.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

from django.db import connection

from . import queries
from .models import Subscription, Topic, TopicTreeVersion
from .topics import ONE, REST, SEPARATOR, ancestors


@dataclass
class _Node:
    children: dict[str, "_Node"] = field(default_factory=dict)
    here: list[int] = field(default_factory=list)  # filters ending at this level
    rest: list[int] = field(default_factory=list)  # filters ending with # below this level


@dataclass(frozen=True)
class Subscriber:
    """What a publication needs of a subscription."""

    id: int
    name: str
    queue_id: int
    queue: str
    durable: bool
    switchable: bool  # has an activation or deactivation topic: ``active`` can change

    @classmethod
    def of(cls, sub: Subscription) -> "Subscriber":
        return cls(
            sub.pk,
            sub.name,
            sub.queue_id,
            sub.queue.name,
            sub.durable,
            bool(sub.activation_topic or sub.deactivation_topic),
        )


@dataclass
class TopicTree:
    root: _Node = field(default_factory=_Node)
    subscribers: dict[int, Subscriber] = field(default_factory=dict)
    #: activation topic → subscription ids; the same for deactivation
    activations: dict[str, list[int]] = field(default_factory=dict)
    deactivations: dict[str, list[int]] = field(default_factory=dict)
    #: topic string → (conflation_interval_ms, durable_subscriptions) of its topic object
    topics: dict[str, tuple[int, bool]] = field(default_factory=dict)

    def add(self, sub_id: int, topic_filter: str) -> None:
        node = self.root
        for level in topic_filter.split(SEPARATOR):
            if level == REST:
                node.rest.append(sub_id)
                return
            node = node.children.setdefault(level, _Node())
        node.here.append(sub_id)

    def match(self, topic: str) -> list[int]:
        """Ids of the subscriptions whose filters match ``topic`` (each once, in id order)."""
        levels = topic.split(SEPARATOR)
        found: set[int] = set()
        dollar = topic.startswith("$")
        frontier = [self.root]
        for depth, level in enumerate(levels):
            following = []
            for node in frontier:
                if not (dollar and depth == 0):
                    found.update(node.rest)  # '#' matches this level and what follows
                    if (child := node.children.get(ONE)) is not None:
                        following.append(child)
                if (child := node.children.get(level)) is not None and level != ONE:
                    following.append(child)
            frontier = following
            if not frontier:
                break
        else:
            for node in frontier:
                found.update(node.here)
                found.update(node.rest)  # 'a/#' matches 'a'
        return sorted(found)

    def active(self, ids: list[int]) -> list[Subscriber]:
        """The active ones of these subscriptions, in their queues' id order (the order
        queue rows are locked in, docs/concurrency.md). Reads ``active`` only of those that
        can change it."""
        subscribers = [self.subscribers[i] for i in ids]
        switchable = [s.id for s in subscribers if s.switchable]
        on = queries.subscriptions_active(ids=switchable) if switchable else set()
        return sorted((s for s in subscribers if not s.switchable or s.id in on), key=lambda s: (s.queue_id, s.id))

    def topic_attributes(self, topic: str) -> tuple[int, bool]:
        """The nearest topic object's (conflation_interval_ms, durable_subscriptions); the
        defaults (no conflation, durable allowed) when none administers the string."""
        for candidate in ancestors(topic):
            if candidate in self.topics:
                return self.topics[candidate]
        return (0, True)


_lock = threading.Lock()
_trees: dict[tuple[str, int, int], TopicTree] = {}


def tree_version() -> int:
    return queries.versions()[1]


def tree_version_bump() -> None:
    """Note a definition change (call in the database transaction that makes it). The new
    version is random, not the next number: a change rolled back must not leave a tree
    cached under a version that a different change may commit later."""
    version = secrets.randbits(62)
    if not TopicTreeVersion.objects.filter(pk=1).update(version=version):
        TopicTreeVersion.objects.update_or_create(pk=1, defaults={"version": version})


def tree_for(*, broker_id: int, version: int | None = None) -> TopicTree:
    """The broker's tree as of ``version`` (read by the caller in its database transaction;
    read now by default)."""
    if version is None:
        version = tree_version()
    key = (connection.settings_dict["NAME"], broker_id, version)
    tree = _trees.get(key)
    if tree is not None:
        return tree
    tree = TopicTree()
    for sub in Subscription.objects.filter(broker_id=broker_id).select_related("queue").order_by("pk"):
        tree.add(sub.pk, sub.topic_filter)
        tree.subscribers[sub.pk] = Subscriber.of(sub)
        if sub.activation_topic:
            tree.activations.setdefault(sub.activation_topic, []).append(sub.pk)
        if sub.deactivation_topic:
            tree.deactivations.setdefault(sub.deactivation_topic, []).append(sub.pk)
    for topic_string, interval, durable in Topic.objects.filter(broker_id=broker_id).values_list(
        "topic_string",
        "conflation_interval_ms",
        "durable_subscriptions",
    ):
        tree.topics[topic_string] = (interval, durable)
    with _lock:
        for old in [k for k in _trees if k[:2] == key[:2] and k[2] != version]:
            del _trees[old]
        _trees[key] = tree
    return tree
