"""Dashboard pages. Each view checks who asks, calls one selector or service, renders."""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from brokers.channels.definitions import channel_start, channel_stop
from brokers.api.operations.connections import ConnectionClose
from brokers.api.operations.messages import MessageBrowse
from brokers.api.operations.stomp import StompConnectionClose
from brokers.api.operations.transactions import TransactionRollback
from brokers.selectors import queue_get
from baton_client.errors import BatonError, InvalidInput
from ingest.selectors import ingest_list
from stomp_server.selectors import stomp_clients

from . import forms, selectors, services
from .alerts import alerts_for
from .editing import define_panel, edit_links, may_admin
from .offers import queue_offers, require_offered
from .access import (
    may,
    require_broker_seen,
    require_queue_action,
    require_queue_seen,
    require_superuser,
    visibility,
)


def page(view):
    """Signed-in users only; a BatonError becomes an error page with its status."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except BatonError as exc:
            return render(request, "dashboard/error.html", {"error": exc}, status=exc.status)

    return wrapped


@page
def overview_page(request):
    seen = visibility(request.user)
    return render(
        request,
        "dashboard/overview.html",
        {
            "overview": selectors.overview_for(selectors.overview(), seen),
            "nav": "overview",
            "may_define_broker": request.user.is_superuser,
            "stomp_clients": stomp_clients(brokers=None if seen.everything else seen.brokers),
            # who may close a row: its own user, a superuser, the broker's admin (``*``: every broker)
            "stomp_close": {
                "username": request.user.get_username(),
                "brokers": ["*"]
                if request.user.is_superuser
                else sorted(b for b in (seen.brokers or ()) if may_admin(request.user, b)),
            },
            "stomp_port": settings.BATON_STOMP_PORT or "off",
            "processes": selectors.process_rows() if request.user.is_superuser else [],
            "heartbeat_s": f"{settings.BATON_DASHBOARD_HEARTBEAT_S:g}",
            "alerts": alerts_for(seen),
        },
    )


@page
def rates_json(request):
    try:
        window = int(request.GET.get("window", "600"))
    except ValueError:
        window = -1
    try:
        return JsonResponse(selectors.journal_rates(window_s=window, seen=visibility(request.user)))
    except BatonError as exc:
        return JsonResponse(exc.as_dict(), status=exc.status)


@login_required
def queue_rates_json(request, broker, queue):
    """The queue page's history: ``selectors.queue_rates`` (puts, gets, depth)."""
    try:
        require_queue_seen(request.user, broker=broker, queue=queue)
        window = request.GET.get("window", "600")
        data = selectors.queue_rates(broker=broker, queue=queue, window_s=int(window) if window.isdigit() else -1)
    except BatonError as exc:
        return JsonResponse(exc.as_dict(), status=exc.status)
    return JsonResponse(data)


@login_required
def channel_rates_json(request):
    """The channels page's history: ``selectors.channel_rates`` for the user's channels."""
    return JsonResponse(selectors.channel_rates(seen=visibility(request.user)))


@page
def broker_page(request, broker):
    require_broker_seen(request.user, broker=broker)
    seen = visibility(request.user)
    try:
        listing, list_error = forms.queue_list_form(request.GET), None
    except InvalidInput as exc:  # the page, with the reason instead of queues: 400
        listing, list_error = {"name": "", "kind": "", "sort": "name", "page": 1}, exc
    data = selectors.broker_page(broker=broker, seen=seen, size=forms.QUEUE_PAGE, **listing)
    if list_error is not None:
        data.update(queues=[], total=0, pages=1)
    whole = seen.everything or broker in seen.brokers  # connections: for those who see the broker whole
    shown = {k: v for k, v in listing.items() if k != "page" and v and (k, v) != ("sort", "name")}
    return render(
        request,
        "dashboard/broker.html",
        {
            **data,
            "listing": listing,
            "list_error": list_error,
            "list_query": urlencode(shown),
            "sorts": forms.QUEUE_SORT_LABELS,
            "kinds": ["local", "remote", "alias"],
            "paged": bool(shown) or data["pages"] > 1,
            "nav": "overview",
            "queue_define": define_panel("queue", request.user, {"broker": broker}),
            "connections": selectors.broker_connections(broker=broker) if whole else None,
            "may_close": may_admin(request.user, broker),
            "edit": edit_links("broker", request.user, {"broker": broker}),
            "alerts": alerts_for(visibility(request.user), broker=broker),
            "alerts_broker": broker,
        },
        status=400 if list_error is not None else 200,
    )


def _queue_actions(user, broker: str, queue: str) -> dict[str, bool]:
    return {
        "may_put": may(user, "put", broker=broker, queue=queue),
        "may_purge": may(user, "admin", broker=broker, queue=queue),
    }


@page
def queue_page(request, broker, queue):
    require_queue_seen(request.user, broker=broker, queue=queue)
    asked = {name: request.GET.get(name, "") for name in ("body_contains", "property")}
    try:  # the filter parsed as REST's browse parses it
        found, filter_error = MessageBrowse.parse({"broker": broker, "queue": queue, **asked}).message_filter(), None
    except InvalidInput as exc:  # the page, with the reason instead of messages: 400
        found, filter_error = None, exc
    data = selectors.message_page(broker=broker, queue=queue, cursor=request.GET.get("cursor"), filter=found)
    if filter_error is not None:
        data.update(rows=[], next=None, previous=None)
    counts = selectors.queue_counts(queue_ids=[data["queue"].pk])[data["queue"].pk]
    offers = queue_offers(queue=data["queue"])
    return render(
        request,
        "dashboard/queue.html",
        {
            **data,
            "counts": counts,
            "broker_name": broker,
            "nav": "overview",
            "filter": asked,
            "filter_error": filter_error,
            "filtered": bool(found and found.active) or filter_error is not None,
            "filter_query": urlencode({k: v for k, v in asked.items() if v}),
            "move": selectors.move_panel(broker=broker, queue=data["queue"], user=request.user),
            "ingests": ingest_list(broker=broker, queue=queue, limit=5),  # Spark ingests (dashboard/ingest_panel.html)
            "edit": edit_links("queue", request.user, {"broker": broker, "queue": queue}),
            "offers": offers,
            "depth_sample_s": f"{settings.BATON_DASHBOARD_DEPTH_SAMPLE_S:g}",
            "consumers": selectors.queue_consumers(broker=broker, queue=queue),
            "may_close": may_admin(request.user, broker),
            **_queue_actions(request.user, broker, queue),
        },
        status=400 if filter_error is not None else 200,
    )


@page
def message_page(request, broker, queue, msg_id):
    require_queue_seen(request.user, broker=broker, queue=queue)
    data = selectors.message_detail(broker=broker, queue=queue, msg_id=msg_id)
    may_remove = may(request.user, "admin", broker=broker, queue=queue) and queue_offers(queue=data["queue"])["purge"]
    return render(
        request, "dashboard/message.html", {**data, "broker_name": broker, "nav": "overview", "may_remove": may_remove}
    )


@page
@require_POST
def message_delete(request, broker, queue, msg_id):
    """Remove one available message (admin on the queue, as purge)."""
    require_queue_seen(request.user, broker=broker, queue=queue)
    require_queue_action(request.user, "admin", broker=broker, queue=queue)
    require_offered("purge", queue=queue_get(broker=broker, name=queue))
    if services.message_remove(broker=broker, queue=queue, msg_id=msg_id):
        messages.success(request, f"Removed message {msg_id}.")
        return redirect(reverse("dashboard-queue", args=[broker, queue]))
    messages.error(
        request, f"Message {msg_id} was not removed: it is not available (gone, in flight, locked or not committed)."
    )
    return redirect(reverse("dashboard-message", args=[broker, queue, msg_id]))


@page
def message_download(request, broker, queue, msg_id):
    require_queue_seen(request.user, broker=broker, queue=queue)
    data = selectors.message_detail(broker=broker, queue=queue, msg_id=msg_id)
    response = HttpResponse(data["body"], content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{data["m"].msg_id}.bin"'
    return response


#: The put form's fields (dashboard/templates/dashboard/queue.html).
FORM_PUT_FIELDS = ("body", "priority", "format", "properties")


@page
@require_POST
def message_put(request, broker, queue):
    require_queue_seen(request.user, broker=broker, queue=queue)
    require_queue_action(request.user, "put", broker=broker, queue=queue)
    try:
        require_offered("put", queue=queue_get(broker=broker, name=queue))
        message = forms.put_form(**{name: request.POST.get(name, "") for name in FORM_PUT_FIELDS})
        msg_id = services.dashboard_put(
            broker=broker, queue=queue, message=message, user=request.user.username, actor=request.user
        )
        messages.success(request, f"Put message {msg_id}.")
    except BatonError as exc:
        messages.error(request, f"Not put: {exc.message}")
    return redirect(reverse("dashboard-queue", args=[broker, queue]))


@page
def queue_purge(request, broker, queue):
    require_queue_seen(request.user, broker=broker, queue=queue)
    require_queue_action(request.user, "admin", broker=broker, queue=queue)
    require_offered("purge", queue=queue_get(broker=broker, name=queue))
    if request.method == "POST":
        count = forms.purge_count(request.POST.get("count", ""))  # the form's input, checked where it enters
        removed = services.queue_purge(broker=broker, queue=queue, count=count)
        messages.success(request, f"Purged {removed} message{'s' if removed != 1 else ''}.")
        return redirect(reverse("dashboard-queue", args=[broker, queue]))
    count = selectors.purge_count(broker=broker, queue=queue)
    return render(
        request, "dashboard/purge.html", {"broker_name": broker, "queue_name": queue, "count": count, "nav": "overview"}
    )


@page
def transactions_page(request, broker):
    require_broker_seen(request.user, broker=broker)
    return render(
        request,
        "dashboard/transactions.html",
        {
            "broker_name": broker,
            "nav": "transactions",
            "queue_names": selectors.queue_names_seen(broker=broker, seen=visibility(request.user)),
        },
    )


@page
@require_POST
def connection_close_view(request, broker, conn_id):
    """Close an application session from the broker page: the REST operation
    ``ConnectionClose`` as the signed-in user (its permission check: as for opening one on
    the broker, and for its open unit of work, which closing rolls back, as for acting on it)."""
    ConnectionClose.run(request.user, {"conn_id": conn_id})
    messages.success(request, f"Closed session {conn_id}; any unit of work it had open was rolled back.")
    return redirect(reverse("dashboard-broker", args=[broker]))


@page
@require_POST
def stomp_close_view(request, broker, session):
    """Close a STOMP connection from the broker or a queue page: the REST operation
    ``StompConnectionClose`` as the signed-in user (its own user, a superuser or the broker's
    admin; anyone else is told it does not exist). The serving process sends the client an
    ERROR and drops it within ``stomp_server.registry.INTERVAL_S`` seconds; the lists
    lose its row by push. Back to the queue page the form names, the overview if it says
    ``back=overview``, else the broker page."""
    StompConnectionClose.run(request.user, {"session": session})
    messages.success(request, f"Closing STOMP connection {session}: its client is sent an ERROR and dropped.")
    queue = request.POST.get("queue", "")
    if queue:
        return redirect(reverse("dashboard-queue", args=[broker, queue]))
    if request.POST.get("back") == "overview":
        return redirect(reverse("dashboard-overview"))
    return redirect(reverse("dashboard-broker", args=[broker]))


@login_required
@require_POST
def transaction_rollback(request, broker, transaction_id):
    """Roll back a unit of work from the graph's detail panel (a ``fetch`` of its form):
    the REST operation runs as the signed-in user, so its ownership rule holds (its owner,
    a superuser or the broker's admin; anyone else is answered 404 ``not_found``, as REST
    answers). JSON either way: the operation's answer (``cascaded``: what went with it) or
    its error, with REST's status."""
    try:
        status, body = TransactionRollback.run(request.user, {"transaction": transaction_id})
    except BatonError as exc:
        return JsonResponse(exc.as_dict(), status=exc.status or 400)
    return JsonResponse(body, status=status)


@page
def topics_page(request, broker):
    require_broker_seen(request.user, broker=broker)
    return render(
        request,
        "dashboard/topics.html",
        {**selectors.topics_page(broker=broker), "nav": "overview", "may_admin": may_admin(request.user, broker)},
    )


@page
def subscriptions_page(request, broker):
    require_broker_seen(request.user, broker=broker)
    data = selectors.subscriptions_page(broker=broker, seen=visibility(request.user))
    return render(
        request,
        "dashboard/subscriptions.html",
        {**data, "nav": "overview", "may_admin": may_admin(request.user, broker)},
    )


@page
def channels_page(request):
    seen = visibility(request.user)
    data = selectors.overview_for(selectors.overview(), seen)
    backlogs = selectors.channel_backlogs(data)
    return render(
        request,
        "dashboard/channels.html",
        {
            "channels": [{**c, "backlog": backlogs[c["name"]]} for c in data["channels"]],
            "brokers": data["brokers"],
            "nav": "channels",
            "may_operate": request.user.is_superuser,
        },
    )


@page
@require_POST
def channel_action(request, name, action):
    require_superuser(request.user)
    (channel_start if action == "start" else channel_stop)(name=name)
    messages.success(request, f"Channel {name}: {action} requested.")
    return redirect(reverse("dashboard-channels"))


@page
@require_POST
def move_submit(request, broker, queue):
    """Move or resubmit the selected messages of a dead-letter or backout queue: a job for
    the worker fleet; its page shows the progress."""
    try:
        job = services.move_job_submit(
            user=request.user,
            broker=broker,
            queue=queue,
            action=request.POST.get("action", ""),
            msg_ids=request.POST.getlist("msg_id"),
            everything=request.POST.get("everything") == "yes",
            target_queue=request.POST.get("target_queue", ""),
        )
    except BatonError as exc:
        if exc.status == 403:
            raise
        messages.error(request, f"Nothing moved: {exc.message}")
        return redirect(reverse("dashboard-queue", args=[broker, queue]))
    return redirect(reverse("dashboard-move-job", args=[broker, queue, job.pk]))


@page
def move_job_page(request, broker, queue, job_id):
    require_queue_seen(request.user, broker=broker, queue=queue)
    job = selectors.move_job_get(job_id=job_id, broker=broker, queue=queue)
    return render(
        request,
        "dashboard/move_job.html",
        {
            "job": selectors.move_job_row(job),
            "broker_name": broker,
            "queue_name": queue,
            "nav": "overview",
            "may_resume": may(request.user, "get", broker=broker, queue=queue),
        },
    )


@page
@require_POST
def move_job_resume(request, broker, queue, job_id):
    selectors.move_job_get(job_id=job_id, broker=broker, queue=queue)
    try:
        services.move_job_resume(user=request.user, job_id=job_id)
    except BatonError as exc:
        if exc.status == 403:
            raise
        messages.error(request, exc.message)
    return redirect(reverse("dashboard-move-job", args=[broker, queue, job_id]))
