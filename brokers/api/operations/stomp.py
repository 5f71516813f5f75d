"""STOMP connections, as the processes serving them keep them (``stomp_server``): close."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from stomp_server.services import stomp_client_close

from ... import permissions as may
from .base import Model, Operation


class StompConnectionClose(Operation):
    """Close a STOMP connection: its client is sent an ERROR and dropped within seconds."""

    route = "stomp-connections/<id:session>/"
    method = "delete"
    operation_id = "stomp_connections_close"
    tag = "connections"
    errors = (404,)
    summary = "Close a STOMP connection: its client is sent an ERROR and dropped within seconds"

    path = ("session",)
    success = 202

    class Input(Model):
        session: Annotated[str, Field(max_length=32)]

    class Output(Model):
        session: str
        close_requested_at: str
        close_requested_by: str

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_stomp_client_close(user, session=data.session)
        client = stomp_client_close(session=data.session, by=user.get_username())
        return 202, {
            "session": client.session,
            "close_requested_at": client.close_requested_at.isoformat(),
            "close_requested_by": client.close_requested_by,
        }
