"""A strict Content-Security-Policy on the console's pages (docs/dashboard.md, "Content
Security Policy").

The console loads only its own assets: scripts and style sheets from this origin (no inline
``<script>``, no ``on*=`` handler, no ``style=`` attribute, no ``eval``), images from this
origin or ``data:`` (the empty favicon), WebSockets and fetches to this origin. A page that
someone managed to inject markup into can therefore run nothing. Django 5.2 has no CSP of
its own, hence this middleware; the API's own pages (``/api/``: the schema viewers) and
Django's admin keep theirs.
"""

from __future__ import annotations

from django.utils.deprecation import MiddlewareMixin

#: The policy of every console page.
POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

#: Paths whose pages are not the console's.
NOT_CONSOLE = ("/api/", "/admin/")


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds :data:`POLICY` to the console's HTML responses (sync and async alike)."""

    def process_response(self, request, response):
        if response.get("Content-Type", "").startswith("text/html") and not request.path.startswith(NOT_CONSOLE):
            response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
