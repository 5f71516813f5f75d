"""API routes. Broker and queue names may contain '/', so the name converter takes slashes
and the most specific routes come first."""

from django.urls import path, register_converter

from . import views


class NameConverter:
    regex = r"[A-Za-z0-9._/%]{1,48}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class IdConverter:
    """A transaction id, connection id or lock token: anything but '/' and NUL (which no
    database column holds; PostgreSQL refuses it in a query)."""

    regex = r"[^/\x00]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(NameConverter, "name")
register_converter(IdConverter, "id")

urlpatterns = [
    path("brokers/<name:broker>/queues/<name:queue>/messages/", views.MessagesView.as_view(), name="queue-messages"),
    path("brokers/<name:broker>/queues/<name:queue>/get/", views.GetView.as_view(), name="queue-get"),
    path("brokers/<name:broker>/queues/<name:queue>/", views.QueueDetailView.as_view(), name="queue-detail"),
    path("brokers/<name:broker>/queues/", views.QueueListView.as_view(), name="queue-list"),
    path("brokers/<name:broker>/transactions/graph/", views.TransactionGraphView.as_view(), name="transaction-graph"),
    path("brokers/<name:broker>/transactions/", views.TransactionBeginView.as_view(), name="transaction-begin"),
    path("brokers/<name:broker>/connections/", views.ConnectionOpenView.as_view(), name="connection-open"),
    path("brokers/<name:broker>/", views.BrokerDetailView.as_view(), name="broker-detail"),
    path("brokers/", views.BrokerListView.as_view(), name="broker-list"),
    path("transactions/<id:transaction_id>/commit/", views.TransactionCommitView.as_view(), name="transaction-commit"),
    path(
        "transactions/<id:transaction_id>/rollback/",
        views.TransactionRollbackView.as_view(),
        name="transaction-rollback",
    ),
    path("transactions/<id:transaction_id>/check/", views.TransactionCheckView.as_view(), name="transaction-check"),
    path("transactions/<id:transaction_id>/", views.TransactionDetailView.as_view(), name="transaction-detail"),
    path("locks/<id:token>/complete/", views.LockCompleteView.as_view(), name="lock-complete"),
    path("locks/<id:token>/abandon/", views.LockAbandonView.as_view(), name="lock-abandon"),
    path("locks/<id:token>/renew/", views.LockRenewView.as_view(), name="lock-renew"),
    path("locks/<id:token>/dead-letter/", views.LockDeadLetterView.as_view(), name="lock-dead-letter"),
    path("connections/<id:conn_id>/", views.ConnectionDetailView.as_view(), name="connection-detail"),
]
