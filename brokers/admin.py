from django.contrib import admin

from config.readonly_admin import EngineOwnedAdmin

from .models import Broker, Channel, ClientSession, Connection, Grant, Message, Queue
from .selectors import queue_reserved_depth


@admin.register(Broker)
class BrokerAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "dead_letter_queue", "transaction_timeout_ms", "created_at"]
    search_fields = ["name"]


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    list_display = ["name", "broker", "kind", "usage", "max_depth", "room_taken", "put_enabled", "get_enabled"]
    list_filter = ["broker", "kind", "usage"]
    search_fields = ["name"]
    readonly_fields = ["reserved_depth", "next_commit_seq"]

    @admin.display(description="room taken")
    def room_taken(self, queue: Queue) -> int:
        """Its messages, uncommitted puts included: ``reserved_depth`` less its releases."""
        return queue_reserved_depth(queue=queue)


@admin.register(Message)
class MessageAdmin(EngineOwnedAdmin):
    list_display = [
        "msg_id",
        "queue",
        "priority",
        "persistent",
        "put_time",
        "put_transaction",
        "get_transaction",
        "backout_count",
    ]
    list_filter = ["queue__broker", "persistent", "msg_type"]
    search_fields = ["msg_id", "correl_id"]
    raw_id_fields = ["queue", "put_transaction", "get_transaction"]


@admin.register(Connection)
class ConnectionAdmin(EngineOwnedAdmin):
    list_display = ["conn_id", "broker", "client_name", "current_transaction", "created_at", "closed_at"]


@admin.register(ClientSession)
class ClientSessionAdmin(EngineOwnedAdmin):
    list_display = ["client_name", "broker", "last_put_msg_id", "last_got_msg_id", "updated_at"]


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "source_broker",
        "transmission_queue",
        "target_broker",
        "state",
        "enabled",
        "batches_committed",
        "messages_sent",
        "last_error",
    ]
    readonly_fields = [
        "state",
        "batches_committed",
        "batches_backed_out",
        "messages_sent",
        "last_batch_seq",
        "bytes_sent",
        "lease_holder",
        "lease_until",
        "last_error",
    ]


@admin.register(Grant)
class GrantAdmin(admin.ModelAdmin):
    list_display = ["user", "broker", "queue", "actions"]
    list_filter = ["broker"]
