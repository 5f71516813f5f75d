"""Put, get and browse: their one definition (see ``base``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import AfterValidator, ConfigDict, Field, RootModel, model_validator

from baton_client.errors import InvalidInput

from ... import permissions as may
from ...services.message_filter import (
    FILTER_FIELDS,
    MessageFilter,
    body_contains_problems,
    message_filter_invalid,
    message_filter_of,
    property_problems,
)
from ...services.message_input import BODIES, HexId, MessageIn, message_render, messages_render
from ...services.messages import message_browse, message_get, message_put
from ...services.messages.common import GetResult, PutResult
from .. import schema as doc
from ..dedup import duplicate_render
from .base import Batch, Model, Operation, Wait, problems_refused

Broker = Annotated[str, Field(description="Broker name.", max_length=48)]
QueueName = Annotated[str, Field(description="Queue name.", max_length=48)]
Text = Annotated[str, Field(max_length=200)]
#: true or false; also "true"/"false" (and yes/no, 1/0) as earlier clients sent them.
Flag = Annotated[bool, Field(strict=False)]
#: An id a get matches (msg_id, correl_id, group_id): 48 hex characters, either case; ids
#: are stored in lower case, so it is matched in lower case.
MatchId = Annotated[HexId, AfterValidator(str.lower)]


def _messages_bounded(value: list) -> list:
    if len(value) > settings.BATON_MAX_BATCH:  # read per call: a deployment (or a test) may change it
        raise ValueError(f"At most {settings.BATON_MAX_BATCH} messages a call.")
    return value


#: What a reply carries of each message's body (brokers/services/message_input.py, BODIES).
Bodies = Annotated[
    Literal[BODIES],  # type: ignore[valid-type]
    Field(
        description="What the reply carries of each message's body: both (the default) body_base64 always and "
        "body when the bytes are valid UTF-8; one: body when they are, else body_base64; none: neither "
        "(a producer that has the bodies it sent)."
    ),
]

#: A batch put: 1 to BATON_MAX_BATCH messages, all or none.
Messages = Annotated[list[MessageIn], Field(min_length=1), AfterValidator(_messages_bounded)]


class MessageOut(Model):
    """A stored message."""

    msg_id: str
    correl_id: str | None
    group_id: str | None
    msg_type: Literal["datagram", "request", "reply", "report"]
    priority: int
    persistence: Literal["persistent", "non_persistent"]
    expires_at: str | None = Field(description="ISO 8601.")
    expiry_ms: int | None = Field(description="Milliseconds left before it expires.")
    format: str | None
    reply_to_queue: str | None
    reply_to_broker: str | None
    report: list[str] | None
    properties: dict[str, Any] | None
    refers_to: dict[str, Any] | None
    put_time: str = Field(description="ISO 8601.")
    put_application: str | None
    backout_count: int
    delivery_count: int
    dead_letter_reason: str | None
    dead_letter_from: str | None
    transmission_header: dict[str, Any] | None
    feedback: str | None = Field(description="On a report: coa, cod, expiry or exception.")
    lock_token: str | None
    locked_until: str | None
    queue: str
    broker: str
    body: str | None = Field(None, description="The body when it is valid UTF-8 (absent with bodies one or none).")
    body_base64: str | None = Field(
        None, description="The body as standard base64: always, unless the request's bodies said one or none."
    )


class MessagePut(Operation):
    """Put one message (its fields at the top level) or a batch (``messages``), under a unit
    of work or not. All or none are put."""

    route = "brokers/<name:broker>/queues/<name:queue>/messages/"
    operation_id = "messages_put"
    tag = "messages"
    errors = (400, 404, 409, 413)
    examples = doc.PUT_EXAMPLES
    summary = "Put one message, or a batch as messages"

    session = "put"
    path = ("broker", "queue")
    success = 201

    class Input(MessageIn):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Broker
        queue: QueueName
        messages: Messages | None = Field(
            None, description="A batch: these messages (1 to BATON_MAX_BATCH, by default 1000), all or none."
        )
        transaction: Text | None = Field(None, description="Put under this unit of work.")
        syncpoint: Literal["yes", "no", "if_persistent"] | None = None
        connection: Text | None = Field(None, description="A connection id (conn_id).")
        put_application: Annotated[str, Field(max_length=100)] | None = None
        bodies: Bodies = "both"

        @model_validator(mode="after")
        def _one_or_many(self):
            if self.messages is not None:
                given = sorted(n for n in MessageIn.model_fields if n in self.model_fields_set)
                if given:
                    raise ValueError(f"{given[0]}: Give a message's fields or messages, not both.")
            return self

    class One(MessageOut):
        """One message put: the message, and the unit of work it is under."""

        transaction: str | None

    class Duplicate(Model):
        """A message skipped by duplicate detection: its place in the request, its key, and
        the msg_id of the message first put with that key (``brokers/api/dedup.py``)."""

        index: int
        dedup_key: str
        msg_id: str
        duplicate: Literal[True]
        transaction: str | None = None

    class Many(Model):
        """A batch put: the messages put, the unit of work they are under, and the messages
        skipped as duplicates."""

        messages: list[MessageOut]
        duplicates: list[Duplicate]  # noqa: F821  (the sibling class above; pydantic resolves it)
        transaction: str | None

    class Put(RootModel[One | Many]):
        pass

    Output = {201: Put, 200: Duplicate}

    @classmethod
    def together(cls, data: Input) -> tuple | None:
        """Single-message puts under the same named unit of work, to the same queue, with no
        duplicate key and no ``refers_to``, go together: their messages are put as one batch
        (one step, one journal row), each still answered as a put of one (docs/api.md,
        "Sessions: the fast path")."""
        if data.transaction is None or data.messages is not None or data.dedup_key or data.refers_to is not None:
            return None
        return (data.broker, data.queue, data.transaction, data.syncpoint, data.connection, data.put_application)

    @classmethod
    def perform_together(cls, user, inputs: list[Input]) -> list[tuple[int, dict[str, Any]]]:
        result = cls.put(user, inputs[0], more=inputs[1:])
        if len(result.messages) != len(inputs):  # not for puts that go together (no duplicate keys)
            raise AssertionError("a put together stored other than one message per request")
        b, q, txn = result.queue.broker.name, result.queue.name, result.transaction_id
        times: dict = {}  # the messages share their put time: written once (messages_render)
        return [
            (201, {**message_render(m, broker=b, queue=q, bodies=d.bodies, times=times), "transaction": txn})
            for m, d in zip(result.messages, inputs)
        ]

    @classmethod
    def put(cls, user, data: Input, *, more: list[Input] = ()) -> PutResult:
        """The put, checked and done, not rendered (for a caller that answers without the
        messages: STOMP's SEND). ``more``: puts that go together with it (``together``),
        their messages after its own."""
        may.require_put(user, broker=data.broker, queue=data.queue)
        may.require_connection_use(user, conn_id=data.connection)
        username = getattr(user, "username", "")
        if data.put_application is not None and data.put_application != username:
            may.require_set_context(user, field="put_application")
        if data.messages is not None:
            messages = [m.to_input() for m in data.messages]
        else:
            messages = [MessageIn.to_input(d) for d in (data, *more)]
        return message_put(
            broker=data.broker,
            queue=data.queue,
            messages=messages,
            transaction_id=data.transaction,
            syncpoint=data.syncpoint,
            connection_id=data.connection,
            put_application=(data.put_application or username)[:100],
            user=user,  # ownership of units of work (docs/permissions.md)
        )

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        result = cls.put(user, data)
        b, q = result.queue.broker.name, result.queue.name
        if data.messages is None and result.duplicates:  # its key was taken: nothing created
            return 200, duplicate_render(result.duplicates[0], transaction=result.transaction_id)
        rendered = messages_render(result.messages, broker=b, queue=q, bodies=data.bodies)
        if data.messages is not None:
            body: dict[str, Any] = {
                "messages": rendered,
                "duplicates": [duplicate_render(d) for d in result.duplicates],
            }
        else:
            body = dict(rendered[0])
        body["transaction"] = result.transaction_id
        return 201, body


class MessageGet(Operation):
    """Get messages: destructive, browse or peek-lock; under a unit of work or not."""

    route = "brokers/<name:broker>/queues/<name:queue>/get/"
    url_name = "queue-get"
    operation_id = "messages_get"
    tag = "messages"
    errors = (400, 404, 409, 413)
    examples = doc.GET_EXAMPLES
    summary = "Get messages (destructive, browse or peek-lock)"

    session = "get"
    path = ("broker", "queue")

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Broker
        queue: QueueName
        wait: Wait = 0
        transaction: Text | None = None
        syncpoint: Literal["yes", "no"] | None = None
        connection: Text | None = None
        preemptive: Flag = Field(False, description="May take another unit of work's uncommitted put (linked).")
        ordered: Flag = False
        msg_id: MatchId | None = None
        correl_id: MatchId | None = None
        group_id: MatchId | None = None
        mode: Literal["destructive", "browse", "peek_lock"] | None = None
        batch: Batch = 1
        commit_first: Flag = Field(
            False, description="Commit the unit of work named (or the connection's) first, then get outside it."
        )
        access: Literal["shared", "exclusive"] | None = None
        bodies: Bodies = "both"

    class Output(Model):
        messages: list[MessageOut]
        transaction: str | None
        reason: str | None = Field(
            None, description="When no message came: empty, no_match, next_in_order_in_flight, ..."
        )

    @classmethod
    def get(cls, user, data: Input) -> GetResult:
        """The get, checked and done, not rendered (for a caller that writes the messages
        its own way: STOMP's MESSAGE frames)."""
        may.require_get(user, broker=data.broker, queue=data.queue)
        may.require_connection_use(user, conn_id=data.connection)
        return message_get(
            broker=data.broker,
            queue=data.queue,
            transaction_id=data.transaction,
            syncpoint=data.syncpoint,
            connection_id=data.connection,
            wait=data.wait,
            batch=data.batch,
            msg_id=data.msg_id,
            correl_id=data.correl_id,
            group_id=data.group_id,
            mode=data.mode or "destructive",
            commit_first=data.commit_first,
            preemptive=data.preemptive,
            ordered=data.ordered,
            access=data.access,
            user=user,  # ownership of units of work (docs/permissions.md)
        )

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        result = cls.get(user, data)
        b, q = result.queue.broker.name, result.queue.name
        body: dict[str, Any] = {
            "messages": messages_render(result.messages, broker=b, queue=q, bodies=data.bodies),
            "transaction": result.transaction_id,
        }
        if not result.messages:
            body["reason"] = result.reason
        return 200, body


class MessageBrowse(Operation):
    """Browse: look at messages without removing them, a page at a time."""

    route = "brokers/<name:broker>/queues/<name:queue>/messages/"
    url_name = "queue-messages"
    method = "get"
    query = True
    operation_id = "messages_browse"
    tag = "messages"
    errors = (400, 404)
    summary = "Browse: look at messages without removing them"

    session = "browse"
    path = ("broker", "queue")

    class Input(Model):  # REST sends these as query parameters: text converts
        broker: Broker
        queue: QueueName
        cursor: Text | None = Field(None, description="Where the last page ended.")
        limit: Batch = 50
        ordered: bool = Field(False, description="Reliable browse in the queue's read order.")
        # the filter's grammar (brokers/services/message_filter.py); blank: no filter
        body_contains: Annotated[str, problems_refused(body_contains_problems)] | None = Field(
            None, description="Only messages whose body holds these characters' UTF-8 bytes (1 to 200)."
        )
        property: Annotated[str, problems_refused(property_problems)] | None = Field(
            None, description="Only messages with this property: name, or name=value (its value as text)."
        )

        def message_filter(self) -> MessageFilter:
            """The filter asked for, as the services apply it."""
            return message_filter_of(body_contains=self.body_contains, property=self.property)

    class Output(Model):
        messages: list[MessageOut]
        cursor: str = Field(description="Browse on from here.")

    @classmethod
    def parse(cls, data: Any) -> Input:
        """As every operation parses, but a request wrong only in its filter is told so
        (``The message filter is not valid: ...``, every reason in the message), as the
        console's message browser shows it."""
        try:
            return super().parse(data)
        except InvalidInput as exc:
            if exc.errors and set(exc.errors) <= set(FILTER_FIELDS):
                raise message_filter_invalid(exc.errors) from None
            raise

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_browse(user, broker=data.broker, queue=data.queue)
        result = message_browse(
            broker=data.broker,
            queue=data.queue,
            cursor=data.cursor or None,
            ordered=data.ordered,
            limit=data.limit,
            filter=data.message_filter(),
            user=user,
        )
        b, q = result.queue.broker.name, result.queue.name
        return 200, {
            "messages": messages_render(result.messages, broker=b, queue=q),
            "cursor": result.cursor,
        }


__all__ = ["HexId", "MessageBrowse", "MessageGet", "MessageOut", "MessagePut"]
