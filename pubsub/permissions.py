"""Who may do what with topics, subscriptions and publications (REST and the session).

=====================================  =========================================================
request                                needs
=====================================  =========================================================
list, display topic objects,           any action on the broker (broker-wide or on a queue of it)
subscriptions, retained publications
define, alter, delete topic objects    admin on the whole broker; a subscription whose queue is an
and subscriptions; clear retained      alias or a remote queue: also put (or admin) where it finally
                                       leads (subscription_define, brokers.permissions
                                       .require_route_defined)
publish                                put (or admin) on the whole broker
STOMP SUBSCRIBE to /topic/...          get on the whole broker
=====================================  =========================================================
"""

from __future__ import annotations

from brokers import permissions as may

require_display = may.require_broker_display
require_admin = may.require_broker_admin


def require_publish(user, *, broker: str) -> None:
    may._require(user, {"put", "admin"}, broker=broker)


def require_subscribe(user, *, broker: str) -> None:
    """A STOMP SUBSCRIBE to /topic/...: get on the whole broker (it defines the
    subscription's queue and subscription for the connection, and gets from that queue)."""
    may._require(user, {"get"}, broker=broker)
