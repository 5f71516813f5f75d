"""Django's admin shows the engine's own tables but changes none of them.

Messages (and their peek-locks), units of work, links, journal events, connections and
client sessions change only through the engine's services, which keep its journal, its
counters and its wake-ups in step (docs/permissions.md, "Django's admin"). Their
``ModelAdmin`` derives from :class:`EngineOwnedAdmin`: every user, superusers included,
may view them and nobody may add, change or delete one there.
"""

from __future__ import annotations

from django.contrib import admin


class EngineOwnedAdmin(admin.ModelAdmin):
    """A read-only ModelAdmin: no add, change or delete (nor their bulk actions)."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
