"""Users as a definitions document names them: defined without a password (they sign in
with an API token, or are given a password with ``manage.py baton user``), made superusers
or not, active or not, deleted."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction as db

from baton_client.errors import AlreadyExists, NotFound


def _flags(user, *, superuser: bool | None, active: bool | None) -> None:
    if superuser is not None:
        user.is_superuser = user.is_staff = superuser
    if active is not None:
        user.is_active = active


def user_define(*, username: str, superuser: bool = False, active: bool = True):
    """A new user without a usable password. ``username`` is valid already (parsed through
    ``document.UserDef``)."""
    user = get_user_model()(username=username)
    user.set_unusable_password()
    _flags(user, superuser=superuser, active=active)
    try:
        with db.atomic():
            user.save()
    except IntegrityError as exc:
        raise AlreadyExists(f"A user named {username!r} already exists.", user=username) from exc
    return user


def _user(username: str):
    user = get_user_model().objects.select_for_update().filter(username=username).first()
    if user is None:
        raise NotFound(f"No user {username!r}.", user=username)
    return user


def user_alter(*, username: str, superuser: bool | None = None, active: bool | None = None):
    with db.atomic():
        user = _user(username)
        _flags(user, superuser=superuser, active=active)
        user.save(update_fields=["is_superuser", "is_staff", "is_active"])
    return user


def user_delete(*, username: str) -> None:
    with db.atomic():
        _user(username).delete()
