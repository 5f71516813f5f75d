"""Errors of topic objects and subscriptions (config.errors holds the hierarchy)."""

from baton_client.errors import NotFound


class TopicNotFound(NotFound):
    """No such topic object."""


class SubscriptionNotFound(NotFound):
    """No such subscription."""
