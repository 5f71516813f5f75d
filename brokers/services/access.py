"""Users, API tokens and grants (what a user may do on brokers and queues)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction as db
from rest_framework.authtoken.models import Token

from baton_client.errors import InvalidInput, NotFound
from ..models import Grant
from ..names import NAME, NAME_MESSAGE, NAME_RULE
from ..selectors import broker_get


def api_token_issue(*, username: str, create_user: bool = False, superuser: bool = False) -> str:
    """The user's API token (made on first use). ``create_user`` makes a user without a
    password (it signs in with its token); ``superuser`` also lets it into the admin."""
    User = get_user_model()
    with db.atomic():
        user = User.objects.filter(username=username).first()
        if user is None:
            if not create_user:
                raise NotFound(f"No user {username!r}; pass --create-user to make one.")
            user = User(username=username)
            user.set_unusable_password()
            user.save()
        if superuser and not (user.is_superuser and user.is_staff):
            user.is_superuser = user.is_staff = True
            user.save(update_fields=["is_superuser", "is_staff"])
        token, _ = Token.objects.get_or_create(user=user)
    return token.key


def _actions_parsed(actions) -> list[str]:
    """``actions`` as a list or a comma-separated string: a non-empty subset of put, get,
    browse, admin, monitor."""
    if isinstance(actions, str):
        actions = [a.strip() for a in actions.split(",") if a.strip()]
    if (
        not isinstance(actions, (list, tuple, set, frozenset))
        or not actions
        or not all(isinstance(a, str) for a in actions)
    ):
        raise InvalidInput(
            "Name at least one action: put, get, browse, admin or monitor.", errors={"actions": ["Required."]}
        )
    unknown = sorted(set(actions) - set(Grant.ACTIONS))
    if unknown:
        raise InvalidInput(
            f"Unknown action(s) {', '.join(unknown)}; use put, get, browse, admin, monitor.",
            errors={"actions": [f"Unknown: {', '.join(unknown)}."]},
        )
    return [a for a in Grant.ACTIONS if a in set(actions)]


def _object_checked(broker: str, queue: str | None) -> tuple[str, str]:
    queue = queue or ""
    errors = {}
    if not isinstance(broker, str) or not NAME.match(broker):
        errors["broker"] = [NAME_MESSAGE]
    if queue and not NAME.match(queue):
        errors["queue"] = [NAME_MESSAGE]
    if errors:
        raise InvalidInput(f"Not a valid {' or '.join(errors)} name: use {NAME_RULE}.", errors=errors)
    return broker, queue


def _user(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user {username!r}.", user=username)
    return user


def grant_actions(*, username: str, broker: str, queue: str | None = None, actions) -> Grant:
    """Let a user do ``actions`` on a queue of a broker, or (no queue) on every queue of the
    broker and on the broker itself; adds to what the user could already do there. The
    broker must exist; the queue need not yet (grants name their objects)."""
    broker, queue = _object_checked(broker, queue)
    wanted = _actions_parsed(actions)
    if queue and "monitor" in wanted:
        raise InvalidInput(
            "monitor is granted on a whole broker, not on one queue: leave the queue out.",
            errors={"actions": ["monitor: broker-wide only."]},
        )
    with db.atomic():
        user = _user(username)
        broker_get(name=broker)
        grant, _ = Grant.objects.select_for_update().get_or_create(user=user, broker=broker, queue=queue)
        for action in wanted:
            setattr(grant, f"may_{action}", True)
        grant.save()
    return grant


def revoke_actions(*, username: str, broker: str, queue: str | None = None, actions) -> Grant | None:
    """Take ``actions`` away from the user's grant on exactly that object (the broker-wide
    grant when no queue is named; grants on single queues are separate). Returns what the
    grant still allows, or None once it allows nothing (the grant is then deleted). The
    broker need not exist any more."""
    broker, queue = _object_checked(broker, queue)
    unwanted = _actions_parsed(actions)
    with db.atomic():
        user = _user(username)
        grant = Grant.objects.select_for_update().filter(user=user, broker=broker, queue=queue).first()
        if grant is None:
            return None
        for action in unwanted:
            setattr(grant, f"may_{action}", False)
        if not grant.actions:
            grant.delete()
            return None
        grant.save()
    return grant
