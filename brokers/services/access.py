"""Users and API tokens."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction as db
from rest_framework.authtoken.models import Token

from ..exceptions import NotFound


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

