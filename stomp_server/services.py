"""Changes to the STOMP app's rows made from outside a serving process."""

from __future__ import annotations

from django.utils import timezone

from brokers.exceptions import StompConnectionNotFound

from .models import StompClient


def stomp_client_close(*, session: str, by: str) -> StompClient:
    """Ask the process serving STOMP connection ``session`` to close it: its row is marked,
    and that process's registry (``registry.py``), at its next refresh (every
    ``registry.INTERVAL_S`` seconds), sends the client an ERROR "Closed by an operator."
    and drops it, which ends the connection as a client's leaving does (its transactions
    rolled back, what it had not acknowledged given back). ``by``: who asked. Asking again
    changes nothing; an unknown session is :class:`StompConnectionNotFound`."""
    client = StompClient.objects.filter(session=session).first()
    if client is None:
        raise StompConnectionNotFound(f"No STOMP connection {session}.", session=session)
    if client.close_requested_at is None:
        StompClient.objects.filter(session=session, close_requested_at__isnull=True).update(
            close_requested_at=timezone.now(), close_requested_by=by[:150]
        )
        client.refresh_from_db()
    return client
