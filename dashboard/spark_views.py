"""Dashboard pages for the Spark jobs: starting an ingest from a queue's page (its progress
is followed live there) and the analytics page."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from analytics.models import BrokerAnalytics
from analytics.selectors import analytics_runs_latest
from analytics.services import analytics_run_start
from baton_client.errors import BatonError
from ingest.api import IngestStart
from ingest.services import ingest_start

from brokers.selectors import queue_get

from .access import require_queue_action, require_queue_seen, require_superuser, visibility
from .offers import require_offered
from .views import page


@page
@require_POST
def ingest_start_view(request, broker, queue):
    require_queue_seen(request.user, broker=broker, queue=queue)
    require_queue_action(request.user, "put", broker=broker, queue=queue)
    require_offered("ingest", queue=queue_get(broker=broker, name=queue))
    fields = [f.strip() for f in request.POST.get("properties_fields", "").split(",") if f.strip()]
    try:
        data = IngestStart.parse(
            {
                "broker": broker,
                "queue": queue,
                "source": request.POST.get("source", ""),
                "format": request.POST.get("format", "jsonl"),
                "body_field": request.POST.get("body_field", "").strip(),
                "key_field": request.POST.get("key_field", "").strip(),
                "properties_fields": fields,
            }
        )
        with transaction.atomic():
            ingest = ingest_start(user=request.user, **data.model_dump())
        messages.success(request, f"Ingest {ingest.pk} started.")
    except BatonError as exc:
        problems = exc.details.get("errors") if isinstance(exc.details, dict) else None
        said = "; ".join(
            f"{field}: {texts if isinstance(texts, str) else ' '.join(map(str, texts))}"
            for field, texts in (problems or {}).items()
        )
        messages.error(request, f"Not started: {exc.message}" + (f" ({said})" if said else ""))
    return redirect(reverse("dashboard-queue", args=[broker, queue]) + "#ingests")


@page
def analytics_page(request):
    seen = visibility(request.user)
    results = [r for r in BrokerAnalytics.objects.order_by("broker") if seen.broker(r.broker)]
    charts = {r.broker: r.results.get("throughput", []) for r in results}
    return render(
        request,
        "dashboard/analytics.html",
        {
            "nav": "analytics",
            "results": results,
            "charts": charts,
            "runs": analytics_runs_latest(limit=5) if request.user.is_superuser else [],
        },
    )


@page
@require_POST
def analytics_run_view(request):
    require_superuser(request.user)
    with transaction.atomic():
        run = analytics_run_start()
    messages.success(request, f"Analytics run {run.pk} queued.")
    return redirect(reverse("dashboard-analytics"))
