"""REST views for channels and for the receiving end of channels from other platforms:
each method hands its request to one operation (``operations``, ``receiving``) and renders
what it answers (docs/api.md, "Channels")."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ...api import schema as doc
from ...api.operations.rest import operation_response as _run, request_query as _query
from . import operations as ops, receiving as rx


class ChannelListView(APIView):
    @doc.operation(ops.ChannelList, "channels_list", "channels", 400, query=True)
    def get(self, request: Request) -> Response:
        return _run(ops.ChannelList, request, _query(request))

    @doc.operation(ops.ChannelDefine, "channels_define", "channels", 400, 409, 413, examples=doc.CHANNEL_EXAMPLES)
    def post(self, request: Request) -> Response:
        return _run(ops.ChannelDefine, request)


class ChannelDetailView(APIView):
    @doc.operation(ops.ChannelDisplay, "channels_display", "channels", 404)
    def get(self, request: Request, channel: str) -> Response:
        return _run(ops.ChannelDisplay, request, _query(request), channel=channel)

    @doc.operation(
        ops.ChannelAlter, "channels_alter", "channels", 400, 404, 409, 413, examples=doc.CHANNEL_CHANGE_EXAMPLES
    )
    def patch(self, request: Request, channel: str) -> Response:
        return _run(ops.ChannelAlter, request, channel=channel)

    @doc.operation(ops.ChannelDelete, "channels_delete", "channels", 404, 409)
    def delete(self, request: Request, channel: str) -> Response:
        return _run(ops.ChannelDelete, request, _query(request), channel=channel)


class ChannelStartView(APIView):
    @doc.operation(ops.ChannelStart, "channels_start", "channels", 404)
    def post(self, request: Request, channel: str) -> Response:
        return _run(ops.ChannelStart, request, channel=channel)


class ChannelStopView(APIView):
    @doc.operation(ops.ChannelStop, "channels_stop", "channels", 404)
    def post(self, request: Request, channel: str) -> Response:
        return _run(ops.ChannelStop, request, channel=channel)


class ReceiverBatchView(APIView):
    @doc.operation(rx.BatchReceive, "receiver_batch_receive", "receiver", 400, 404, 409, 413)
    def post(self, request: Request) -> Response:
        return _run(rx.BatchReceive, request)


class ReceiverCommitView(APIView):
    @doc.operation(rx.BatchCommit, "receiver_batch_commit", "receiver", 400, 409)
    def post(self, request: Request) -> Response:
        return _run(rx.BatchCommit, request)


class ReceiverBackoutView(APIView):
    @doc.operation(rx.BatchBackout, "receiver_batch_backout", "receiver", 400)
    def post(self, request: Request) -> Response:
        return _run(rx.BatchBackout, request)


class ReceiverStatusView(APIView):
    @doc.operation(rx.BatchInquire, "receiver_batch_status", "receiver", 400)
    def post(self, request: Request) -> Response:
        return _run(rx.BatchInquire, request)
