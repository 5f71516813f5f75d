"""What the queue page offers on each kind of queue, beside the user's grants. The views
refuse what is not offered, so a hand-made POST cannot do what the page does not show.

===========================  ======  ===  =====  ===========
queue                        browse  put  purge  bulk ingest
===========================  ======  ===  =====  ===========
local, normal                yes     yes  yes    yes
dead-letter or backout       yes     yes  yes    no (its messages come from failures)
local, transmission          yes     no   yes    no (a channel's queue: each message needs
                                                 a destination a channel reads)
remote, alias                no      yes  no     no (they hold no messages: a put goes on)
===========================  ======  ===  =====  ===========
"""

from __future__ import annotations

from brokers.models import Queue, QueueKind, QueueUsage
from baton_client.errors import InvalidInput

from .services.moves import move_source_kind


def queue_offers(*, queue: Queue) -> dict[str, object]:
    holds = queue.kind == QueueKind.LOCAL
    transmission = queue.usage == QueueUsage.TRANSMISSION
    role = move_source_kind(queue=queue) if holds else None
    return {
        "role": role,
        "browse": holds,
        "put": not transmission,
        "purge": holds,
        "ingest": holds and not transmission and role is None,
    }


_WHY = {
    "put": "Messages reach a transmission queue through a remote queue that names it, not straight from the console.",
    "purge": "Only a local queue holds messages to purge.",
    "ingest": "Bulk ingest puts onto a local queue for applications: not a dead-letter, backout or transmission queue.",
}


def require_offered(action: str, *, queue: Queue) -> None:
    if not queue_offers(queue=queue)[action]:
        raise InvalidInput(
            f"Not on queue {queue.name!r} ({queue.kind}, {queue.usage}): {_WHY[action]}",
            errors={"queue": [_WHY[action]]},
        )
