"""``manage.py grant`` and ``revoke``, and the services behind them."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from brokers.models import Grant
from brokers.services.access import api_token_issue, grant_actions, revoke_actions
from baton_client.errors import InvalidInput, NotFound

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(broker):
    api_token_issue(username="alice", create_user=True)
    return "alice"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def actions(broker: str = "QM1", queue: str = "") -> list[str]:
    grant = Grant.objects.filter(user__username="alice", broker=broker, queue=queue).first()
    return grant.actions if grant else []


def test_grant_on_a_queue(alice):
    assert (
        run("grant", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "put,get")
        == "alice may put, get on queue Q1 of broker QM1"
    )
    assert actions(queue="Q1") == ["put", "get"]
    assert actions() == []


def test_grant_on_the_whole_broker(alice):
    assert (
        run("grant", "alice", "--broker", "QM1", "--actions", "admin") == "alice may admin on broker QM1 (every queue)"
    )
    assert actions() == ["admin"]


def test_grant_adds_to_what_was_granted(alice):
    run("grant", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "put")
    assert (
        run("grant", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "browse, get,put")
        == "alice may put, get, browse on queue Q1 of broker QM1"
    )
    assert Grant.objects.filter(user__username="alice").count() == 1


def test_revoke_takes_actions_away_and_deletes_an_empty_grant(alice):
    run("grant", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "put,get,browse,admin")
    assert (
        run("revoke", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "put,admin")
        == "alice may get, browse on queue Q1 of broker QM1"
    )
    assert (
        run("revoke", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "get,browse")
        == "alice may do nothing on queue Q1 of broker QM1"
    )
    assert not Grant.objects.exists()


def test_revoke_touches_only_the_named_grant(alice):
    run("grant", "alice", "--broker", "QM1", "--actions", "put")
    run("grant", "alice", "--broker", "QM1", "--queue", "Q1", "--actions", "put")
    run("revoke", "alice", "--broker", "QM1", "--actions", "put")
    assert actions() == [] and actions(queue="Q1") == ["put"]


def test_revoke_of_nothing_granted_is_fine(alice):
    assert (
        run("revoke", "alice", "--broker", "QM1", "--actions", "get")
        == "alice may do nothing on broker QM1 (every queue)"
    )


def test_revoke_after_the_broker_is_gone(alice, api):
    run("grant", "alice", "--broker", "QM1", "--actions", "get")
    assert api.delete("/api/brokers/QM1/?purge=true").status_code == 204
    run("revoke", "alice", "--broker", "QM1", "--actions", "get")
    assert not Grant.objects.exists()


@pytest.mark.parametrize(
    "args,text",
    [
        (["nobody", "--broker", "QM1", "--actions", "put"], "No user 'nobody'"),
        (["alice", "--broker", "NOPE", "--actions", "put"], "No broker named 'NOPE'"),
        (["alice", "--broker", "QM1", "--actions", "put,delete"], "Unknown action(s) delete"),
        (["alice", "--broker", "QM1", "--actions", ","], "Name at least one action"),
        (["alice", "--broker", "QM1", "--queue", "bad name!", "--actions", "put"], "queue"),
        (["alice", "--broker", "QM1"], "--actions"),
        (["alice", "--actions", "put"], "--broker"),
    ],
)
def test_grant_refuses_bad_arguments(alice, args, text):
    with pytest.raises(CommandError) as caught:
        run("grant", *args)
    assert text in str(caught.value)
    assert not Grant.objects.exists()


def test_revoke_refuses_unknown_users_and_actions(alice):
    with pytest.raises(CommandError, match="No user"):
        run("revoke", "nobody", "--broker", "QM1", "--actions", "put")
    with pytest.raises(CommandError, match="Unknown action"):
        run("revoke", "alice", "--broker", "QM1", "--actions", "fly")


def test_services_take_lists_and_strings(alice):
    grant = grant_actions(username="alice", broker="QM1", queue=None, actions=["get", "put"])
    assert grant.actions == ["put", "get"]
    assert revoke_actions(username="alice", broker="QM1", actions="get").actions == ["put"]
    assert revoke_actions(username="alice", broker="QM1", actions=["put"]) is None
    with pytest.raises(InvalidInput):
        grant_actions(username="alice", broker="QM1", actions=[])
    with pytest.raises(NotFound):
        grant_actions(username="alice", broker="QM9", actions="put")


def test_a_grant_goes_with_its_user(alice):
    from django.contrib.auth import get_user_model

    grant_actions(username="alice", broker="QM1", actions="put")
    get_user_model().objects.filter(username="alice").delete()
    assert not Grant.objects.exists()
