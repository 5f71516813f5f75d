from django.contrib import admin

from config.readonly_admin import EngineOwnedAdmin

from .models import JournalEvent, Link, Transaction


@admin.register(Transaction)
class TransactionAdmin(EngineOwnedAdmin):
    list_display = ["id", "broker", "state", "user", "reason", "created_at", "resolved_at"]
    list_filter = ["state", "broker"]
    search_fields = ["id"]


@admin.register(Link)
class LinkAdmin(EngineOwnedAdmin):
    list_display = ["upstream", "downstream", "resource_ref", "created_at"]
    raw_id_fields = ["upstream", "downstream"]


@admin.register(JournalEvent)
class JournalEventAdmin(EngineOwnedAdmin):
    list_display = ["id", "at", "kind", "broker", "queue", "transaction_id", "msg_id"]
    list_filter = ["kind", "broker"]
