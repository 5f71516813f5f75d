"""Dashboard users: the first admin account, and users with a role on brokers."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import transaction as db

from brokers.services.access import grant_actions
from baton_client.errors import InvalidInput, NotFound

from .access import ROLES


def admin_bootstrap(*, username: str = "admin") -> str | None:
    """Make sure someone can sign in: when no superuser has a password, give ``username``
    (made a superuser, created if missing) a generated password and return it; otherwise
    None (nothing changes, and no password is ever shown twice)."""
    User = get_user_model()
    with db.atomic():
        if any(u.has_usable_password() for u in User.objects.filter(is_superuser=True, is_active=True)):
            return None
        user = User.objects.filter(username=username).first() or User(username=username)
        password = secrets.token_urlsafe(12)
        user.is_superuser = user.is_staff = user.is_active = True
        user.set_password(password)
        user.save()
    return password


def dashboard_user(*, username: str, password: str, role: str | None = None, brokers: list[str] = ()) -> None:
    """Create or update a user who signs in with ``password``; with a ``role``, grant its
    actions on each of ``brokers`` (broker-wide)."""
    if role is not None and role not in ROLES:
        raise InvalidInput(f"Unknown role {role!r}; use {', '.join(ROLES)}.", errors={"role": ["Invalid choice."]})
    if len(password) < 8:
        raise InvalidInput("A password has at least 8 characters.", errors={"password": ["Too short."]})
    User = get_user_model()
    with db.atomic():
        user = User.objects.filter(username=username).first() or User(username=username)
        user.set_password(password)
        user.save()
        for broker in brokers:
            grant_actions(username=username, broker=broker, actions=list(ROLES[role or "viewer"]))


def user_delete(*, username: str, by: str) -> None:
    """Delete a user with their grants and API token (never the one asking: a console
    would lock out the person using it)."""
    if username == by:
        raise InvalidInput("You cannot delete yourself.", errors={"username": ["That is you."]})
    deleted, _ = get_user_model().objects.filter(username=username).delete()
    if not deleted:
        raise NotFound(f"No user {username!r}.", user=username)
