"""Connections: open (the session's ``connect``), display, close; their one definition."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ... import permissions as may
from ...selectors import connection_get
from ...services.connections import connection_close, connection_open, connection_view
from .. import schema as doc
from ..render import connection_render
from .base import Model, Operation


class ConnectionOut(Model):
    conn_id: str
    broker: str
    client_name: str
    last_put_msg_id: str | None
    last_got_msg_id: str | None
    current_transaction: str | None
    created_at: str | None


class ConnectionOpen(Operation):
    """Open a connection: the broker remembers the client name's last put and got msg_id."""

    route = "brokers/<name:broker>/connections/"
    url_name = "connection-open"
    operation_id = "connections_open"
    tag = "connections"
    errors = (400, 404, 413)
    examples = doc.CONNECTION_EXAMPLES

    session = "connect"
    path = ("broker",)
    success = 201

    class Input(Model):
        broker: Annotated[str, Field(max_length=48)]
        client_name: Annotated[str, Field(min_length=1, max_length=100)]

    Output = ConnectionOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        """Who may open a connection on the broker, before its fields are validated: a
        stranger's bad request is 403, as a good one is, and says nothing of the broker."""
        if isinstance(data.get("broker"), str):
            may.require_connection_open(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_connection_open(user, broker=data.broker)
        return 201, connection_render(connection_open(broker=data.broker, client_name=data.client_name, user=user))


class ConnectionDisplay(Operation):
    """A connection and what the broker remembers of its client name."""

    route = "connections/<id:conn_id>/"
    url_name = "connection-detail"
    method = "get"
    operation_id = "connections_display"
    tag = "connections"
    errors = (404,)

    path = ("conn_id",)

    class Input(Model):
        conn_id: Annotated[str, Field(max_length=64)]

    Output = ConnectionOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_connection(user, conn_id=data.conn_id)
        return 200, connection_render(connection_view(connection=connection_get(conn_id=data.conn_id)))


class ConnectionClose(Operation):
    """Close: an open unit of work it began is rolled back."""

    route = "connections/<id:conn_id>/"
    method = "delete"
    operation_id = "connections_close"
    tag = "connections"
    errors = (404,)
    summary = "Close: an open unit of work it began is rolled back"

    path = ("conn_id",)
    success = 204

    class Input(Model):
        conn_id: Annotated[str, Field(max_length=64)]

    class Output(Model):
        pass

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_connection(user, conn_id=data.conn_id)
        connection_close(conn_id=data.conn_id)
        return 204, {}
