"""Browse: look at messages without removing them, with opaque cursors."""

from __future__ import annotations

import base64
import binascii
import json

from django.utils import timezone

from ... import permissions as may
from baton_client.errors import InvalidInput
from ...models import Message, QueueKind, put_committed_q, put_open_flag, put_open_q
from ...selectors import queue_get
from ..message_filter import MessageFilter, message_filter_apply
from ..ordering import not_expired, order_key
from .common import BrowseResult


def _cursor_decode(cursor: str | None, order: str) -> int:
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"==="))
        after, by = data["after"], data["by"]
        if not isinstance(after, int) or isinstance(after, bool) or not 0 <= after < 2**62:
            raise ValueError(after)
    except (ValueError, KeyError, TypeError, OverflowError, binascii.Error, UnicodeEncodeError) as exc:
        raise InvalidInput("The cursor is not one this API gave out.", errors={"cursor": ["Invalid."]}) from exc
    if by != order:
        raise InvalidInput(
            "The cursor belongs to another kind of browse (ordered or not, or another read order).",
            errors={"cursor": ["Does not fit this browse."]},
        )
    return after


def _cursor_encode(after: int, order: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after, "by": order}).encode()).decode("ascii").rstrip("=")


def message_browse(
    *,
    broker: str,
    queue: str,
    cursor: str | None = None,
    limit: int = 50,
    ordered: bool = False,
    filter: MessageFilter | None = None,
    user=None,
) -> BrowseResult:
    """Look at messages without removing them; the cursor marks the position after the
    last message returned, so browsing again from it shows what came since.

    Unordered: available messages in put order. Ordered (reliable browse): every committed
    message in the queue's read order, in flight and locked ones included, never missing
    or repeating one while others commit: on a commit-ordered queue it follows commit
    sequences (assigned under the queue's lock, so none can appear behind the cursor); on
    a put-ordered queue it stops before the first uncommitted put.

    ``filter`` (parsed by ``MessageBrowse.Input``: brokers/services/message_filter.py) shows
    only the messages it matches, pages read on from the cursor as without it. ``user`` (a
    transport's authenticated user; None: system code): browsing through an alias needs
    browse on the queue it stands for too. ``limit`` is 1 to
    BATON_MAX_BATCH (``MessageBrowse.Input`` checked it)."""
    found = filter or MessageFilter()
    source = queue_get(broker=broker, name=queue)
    if source.kind == QueueKind.ALIAS:
        may.require_reached(user, "browse", broker=broker, queue=queue)  # docs/permissions.md
        source = queue_get(broker=broker, name=source.target_queue)
    now = timezone.now()
    if not ordered:
        after = _cursor_decode(cursor, "available")
        rows = list(
            message_filter_apply(
                Message.objects.filter(
                    queue=source,
                    id__gt=after,
                    get_transaction__isnull=True,
                    lock_token__isnull=True,
                )
                .filter(put_committed_q())
                .filter(not_expired(now)),
                found,
            ).order_by("id")[:limit]
        )
        return BrowseResult(rows, source, _cursor_encode(rows[-1].pk if rows else after, "available"))
    key = order_key(source)
    after = _cursor_decode(cursor, key)
    qs = Message.objects.filter(queue=source, **{f"{key}__gt": after})
    # an uncommitted put stops a put-ordered browse whether it matches or not
    qs = message_filter_apply(qs, found, also=put_open_q()).annotate(put_open=put_open_flag()).order_by(key)
    rows = []
    position = after
    for message in qs[:limit]:
        if message.put_open:  # put order: wait here until it resolves
            break
        position = getattr(message, key)
        if message.expires_at is None or message.expires_at > now:
            rows.append(message)
    return BrowseResult(rows, source, _cursor_encode(position, key))
