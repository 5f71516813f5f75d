"""The authentication backend that throttles sign-ins (settings: config/settings/signin.py)."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class SignInThrottleBackend(AxesStandaloneBackend):
    """django-axes' check, for sign-ins that come with a request (the dashboard's and the
    admin's forms). ``authenticate`` without a request (a management command, a shell) is
    no sign-in over the network and is left to the next backend."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
