"""Django REST framework and the OpenAPI schema."""
from .env import env_int

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Baton REST API",
    "DESCRIPTION": "Brokers, queues, messages, linked transactions and connections.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

#: Largest number of list rows a page returns.
BATON_API_PAGE_SIZE = env_int("BATON_API_PAGE_SIZE", 100)
#: Threads that serve HTTP requests (each may wait in a long-polling get or commit).
BATON_HTTP_THREADS = env_int("BATON_HTTP_THREADS", 64)
