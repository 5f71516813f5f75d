"""Per-user request rate (settings.BATON_API_RATE): over it, 429 ``throttled`` with Retry-After.

DRF's UserRateThrottle keeps every request's time in one cached list per user and pickles
it on every request; at the generous default rate (100000/min) that list is tens of
thousands of entries long on a busy put path. This one counts requests in fixed windows
of the rate's period instead: one cache ``add``/``incr`` per request. The rate is read from
the settings at each request, so a test's ``override_settings(BATON_API_RATE=...)`` works.
"""

from __future__ import annotations

import math

from django.conf import settings
from rest_framework import throttling


class UserRateThrottle(throttling.UserRateThrottle):
    """At most ``n`` requests per period per user (per client address when anonymous)."""

    scope = "user"

    def __init__(self) -> None:
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.window_end: float = 0.0

    def get_rate(self) -> str | None:
        rate = getattr(settings, "BATON_API_RATE", None)
        return None if not rate or rate.lower() == "off" else rate

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        self.window_end = (window + 1) * self.duration
        key = f"{self.key}:{self.duration}:{window}"
        count = 1
        if not self.cache.add(key, 1, self.duration + 1):
            try:
                count = self.cache.incr(key)
            except ValueError:  # expired between add and incr: a new window
                self.cache.add(key, 1, self.duration + 1)
        return count <= self.num_requests

    def wait(self) -> float:
        return max(1, math.ceil(self.window_end - self.timer()))
