"""Django REST framework, the OpenAPI schema and the API's limits."""

import re

from django.core.exceptions import ImproperlyConfigured

from .baton import BATON_MAX_MESSAGE_LENGTH
from .env import env_bool, env_int, env_str

#: Requests a user may make, as "<count>/<s|min|hour|day>" (DRF's rate syntax); over it a
#: request is refused with 429 ``throttled`` and ``Retry-After``. "off" turns throttling off.
BATON_API_RATE = env_str("BATON_API_RATE", "100000/min").strip()
_RATE = r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)"
if BATON_API_RATE.lower() != "off" and not re.fullmatch(_RATE, BATON_API_RATE):
    raise ImproperlyConfigured(f"BATON_API_RATE must look like 100000/min or be off, not {BATON_API_RATE!r}.")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "brokers.api.authentication.TokenAuthentication",  # DRF's, read in one prepared statement
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["brokers.api.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": BATON_API_RATE},
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["brokers.api.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Baton REST API",
    "DESCRIPTION": (
        "Brokers, queues, messages, linked transactions and connections. Authenticate with "
        '`Authorization: Token <key>`. Every error is `{"code", "message", ...details}`.'
    ),
    "VERSION": "0.1.0",
    # 3.1: the operations' definitions (pydantic) describe optional fields as JSON Schema's null.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc from the drf-spectacular-sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One name per choice set (the same set under two field names, or two sets under one).
    "ENUM_NAME_OVERRIDES": {
        "PersistenceEnum": ["persistent", "non_persistent"],
        "MessagePersistenceEnum": ["persistent", "non_persistent", "queue_default"],
        "PutSyncpointEnum": ["yes", "no", "if_persistent"],
        "YesNoEnum": ["no", "yes"],
        "AccessEnum": ["shared", "exclusive"],
        "TransactionStateEnum": ["active", "commit_held", "committed", "rolled_back"],
        "CommittedStateEnum": ["committed"],
        "CommitHeldStateEnum": ["commit_held"],
        "RolledBackStateEnum": ["rolled_back"],
        "ChannelStateEnum": ["stopped", "running", "retrying", "in_doubt"],
        "BatchStateEnum": ["received", "committed", "pending", "backed_out", "unknown"],
        "JobStateEnum": ["queued", "running", "succeeded", "failed"],  # ingests and analytics runs
        "WorkflowInstanceStateEnum": ["running", "completed", "compensating", "compensated", "compensation_failed"],
        "WorkflowStepStateEnum": [
            "pending",
            "in_flight",
            "held",
            "committed",
            "backed_out",
            "compensating",
            "compensated",
        ],
    },
}

#: Largest number of list rows a page returns.
BATON_API_PAGE_SIZE = env_int("BATON_API_PAGE_SIZE", 100)
#: Threads that serve HTTP requests (each may wait in a long-polling get or commit).
BATON_HTTP_THREADS = env_int("BATON_HTTP_THREADS", 64)
#: The CPU each web process runs on (config/cpu_pin.py): ``auto`` (one no other web
#: process holds, while there are any), ``none``, or a CPU's number.
BATON_WEB_CPU = env_str("BATON_WEB_CPU", "auto")

#: Largest HTTP request body, in bytes. Room for a batch put of several maximum-length
#: messages sent as base64 (4/3 of their length) and then some; a longer body is refused
#: with 413 ``message_too_large`` before it is read.
BATON_MAX_REQUEST_LENGTH = env_int(
    "BATON_MAX_REQUEST_LENGTH",
    max(16 * 1024 * 1024, BATON_MAX_MESSAGE_LENGTH * 4 // 3 + 1024 * 1024),
)
DATA_UPLOAD_MAX_MEMORY_SIZE = BATON_MAX_REQUEST_LENGTH

#: Check every reply of the operations in brokers.api.operations against its Output
#: definition (a field it does not name fails): on in the test suite, off by default.
BATON_API_CHECK_REPLIES = env_bool("BATON_API_CHECK_REPLIES", False)
