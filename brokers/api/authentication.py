"""Token authentication, read in one prepared statement.

DRF's ``TokenAuthentication`` builds ``Token.objects.select_related("user").get(key=...)``
through the ORM on every request: about a third of a millisecond of Python before the
database is asked anything (docs/performance.md, "REST and session overhead"). Here the same
statement (the token joined to its user) is built once per database connection's vendor
and only executed per request, its values converted by the fields' own converters into
the same ``Token`` and ``User`` objects.

Nothing is cached between requests: each request reads the token and its user as they are
now, so a deleted (revoked) token or a deactivated user is refused at once, and the user's
``is_superuser`` and grants are the current ones. The answers are DRF's: 401
``not_authenticated`` with "Invalid token." or "User inactive or deleted.".
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

_STATEMENTS: dict[tuple[str, str], tuple[str, list[tuple[int, list, Any]], list[str], list[str]]] = {}


def _fields(model) -> list:
    return list(model._meta.concrete_fields)


def _statement(alias: str) -> tuple[str, list[tuple[int, list, Any]], list[str], list[str]]:
    """The SELECT of a token and its user on connection ``alias``; for the columns that
    have any, the converters Django's compiler would apply to them (the same ones); and the
    token's and the user's attribute names, in column order."""
    connection = connections[alias]
    found = _STATEMENTS.get((alias, connection.vendor))
    if found is not None:
        return found
    user_model = get_user_model()
    quote = connection.ops.quote_name
    columns: list[str] = []
    converters: list[tuple[int, list, Any]] = []
    for model, table_alias in ((Token, "T"), (user_model, "U")):
        for field in _fields(model):
            columns.append(f"{table_alias}.{quote(field.column)}")
            col = field.get_col(table_alias)
            fns = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if fns:
                converters.append((len(columns) - 1, fns, col))
    sql = (
        f"SELECT {', '.join(columns)} FROM {quote(Token._meta.db_table)} T "
        f"INNER JOIN {quote(user_model._meta.db_table)} U "
        f"ON U.{quote(user_model._meta.pk.column)} = T.{quote(Token._meta.get_field('user').column)} "
        f"WHERE T.{quote(Token._meta.pk.column)} = %s"
    )
    found = sql, converters, [f.attname for f in _fields(Token)], [f.attname for f in _fields(user_model)]
    _STATEMENTS[(alias, connection.vendor)] = found
    return found


def token_read(key: str, *, using: str = "default") -> Token | None:
    """The token ``key`` with its user (``token.user``), as the database holds them now; or
    None when there is no such token."""
    if not isinstance(key, str) or not key or len(key) > Token._meta.get_field("key").max_length or "\x00" in key:
        return None  # no token has such a key (and PostgreSQL refuses NUL in a query)
    sql, converters, token_names, user_names = _statement(using)
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(sql, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    values: list[Any] = list(row)
    for index, fns, col in converters:
        for fn in fns:
            values[index] = fn(values[index], col, connection)
    n = len(token_names)
    token = Token.from_db(using, token_names, values[:n])
    token.user = get_user_model().from_db(using, user_names, values[n:])
    return token


def token_user(key: str):
    """The active user whose token is ``key``, or None."""
    token = token_read(key)
    if token is None or not token.user.is_active:
        return None
    return token.user


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, answered as DRF answers it, read as above."""

    def authenticate_credentials(self, key: str):
        token = token_read(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token
