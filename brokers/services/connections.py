"""Connections: an application's session with a broker, remembered by client name."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction as db
from django.utils import timezone

from transactions.manager import transaction_rollback
from transactions.models import OPEN_STATES, Transaction

from ..ids import id_unguessable
from ..models import ClientSession, Connection, Queue
from ..selectors import broker_get, client_session_get, connection_get


@dataclass
class ConnectionView:
    connection: Connection
    last_put_msg_id: str | None
    last_got_msg_id: str | None


def connection_view(*, connection: Connection) -> ConnectionView:
    session = client_session_get(
        broker=connection.broker, client_name=connection.client_name, user_id=connection.user_id
    )
    return ConnectionView(
        connection,
        (session.last_put_msg_id or None) if session else None,
        (session.last_got_msg_id or None) if session else None,
    )


def connection_open(*, broker: str, client_name: str, user=None) -> ConnectionView:
    """Open a connection for ``user`` (None: system code), who then owns it. Its id is an
    unguessable one of the message ids' space (``id_unguessable``); the last put and last
    got msg_id of ``user``'s client name come back from their earlier connections of that
    name (another user's client of the same name is another session). ``client_name`` (1
    to 100 characters) is valid already: the caller parsed it through ``ConnectionOpen.Input``."""
    owner = broker_get(name=broker)
    user_id = getattr(user, "pk", None)
    with db.atomic():
        conn = Connection.objects.create(
            conn_id=id_unguessable(), broker=owner, client_name=client_name, user_id=user_id
        )
        ClientSession.objects.get_or_create(broker=owner, client_name=client_name, user_id=user_id)
    return connection_view(connection=conn)


def connection_close(*, conn_id: str) -> None:
    """Close a connection. An open unit of work it began is rolled back (as when a JMS
    session closes): a client that wants its work kept commits before it disconnects."""
    conn = connection_get(conn_id=conn_id)
    current = conn.current_transaction_id
    if current and Transaction.objects.filter(pk=current, state__in=OPEN_STATES).exists():
        transaction_rollback(transaction_id=current, reason="connection closed", require_open=False)
    Connection.objects.filter(pk=conn.pk).update(closed_at=timezone.now(), current_transaction=None)
    Queue.objects.filter(exclusive_holder=conn.conn_id).update(exclusive_holder="", exclusive_until=None)
