"""Baton's Python client: ``from baton_client import Client`` (see :mod:`.client`), the
one exception hierarchy the server raises too (:mod:`.errors`), and workflow step workers
(``StepWorker``, :mod:`.worker`)."""

from .client import *  # noqa: F403 - the client's public names
from .client import __all__ as _client_names
from .errors import CLIENT_ONLY, ERRORS, NotAcceptable, UnsupportedMediaType, error_from_body
from .outbox import FailedMessage, Outbox
from .worker import Output, StepFailed, StepRequest, StepWorker

__all__ = [
    *_client_names,
    "CLIENT_ONLY",
    "ERRORS",
    "NotAcceptable",
    "UnsupportedMediaType",
    "error_from_body",
    "Outbox",
    "FailedMessage",
    "Output",
    "StepFailed",
    "StepRequest",
    "StepWorker",
]
__version__ = "0.2.0"
