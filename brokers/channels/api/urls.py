"""Routes of the channels' API (under /api/), made from the operations' definitions."""

from ...api.operations.rest import rest_urls
from . import operations as ops, receiving as rx

urlpatterns = rest_urls(
    ops.ChannelStart,
    ops.ChannelStop,
    ops.ChannelDisplay,
    ops.ChannelAlter,
    ops.ChannelDelete,
    ops.ChannelList,
    ops.ChannelDefine,
    rx.BatchCommit,
    rx.BatchBackout,
    rx.BatchInquire,
    rx.BatchReceive,
)
