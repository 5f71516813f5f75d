"""The live STOMP connections, as the dashboard shows them (each process that serves STOMP
keeps its own rows current: stomp_server/registry.py)."""

from django.db import models


class StompTransport(models.TextChoices):
    #: On BATON_STOMP_PORT (manage.py stomp_serve).
    TCP = "tcp"
    #: At /stomp/ on the web server.
    WEBSOCKET = "websocket"


class StompClient(models.Model):
    """One connected STOMP client."""

    session = models.CharField(max_length=32, primary_key=True)
    #: host:pid of the process serving it.
    process = models.CharField(max_length=200, db_index=True)
    transport = models.CharField(max_length=16, choices=StompTransport.choices)
    peer = models.CharField(max_length=100)
    username = models.CharField(max_length=150)
    broker = models.CharField(max_length=48, db_index=True)
    version = models.CharField(max_length=8)
    connected_at = models.DateTimeField()
    #: [{"id", "destination", "ack", "unacknowledged"}]
    subscriptions = models.JSONField(default=list)
    open_transactions = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    #: Set by ``services.stomp_client_close``: the serving process's registry sends the
    #: client an ERROR and drops it at its next refresh.
    close_requested_at = models.DateTimeField(null=True, blank=True)
    close_requested_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["broker", "connected_at"]
