"""Channels: list, define, display, alter, delete, start, stop; their one definition (the
REST views, and the OpenAPI schema, use it; docs/api.md lists no channel operation on the
session).

These models are where a channel's definition is validated (shapes, types, ranges, unknown
fields), for REST and the ``baton`` commands alike; the services check only what depends on
the database (the brokers and the transmission queue exist, a target on another platform
has its URL and token, a channel is stopped before it changes)."""

from __future__ import annotations

from typing import Annotated, Any, Callable, ClassVar, Literal

from pydantic import Field

from ... import permissions as may
from ...api import schema as doc
from ...api.operations.base import Model, Operation, given
from ...api.operations.definitions import Description, Name, NoRename, Strict
from ...models import Channel, ChannelState
from ..definitions import channel_alter, channel_define, channel_delete, channel_get, channel_start, channel_stop
from ..render import channel_render
from ..selectors import channel_windows

PathName = Annotated[str, Field(max_length=200)]
Url = Annotated[
    str,
    Field(max_length=300, description="Another platform's base URL (http or https); empty: a broker of this platform."),
]
Token = Annotated[str, Field(max_length=200, description="An API token of a superuser of that platform.")]


class ChannelChanges(Strict):
    source_broker: Name = None
    transmission_queue: Name = Field(None, description="A local queue with usage transmission on the source broker.")
    target_broker: Name = None
    target_url: Url = None
    target_token: Token = None
    batch_size: Annotated[int, Field(ge=1, le=1000, description="Messages a batch takes at most.")] = None
    batch_interval_ms: Annotated[
        int, Field(ge=0, le=60_000, description="How long a batch waits to fill after its first message.")
    ] = None
    batch_bytes: Annotated[
        int,
        Field(ge=1, le=2**31 - 1, description="Bytes of bodies a batch takes at most (it always takes one message)."),
    ] = None
    window: Annotated[int, Field(ge=1, le=64, description="Provisional batches in flight at most.")] = None
    preemptive: bool = Field(None, description="Get uncommitted messages from the transmission queue.")
    description: Description = None


class ChannelRef(Model):
    channel: PathName


class OldestBatch(Model):
    seq: int
    age_s: float


class ChannelOut(Model):
    name: str
    source_broker: str
    transmission_queue: str
    target_broker: str
    target_url: str | None
    target_token: str | None = Field(description="*** when set; never shown.")
    batch_size: int
    batch_interval_ms: int
    batch_bytes: int
    window: int
    preemptive: bool
    description: str
    enabled: bool
    state: Literal[tuple(ChannelState.values)]  # type: ignore[valid-type]
    batches_committed: int
    batches_backed_out: int
    messages_sent: int
    bytes_sent: int
    last_batch_seq: int
    in_doubt_seq: int | None = Field(description="The oldest batch in flight.")
    batches_in_flight: int
    oldest_unconfirmed: OldestBatch | None
    messages_per_s: float
    bytes_per_s: float
    last_error: str | None
    retry_count: int
    next_attempt_at: str | None
    agent: str | None = Field(description="The agent holding the channel's lease.")
    updated_at: str


class ChannelList(Operation):
    """The channels the caller may see (a grant on their source broker)."""

    route = "channels/"
    url_name = "channel-list"
    method = "get"
    query = True
    operation_id = "channels_list"
    tag = "channels"
    errors = (400,)

    class Input(Model):
        pass

    class Output(Model):
        count: int
        results: list[ChannelOut]

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        channels = may.channels_visible(user, Channel.objects.select_related("source_broker").order_by("name"))
        windows = channel_windows(channels=channels)
        return 200, {"count": len(channels), "results": [channel_render(c, windows[c.pk]) for c in channels]}


class ChannelDefine(Operation):
    """Define a channel (stopped) to a broker of this platform, or of another one with
    ``target_url`` and ``target_token`` (superusers)."""

    route = "channels/"
    operation_id = "channels_define"
    tag = "channels"
    errors = (400, 409, 413)
    examples = doc.CHANNEL_EXAMPLES

    success = 201

    class Input(ChannelChanges):
        name: Name
        source_broker: Name
        transmission_queue: Name
        target_broker: Name

    Output = ChannelOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_channel_operate(user)
        return 201, channel_render(channel_define(name=data.name, **given(data, "name")))


class ChannelDisplay(Operation):
    """A channel's definition, state, counters and window."""

    route = "channels/<str:channel>/"
    url_name = "channel-detail"
    method = "get"
    query = True
    operation_id = "channels_display"
    tag = "channels"
    errors = (404,)

    path = ("channel",)

    Input = ChannelRef

    Output = ChannelOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_channel_display(user, channel=data.channel)
        return 200, channel_render(channel_get(name=data.channel))


class ChannelAlter(Operation):
    """Change a stopped channel's definition (names cannot change)."""

    route = "channels/<str:channel>/"
    method = "patch"
    operation_id = "channels_alter"
    tag = "channels"
    errors = (400, 404, 409, 413)
    examples = doc.CHANNEL_CHANGE_EXAMPLES

    path = ("channel",)

    class Input(ChannelChanges, NoRename):
        channel: PathName

    Output = ChannelOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_channel_operate(user)
        return 200, channel_render(channel_alter(name=data.channel, **given(data, "channel")))


class ChannelDelete(Operation):
    """Delete a stopped channel with no batches in doubt."""

    route = "channels/<str:channel>/"
    method = "delete"
    query = True
    operation_id = "channels_delete"
    tag = "channels"
    errors = (404, 409)

    path = ("channel",)
    success = 204

    Input = ChannelRef

    class Output(Model):
        pass

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_channel_operate(user)
        channel_delete(name=data.channel)
        return 204, {}


class _ChannelRun(Operation):
    """Start or stop the channel's agent (superusers)."""

    path = ("channel",)
    Input = ChannelRef
    Output = ChannelOut
    service: ClassVar[Callable[..., Channel]]

    @classmethod
    def perform(cls, user, data: ChannelRef) -> tuple[int, dict[str, Any]]:
        may.require_channel_operate(user)
        return 200, channel_render(cls.service(name=data.channel))


class ChannelStart(_ChannelRun):
    """Start the channel's agent on the worker fleet."""

    route = "channels/<str:channel>/start/"
    url_name = "channel-start"
    operation_id = "channels_start"
    tag = "channels"
    errors = (404,)

    service = staticmethod(channel_start)


class ChannelStop(_ChannelRun):
    """Stop the channel's agent after its current step (batches in flight stay in doubt
    until it starts again)."""

    route = "channels/<str:channel>/stop/"
    url_name = "channel-stop"
    operation_id = "channels_stop"
    tag = "channels"
    errors = (404,)

    service = staticmethod(channel_stop)
