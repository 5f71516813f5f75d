"""A Hypothesis state machine against a plain model of topics, subscriptions and retained
publications.

The model: topic objects (the topic string each administers and whether it allows durable
subscriptions), subscriptions (filter, queue, durable, active, activation and deactivation
topics, new_publications_only, in definition order), the retained publication of each topic, and
what each queue holds (topic, body, is_retained, subscription), in order. It knows the
rules of docs/api.md, "Publish/subscribe" and MQTT matching written out plainly (its own
``_matches``), nothing of the implementation. Publications go outside a unit of work or
under one that then commits or rolls back. After every step the platform must agree on the
queues' contents (a full browse), the retained publications (listed with ``#`` and with a
random filter) and which subscriptions are active.

Each example runs on its own broker inside a savepoint that teardown rolls back.
"""

from __future__ import annotations

import itertools

from django.db import transaction as db
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse
from brokers.services.queues import queue_define
from baton_client.errors import AlreadyExists, InvalidInput, NotFound
from pubsub.models import Subscription
from pubsub.selectors import retained_list
from pubsub.services.publications import publication_publish
from pubsub.services.retained import retained_clear
from pubsub.services.subscriptions import subscription_define, subscription_delete
from pubsub.services.topics import topic_define, topic_delete
from tests.passes import examples
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

QUEUES = ["Q1", "Q2"]
NAMES = ["s1", "s2", "s3", "s4"]
TOPICS = ["a", "a/b", "a/", "/b", "b", "$s/a", "a/b/c", "on", "off"]
FILTERS = ["#", "+", "a/#", "a/+", "+/b", "a", "$s/#", "+/+", "/+", "a/b/#", "+/+/+"]
TOPIC_OBJECTS = {"TA": "a", "TAB": "a/b", "TS": "$s"}

_brokers = itertools.count(1)


def _matches(topic_filter: str, topic: str) -> bool:
    """MQTT 3.1.1 §4.7, plainly: level by level."""
    f, t = topic_filter.split("/"), topic.split("/")
    if topic.startswith("$") and f[0] in ("+", "#"):
        return False
    while f:
        head = f.pop(0)
        if head == "#":
            return not f
        if not t:
            return False
        level = t.pop(0)
        if head != "+" and head != level:
            return False
    return not t


class PubSubMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.savepoint = db.savepoint()
        self.broker = f"PS{next(_brokers)}"
        broker_define(name=self.broker, transaction_timeout_ms=600_000)
        for name in QUEUES:
            queue_define(broker=self.broker, name=name)
        self.topic_objects: dict[str, tuple[str, bool]] = {}  # name → (topic string, durable allowed)
        self.subs: dict[str, dict] = {}  # in definition order
        self.retained: dict[str, str] = {}
        self.queues: dict[str, list[tuple]] = {q: [] for q in QUEUES}
        self.bodies = itertools.count()

    def teardown(self) -> None:
        db.savepoint_rollback(self.savepoint)

    # --- the model -------------------------------------------------------------------
    def _deliver_retained(self, name: str) -> None:
        sub = self.subs[name]
        for topic in sorted(self.retained):
            if _matches(sub["filter"], topic):
                self.queues[sub["queue"]].append((topic, self.retained[topic], True, name))

    def _effects(self, topic: str, body: str, retain: bool) -> None:
        if retain:
            self.retained[topic] = body
        for name, sub in self.subs.items():
            if sub["activation"] == topic and not sub["active"]:
                sub["active"] = True
                if not sub["npo"]:
                    self._deliver_retained(name)
        for sub in self.subs.values():
            if sub["deactivation"] == topic:
                sub["active"] = False

    def _durable_allowed(self, topic_filter: str) -> bool:
        """The nearest topic object above the filter's levels before its first wildcard."""
        levels = []
        for level in topic_filter.split("/"):
            if level in ("+", "#"):
                break
            levels.append(level)
        allowed = dict(self.topic_objects.values())
        for n in range(len(levels), 0, -1):
            if "/".join(levels[:n]) in allowed:
                return allowed["/".join(levels[:n])]
        return True

    # --- rules -----------------------------------------------------------------------
    @rule(name=st.sampled_from(sorted(TOPIC_OBJECTS)), durable=st.booleans())
    def define_topic(self, name, durable):
        try:
            topic_define(broker=self.broker, name=name, topic_string=TOPIC_OBJECTS[name], durable_subscriptions=durable)
        except AlreadyExists:
            assert name in self.topic_objects
            return
        assert name not in self.topic_objects
        self.topic_objects[name] = (TOPIC_OBJECTS[name], durable)

    @rule(name=st.sampled_from(sorted(TOPIC_OBJECTS)))
    def delete_topic(self, name):
        try:
            topic_delete(broker=self.broker, name=name)
        except NotFound:
            assert name not in self.topic_objects
            return
        del self.topic_objects[name]

    @rule(
        name=st.sampled_from(NAMES),
        topic_filter=st.sampled_from(FILTERS),
        queue=st.sampled_from(QUEUES),
        activation=st.sampled_from(["", "", "on"]),
        deactivation=st.sampled_from(["", "off"]),
        npo=st.booleans(),
        durable=st.booleans(),
    )
    def define(self, name, topic_filter, queue, activation, deactivation, npo, durable):
        try:
            sub = subscription_define(
                broker=self.broker,
                name=name,
                topic_filter=topic_filter,
                queue=queue,
                activation_topic=activation,
                deactivation_topic=deactivation,
                new_publications_only=npo,
                durable=durable,
            )
        except AlreadyExists:
            assert name in self.subs
            return
        except InvalidInput as exc:
            # checked before the name is found taken (400 before 409)
            assert list(exc.details["errors"]) == ["durable"]
            assert durable and not self._durable_allowed(topic_filter)
            return
        assert name not in self.subs
        assert not durable or self._durable_allowed(topic_filter)
        self.subs[name] = {
            "filter": topic_filter,
            "queue": queue,
            "active": not activation,
            "activation": activation,
            "deactivation": deactivation,
            "npo": npo,
        }
        assert sub.active is (not activation)
        if not activation and not npo:
            self._deliver_retained(name)

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name):
        try:
            subscription_delete(broker=self.broker, name=name)
        except NotFound:
            assert name not in self.subs
            return
        del self.subs[name]

    @rule(
        topic=st.sampled_from(TOPICS), retain=st.booleans(), mode=st.sampled_from(["now", "now", "commit", "rollback"])
    )
    def publish(self, topic, retain, mode):
        body = f"m{next(self.bodies)}"
        txn = transaction_begin(broker=self.broker, timeout_ms=600_000).id if mode != "now" else None
        result = publication_publish(
            broker=self.broker, topic=topic, message=MessageInput(body=body.encode()), retain=retain, transaction_id=txn
        )
        matched = [(name, sub) for name, sub in self.subs.items() if sub["active"] and _matches(sub["filter"], topic)]
        assert result.matched == len(matched)
        if mode == "rollback":
            transaction_rollback(transaction_id=txn)
            return
        if mode == "commit":
            transaction_commit(transaction_id=txn)
        for name, sub in matched:
            self.queues[sub["queue"]].append((topic, body, False, name))
        self._effects(topic, body, retain)

    @rule(topic=st.sampled_from(TOPICS))
    def clear(self, topic):
        assert retained_clear(broker=self.broker, topic=topic) is (topic in self.retained)
        self.retained.pop(topic, None)

    # --- invariants ------------------------------------------------------------------
    @invariant()
    def queues_agree(self):
        for queue, expected in self.queues.items():
            got = [
                (
                    m.properties["topic"],
                    bytes(m.body).decode(),
                    m.properties["is_retained"],
                    m.properties["subscription"],
                )
                for m in message_browse(broker=self.broker, queue=queue, limit=1000).messages
            ]
            assert got == expected, queue

    @invariant()
    def retained_agree(self):
        assert {r.topic: bytes(r.body).decode() for r in retained_list(broker=self.broker)} == {
            t: body for t, body in self.retained.items() if _matches("#", t)
        }
        for topic_filter in ("a/#", "+", "+/b", "$s/#"):
            assert [r.topic for r in retained_list(broker=self.broker, topic_filter=topic_filter)] == sorted(
                t for t in self.retained if _matches(topic_filter, t)
            )

    @invariant()
    def activity_agrees(self):
        got = dict(Subscription.objects.filter(broker__name=self.broker).values_list("name", "active"))
        assert got == {name: sub["active"] for name, sub in self.subs.items()}


def test_pubsub_agrees_with_model(db):
    run_state_machine_as_test(
        PubSubMachine,
        settings=settings(
            max_examples=examples(25, postgres=10),
            stateful_step_count=20,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
