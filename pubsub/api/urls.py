"""Publish/subscribe routes under /api/, made from the operations' definitions (the name
converter is brokers.api.urls')."""

import brokers.api.urls  # noqa: F401  (registers the name converter)
from brokers.api.operations.rest import rest_urls

from . import definitions as d, retained as r
from .operations import PublicationPublish

urlpatterns = rest_urls(
    d.TopicDisplay,
    d.TopicAlter,
    d.TopicDelete,
    d.TopicList,
    d.TopicDefine,
    PublicationPublish,
    d.SubscriptionDisplay,
    d.SubscriptionDelete,
    d.SubscriptionList,
    d.SubscriptionDefine,
    r.RetainedList,
    r.RetainedClear,
)
