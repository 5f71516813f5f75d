"""The production profile, ``BATON_ENV=production``: what ``manage.py check --deploy`` asks
for, with the parts a TLS-terminating proxy takes over switched by the environment.

- ``DEBUG`` off (``BATON_DEBUG`` may not turn it on).
- ``BATON_SECRET_KEY`` required (config/settings/base.py refuses to start without it; no key
  is generated under var/), at least 50 characters.
- ``BATON_ALLOWED_HOSTS`` required: the public host names (the dashboard's WebSocket refuses
  an ``Origin`` outside them). ``BATON_CSRF_TRUSTED_ORIGINS``: the public origins
  (``https://baton.example.com``) when a proxy changes the scheme or port.
- Session and CSRF cookies are ``Secure`` (sent over HTTPS only).
- ``BATON_PROXY_SSL_HEADER``: the header a TLS-terminating proxy sets on requests it received
  over HTTPS (``X-Forwarded-Proto``, whose value is then ``https``). Set it only when the
  proxy always sets or strips that header; the server then knows a request was secure.
- ``BATON_SSL_REDIRECT`` (on): redirect plain HTTP to HTTPS. ``0`` when the proxy redirects.
- ``BATON_HSTS_SECONDS`` (one year), ``BATON_HSTS_INCLUDE_SUBDOMAINS`` (on),
  ``BATON_HSTS_PRELOAD`` (on): Strict-Transport-Security. ``BATON_HSTS_SECONDS=0`` when the
  proxy sends the header itself.

Whatever is switched off because the proxy does it is named in ``SILENCED_SYSTEM_CHECKS``,
so ``check --deploy`` stays at 0 warnings and says what it no longer checks.
"""

from django.core.exceptions import ImproperlyConfigured

from .base import ALLOWED_HOSTS, BATON_ENV, SECRET_KEY
from .env import env_bool, env_int, env_str

PRODUCTION = BATON_ENV == "production"

if PRODUCTION:
    if env_bool("BATON_DEBUG", False):
        raise ImproperlyConfigured("BATON_DEBUG cannot be on with BATON_ENV=production.")
    DEBUG = False
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured("BATON_SECRET_KEY must be a random string of at least 50 characters.")
    if not env_str("BATON_ALLOWED_HOSTS", "").strip() or "*" in ALLOWED_HOSTS:
        raise ImproperlyConfigured(
            "Set BATON_ALLOWED_HOSTS to the public host names (no '*') with BATON_ENV=production."
        )

    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    _proxy_header = env_str("BATON_PROXY_SSL_HEADER", "").strip()
    if _proxy_header:
        SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
    SECURE_SSL_REDIRECT = env_bool("BATON_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("BATON_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("BATON_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("BATON_HSTS_PRELOAD", True)
    SILENCED_SYSTEM_CHECKS = [
        *([] if SECURE_SSL_REDIRECT else ["security.W008"]),  # the proxy redirects to HTTPS
        *([] if SECURE_HSTS_SECONDS else ["security.W004"]),  # the proxy sends Strict-Transport-Security
        *([] if not SECURE_HSTS_SECONDS or SECURE_HSTS_INCLUDE_SUBDOMAINS else ["security.W005"]),
        *([] if not SECURE_HSTS_SECONDS or SECURE_HSTS_PRELOAD else ["security.W021"]),
    ]
