"""Dashboard routes. Broker and queue names may contain '/': the API's ``name`` converter
takes slashes, so the most specific routes come first."""

from django.contrib.auth import views as auth_views
from django.urls import path

import brokers.api.urls  # noqa: F401  (registers the ``name`` converter)

from . import definition_views as edit
from . import definitions_views, spark_views, user_views, views, workflow_views

Q = "brokers/<name:broker>/queues/<name:queue>"


def _edits(prefix: str, kind: str, *, alter: bool = True) -> list:
    """The alter and delete pages of one object at ``prefix`` (before its own page)."""
    pages = [path(f"{prefix}/delete/", edit.definition_delete, {"kind": kind}, name=f"dashboard-{kind}-delete")]
    if alter:
        pages.append(path(f"{prefix}/alter/", edit.definition_alter, {"kind": kind}, name=f"dashboard-{kind}-alter"))
    return pages


urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="dashboard/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("", views.overview_page, name="dashboard-overview"),
    path("rates/", views.rates_json, name="dashboard-rates"),
    path("users/", user_views.users_page, name="dashboard-users"),
    path("define/<str:kind>/", edit.definition_define, name="dashboard-define"),
    path("brokers/<name:broker>/define/<str:kind>/", edit.definition_define, name="dashboard-define-in"),
    *_edits(Q, "queue"),
    *_edits("brokers/<name:broker>/topics/<name:name>", "topic"),
    *_edits("brokers/<name:broker>/subscriptions/<name:name>", "subscription", alter=False),
    *_edits("brokers/<name:broker>/workflows/<name:name>", "workflow"),
    *_edits("channels/<str:channel>", "channel"),
    *_edits("brokers/<name:broker>", "broker"),
    path(f"{Q}/messages/<str:msg_id>/delete/", views.message_delete, name="dashboard-message-delete"),
    path(f"{Q}/messages/<str:msg_id>/body/", views.message_download, name="dashboard-message-body"),
    path(f"{Q}/messages/<str:msg_id>/", views.message_page, name="dashboard-message"),
    path(f"{Q}/rates/", views.queue_rates_json, name="dashboard-queue-rates"),
    path(f"{Q}/put/", views.message_put, name="dashboard-put"),
    path(f"{Q}/purge/", views.queue_purge, name="dashboard-purge"),
    path(f"{Q}/move/", views.move_submit, name="dashboard-move"),
    path(f"{Q}/jobs/<int:job_id>/resume/", views.move_job_resume, name="dashboard-move-job-resume"),
    path(f"{Q}/jobs/<int:job_id>/", views.move_job_page, name="dashboard-move-job"),
    path(f"{Q}/ingest/", spark_views.ingest_start_view, name="dashboard-ingest"),
    path(f"{Q}/", views.queue_page, name="dashboard-queue"),
    path(
        "brokers/<name:broker>/connections/<str:conn_id>/close/",
        views.connection_close_view,
        name="dashboard-connection-close",
    ),
    path(
        "brokers/<name:broker>/stomp/<str:session>/close/",
        views.stomp_close_view,
        name="dashboard-stomp-close",
    ),
    path(
        "brokers/<name:broker>/transactions/<str:transaction_id>/rollback/",
        views.transaction_rollback,
        name="dashboard-transaction-rollback",
    ),
    path("brokers/<name:broker>/transactions/", views.transactions_page, name="dashboard-transactions"),
    path("brokers/<name:broker>/workflows/", workflow_views.workflows_page, name="dashboard-workflows"),
    path(
        "workflow-instances/<str:instance_id>/abort/",
        workflow_views.instance_action,
        {"action": "abort"},
        name="dashboard-workflow-abort",
    ),
    path(
        "workflow-instances/<str:instance_id>/resubmit/",
        workflow_views.instance_action,
        {"action": "resubmit"},
        name="dashboard-workflow-resubmit",
    ),
    path("workflow-instances/<str:instance_id>/", workflow_views.instance_page, name="dashboard-workflow-instance"),
    path("brokers/<name:broker>/topics/", views.topics_page, name="dashboard-topics"),
    path("brokers/<name:broker>/subscriptions/", views.subscriptions_page, name="dashboard-subscriptions"),
    path("brokers/<name:broker>/", views.broker_page, name="dashboard-broker"),
    path("channels/<name:name>/start/", views.channel_action, {"action": "start"}, name="dashboard-channel-start"),
    path("channels/<name:name>/stop/", views.channel_action, {"action": "stop"}, name="dashboard-channel-stop"),
    path("channels/rates/", views.channel_rates_json, name="dashboard-channel-rates"),
    path("channels/", views.channels_page, name="dashboard-channels"),
    path("analytics/run/", spark_views.analytics_run_view, name="dashboard-analytics-run"),
    path("analytics/", spark_views.analytics_page, name="dashboard-analytics"),
    path("definitions/export/", definitions_views.definitions_download, name="dashboard-definitions-download"),
    path("definitions/", definitions_views.definitions_page, name="dashboard-definitions"),
]
