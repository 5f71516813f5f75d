"""Per-user limits on waiting requests (brokers/api/waits.py): a REST get that must wait takes
one of its user's wait slots; over BATON_MAX_WAITS_PER_USER it is answered 429 ``throttled``
with Retry-After, while other users and requests that need not wait go on."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings

from brokers.api.waits import wait_slot_give, wait_slot_take, waiting_now

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1"


@override_settings(BATON_MAX_WAITS_PER_USER=2)
def test_a_user_over_its_wait_limit_is_throttled_and_others_are_not(two_brokers, as_user, api):
    alice = as_user("alice", ("QM1", "", "put,get"))
    bob = as_user("bob", ("QM1", "", "put,get"))
    user = get_user_model().objects.get(username="alice")
    held = [wait_slot_take(user), wait_slot_take(user)]  # two of alice's gets are waiting
    try:
        refused = alice.post(f"{Q1}/get/", {"wait": 30}, format="json")
        assert refused.status_code == 429 and refused.json()["code"] == "throttled", refused.content
        assert int(refused["Retry-After"]) >= 1 and refused.json()["retry_after"] >= 1
        # a get that need not wait is no wait: answered
        assert api.post(f"{Q1}/messages/", {"body": "here"}, format="json").status_code == 201
        assert alice.post(f"{Q1}/get/", {"wait": 30}, format="json").json()["messages"][0]["body"] == "here"
        # another user's waits are their own
        api.post(f"{Q1}/messages/", {"body": "for bob"}, format="json")
        assert bob.post(f"{Q1}/get/", {"wait": 30}, format="json").json()["messages"][0]["body"] == "for bob"
    finally:
        for key in held:
            wait_slot_give(key)
    assert waiting_now(user) == 0
    # with its slots back, alice waits again (briefly: nothing comes) and gives the slot back
    assert alice.post(f"{Q1}/get/", {"wait": 0.01}, format="json").json()["messages"] == []
    assert waiting_now(user) == 0
